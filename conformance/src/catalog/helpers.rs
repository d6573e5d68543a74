//! Owns small helpers the scenarios share: fixtures in one call, reading members.

use serde_json::Value;

use crate::error::HarnessError;
use crate::run::Case;
use crate::sandbox::{Sandbox, VmFixture};

/// A sandbox holding the stopped live VM `work` (with the planted console password).
pub fn with_work(case: &Case<'_>) -> Result<Sandbox, HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work"))?;
    Ok(sandbox)
}

/// A sandbox holding `work`, made to count as running by a fake qemu process.
pub fn with_running_work(case: &Case<'_>) -> Result<Sandbox, HarnessError> {
    let mut sandbox = with_work(case)?;
    sandbox.start_running("work")?;
    Ok(sandbox)
}

/// A sandbox holding the stopped disk VM `work` with an 8G disk.
pub fn with_disk_work(case: &Case<'_>) -> Result<Sandbox, HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::disk("work"))?;
    Ok(sandbox)
}

/// `get <name>` and return `data.vm` (recording a finding when it is not ok).
pub fn get_vm(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
    name: &str,
) -> Result<Option<Value>, HarnessError> {
    let ran = case.json(sandbox, &["get", name])?;
    Ok(case.expect_ok(&ran).and_then(|d| d.get("vm")).cloned())
}

/// Whether `actual` carries everything `expected` names (extra object members allowed).
pub fn holds(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => expected
            .iter()
            .all(|(key, want)| actual.get(key).is_some_and(|got| holds(got, want))),
        (Value::Array(actual), Value::Array(expected)) => {
            actual.len() == expected.len()
                && actual
                    .iter()
                    .zip(expected)
                    .all(|(got, want)| holds(got, want))
        }
        _ => actual == expected,
    }
}

pub fn str_at<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// Asserts `value[pointer]` holds `expected`, recording a finding otherwise. Objects are
/// compared by the members `expected` names, at any depth: the contract lets a producer add
/// fields ("the absence of fields it does not know" is not promised), so an extra member is
/// never a finding. Arrays must match element by element, scalars exactly.
pub fn expect_eq(case: &mut Case<'_>, value: &Value, pointer: &str, expected: &Value) -> bool {
    let actual = value.pointer(pointer);
    if actual.is_some_and(|actual| holds(actual, expected)) {
        return true;
    }
    case.fail(
        pointer,
        format!(
            "expected {expected}, got {}",
            actual
                .map(|v| crate::oracle::excerpt(&v.to_string()))
                .unwrap_or_else(|| "<missing>".into())
        ),
    );
    false
}

/// A small deterministic generator for seeded cases (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64, salt: u64) -> Self {
        Rng((seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)).max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    pub fn bytes(&mut self, max_len: usize) -> Vec<u8> {
        let len = self.below(max_len + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// A loopback port nothing listens on right now, for a VM that `up` starts: its fake QEMU
/// then answers there, as a real QEMU's hostfwd does once it runs.
pub fn unused_port() -> Result<u16, HarnessError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(HarnessError::Sandbox)?;
    Ok(listener.local_addr().map_err(HarnessError::Sandbox)?.port())
}

/// A loopback listener that greets like sshd, for as long as the guard lives.
pub struct Banner {
    pub port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Banner {
    pub fn start() -> Result<Self, HarnessError> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(HarnessError::Sandbox)?;
        let port = listener.local_addr().map_err(HarnessError::Sandbox)?.port();
        listener
            .set_nonblocking(true)
            .map_err(HarnessError::Sandbox)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            use std::io::Write as _;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.6 stoat-conformance\r\n");
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        });
        Ok(Banner { port, stop })
    }
}

impl Drop for Banner {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
