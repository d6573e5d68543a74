//! A blocking QMP client on the `qapi` crate's synchronous API. It owns the
//! socket, the greeting and capabilities handshake, deadlines, and turning
//! every failure into a typed [`QemuError`]. It must not decide policy (when
//! to quit, how long `down` waits): callers do.
//!
//! Why qapi's sync API and not its tokio one: both were tried against QEMU
//! 10.0.2 (greeting, qmp_capabilities, query-status, screendump png,
//! human-monitor-command, system_powerdown, quit) and both work; the CLI is
//! synchronous, so the sync API avoids a runtime. Two things qapi does not do
//! are done here: deadlines (a connect that cannot hang on a full backlog,
//! socket read/write timeouts) and a clean error when QEMU closes the socket
//! before its greeting (qapi would panic there).
//! See docs/decisions/qmp-client.md.

use std::io::{self, BufRead, BufReader, ErrorKind};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use qapi::{qmp, ExecuteError};
#[cfg(any(test, feature = "fuzzing"))]
use serde_json::Value;
#[cfg(any(test, feature = "fuzzing"))]
use std::io::Write;

use super::error::QemuError;

type Transport = qapi::Stream<BufReader<UnixStream>, UnixStream>;

/// The guest's run state as `query-status` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg(any(test, feature = "fuzzing"))]
pub struct RunStatus {
    /// True when all vCPUs are runnable.
    pub running: bool,
    /// QEMU's RunState name: `running`, `paused`, `shutdown`, `prelaunch`...
    pub status: String,
}

/// The image format of a screendump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScreenFormat {
    Png,
}

/// One QMP connection, past the capabilities handshake.
pub struct Qmp {
    session: qapi::Qmp<Transport>,
    socket: PathBuf,
    timeout: Duration,
    qemu_version: String,
}

impl std::fmt::Debug for Qmp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Qmp")
            .field("socket", &self.socket)
            .field("qemu_version", &self.qemu_version)
            .finish()
    }
}

/// `execute(name, args)` needs a qapi Command whose answer is any JSON value;
/// only its `Ok` type is used (the request line is written by hand).
#[derive(serde::Serialize)]
#[cfg(any(test, feature = "fuzzing"))]
struct AnyReply;

#[cfg(any(test, feature = "fuzzing"))]
impl qapi::Command for AnyReply {
    type Ok = Value;
    const NAME: &'static str = "";
    const ALLOW_OOB: bool = false;
}

impl Qmp {
    /// Connects to a QMP socket and negotiates capabilities. `timeout` bounds
    /// every later read and write too. QEMU serves one QMP client at a time:
    /// while another is connected this ends in `MonitorTimeout`.
    pub fn connect(socket: &Path, timeout: Duration) -> Result<Qmp, QemuError> {
        let unreachable = |reason: String| QemuError::MonitorUnreachable {
            socket: socket.to_path_buf(),
            reason,
        };
        let stream = connect_within(socket, timeout).map_err(|error| match error.kind() {
            ErrorKind::TimedOut => QemuError::MonitorTimeout {
                command: "connect".into(),
                after: timeout,
            },
            _ => unreachable(error.to_string()),
        })?;
        let setup = |stream: &UnixStream| -> io::Result<UnixStream> {
            stream.set_read_timeout(Some(timeout))?;
            stream.set_write_timeout(Some(timeout))?;
            stream.try_clone()
        };
        let reader = setup(&stream).map_err(|error| unreachable(error.to_string()))?;
        let mut session = qapi::Qmp::new(qapi::Stream::new(BufReader::new(reader), stream));

        // qapi panics on EOF before the greeting; look first.
        match session.inner_mut().fill_buf() {
            Ok([]) => {
                return Err(unreachable(
                    "QEMU closed the connection before its greeting".into(),
                ))
            }
            Ok(_) => {}
            Err(error) => return Err(map_io(socket, "the greeting", timeout, error)),
        }
        let greeting = session
            .handshake()
            .map_err(|error| map_execute(socket, "qmp_capabilities", timeout, error))?;
        let triple = &greeting.version.qemu;
        let qemu_version = format!("{}.{}.{}", triple.major, triple.minor, triple.micro);
        Ok(Qmp {
            session,
            socket: socket.to_path_buf(),
            timeout,
            qemu_version,
        })
    }

