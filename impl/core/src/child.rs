//! The short-lived host tools stoat runs and waits for (qemu-img, xorriso, scp, exec's ssh,
//! ssh-keygen, git):
//! how they are started, stopped and told about a cancel, so that `canceled` tells the truth.
//!
//! Each tool runs in its own process group, so a Ctrl-C sent to stoat's group reaches stoat
//! alone and stoat decides; it dies with stoat (a SIGKILLed stoat leaves no tool behind,
//! still writing); and it is registered while it runs, so a cancel ([`stop_all`], called by
//! the binary's signal handling) forwards SIGTERM to every running tool, then SIGKILL to
//! the ones that ignore it. A tool started after the cancel is not started at all. The
//! caller hears [`RunError::Canceled`] only once its tool has ended: what the tool finished
//! before it was stopped (exit 0) is reported as done, not canceled.

use rustix::process::{self, Pid, Signal};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Running tools, by PID (each is its own process group's leader unless it shares stoat's).
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// Set once by [`stop_all`]: from then on no new tool starts.
static STOPPING: AtomicBool = AtomicBool::new(false);
/// How many [`Finishing`] guards are held: work that must run to its end before the answer.
static FINISHING: AtomicUsize = AtomicUsize::new(0);

/// The most of one captured stream kept in memory, in bytes (docs/decisions/runtime.md
/// "Guest-fed buffers"): a captured stream comes back with at most one byte more than this,
/// and that byte is how a caller tells a stream that went on (and was cut) from one that
/// filled the limit exactly. The rest is read and dropped, so the tool never blocks on a
/// full pipe. Every tool but a guest's command prints far less.
pub const CAPTURE_LIMIT: usize = 8 << 20;

/// How long a tool has between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// Which process group a tool runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Its own: only stoat's forwarding reaches it.
    Own,
    /// Stoat's: for a tool that reads the terminal (an interactive exec), which it can only
    /// do from the foreground group. Still stopped by [`stop_all`].
    Shared,
}

/// Why a tool gave no answer.
#[derive(Debug)]
pub enum RunError {
    /// It could not be started (not found, not executable...).
    Spawn(std::io::Error),
    /// The work was cancelled: the tool was stopped (and has ended), or never started.
    Canceled,
}

impl RunError {
    /// The stoat error for this failure; `what` says what was being run ("run qemu-img").
    pub fn into_error(self, what: &str) -> crate::Error {
        match self {
            RunError::Spawn(e) => crate::Error::io(what, e),
            RunError::Canceled => crate::Error::Canceled,
        }
    }
}

/// Runs `command` to the end and collects its output (stdin is whatever the caller set;
/// stdout and stderr are captured).
pub fn output(command: &mut Command, group: Group) -> Result<Output, RunError> {
    collect(command, group, None, false)
}

/// [`output`] for a tool that must not outlive `limit` (a login attempt whose guest went
/// quiet): it is killed then, and stopped by a cancel like any other.
pub fn output_within(command: &mut Command, limit: Duration) -> Result<Output, RunError> {
    collect(command, Group::Own, Some(limit), false)
}

/// [`output`] for a tool that undoes what a cancelled one started (e.g. stopping a guest
/// command): it runs even after a cancel, its end is never reported as canceled, and it is
/// killed if it is still running after `limit` (the cancel must still answer).
pub fn cleanup_output(command: &mut Command, limit: Duration) -> Result<Output, RunError> {
    collect(command, Group::Own, Some(limit), true)
}

fn collect(
    command: &mut Command,
    group: Group,
    limit: Option<Duration>,
    cleanup: bool,
) -> Result<Output, RunError> {
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = start(command, group, cleanup)?;
    if let Some(limit) = limit {
        let pid = child.id() as i32;
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            let running = lock();
            if running.contains(&pid) {
                // A registered child's group, not yet reaped (the lock is held, and `finish`
                // unregisters before it reaps).
                if let Some(group) = Pid::from_raw(pid) {
                    let _ = process::kill_process_group(group, Signal::KILL);
                }
            }
        });
    }
    let out_reader = read_to_end(child.stdout.take());
    let err_reader = read_to_end(child.stderr.take());
    // A cancelled tool's pipes may outlive it (an ssh multiplexing client hands them to its
    // master, which keeps them until the guest command ends): the cancel answers once the
    // tool itself has ended, without waiting for their end.
    let status = finish(&mut child, cleanup)?;
    Ok(Output {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    })
}

fn read_to_end<R: std::io::Read + Send + 'static>(
    pipe: Option<R>,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        use std::io::Read as _;
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe
                .by_ref()
                .take(CAPTURE_LIMIT as u64 + 1)
                .read_to_end(&mut bytes);
            let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        }
        bytes
    })
}

/// Runs `command` to the end with the caller's stdin and stdout, collecting its stderr: for
/// a tool whose stdout or stdin is the user's own data (`cp -`), whose complaint still
/// belongs in stoat's error.
pub fn status_and_stderr(
    command: &mut Command,
    group: Group,
) -> Result<(ExitStatus, Vec<u8>), RunError> {
    command.stderr(std::process::Stdio::piped());
    let mut child = start(command, group, false)?;
    let err_reader = read_to_end(child.stderr.take());
    let status = finish(&mut child, false)?;
    Ok((status, err_reader.join().unwrap_or_default()))
}

