//! One `--json` run of stoat, checked against the contract's rules for every invocation: JSON
//! lines only, one result and it is last, the schemas hold, the exit status follows the
//! result, no planted console password and no ANSI escape on stdout.

use std::process::Output;
use std::sync::OnceLock;

use serde_json::Value;
use stoat_schemas::validate::Validator;

use crate::PLANTED_PASSWORD;

fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(Validator::new)
}

/// One `--json` invocation, already checked against the contract.
#[derive(Debug)]
pub struct JsonRun {
    pub lines: Vec<Value>,
    pub result: Value,
    pub exit: i32,
    pub stdout: String,
    pub stderr: String,
}

impl JsonRun {
    /// Parses and checks: JSON lines only, exactly one result and it is last, schemas hold,
    /// the exit status follows the result, no planted password anywhere.
    pub fn check(output: Output) -> JsonRun {
        let stdout = String::from_utf8(output.stdout).expect("stdout is UTF-8");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let exit = output.status.code().expect("exited normally");
        assert!(
            !stdout.contains(PLANTED_PASSWORD),
            "console password leaked: {stdout}"
        );
        assert!(
            !stdout.contains('\u{1b}'),
            "ANSI escape on stdout: {stdout}"
        );
        let lines: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
            .collect();
        let results = lines.iter().filter(|l| l["type"] == "result").count();
        assert_eq!(
            results, 1,
            "exactly one result line: {stdout}\nstderr: {stderr}"
        );
        let result = lines.last().unwrap().clone();
        assert_eq!(result["type"], "result", "result is last: {stdout}");
        for line in &lines {
            let problems = validator().validate_line(line);
            assert!(problems.is_empty(), "schema: {problems:?}\nline: {line}");
        }
        let expected_exit = if result["ok"] == true {
            0
        } else if result["error"]["code"] == "usage" {
            2
        } else {
            1
        };
        assert_eq!(
            exit, expected_exit,
            "exit status vs result: {stdout}\nstderr: {stderr}"
        );
        JsonRun {
            lines,
            result,
            exit,
            stdout,
            stderr,
        }
    }

    pub fn ok(&self) -> bool {
        self.result["ok"] == true
    }

    pub fn data(&self) -> &Value {
        assert!(
            self.ok(),
            "expected ok: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        &self.result["data"]
    }

    /// Asserts the run failed with `code` and returns the message.
    pub fn error(&self, code: &str) -> String {
        assert_eq!(
            self.result["ok"], false,
            "expected failure: {}",
            self.stdout
        );
        assert_eq!(self.result["error"]["code"], code, "{}", self.stdout);
        self.result["error"]["message"].as_str().unwrap().to_owned()
    }

    /// Asserts that `path` (a host path that must not leak) is absent from stdout.
    pub fn assert_absent(&self, text: &str) {
        assert!(
            !self.stdout.contains(text),
            "{text:?} leaked: {}",
            self.stdout
        );
    }
}
