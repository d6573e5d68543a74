//! Owns [`Sut`]: the system under test (any executable plus fixed leading args) and spawning
//! it in a sandbox with a cleared environment, a timeout (the whole process group is killed
//! by its id), captured stdout/stderr and optional stdin.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::capture::{Bytes, Capture, Ending};
use crate::error::HarnessError;

/// The executable under test and its fixed leading arguments.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sut {
    pub program: PathBuf,
    pub leading: Vec<String>,
}

/// What to feed the SUT on stdin.
#[derive(Clone, Debug, Default)]
pub enum StdinPlan {
    /// `/dev/null`.
    #[default]
    Null,
    /// A pipe holding these bytes, closed after; the harness keeps the read end and reports
    /// how many bytes the SUT left unread (a command that must not read stdin leaves all).
    Watched(Vec<u8>),
}

/// One spawn request.
#[derive(Clone, Debug)]
pub struct SpawnRequest<'a> {
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub cwd: &'a Path,
    pub stdin: StdinPlan,
    pub timeout: Duration,
    pub json: bool,
    /// A signal to send the SUT (its pid alone, as a supervisor or `kill` does) while it runs.
    pub signal: Option<SignalPlan>,
}

/// A signal sent to the SUT while it runs, the first time `ready` holds.
#[derive(Clone)]
pub struct SignalPlan {
    pub signal: i32,
    /// Polled every 10 ms from the spawn on: what the SUT has visibly reached (a fake tool
    /// called, a pidfile written), never a guess at how long it takes.
    pub ready: std::sync::Arc<dyn Fn() -> bool + Send + Sync>,
    /// How long `ready` may take to hold; past it, or once the SUT exited, nothing is sent.
    pub within: Duration,
    /// Run once the signal was sent (a fake holding the SUT at work is let go).
    pub then: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for SignalPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalPlan")
            .field("signal", &self.signal)
            .field("within", &self.within)
            .finish()
    }
}

/// A finished process: the capture, and for watched stdin the bytes left unread.
pub struct Spawned {
    pub capture: Capture,
    pub stdin_unread: Option<Vec<u8>>,
    /// With a [`SignalPlan`]: whether the signal was sent.
    pub signaled: Option<bool>,
}

impl Sut {
    /// Builds a SUT from `program arg...`.
    pub fn from_argv(argv: &[String]) -> Option<Self> {
        let (program, leading) = argv.split_first()?;
        Some(Sut {
            program: PathBuf::from(program),
            leading: leading.to_vec(),
        })
    }

