//! The mutant kit passes SIGINT and SIGTERM on to the SUT it wraps, and ends as the SUT
//! ended: a signal sent to the kit's pid (what the SIGNAL.* checks send) reaches the SUT,
//! whose answer still comes out, and a SUT killed by the signal leaves the kit killed by it.

use std::io::{BufRead as _, BufReader, Read as _};
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, Stdio};

/// Starts `mutate --op extra-field -- /bin/sh -c SCRIPT`; returns the child once the SUT
/// printed `ready` (so its trap, if any, is set).
fn wrapped(
    script: &str,
    answer: &str,
) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stoat-conformance"))
        .args([
            "mutate",
            "--op",
            "extra-field",
            "--",
            "/bin/sh",
            "-c",
            script,
        ])
        .env("ANSWER", answer)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the kit starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("a first line");
    assert_eq!(first.trim(), "ready", "the wrapped shell's first line");
    (child, stdout)
}

fn signal(child: &std::process::Child, signal: i32) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a pid");
    let signal = rustix::process::Signal::from_named_raw(signal).expect("a signal");
    rustix::process::kill_process(pid, signal).expect("kill");
}

#[test]
fn a_signal_to_the_kit_reaches_the_sut_and_its_answer_comes_out() {
    for (sig, name) in [(libc::SIGINT, "INT"), (libc::SIGTERM, "TERM")] {
        let answer = serde_json::json!({"v": 3, "type": "result", "cmd": "wait", "ok": false,
            "error": {"code": "canceled", "message": name}})
        .to_string();
        let script = format!(
            "trap 'printf \"%s\\n\" \"$ANSWER\"; exit 1' {name}; echo ready; while :; do sleep 0.05; done"
        );
        let (mut child, mut stdout) = wrapped(&script, &answer);
        signal(&child, sig);
        let mut rest = String::new();
        stdout
            .read_to_string(&mut rest)
            .expect("the rest of stdout");
        let status = child.wait().expect("the kit exits");
        assert_eq!(status.code(), Some(1), "SIG{name}: the SUT's own status");
        let answer: serde_json::Value =
            serde_json::from_str(rest.trim()).expect("the SUT's answer, one JSON line");
        assert_eq!(answer["error"]["code"], "canceled", "SIG{name}");
        assert_eq!(
            answer["error"]["message"], name,
            "SIG{name}: the SUT saw it"
        );
    }
}

#[test]
fn a_sut_killed_by_the_signal_leaves_the_kit_killed_by_it() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // No trap: the shell dies of the signal (a shell that ignores SIGINT only does so
        // when started in the background, which this one is not).
        let (mut child, mut stdout) = wrapped("echo ready; while :; do sleep 0.05; done", "");
        signal(&child, sig);
        let mut rest = String::new();
        stdout
            .read_to_string(&mut rest)
            .expect("the rest of stdout");
        let status = child.wait().expect("the kit exits");
        assert_eq!(status.signal(), Some(sig), "the kit ends as the SUT did");
        assert_eq!(rest, "", "nothing was written after the signal");
    }
}
