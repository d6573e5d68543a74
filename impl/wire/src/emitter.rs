//! The one writer of JSON lines: events while a command runs, then exactly one result.
//!
//! Every line is one object with `v`, `type` and `cmd`, written whole and flushed at once, with
//! no HTML escaping (serde_json never escapes `<>&`). `ok` appears only on the result, which
//! carries `data` xor `error`. [`Emitter::finish`] consumes the emitter, so ordinary code cannot
//! write a second result; a [`Terminator`] (signal or panic path) writes one only if none was
//! written, and no event is written after the result. Implements json-v3#envelope, json-v3#event-types, json-v3#streaming.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::{WireError, CONTRACT_VERSION};

/// The non-terminal event types stoat emits. Consumers skip types they do not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// A download's byte count (`pull`).
    Progress,
    /// A recipe boundary during `apply`, or during `up` when it applies at boot.
    Stage,
    /// One line of guest output during `apply` or `up`.
    Log,
    /// One declared VM's progress during a project fan-out (`started`, then its outcome).
    Vm,
}

impl EventType {
    /// Returns the `type` string of this event.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Progress => "progress",
            EventType::Stage => "stage",
            EventType::Log => "log",
            EventType::Vm => "vm",
        }
    }
}

#[derive(Serialize)]
struct Line<'a, T: Serialize> {
    v: u32,
    #[serde(rename = "type")]
    kind: &'a str,
    cmd: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a WireError>,
}

struct Inner {
    out: Box<dyn Write + Send>,
    cmd: String,
    finished: bool,
}

impl Inner {
    fn write_line<T: Serialize>(&mut self, line: &Line<'_, T>) -> io::Result<()> {
        // Serialise straight into a buffer over the output rather than into a Vec first: a
        // large exec result then never exists twice in memory. The lock makes the line whole.
        let mut writer = io::BufWriter::with_capacity(64 * 1024, &mut self.out);
        serde_json::to_writer(&mut writer, line).map_err(io::Error::other)?;
        writer.write_all(b"\n")?;
        writer.flush()?;
        drop(writer);
        self.out.flush()
    }

    fn write_result<T: Serialize>(&mut self, outcome: Result<&T, &WireError>) -> io::Result<()> {
        self.finished = true;
        let cmd = std::mem::take(&mut self.cmd);
        let line = Line {
            v: CONTRACT_VERSION,
            kind: "result",
            cmd: &cmd,
            ok: Some(outcome.is_ok()),
            data: outcome.ok(),
            error: outcome.err(),
        };
        let written = self.write_line(&line);
        self.cmd = cmd;
        written
    }
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    // A panic while holding the lock must not stop the panic path from answering.
    inner
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The owner of one invocation's stdout stream; its [`finish`](Emitter::finish) writes THE result.
pub struct Emitter {
    inner: Arc<Mutex<Inner>>,
}

/// A cheap handle that writes events to an emitter's stream (from any thread).
#[derive(Clone)]
pub struct Stream {
    inner: Arc<Mutex<Inner>>,
}

/// The signal and panic path's handle: writes a result only when none has been written.
#[derive(Clone)]
pub struct Terminator {
    inner: Arc<Mutex<Inner>>,
}

impl Emitter {
    /// Returns an emitter writing lines for `cmd` to `out`.
    pub fn new(out: Box<dyn Write + Send>, cmd: impl Into<String>) -> Emitter {
        let inner = Inner {
            out,
            cmd: cmd.into(),
            finished: false,
        };
        Emitter {
            inner: Arc::new(Mutex::new(inner)),
        }
    }

    /// Renames the command every later line reports (e.g. once argv has been parsed).
    pub fn set_cmd(&self, cmd: impl Into<String>) {
        lock(&self.inner).cmd = cmd.into();
    }

