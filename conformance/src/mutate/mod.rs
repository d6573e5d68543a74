//! Owns the mutant kit: `stoat-conformance mutate --op OP -- <sut...>` wraps ANY SUT and
//! breaks exactly one rule of the contract in what it answers (or in the argv it passes on).
//! The self-test proves every harmful operator is caught by the checks it names, and that
//! the benign ones (unknown event type, extra field, stderr noise) are NOT flagged.
//!
//! The operators are [`Op`] ([`ops`]: what each is and where it acts); this file runs the
//! SUT and calls each operator's acts at their stage: `argv.rs` before it runs, `line.rs` on
//! every line, `result.rs` on the answer at exit, `around.rs` on the process; `signals.rs`
//! passes SIGINT and SIGTERM on to the SUT it wraps.

mod argv;
mod around;
mod line;
pub mod ops;
mod result;
mod signals;

pub use ops::{operators, About, Op};

use std::io::{Read as _, Write as _};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use ops::Act;
use result::Answer;

/// Runs `sut` with the operator applied; returns the exit status to use.
///
/// Lines before the result are passed on as the SUT writes them (rewritten one by one), so
/// only `stream-buffered` turns a stream into "silent until exit"; the result line and what
/// follows it are held until the SUT exits, then rewritten as a whole.
pub fn run(op: Op, sut: &[String]) -> i32 {
    let Some((program, leading)) = sut.split_first() else {
        eprintln!("mutate: no SUT given");
        return 2;
    };
    let instead = op.acts(|act| match act {
        Act::Instead(answer) => Some(*answer),
        _ => None,
    });
    for answer in instead {
        if let Some(code) = answer(leading) {
            return code;
        }
    }
    let forwarded = op
        .acts(|act| match act {
            Act::Argv(change) => Some(*change),
            _ => None,
        })
        .fold(leading.to_vec(), |args, change| change(args));
    let mut stdin_bytes = None;
    if op
        .acts(|act| matches!(act, Act::PipeStdin).then_some(()))
        .next()
        .is_some()
    {
        let mut buffer = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut buffer);
        stdin_bytes = Some(buffer);
    }
    let stdin_lines = op
        .acts(|act| match act {
            Act::StdinLine(answer) => Some(*answer),
            _ => None,
        })
        .next();
    let buffered = op
        .acts(|act| matches!(act, Act::Buffer).then_some(()))
        .next()
        .is_some();
    let first_line = op
        .acts(|act| match act {
            Act::FirstLine(write) => Some(*write),
            _ => None,
        })
        .next();
    let mut command = Command::new(program);
    command
        .args(&forwarded)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    command.stdin(if stdin_bytes.is_some() || stdin_lines.is_some() {
        Stdio::piped()
    } else {
        Stdio::inherit()
    });
    // Before the spawn: a signal that comes while the SUT starts is held, not lost.
    signals::pass_on_to_sut();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("mutate: cannot run {program}: {error}");
            return 1;
        }
    };
    signals::sut_started(child.id());
    if let Some(bytes) = stdin_bytes {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(&bytes);
        }
    } else if let Some(answer) = stdin_lines {
        if let Some(stdin) = child.stdin.take() {
            std::thread::spawn(move || pass_stdin_lines(stdin, answer));
        }
    }
    let mut held: Vec<u8> = Vec::new();
    let mut first = true;
    if let Some(out) = child.stdout.take() {
        let mut reader = std::io::BufReader::new(out);
        let mut stdout = std::io::stdout();
        loop {
            let mut raw = Vec::new();
            match std::io::BufRead::read_until(&mut reader, b'\n', &mut raw) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let body = raw.strip_suffix(b"\n").unwrap_or(&raw);
            let line = String::from_utf8_lossy(body).into_owned();
            // Only in front of a JSON stream: human output is not the contract's.
            let cmd = serde_json::from_str::<Value>(&line)
                .ok()
                .and_then(|v| v.get("cmd").and_then(Value::as_str).map(str::to_string));
            if let (true, Some(write), Some(cmd)) = (first, first_line, cmd) {
                let _ = writeln!(stdout, "{}", write(&cmd));
            }
            first = false;
            let streaming = held.is_empty() && !buffered && !is_event(&line, "result");
            if streaming {
                let _ = stdout.write_all(&rewrite_bytes(op, &raw));
                let _ = stdout.flush();
            } else {
                held.extend_from_slice(&raw);
            }
        }
    }
    let status = child.wait().ok();
    signals::sut_gone();
    let code = status.and_then(|s| s.code()).unwrap_or(1);
    let died_of = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    let (tail, code) = rewrite_answer(op, held, code, program, leading);
    let out = rewrite_bytes(op, &tail);
    let out_text = String::from_utf8_lossy(&out).into_owned();
    for before in op.acts(|act| match act {
        Act::BeforeAnswer(before) => Some(*before),
        _ => None,
    }) {
        before(&out_text);
    }
    let _ = std::io::stdout().write_all(&out);
    let _ = std::io::stdout().flush();
    for after in op.acts(|act| match act {
        Act::AfterAnswer(after) => Some(*after),
        _ => None,
    }) {
        after(&out_text);
    }
    if let Some(signal) = died_of {
        // The SUT died of a signal (no exit status): so does the kit, once its answer is out.
        signals::die_of(signal);
    }
    code
}

