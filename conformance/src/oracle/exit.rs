//! Owns the exit-status rules under `--json`: only 0/1/2, 2 exactly for `usage`, 0 for an
//! ok result (exec and doctor included), non-zero for a failed one, non-zero without a
//! result. Implements json-v3#exit-codes, rule 4 of the consumer contract.

use serde_json::Value;

use super::sink::{Sink, Stream};
use crate::capture::Ending;
use crate::ids;

pub(crate) fn check(stream: &Stream, ending: Ending, sink: &mut Sink) {
    let code = match ending {
        Ending::Exited(code) => code,
        Ending::Signaled(_) | Ending::TimedOut => return,
    };
    sink.touch(ids::EXIT_STATUS_RANGE);
    if !(0..=2).contains(&code) {
        sink.find(
            ids::EXIT_STATUS_RANGE,
            "exit",
            format!("exit status {code}; only 0, 1 and 2 exist"),
        );
    }
    let Some((_, result)) = &stream.result else {
        sink.touch(ids::EXIT_CRASH_NONZERO);
        if code == 0 {
            sink.find(
                ids::EXIT_CRASH_NONZERO,
                "exit",
                "exit 0 without a result line: a consumer cannot tell this from success",
            );
        }
        return;
    };
    let ok = result.get("ok").and_then(Value::as_bool);
    let error_code = result.pointer("/error/code").and_then(Value::as_str);
    let cmd = result.get("cmd").and_then(Value::as_str).unwrap_or("");

    if error_code == Some("usage") || code == 2 {
        sink.touch(ids::EXIT_USAGE_IS_2);
        if error_code == Some("usage") && code != 2 {
            sink.find(
                ids::EXIT_USAGE_IS_2,
                "exit",
                format!("a usage error exited {code}; usage errors exit 2"),
            );
        }
        if code == 2 && error_code != Some("usage") {
            sink.find(
                ids::EXIT_USAGE_IS_2,
                "exit",
                format!(
                    "exit 2 with error code {:?}; 2 is for usage errors only",
                    error_code.unwrap_or("<none>")
                ),
            );
        }
    }
    match ok {
        Some(true) => {
            let healthy = result.pointer("/data/healthy").and_then(Value::as_bool);
            let id = if cmd == "exec" {
                ids::EXIT_EXEC_RAN_IS_0
            } else if cmd == "doctor" && healthy == Some(false) {
                ids::EXIT_DOCTOR_UNHEALTHY_IS_0
            } else {
                ids::EXIT_OK_IS_0
            };
            sink.touch(id);
            if code != 0 {
                let why = match id {
                    ids::EXIT_EXEC_RAN_IS_0 => {
                        let guest = result.pointer("/data/exit_code").map(Value::to_string).unwrap_or_default();
                        format!("exec ran the guest command (guest exit_code {guest}) but stoat exited {code}; under --json it exits 0")
                    }
                    ids::EXIT_DOCTOR_UNHEALTHY_IS_0 => format!("doctor answered healthy:false but exited {code}; the answer is not a failure"),
                    _ => format!("ok:true but exit {code}"),
                };
                sink.find(id, "exit", why);
            }
        }
        Some(false) => {
            sink.touch(ids::EXIT_ERROR_NONZERO);
            if code == 0 {
                sink.find(ids::EXIT_ERROR_NONZERO, "exit", "ok:false but exit 0");
            }
        }
        None => {}
    }
}