    /// Returns a handle for writing events.
    pub fn stream(&self) -> Stream {
        Stream {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Returns a handle for the signal and panic paths.
    pub fn terminator(&self) -> Terminator {
        Terminator {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Writes the result line: `ok:true` with `data`, or `ok:false` with `error`.
    ///
    /// Returns `Ok(false)` without writing when a terminator already answered.
    pub fn finish<T: Serialize>(self, outcome: Result<&T, &WireError>) -> io::Result<bool> {
        let mut inner = lock(&self.inner);
        if inner.finished {
            return Ok(false);
        }
        inner.write_result(outcome).map(|()| true)
    }
}

impl Stream {
    /// Writes one non-terminal event line. After the result it writes nothing and fails.
    pub fn event<T: Serialize>(&self, kind: EventType, data: &T) -> io::Result<()> {
        let mut inner = lock(&self.inner);
        if inner.finished {
            return Err(io::Error::other("the result line was already written"));
        }
        let cmd = std::mem::take(&mut inner.cmd);
        let line = Line {
            v: CONTRACT_VERSION,
            kind: kind.as_str(),
            cmd: &cmd,
            ok: None,
            data: Some(data),
            error: None,
        };
        let written = inner.write_line(&line);
        inner.cmd = cmd;
        written
    }
}

impl Terminator {
    /// Writes a failed result if no result was written yet; returns whether it wrote one.
    pub fn terminate(&self, error: &WireError) -> bool {
        let mut inner = lock(&self.inner);
        if inner.finished {
            return false;
        }
        inner.write_result::<()>(Err(error)).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use serde_json::{json, Value};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl Shared {
        fn lines(&self) -> Vec<Value> {
            let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
            assert!(text.ends_with('\n'));
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        }
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn result_line_has_ok_and_data_only() {
        let out = Shared::default();
        let emitter = Emitter::new(Box::new(out.clone()), "ls");
        assert!(emitter.finish::<Value>(Ok(&json!({"vms": []}))).unwrap());
        assert_eq!(
            out.lines(),
            vec![json!({"v":3,"type":"result","cmd":"ls","ok":true,"data":{"vms":[]}})]
        );
    }

    #[test]
    fn error_result_has_no_data() {
        let out = Shared::default();
        let emitter = Emitter::new(Box::new(out.clone()), "up");
        let err = WireError::new(ErrorCode::NotFound, "not found: nope");
        emitter.finish::<()>(Err(&err)).unwrap();
        assert_eq!(
            out.lines(),
            vec![json!({"v":3,"type":"result","cmd":"up","ok":false,
                        "error":{"code":"not_found","message":"not found: nope"}})]
        );
    }

    #[test]
    fn events_carry_no_ok_and_stop_after_the_result() {
        let out = Shared::default();
        let emitter = Emitter::new(Box::new(out.clone()), "apply");
        let stream = emitter.stream();
        stream
            .event(EventType::Stage, &json!({"recipe":"xfce"}))
            .unwrap();
        emitter.finish::<Value>(Ok(&json!({}))).unwrap();
        assert!(stream
            .event(EventType::Log, &json!({"line":"late"}))
            .is_err());
        let lines = out.lines();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            json!({"v":3,"type":"stage","cmd":"apply","data":{"recipe":"xfce"}})
        );
        assert_eq!(lines[1]["type"], "result");
    }

    #[test]
    fn terminator_answers_once_and_finish_then_writes_nothing() {
        let out = Shared::default();
        let emitter = Emitter::new(Box::new(out.clone()), "pull");
        let terminator = emitter.terminator();
        assert!(terminator.terminate(&WireError::new(ErrorCode::Canceled, "interrupted")));
        assert!(!terminator.terminate(&WireError::internal("again")));
        assert!(!emitter.finish::<Value>(Ok(&json!({}))).unwrap());
        let lines = out.lines();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["error"]["code"], "canceled");
    }

    #[test]
    fn no_html_escaping_and_one_newline_per_line() {
        let out = Shared::default();
        let emitter = Emitter::new(Box::new(out.clone()), "exec");
        emitter
            .finish::<Value>(Ok(&json!({"stdout": "<html>&amp;\nsecond\n"})))
            .unwrap();
        let text = out.text();
        assert!(text.contains("<html>&amp;"));
        assert_eq!(text.matches('\n').count(), 1);
    }
}
