//! The multi-call fake host tools; everything lives in [`stoat_conformance::fakes`].

fn main() {
    stoat_conformance::fakes::main()
}