/// Runs `command` to the end with the caller's stdin and stdout, handing its stderr pipe to
/// `consume` on a thread of its own as it runs: for `exec` in a terminal, whose guest output
/// must stream while stoat still reads what ssh itself said.
pub fn status_consuming_stderr<T: Send + 'static>(
    command: &mut Command,
    group: Group,
    consume: impl FnOnce(std::process::ChildStderr) -> T + Send + 'static,
) -> Result<(ExitStatus, Option<T>), RunError> {
    command.stderr(std::process::Stdio::piped());
    let mut child = start(command, group, false)?;
    let reader = child
        .stderr
        .take()
        .map(|pipe| std::thread::spawn(move || consume(pipe)));
    let status = finish(&mut child, false)?;
    Ok((status, reader.and_then(|thread| thread.join().ok())))
}

/// Starts and registers the tool, unless a cancel came first (a cleanup tool starts anyway).
fn start(command: &mut Command, group: Group, cleanup: bool) -> Result<Child, RunError> {
    if group == Group::Own {
        command.process_group(0);
    }
    die_with_stoat(command);
    let mut running = lock();
    if STOPPING.load(Ordering::SeqCst) && !cleanup {
        return Err(RunError::Canceled);
    }
    let child = command.spawn().map_err(RunError::Spawn)?;
    running.push(child.id() as i32);
    Ok(child)
}

/// Makes the child get SIGKILL when the thread that starts it ends (stoat killed included).
#[allow(unsafe_code)] // pre_exec (docs/decisions/unsafe.md)
fn die_with_stoat(command: &mut Command) {
    let parent = process::getpid().as_raw_pid();
    // SAFETY: in the child only async-signal-safe calls (prctl, getppid, _exit) run before
    // exec.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                // Stoat died before the line above: nobody is waiting for this tool.
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Waits for the tool to end; unregisters it before it is reaped, so a forwarded signal can
/// never reach a reused PID.
fn finish(child: &mut Child, cleanup: bool) -> Result<ExitStatus, RunError> {
    let pid = child.id() as i32;
    wait_without_reaping(pid);
    lock().retain(|p| *p != pid);
    let status = child.wait().map_err(RunError::Spawn)?;
    if STOPPING.load(Ordering::SeqCst) && !status.success() && !cleanup {
        return Err(RunError::Canceled);
    }
    Ok(status)
}

fn wait_without_reaping(pid: i32) {
    let Some(pid) = Pid::from_raw(pid) else {
        return;
    };
    // Our own child, left waitable (NOWAIT) for `Child::wait` to reap.
    let options = process::WaitIdOptions::EXITED | process::WaitIdOptions::NOWAIT;
    while let Err(rustix::io::Errno::INTR) = process::waitid(process::WaitId::Pid(pid), options) {}
}

/// Held around work that must run to its end before a cancelled command answers: undoing
/// what it started without a tool of its own (`up` stopping the QEMU it launched, apply
/// waiting for its ssh to go), or a step that cannot stop half-way and decides what the
/// answer is (QEMU's launch, which either starts a VM or not; rm's delete once the VM has
/// left its name). While one is held, or a tool runs, the binary waits for the command's
/// own answer (up to its long grace) instead of answering `canceled` for it.
#[must_use = "the guard marks the work only while it lives"]
pub struct Finishing(());

impl Drop for Finishing {
    fn drop(&mut self) {
        FINISHING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Marks such work in progress until the guard is dropped (see [`Finishing`]).
pub fn finishing() -> Finishing {
    FINISHING.fetch_add(1, Ordering::SeqCst);
    Finishing(())
}

/// Whether [`Finishing`] work is in progress: the command has committed to an answer of its
/// own, which follows that work.
pub fn finishing_now() -> bool {
    FINISHING.load(Ordering::SeqCst) > 0
}

/// Whether a tool runs or [`Finishing`] work is in progress: a cancelled command that is
/// neither is blocked in stoat itself (on a read, say) or about to answer.
pub fn busy() -> bool {
    FINISHING.load(Ordering::SeqCst) > 0 || !lock().is_empty()
}

/// Whether a cancel has begun (waits elsewhere, such as for a lock, give up on it).
pub fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

fn lock() -> std::sync::MutexGuard<'static, Vec<i32>> {
    RUNNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The cancel, forwarded: no tool starts from now on; every running one gets SIGTERM, and
/// SIGKILL if it is still running [`TERM_GRACE`] later. Returns once all have ended (or
/// been sent SIGKILL). Called from the signal-handling thread.
pub fn stop_all() {
    STOPPING.store(true, Ordering::SeqCst);
    signal_all(Signal::TERM);
    let deadline = Instant::now() + TERM_GRACE;
    while Instant::now() < deadline {
        if lock().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal_all(Signal::KILL);
}

fn signal_all(signal: Signal) {
    for pid in lock().iter().filter_map(|pid| Pid::from_raw(*pid)) {
        // A registered child, not yet reaped (see `finish`). Its group when it leads one; the
        // PID alone when it shares stoat's group.
        let _ = if process::getpgid(Some(pid)).ok() == Some(pid) {
            process::kill_process_group(pid, signal)
        } else {
            process::kill_process(pid, signal)
        };
    }
}
