//! The conformance oracle over arbitrary stdout bytes and exit statuses: it judges, never
//! panics (docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;
use stoat_conformance::capture::{Capture, Ending};
use stoat_conformance::oracle::{Canaries, Canary, Context, Oracle};

fuzz_target!(|data: &[u8]| {
    let (ending, stdout) = match data.split_first() {
        Some((&first, rest)) if first >= 250 => (Ending::Signaled(i32::from(first - 250)), rest),
        Some((&first, rest)) => (Ending::Exited(i32::from(first % 4)), rest),
        None => (Ending::Exited(0), data),
    };
    let capture = Capture::from_stdout(stdout.to_vec(), ending);
    let context = Context {
        expect_cmd: Some("exec".into()),
        canaries: Canaries {
            paths: vec![Canary {
                label: "STOAT_HOME".into(),
                value: "/tmp/data-x".into(),
            }],
            secrets: vec![Canary {
                label: "console password".into(),
                value: "cpw-x".into(),
            }],
            vm_dirs: vec![Canary {
                label: "a VM's directory".into(),
                value: "/tmp/data-x/vms/work".into(),
            }],
        },
        edition: Default::default(),
    };
    let oracle = Oracle::new();
    let _ = oracle.judge(&capture, &context);
    let _ = oracle.judge(&capture, &Context::default());
});