    /// Bounds later reads and writes by `timeout` instead of the one given at connect: for a
    /// command whose work grows with the guest (savevm writes the guest's RAM), which the
    /// monitor answers only when done.
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), QemuError> {
        let stream = self.session.inner_mut().get_ref_read().get_ref();
        stream
            .set_read_timeout(Some(timeout))
            .and_then(|()| stream.set_write_timeout(Some(timeout)))
            .map_err(|error| QemuError::MonitorUnreachable {
                socket: self.socket.clone(),
                reason: error.to_string(),
            })?;
        self.timeout = timeout;
        Ok(())
    }

    /// QEMU's version from the greeting, e.g. `10.0.2`.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn qemu_version(&self) -> &str {
        &self.qemu_version
    }

    /// Runs any QMP command; `args` must be a JSON object or `Value::Null`.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn execute(&mut self, name: &str, args: Value) -> Result<Value, QemuError> {
        let mut request = serde_json::json!({ "execute": name });
        if !args.is_null() {
            request["arguments"] = args;
        }
        let line = format!("{request}\n");
        let sent = self
            .session
            .inner_mut()
            .write_all(line.as_bytes())
            .and_then(|()| self.session.inner_mut().flush());
        if let Err(error) = sent {
            return Err(map_io(&self.socket, name, self.timeout, error));
        }
        self.session
            .read_response::<AnyReply>()
            .map_err(|error| map_execute(&self.socket, name, self.timeout, error))
    }

    #[cfg(any(test, feature = "fuzzing"))]
    pub fn query_status(&mut self) -> Result<RunStatus, QemuError> {
        let info = self.typed("query-status", &qmp::query_status {})?;
        // RunState's serde name is QEMU's own spelling ("running", "paused"...).
        let status = match serde_json::to_value(info.status) {
            Ok(Value::String(name)) => name,
            other => format!("{other:?}"),
        };
        Ok(RunStatus {
            running: info.running,
            status,
        })
    }

    /// Presses the ACPI power button; the guest decides what happens next.
    pub fn system_powerdown(&mut self) -> Result<(), QemuError> {
        self.typed("system_powerdown", &qmp::system_powerdown {})
            .map(drop)
    }

    /// Asks QEMU to exit now. QEMU may close the socket before (or instead of)
    /// answering; that counts as success.
    pub fn quit(&mut self) -> Result<(), QemuError> {
        match self.typed("quit", &qmp::quit {}) {
            Ok(_) | Err(QemuError::MonitorUnreachable { .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Writes the primary display to `path` (a new file; QEMU opens it, so
    /// the path is seen from QEMU's side, and QEMU runs in `/`: pass it absolute).
    pub fn screendump(&mut self, path: &Path, format: ScreenFormat) -> Result<(), QemuError> {
        let filename = path.to_str().ok_or_else(|| QemuError::InvalidOptionValue {
            what: "the screenshot path",
            value: path.to_string_lossy().into_owned(),
            reason: "is not valid UTF-8",
        })?;
        let format = match format {
            ScreenFormat::Png => qmp::ImageFormat::png,
        };
        let command = qmp::screendump {
            filename: filename.to_string(),
            device: None,
            head: None,
            format: Some(format),
        };
        self.typed("screendump", &command).map(drop)
    }

    /// Runs a human-monitor command and returns its text (QEMU ends it with
    /// `\r\n`). HMP reports most failures as text, not as a QMP error: see
    /// [`Qmp::hmp_silent`].
    pub fn hmp(&mut self, command_line: &str) -> Result<String, QemuError> {
        let command = qmp::human_monitor_command {
            command_line: command_line.to_string(),
            cpu_index: None,
        };
        self.typed("human-monitor-command", &command)
    }

    /// For HMP commands that print nothing on success (`savevm`, `loadvm`,
    /// `delvm`): any text is QEMU refusing, returned as `MonitorRejected`.
    pub fn hmp_silent(&mut self, command_line: &str) -> Result<(), QemuError> {
        let text = self.hmp(command_line)?;
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let desc = text.strip_prefix("Error: ").unwrap_or(text).to_string();
        Err(QemuError::MonitorRejected {
            command: command_line.to_string(),
            class: "HmpError".into(),
            desc,
        })
    }

    fn typed<C: qapi::Command>(&mut self, name: &str, command: &C) -> Result<C::Ok, QemuError> {
        self.session
            .execute(command)
            .map_err(|error| map_execute(&self.socket, name, self.timeout, error))
    }
}

/// `UnixStream::connect` blocks without limit when the listener's backlog is
/// full (QEMU listens with a backlog of 1 and serves one client at a time).
/// A non-blocking connect says EAGAIN instead, and is retried until `timeout`.
fn connect_within(socket: &Path, timeout: Duration) -> io::Result<UnixStream> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let address = SockAddr::unix(socket)?;
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let attempt = Socket::new(Domain::UNIX, Type::STREAM, None)?;
        attempt.set_nonblocking(true)?;
        match attempt.connect(&address) {
            Ok(()) => {
                attempt.set_nonblocking(false)?;
                return Ok(UnixStream::from(std::os::fd::OwnedFd::from(attempt)));
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                if std::time::Instant::now() >= deadline {
                    return Err(ErrorKind::TimedOut.into());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => return Err(error),
        }
    }
}

fn map_execute(socket: &Path, command: &str, timeout: Duration, error: ExecuteError) -> QemuError {
    match error {
        ExecuteError::Qapi(rejection) => QemuError::MonitorRejected {
            command: command.to_string(),
            class: format!("{:?}", rejection.class),
            desc: rejection.desc,
        },
        ExecuteError::Io(error) => map_io(socket, command, timeout, error),
    }
}

fn map_io(socket: &Path, command: &str, timeout: Duration, error: io::Error) -> QemuError {
    match error.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => QemuError::MonitorTimeout {
            command: command.to_string(),
            after: timeout,
        },
        // serde_json's errors arrive as InvalidData: the peer is not speaking QMP
        // (or sent an event newer than qapi's schema).
        ErrorKind::InvalidData => QemuError::MonitorProtocol {
            detail: format!("{command}: {error}"),
        },
        ErrorKind::UnexpectedEof
        | ErrorKind::BrokenPipe
        | ErrorKind::ConnectionReset
        | ErrorKind::ConnectionAborted => QemuError::MonitorUnreachable {
            socket: socket.to_path_buf(),
            reason: format!("connection closed during {command}"),
        },
        _ => QemuError::MonitorUnreachable {
            socket: socket.to_path_buf(),
            reason: format!("{command}: {error}"),
        },
    }
}

#[cfg(test)]
mod tests {
    //! A scripted fake QMP server on a real unix socket: each test says what
    //! the "QEMU" sends and checks what the client makes of it.
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixListener;
    use std::thread::JoinHandle;

    const GREETING: &str = r#"{"QMP": {"version": {"qemu": {"micro": 2, "minor": 0, "major": 10}, "package": "Debian"}, "capabilities": ["oob"]}}"#;

    /// Serves one connection: sends the greeting (unless `greeting` is None),
    /// then for each request line answers with the next scripted reply lines.
    fn fake_qemu(
        dir: &Path,
        greeting: Option<&'static str>,
        replies: Vec<Vec<&'static str>>,
    ) -> (PathBuf, JoinHandle<Vec<String>>) {
        let socket = dir.join("qmp.sock");
        let listener = UnixListener::bind(&socket).expect("bind");
        let handle = std::thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            let mut writer = stream.try_clone().expect("clone");
            let mut reader = BufReader::new(stream);
            let mut seen = Vec::new();
            let Some(greeting) = greeting else {
                return seen;
            };
            writeln!(writer, "{greeting}").expect("greeting");
            for reply in replies {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                seen.push(line.trim().to_string());
                for out in reply {
                    let _ = writeln!(writer, "{out}");
                }
            }
            seen
        });
        (socket, handle)
    }

    const OK: &str = r#"{"return": {}}"#;

    fn json(text: &str) -> Value {
        serde_json::from_str(text).expect("test JSON")
    }
    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn greeting_capabilities_then_query_status_skipping_events() {
        let dir = tempfile::tempdir().expect("tempdir");
        let event = r#"{"timestamp": {"seconds": 1, "microseconds": 2}, "event": "RESUME"}"#;
        let status = r#"{"return": {"status": "running", "running": true}}"#;
        let (socket, server) = fake_qemu(
            dir.path(),
            Some(GREETING),
            vec![vec![OK], vec![event, status]],
        );
        let mut qmp = Qmp::connect(&socket, SECOND).expect("connect");
        assert_eq!(qmp.qemu_version(), "10.0.2");
        assert_eq!(
            qmp.query_status().expect("status"),
            RunStatus {
                running: true,
                status: "running".into()
            }
        );
        drop(qmp);
        let seen = server.join().expect("server");
        assert_eq!(
            json(&seen[0]),
            json(r#"{"execute":"qmp_capabilities","arguments":{}}"#)
        );
        assert_eq!(
            json(&seen[1]),
            json(r#"{"execute":"query-status","arguments":{}}"#)
        );
    }

    #[test]
    fn an_error_reply_is_rejected_with_class_and_desc() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = r#"{"error": {"class": "GenericError", "desc": "failed to open file '/x/y.png': No such file or directory"}}"#;
        let (socket, server) = fake_qemu(dir.path(), Some(GREETING), vec![vec![OK], vec![error]]);
        let mut qmp = Qmp::connect(&socket, SECOND).expect("connect");
        match qmp.screendump(Path::new("/x/y.png"), ScreenFormat::Png) {
            Err(QemuError::MonitorRejected {
                command,
                class,
                desc,
            }) => {
                assert_eq!(command, "screendump");
                assert_eq!(class, "GenericError");
                assert!(desc.starts_with("failed to open file"));
            }
            other => panic!("expected MonitorRejected, got {other:?}"),
        }
        drop(qmp);
        let seen = server.join().expect("server");
        assert_eq!(
            json(&seen[1]),
            json(r#"{"execute":"screendump","arguments":{"filename":"/x/y.png","format":"png"}}"#)
        );
    }

    #[test]
    fn generic_execute_sends_arguments_and_returns_the_value() {
        let dir = tempfile::tempdir().expect("tempdir");
        let reply = r#"{"return": [{"name": "d0"}]}"#;
        let (socket, server) = fake_qemu(dir.path(), Some(GREETING), vec![vec![OK], vec![reply]]);
        let mut qmp = Qmp::connect(&socket, SECOND).expect("connect");
        let value = qmp
            .execute("query-block", serde_json::json!({"flat": true}))
            .expect("execute");
        assert_eq!(value, serde_json::json!([{"name": "d0"}]));
        drop(qmp);
        let seen = server.join().expect("server");
        assert_eq!(
            json(&seen[1]),
            json(r#"{"execute":"query-block","arguments":{"flat":true}}"#)
        );
    }

    #[test]
    fn hmp_text_and_hmp_silent_failures() {
        let dir = tempfile::tempdir().expect("tempdir");
        let refused = r#"{"return": "Error: Migration is disabled when VirtFS export path '/s' is mounted in the guest using mount_tag 'work'\r\n"}"#;
        let (socket, _server) = fake_qemu(
            dir.path(),
            Some(GREETING),
            vec![
                vec![OK],
                vec![r#"{"return": "VM status: running\r\n"}"#],
                vec![refused],
                vec![r#"{"return": ""}"#],
            ],
        );
        let mut qmp = Qmp::connect(&socket, SECOND).expect("connect");
        assert_eq!(
            qmp.hmp("info status").expect("hmp"),
            "VM status: running\r\n"
        );
        match qmp.hmp_silent("savevm s1") {
            Err(QemuError::MonitorRejected { class, desc, .. }) => {
                assert_eq!(class, "HmpError");
                assert!(desc.starts_with("Migration is disabled"), "{desc}");
            }
            other => panic!("expected MonitorRejected, got {other:?}"),
        }
        assert!(qmp.hmp_silent("delvm s1").is_ok());
    }

    #[test]
    fn quit_counts_a_closed_socket_as_done() {
        let dir = tempfile::tempdir().expect("tempdir");
        let shutdown = r#"{"timestamp": {"seconds": 1, "microseconds": 2}, "event": "SHUTDOWN", "data": {"guest": false, "reason": "host-qmp-quit"}}"#;
        // SHUTDOWN arrives, then the socket closes without a return.
        let (socket, _server) =
            fake_qemu(dir.path(), Some(GREETING), vec![vec![OK], vec![shutdown]]);
        let mut qmp = Qmp::connect(&socket, SECOND).expect("connect");
        assert!(qmp.quit().is_ok());
    }

    #[test]
    fn a_missing_socket_is_unreachable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("qmp.sock");
        assert!(matches!(
            Qmp::connect(&missing, SECOND),
            Err(QemuError::MonitorUnreachable { .. })
        ));
    }

    #[test]
    fn a_socket_nobody_listens_on_is_unreachable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("qmp.sock");
        let listener = UnixListener::bind(&socket).expect("bind");
        // Shut down rather than dropped: a child forked by a concurrent test may hold a copy
        // of the descriptor, and a shut-down listener refuses connections all the same.
        rustix::net::shutdown(&listener, rustix::net::Shutdown::Both).unwrap();
        assert!(matches!(
            Qmp::connect(&socket, SECOND),
            Err(QemuError::MonitorUnreachable { .. })
        ));
    }

    #[test]
    fn eof_before_the_greeting_is_unreachable_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (socket, server) = fake_qemu(dir.path(), None, vec![]);
        let result = Qmp::connect(&socket, SECOND);
        server.join().expect("server");
        assert!(
            matches!(result, Err(QemuError::MonitorUnreachable { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn silence_is_a_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("qmp.sock");
        let listener = UnixListener::bind(&socket).expect("bind");
        // Accepts and says nothing, like QEMU while another client holds QMP.
        // It holds the connection until the client has given up.
        let (client_done, wait_for_client) = std::sync::mpsc::channel::<()>();
        let server = std::thread::spawn(move || {
            let accepted = listener.accept();
            let _ = wait_for_client.recv();
            drop(accepted);
        });
        let result = Qmp::connect(&socket, Duration::from_millis(100));
        let _ = client_done.send(());
        server.join().expect("server");
        assert!(
            matches!(result, Err(QemuError::MonitorTimeout { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn a_full_backlog_is_a_timeout_not_a_hang() {
        use socket2::{Domain, SockAddr, Socket, Type};
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("qmp.sock");
        let listener = Socket::new(Domain::UNIX, Type::STREAM, None).expect("socket");
        listener
            .bind(&SockAddr::unix(&socket).expect("addr"))
            .expect("bind");
        listener.listen(0).expect("listen");
        // Never accepted: fill the queue with plain connections first.
        let mut fillers = Vec::new();
        while let Ok(stream) = connect_within(&socket, Duration::from_millis(10)) {
            fillers.push(stream);
            assert!(fillers.len() < 64, "backlog never filled");
        }
        let started = std::time::Instant::now();
        let result = Qmp::connect(&socket, Duration::from_millis(200));
        assert!(
            matches!(result, Err(QemuError::MonitorTimeout { .. })),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_human_monitor_socket_is_a_protocol_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (socket, _server) = fake_qemu(
            dir.path(),
            Some("QEMU 10.0.2 monitor - type 'help' for more information"),
            vec![],
        );
        let result = Qmp::connect(&socket, SECOND);
        assert!(
            matches!(result, Err(QemuError::MonitorProtocol { .. })),
            "{result:?}"
        );
    }
}