    /// Renders the SUT for reports.
    pub fn display(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.leading.iter().map(|a| crate::capture::shell_quote(a)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the SUT once and captures everything.
    #[allow(unsafe_code)]
    pub fn spawn(&self, request: SpawnRequest<'_>) -> Result<Spawned, HarnessError> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.leading)
            .args(request.args)
            .env_clear()
            .envs(request.env.iter().map(|(k, v)| (k, v)))
            .current_dir(request.cwd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // A suite started in the background by a shell (`cmd &`) ignores SIGINT and SIGQUIT,
        // and exec keeps ignored signals: the SUT gets the default dispositions it would have
        // from a terminal, so the signal checks judge it, not how the suite was started.
        // SAFETY: signal(2) is async-signal-safe, and the closure touches nothing else.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGQUIT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut watched_read_end: Option<File> = None;
        let stdin_bytes = match &request.stdin {
            StdinPlan::Null => {
                command.stdin(Stdio::null());
                Vec::new()
            }
            StdinPlan::Watched(bytes) => {
                let (read_end, mut write_end) = pipe().map_err(HarnessError::Sandbox)?;
                write_end.write_all(bytes).map_err(HarnessError::Sandbox)?;
                drop(write_end);
                let for_child = read_end.try_clone().map_err(HarnessError::Sandbox)?;
                command.stdin(Stdio::from(for_child));
                watched_read_end = Some(read_end);
                bytes.clone()
            }
        };
        let started = Instant::now();
        let mut child = command.spawn().map_err(|source| HarnessError::Spawn {
            program: self.program.display().to_string(),
            source,
        })?;
        // The child holds its own copy now; ours is kept only for the unread check.
        drop(command);
        let pid = child.id() as i32;
        let stdout_reader = reader(child.stdout.take());
        let stderr_reader = reader(child.stderr.take());
        let (status_tx, status_rx) = mpsc::channel();
        let exited = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let exited_flag = exited.clone();
        let waiter = std::thread::spawn(move || {
            let status = child.wait();
            exited_flag.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = status_tx.send(status);
        });
        let signaler = request.signal.clone().map(|plan| {
            std::thread::spawn(move || {
                let deadline = Instant::now() + plan.within;
                while Instant::now() < deadline {
                    if exited.load(std::sync::atomic::Ordering::SeqCst) {
                        return false;
                    }
                    if (plan.ready)() {
                        // The child we spawned; the waiter has not reaped it (checked just
                        // above), so the pid is still its own.
                        let sent = rustix::process::Pid::from_raw(pid)
                            .zip(rustix::process::Signal::from_named_raw(plan.signal))
                            .is_some_and(|(pid, signal)| {
                                rustix::process::kill_process(pid, signal).is_ok()
                            });
                        if let Some(then) = &plan.then {
                            then();
                        }
                        return sent;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                false
            })
        });
        let ending = match status_rx.recv_timeout(request.timeout) {
            Ok(Ok(status)) => match (status.code(), status.signal()) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(signal)) => Ending::Signaled(signal),
                _ => Ending::Signaled(0),
            },
            Ok(Err(error)) => {
                return Err(HarnessError::Other(format!("waiting for the SUT: {error}")))
            }
            Err(_) => {
                kill_group(pid);
                let _ = status_rx.recv_timeout(Duration::from_secs(5));
                Ending::TimedOut
            }
        };
        let _ = waiter.join();
        let signaled = signaler.map(|s| s.join().unwrap_or(false));
        // Anything still holding our pipes (a stray grandchild) is in the group: stop it.
        let stdout = collect(stdout_reader, pid);
        let stderr = collect(stderr_reader, pid);
        let stdin_unread = watched_read_end.map(read_remaining);
        Ok(Spawned {
            capture: Capture {
                argv: request.args.to_vec(),
                json: request.json,
                stdin: Bytes(stdin_bytes),
                ending,
                stdout: Bytes(stdout),
                stderr: Bytes(stderr),
                duration_ms: started.elapsed().as_millis() as u64,
            },
            stdin_unread,
            signaled,
        })
    }
}

fn pipe() -> std::io::Result<(File, File)> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    Ok((File::from(read), File::from(write)))
}

fn read_remaining(mut file: File) -> Vec<u8> {
    if let Ok(flags) = rustix::fs::fcntl_getfl(&file) {
        let _ = rustix::fs::fcntl_setfl(&file, flags | rustix::fs::OFlags::NONBLOCK);
    }
    let mut out = Vec::new();
    let _ = file.read_to_end(&mut out);
    out
}

type Reader = mpsc::Receiver<Vec<u8>>;

fn reader<R: std::io::Read + Send + 'static>(source: Option<R>) -> Reader {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = Vec::new();
        if let Some(mut source) = source {
            let _ = source.read_to_end(&mut buffer);
        }
        let _ = tx.send(buffer);
    });
    rx
}

fn collect(reader: Reader, pid: i32) -> Vec<u8> {
    match reader.recv_timeout(Duration::from_secs(3)) {
        Ok(bytes) => bytes,
        Err(_) => {
            kill_group(pid);
            reader
                .recv_timeout(Duration::from_secs(2))
                .unwrap_or_default()
        }
    }
}

/// Kills the process group the SUT leads (its id is the SUT's pid).
fn kill_group(pid: i32) {
    // The group we created for this spawn.
    if let Some(group) = rustix::process::Pid::from_raw(pid).filter(|_| pid > 1) {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

/// The stoat-fake binary next to the running executable, if it exists.
pub fn default_fakes() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let candidate = exe.parent()?.join("stoat-fake");
    candidate.exists().then_some(candidate)
}

/// A bare program name is looked up on PATH now, because the SUT runs with a sandbox PATH.
pub fn resolve_program(program: &Path) -> PathBuf {
    if program.components().count() > 1 {
        return std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| program.to_path_buf())
}
