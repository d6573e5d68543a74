//! `qemu-img snapshot -l` / `info snapshots` table parsing (`host::snapshot::parse_table`):
//! never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stoat_core::fuzzing::parse_table;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse_table(&text);
});
