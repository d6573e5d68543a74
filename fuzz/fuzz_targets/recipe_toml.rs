//! recipe.toml loading (`recipes::manifest::Manifest::parse`, schema 2 and 3): never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stoat_core::fuzzing::{parse_timeout, Manifest};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Manifest::parse(text);
    let _ = parse_timeout(text);
});
