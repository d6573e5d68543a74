//! The wire's error codes (`stoat_wire::codes()`) are exactly the list `schemas/codes.json`
//! publishes (`json-v3#error-codes`, docs/contract.md): a code added, renamed or dropped on one
//! side only fails here.

#[test]
fn wire_codes_equal_the_published_code_list() {
    let mut wire = stoat_wire::codes();
    wire.sort_unstable();
    let mut published = stoat_schemas::codes();
    published.sort_unstable();
    assert_eq!(wire, published);
}
