//! stoat.toml loading (`project::Project::parse`: declarations, forwards, params, remote
//! recipes): never panics.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use stoat_core::fuzzing::Project;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = Project::parse(text, Path::new("/srv/myrepo"));
});
