//! Owns the fake `xorriso`: writes a small file for every `-o X`/`-outdev X` and for every
//! `-extract SRC DST`, so kernel extraction and seed-ISO builds "work".

use super::keygen::value_after;
use super::script::{FakeCall, FakeScript};
use super::{log, ssh};

pub fn run(args: &[String]) -> i32 {
    let script = FakeScript::load();
    log::append(&FakeCall {
        tool: "xorriso".into(),
        argv: args.to_vec(),
        ..Default::default()
    });
    if let Some(rule) = script.find("xorriso", args) {
        if rule.exit.unwrap_or(0) != 0 || rule.stdout.is_some() || rule.stderr.is_some() {
            return ssh::answer(rule);
        }
    }
    for flag in ["-o", "-outdev"] {
        if let Some(path) = value_after(args, flag) {
            let _ = std::fs::write(path, b"fake iso9660 image written by stoat-fake xorriso\n");
        }
    }
    let mut index = 0;
    while index < args.len() {
        if args[index] == "-extract" && index + 2 < args.len() {
            let _ = std::fs::write(
                &args[index + 2],
                format!("fake extract of {}\n", args[index + 1]),
            );
            index += 3;
        } else {
            index += 1;
        }
    }
    0
}
