//! vm.toml loading (`VmConfig::parse`): never panics, and whatever parses renders to TOML
//! that parses back to the same config.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stoat_core::fuzzing::VmConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = VmConfig::parse(text) {
        let again = VmConfig::parse(&config.to_toml()).expect("rendered vm.toml parses");
        assert_eq!(again, config, "vm.toml round trip");
    }
});
