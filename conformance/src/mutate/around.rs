//! Owns the operators that act around the SUT's process rather than on its bytes: a line
//! before its first, and what happens just before and after the answer is written.

use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// `unknown-event-first`: an unknown event type as the very first line.
pub(super) fn unknown_event_first(cmd: &str) -> String {
    json!({"v": 3, "type": "heartbeat", "cmd": cmd, "data": {}}).to_string()
}

/// When the answer in `out` is a clone's ok result: its source's name, the clone's name and
/// the data root the SUT ran with.
fn clone_that_answered_ok(out: &str) -> Option<(String, String, std::path::PathBuf)> {
    let result = last_json(out)?;
    if result.get("cmd") != Some(&json!("clone")) || result.get("ok") != Some(&json!(true)) {
        return None;
    }
    let name = |pointer: &str| {
        result
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Some((
        name("/data/source")?,
        name("/data/vm/name")?,
        std::env::var_os("STOAT_HOME")?.into(),
    ))
}

/// `clone-forwards-contradict`: after a clone that answered forwards_copied:false, give the
/// clone the source's stored forwards anyway (copied between the two vm.toml files).
pub(super) fn clone_forwards_contradict(out: &str) {
    let Some((source, clone, root)) = clone_that_answered_ok(out) else {
        return;
    };
    let read = |name: &str| -> Option<toml::Table> {
        std::fs::read_to_string(root.join(name).join("vm.toml"))
            .ok()?
            .parse()
            .ok()
    };
    let (Some(from), Some(mut to)) = (read(&source), read(&clone)) else {
        return;
    };
    if let Some(forwards) = from.get("forwards") {
        to.insert("forwards".into(), forwards.clone());
        let _ = std::fs::write(root.join(&clone).join("vm.toml"), to.to_string());
    }
}

/// `clone-forwards-contradict-answer`, once a clone answered ok: marks the clone with its
/// source's name (`argv::clone_forwards_late` acts on the mark at the clone's next change).
pub(super) fn clone_forwards_mark(out: &str) {
    let Some((source, clone, root)) = clone_that_answered_ok(out) else {
        return;
    };
    let dir = root.join(clone);
    let _ = std::fs::write(dir.join(super::argv::CLONE_MARK), source);
}

/// `stdout-held-open`: after `up`, a child that inherits stdout and outlives the kit, as a
/// daemon that kept it would.
pub(super) fn stdout_held_open(out: &str) {
    if result_cmd(out).as_deref() == Some("up") {
        let _ = Command::new("/bin/sleep")
            .arg("6")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
    }
}

/// `write-home`: a file written under `$HOME`, outside every area a command may write.
pub(super) fn write_home(_out: &str) {
    if let Some(home) = std::env::var_os("HOME") {
        let _ = std::fs::write(std::path::Path::new(&home).join(".stoat-mutant"), b"x");
    }
}

/// `stderr-noise`: a line on stderr, which is outside the contract.
pub(super) fn stderr_noise(_out: &str) {
    eprintln!("note: stderr noise from the mutant kit");
}

fn result_cmd(out: &str) -> Option<String> {
    last_json(out).and_then(|v| v.get("cmd").and_then(Value::as_str).map(str::to_string))
}

/// The last line of `out` that is JSON: the result line of a well-formed answer.
fn last_json(out: &str) -> Option<Value> {
    out.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
}
