//! The transcript readers: golden case files (`golden::GoldenCase::parse`), saved captures
//! (`Capture`), and the matchers run over whatever parses: never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stoat_conformance::capture::Capture;
use stoat_conformance::golden::{matcher, GoldenCase};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(case) = GoldenCase::parse(text) {
        let _ = case.render();
        for line in &case.lines {
            let mut out = Vec::new();
            matcher::check(line, line, case.extra_keys_allowed(), "", &mut out);
            let _ = matcher::generalize(line, line);
            let _ = matcher::keep_matchers(line, line);
        }
    }
    let _ = serde_json::from_str::<Capture>(text);
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        let _ = matcher::matches(&value, &value, true);
        let _ = matcher::shape_only(&value);
    }
});