/// Passes the kit's stdin on to the SUT one line at a time; what `answer` makes of a line is
/// written to stdout first. The SUT's stdin closes when the kit's does.
fn pass_stdin_lines(mut to_sut: std::process::ChildStdin, answer: fn(&str) -> Option<String>) {
    let mut input = std::io::BufReader::new(std::io::stdin());
    loop {
        let mut raw = Vec::new();
        match std::io::BufRead::read_until(&mut input, b'\n', &mut raw) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(raw.strip_suffix(b"\n").unwrap_or(&raw)).into_owned();
        if let Some(reply) = answer(&text) {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{reply}");
            let _ = stdout.flush();
        }
        if to_sut.write_all(&raw).and_then(|_| to_sut.flush()).is_err() {
            return;
        }
    }
}

/// Rewrites the JSON lines of `bytes`; anything else (human output, exact guest bytes)
/// passes through byte for byte, its final newline or lack of one included.
fn rewrite_bytes(op: Op, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for segment in bytes.split_inclusive(|b| *b == b'\n') {
        let (body, newline) = match segment.strip_suffix(b"\n") {
            Some(body) => (body, true),
            None => (segment, false),
        };
        if serde_json::from_slice::<Value>(body).is_err() {
            out.extend_from_slice(segment);
            continue;
        }
        let rewritten = rewrite_line(op, &String::from_utf8_lossy(body)).join("\n");
        out.extend_from_slice(rewritten.as_bytes());
        if newline {
            out.push(b'\n');
        }
    }
    out
}

/// Rewrites one line on its way out (event lines as they stream, the rest at exit).
fn rewrite_line(op: Op, line: &str) -> Vec<String> {
    let Ok(mut value) = serde_json::from_str::<Value>(line) else {
        return vec![line.to_string()];
    };
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let rewrite = op
        .acts(|act| match act {
            Act::Line(rewrite) => Some(*rewrite),
            _ => None,
        })
        .next();
    rewrite
        .and_then(|rewrite| rewrite(&mut value, &kind, line))
        .unwrap_or_else(|| vec![line.to_string()])
}

/// Hands the answer (the held lines from the result on) to the operator's result acts;
/// without a result line the bytes and the status pass unchanged.
fn rewrite_answer(
    op: Op,
    stdout: Vec<u8>,
    code: i32,
    program: &str,
    args: &[String],
) -> (Vec<u8>, i32) {
    let text = String::from_utf8_lossy(&stdout).into_owned();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let Some(at) = lines.iter().rposition(|l| is_event(l, "result")) else {
        return (stdout, code);
    };
    let Ok(result) = serde_json::from_str::<Value>(&lines[at]) else {
        return (stdout, code);
    };
    let cmd = result
        .get("cmd")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let ok = result.get("ok").and_then(Value::as_bool);
    let error_code = result
        .pointer("/error/code")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut answer = Answer {
        lines,
        at,
        result,
        cmd,
        ok,
        error_code,
        code,
        args,
        program,
    };
    for rewrite in op.acts(|act| match act {
        Act::Result(rewrite) => Some(*rewrite),
        _ => None,
    }) {
        rewrite(&mut answer);
    }
    let mut out = answer.lines.join("\n").into_bytes();
    if !out.is_empty() {
        out.push(b'\n');
    }
    (out, answer.code)
}

fn is_event(line: &str, kind: &str) -> bool {
    serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v.get("type").cloned())
        == Some(json!(kind))
}
