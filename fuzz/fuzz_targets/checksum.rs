//! Checksum-file parsing (`images::checksum::find`, GNU and BSD styles, armour): never
//! panics. The first line names the file to look up; the rest is the checksum file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stoat_core::fuzzing::{find, Expected};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (file, body) = text.split_once('\n').unwrap_or(("alpine.iso", text));
    let _ = find(body, file);
    let _ = Expected::from_hex(file);
});
