//! The `--json` pre-scan (`stoat_cli::scan::split_json_flag`) over arbitrary argv (NUL
//! separates arguments): never panics, never invents or loses a non-`--json` token, and a
//! command line without `--json` is left as it is.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stoat_cli::scan::split_json_flag;

fuzz_target!(|data: &[u8]| {
    let args: Vec<String> = data
        .split(|b| *b == 0)
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    let scanned = split_json_flag(args.clone());
    let others = |list: &[String]| list.iter().filter(|a| *a != "--json").count();
    assert_eq!(
        others(&scanned.args),
        others(&args),
        "non --json tokens kept"
    );
    assert!(scanned.args.len() <= args.len());
    if !args.iter().any(|a| a == "--json") {
        assert!(!scanned.json);
        assert_eq!(scanned.args, args);
    }
});
