//! Every way a stoat operation fails, and THE one table from failures to contract codes.
//!
//! `Error::code` is an exhaustive match with no catch-all arm: a new variant does not compile
//! until someone decides its code. Messages are human-readable and never carry the console
//! password. Implements json-v3#error-codes.
//!
//! A message that tells its reader what to set or run next keeps that as data ([`Said`]):
//! [`Error::message_in`] spells it in a front end's words, [`Error::message`] and `Display` in
//! core's own, which name no flag.

use stoat_wire::{ErrorCode, WireError};

use crate::hint::{Op, Plain, Said, Setting, Spelling, Step, Value};

/// A stoat failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not found: {name}")]
    NotFound { name: String },
    /// `create --image` names neither a catalog id nor a file stoat can find (upstream's
    /// `not_found`; `pull`, whose subject is the catalog alone, says `no_such_image`).
    #[error("not found: no catalog entry or local image called {id:?}")]
    ImageNotFound { id: String },
    /// A named thing other than a VM (a recipe, a guest OS) does not exist.
    #[error("no {kind} called {name:?}; known: {known}")]
    UnknownName {
        kind: &'static str,
        name: String,
        known: String,
    },
    /// A recipe manifest or guest definition file that does not parse or validate.
    #[error("{file}: {reason}")]
    BadManifest { file: String, reason: String },
    #[error("broken vm.toml: {name}: {reason}")]
    Broken { name: String, reason: String },
    #[error("name taken: {name} already exists")]
    NameTaken { name: String },
    #[error("invalid spec: {0}")]
    InvalidSpec(String),
    #[error("image not downloaded: {id}; run `stoat pull {id}` first")]
    ImageNotDownloaded { id: String },
    #[error("recipe not applicable: {0}")]
    RecipeNotApplicable(String),
    /// A recipe's script (or its interpreter's bootstrap) failed in the guest.
    #[error("{}", recipe_failed(.vm, .recipe, .detail, &Plain))]
    RecipeFailed {
        vm: String,
        recipe: String,
        detail: String,
    },
    /// The VM's last apply failed, read back later (`wait --until applied`): the code and
    /// message it was reported with then, so both answers agree.
    #[error("{vm}'s last apply failed: {message}")]
    LastApplyFailed {
        vm: String,
        code: ErrorCode,
        message: String,
    },
    #[error("in use: {0}")]
    InUse(String),
    #[error("git is required: {0}")]
    GitRequired(String),
    #[error("not running: {name} is not running")]
    NotRunning { name: String },
    #[error("already running: {name} is running; stop it first")]
    AlreadyRunning { name: String },
    /// A pull would replace the file a running VM made before the image store names itself.
    #[error("already running: {vm} runs on isos/{file}, which this pull would replace; stop {vm} and pull again (it then keeps its own copy)")]
    ImageHeldByRunningVm { vm: String, file: String },
    #[error("no disk: {name} is a live VM and has no qcow2 disk")]
    NoDisk { name: String },
    #[error("immutable field: {0}")]
    ImmutableField(String),
    #[error("disk shrink: {name}'s disk is {current}; it can only grow, not become {requested}")]
    DiskShrink {
        name: String,
        current: String,
        requested: String,
    },
    #[error("cannot reach: {0}")]
    CannotReach(String),
    #[error("unknown log: {0:?}; use console or apply")]
    UnknownLog(String),
    #[error("qemu missing: {0}")]
    QemuMissing(String),
    #[error("kvm unusable: {0}")]
    KvmUnusable(String),
    #[error("qemu failed to start: {0}")]
    QemuStartFailed(String),
    /// A host port the VM needs (its ssh port or a forward) cannot be bound: found before
    /// QEMU runs, so nothing is started.
    #[error("{}", port_busy(.vm, *.port, .what, .reason, .fix, &Plain))]
    PortBusy {
        vm: String,
        port: u16,
        what: &'static str,
        reason: String,
        fix: Said,
    },
    #[error("qemu monitor unreachable: {0}")]
    MonitorUnreachable(String),
    #[error("qemu monitor rejected the command: {0}")]
    MonitorRejected(String),
    #[error("{name} has no console password set")]
    NoConsolePassword { name: String },
    #[error("share invalid: {0}")]
    ShareInvalid(String),
    #[error("filesystem does not support extended attributes: {0}")]
    NoXattr(String),
    #[error("screenshot failed: {0}")]
    ScreenshotFailed(String),
    #[error("download failed: {0}")]
    DownloadFailed(String),
    #[error("download stalled: {0}")]
    DownloadStalled(String),
    #[error("checksum mismatch: {0}")]
    ChecksumMismatch(String),
    #[error("no such image: {id}")]
    NoSuchImage { id: String },
    #[error("timeout: {0}")]
    Timeout(String),
    #[error("canceled")]
    Canceled,
    #[error("{0}")]
    Usage(String),
    #[error("confirmation required: {0}")]
    ConfirmationRequired(String),
    #[error("access denied: {0}")]
    AccessDenied(String),
    #[error("rate limited: {0}")]
    RateLimited(String),
    #[error("lock out of date: {0}")]
    LockOutOfDate(String),
    #[error("host unsupported: {0}")]
    HostUnsupported(String),
    /// A host I/O failure: what was being done, and the OS error.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// A host tool (qemu-img, ssh-keygen, scp...) failed.
    #[error("{tool}: {message}")]
    Tool { tool: String, message: String },
    #[error("internal: {0}")]
    Internal(String),
    /// A QEMU or QMP failure, kept whole as the source; [`Error::code`] reads its kind.
    #[error("{}", qemu_message(.0))]
    Qemu(#[source] crate::qemu::QemuError),
    /// A failure whose text names a setting or a follow-up step (see [`Error::spelled`]).
    #[error("{}", .0.text_in(&Plain))]
    Spelled(Box<Spelled>),
}

/// The variant a spelled failure is, and its text before a front end spells it.
#[derive(Debug)]
pub struct Spelled {
    /// The variant (its code and its prefix, such as "invalid spec: "), given the text.
    make: fn(String) -> Error,
    said: Said,
}

impl Spelled {
    /// The failure as its variant says it, the text in `spelling`'s words.
    fn text_in(&self, spelling: &dyn Spelling) -> String {
        (self.make)(self.said.render(spelling)).to_string()
    }
}

/// The result of a stoat operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Returns the contract code of this failure: THE one table.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::NotFound { .. } | Error::UnknownName { .. } | Error::ImageNotFound { .. } => {
                ErrorCode::NotFound
            }
            Error::BadManifest { .. } => ErrorCode::Broken,
            Error::Broken { .. } => ErrorCode::Broken,
            Error::NameTaken { .. } => ErrorCode::NameTaken,
            Error::InvalidSpec(_) => ErrorCode::InvalidSpec,
            Error::ImageNotDownloaded { .. } => ErrorCode::ImageNotDownloaded,
            Error::RecipeNotApplicable(_) => ErrorCode::RecipeNotApplicable,
            // The recipe could not run to the end on this VM: the nearest code the contract has.
            Error::RecipeFailed { .. } => ErrorCode::RecipeNotApplicable,
            Error::LastApplyFailed { code, .. } => *code,
            Error::InUse(_) => ErrorCode::InUse,
            Error::GitRequired(_) => ErrorCode::GitRequired,
            Error::NotRunning { .. } => ErrorCode::NotRunning,
            Error::AlreadyRunning { .. } | Error::ImageHeldByRunningVm { .. } => {
                ErrorCode::AlreadyRunning
            }
            Error::NoDisk { .. } => ErrorCode::NoDisk,
            Error::ImmutableField(_) => ErrorCode::ImmutableField,
            Error::DiskShrink { .. } => ErrorCode::DiskShrink,
            Error::CannotReach(_) => ErrorCode::CannotReach,
            Error::UnknownLog(_) => ErrorCode::UnknownLog,
            Error::QemuMissing(_) => ErrorCode::QemuMissing,
            Error::KvmUnusable(_) => ErrorCode::KvmUnusable,
            Error::QemuStartFailed(_) | Error::PortBusy { .. } => ErrorCode::QemuStartFailed,
            Error::MonitorUnreachable(_) => ErrorCode::MonitorUnreachable,
            Error::MonitorRejected(_) => ErrorCode::MonitorRejected,
            Error::NoConsolePassword { .. } => ErrorCode::NoConsolePassword,
            Error::ShareInvalid(_) => ErrorCode::ShareInvalid,
            Error::NoXattr(_) => ErrorCode::NoXattr,
            Error::ScreenshotFailed(_) => ErrorCode::ScreenshotFailed,
            Error::DownloadFailed(_) => ErrorCode::DownloadFailed,
            Error::DownloadStalled(_) => ErrorCode::DownloadStalled,
            Error::ChecksumMismatch(_) => ErrorCode::ChecksumMismatch,
            Error::NoSuchImage { .. } => ErrorCode::NoSuchImage,
            Error::Timeout(_) => ErrorCode::Timeout,
            Error::Canceled => ErrorCode::Canceled,
            Error::Usage(_) => ErrorCode::Usage,
            Error::ConfirmationRequired(_) => ErrorCode::ConfirmationRequired,
            Error::AccessDenied(_) => ErrorCode::AccessDenied,
            Error::RateLimited(_) => ErrorCode::RateLimited,
            Error::LockOutOfDate(_) => ErrorCode::LockOutOfDate,
            Error::HostUnsupported(_) => ErrorCode::HostUnsupported,
            // A file too big to be one stoat parses is bad input, not a host failure.
            Error::Io { source, .. } if crate::bounded::is_too_big(source) => {
                ErrorCode::InvalidSpec
            }
            // A full filesystem is foreseen, not a bug: the v3 table has no code of its own
            // for it, and this one says "fix what was given and retry" (docs/decisions/host.md).
            Error::Io { .. } | Error::Tool { .. } if self.is_no_space() => ErrorCode::InvalidSpec,
            Error::Io { .. } | Error::Tool { .. } | Error::Internal(_) => ErrorCode::Internal,
            Error::Qemu(qemu) => qemu_code(qemu),
            // The variant it stands for decides: the text does not change the code.
            Error::Spelled(spelled) => (spelled.make)(String::new()).code(),
        }
    }

    /// A failure of the variant `make` builds whose text, `said`, names settings or steps
    /// that each front end spells (`Error::spelled(Error::InvalidSpec, said)`).
    pub fn spelled(make: fn(String) -> Error, said: Said) -> Error {
        Error::Spelled(Box::new(Spelled { make, said }))
    }

    /// Returns the error object for the wire, in core's own words.
    pub fn to_wire(&self) -> WireError {
        self.to_wire_in(&Plain)
    }

    /// Returns the error object for the wire, settings and steps in `spelling`'s words.
    pub fn to_wire_in(&self, spelling: &dyn Spelling) -> WireError {
        WireError::new(self.code(), self.message_in(spelling))
    }

    /// The message in core's own words (settings named, never a front end's flag).
    pub fn message(&self) -> String {
        self.message_in(&Plain)
    }

    /// The message as every renderer shows it, settings and steps in `spelling`'s words:
    /// one line (a tool's or a guest's multi-line text folded with "; ", other control
    /// characters made spaces), and a prefix that a wrapped tool message repeats
    /// ("qemu-img: qemu-img: ...") said once.
    pub fn message_in(&self, spelling: &dyn Spelling) -> String {
        let text = tidy(&self.text_in(spelling));
        if self.is_no_space() {
            return format!("{NO_SPACE}: {text}; free space there and try again");
        }
        text
    }

    /// The unfolded text, settings and steps in `spelling`'s words.
    fn text_in(&self, spelling: &dyn Spelling) -> String {
        match self {
            Error::Spelled(spelled) => spelled.text_in(spelling),
            Error::RecipeFailed { vm, recipe, detail } => {
                recipe_failed(vm, recipe, detail, spelling)
            }
            Error::PortBusy {
                vm,
                port,
                what,
                reason,
                fix,
            } => port_busy(vm, *port, what, reason, fix, spelling),
            other => other.to_string(),
        }
    }

    /// Whether the host's filesystem is full (or the user's quota spent): an OS call's
    /// ENOSPC/EDQUOT, or a tool (qemu-img, scp, xorriso) saying so in the OS's words.
    pub fn is_no_space(&self) -> bool {
        match self {
            // The kind too: a wrapped error (a temporary file's, with its path) has no raw
            // OS code of its own but keeps the kind.
            Error::Io { source, .. } => {
                matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
                    || matches!(
                        source.kind(),
                        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
                    )
            }
            Error::Tool { message, .. } => {
                message.contains("No space left on device")
                    || message.contains("Disk quota exceeded")
            }
            _ => false,
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// A recipe failure's message: where to read its output.
fn recipe_failed(vm: &str, recipe: &str, detail: &str, spelling: &dyn Spelling) -> String {
    let log = Step::on(Op::Logs, vm).with(Setting::Which, Some(Value::Text("apply".into())));
    format!(
        "recipe {recipe} failed in {vm}: {detail}; {} shows its output",
        spelling.step(&log)
    )
}

/// A busy port's message, with the fix in `spelling`'s words.
fn port_busy(
    vm: &str,
    port: u16,
    what: &str,
    reason: &str,
    fix: &Said,
    spelling: &dyn Spelling,
) -> String {
    format!(
        "cannot start {vm}: host port {port} ({what}) is in use on 127.0.0.1 ({reason}); {}",
        fix.render(spelling)
    )
}

/// How every full-filesystem message starts, whatever was being written.
pub const NO_SPACE: &str = "no space left on the host's filesystem";

/// Adds context to I/O results.
pub trait IoContext<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Io {
            context: what(),
            source,
        })
    }
}

/// A QEMU failure's place in the one table: its kind picks the contract code.
fn qemu_code(error: &crate::qemu::QemuError) -> ErrorCode {
    use crate::qemu::QemuError as Q;
    match error {
        Q::QemuMissing { .. } => ErrorCode::QemuMissing,
        Q::KvmUnusable { .. } => ErrorCode::KvmUnusable,
        Q::QemuStartFailed { .. } | Q::HostPortTaken { .. } => ErrorCode::QemuStartFailed,
        Q::UnknownAccel { .. } | Q::InvalidOptionValue { .. } => ErrorCode::InvalidSpec,
        Q::MonitorUnreachable { .. } => ErrorCode::MonitorUnreachable,
        Q::MonitorRejected { .. } => ErrorCode::MonitorRejected,
        Q::MonitorTimeout { .. } => ErrorCode::Timeout,
        Q::MonitorProtocol { .. } | Q::Io { .. } => ErrorCode::Internal,
    }
}

/// The message of a QEMU failure. Each kind's own text already says what failed ("QEMU
/// monitor unreachable (...)", "KVM is not usable: ..."), so only the kinds whose text does not
/// get the prefix their code's other errors carry.
fn qemu_message(error: &crate::qemu::QemuError) -> String {
    use crate::qemu::QemuError as Q;
    match error {
        Q::UnknownAccel { .. } | Q::InvalidOptionValue { .. } => format!("invalid spec: {error}"),
        Q::MonitorTimeout { .. } => format!("timeout: {error}"),
        Q::MonitorProtocol { .. } | Q::Io { .. } => format!("internal: {error}"),
        Q::QemuMissing { .. }
        | Q::KvmUnusable { .. }
        | Q::QemuStartFailed { .. }
        | Q::HostPortTaken { .. }
        | Q::MonitorUnreachable { .. }
        | Q::MonitorRejected { .. } => one_line(&error.to_string()),
    }
}

/// See [`Error::message`].
fn tidy(text: &str) -> String {
    let line: String = one_line(text)
        .replace(":; ", ": ")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut segments: Vec<&str> = Vec::new();
    for segment in line.split(": ") {
        if segments
            .last()
            .is_some_and(|last| last.trim().eq_ignore_ascii_case(segment.trim()))
        {
            continue;
        }
        segments.push(segment);
    }
    segments.join(": ")
}

/// QEMU's own text can span lines; a message is one line.
fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// QEMU failures keep their kind and detail as the error's source (I/O stays I/O).
impl From<crate::qemu::QemuError> for Error {
    fn from(error: crate::qemu::QemuError) -> Error {
        match error {
            crate::qemu::QemuError::Io { context, source } => Error::Io { context, source },
            other => Error::Qemu(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No two neighbouring `": "` segments alike, no line break, no control character.
    fn assert_tidy(message: &str) {
        assert!(!message.chars().any(char::is_control), "{message:?}");
        let segments: Vec<&str> = message.split(": ").collect();
        for pair in segments.windows(2) {
            assert!(
                !pair[0].eq_ignore_ascii_case(pair[1]),
                "doubled {:?} in {message:?}",
                pair[0]
            );
        }
    }

    /// A variant built from its text, with the prefix its message starts with.
    type FromText = (&'static str, fn(String) -> Error);

    #[test]
    fn every_message_is_one_line_and_says_each_prefix_once() {
        let text = |prefix: &str| format!("{prefix}: first line\nsecond\r\n\tthird\x1b[0m\n");
        let with_text: Vec<FromText> = vec![
            ("invalid spec", Error::InvalidSpec),
            ("recipe not applicable", Error::RecipeNotApplicable),
            ("in use", Error::InUse),
            ("git is required", Error::GitRequired),
            ("immutable field", Error::ImmutableField),
            ("cannot reach", Error::CannotReach),
            ("qemu missing", Error::QemuMissing),
            ("kvm unusable", Error::KvmUnusable),
            ("qemu failed to start", Error::QemuStartFailed),
            ("qemu monitor unreachable", Error::MonitorUnreachable),
            ("qemu monitor rejected the command", Error::MonitorRejected),
            ("share invalid", Error::ShareInvalid),
            ("screenshot failed", Error::ScreenshotFailed),
            ("download failed", Error::DownloadFailed),
            ("download stalled", Error::DownloadStalled),
            ("checksum mismatch", Error::ChecksumMismatch),
            ("timeout", Error::Timeout),
            ("usage", Error::Usage),
            ("confirmation required", Error::ConfirmationRequired),
            ("access denied", Error::AccessDenied),
            ("rate limited", Error::RateLimited),
            ("lock out of date", Error::LockOutOfDate),
            ("host unsupported", Error::HostUnsupported),
            ("internal", Error::Internal),
        ];
        let mut errors: Vec<Error> = with_text
            .into_iter()
            .map(|(prefix, make)| make(text(prefix)))
            .collect();
        errors.extend([
            Error::Tool {
                tool: "qemu-img".into(),
                message: text("qemu-img"),
            },
            Error::io("read x", std::io::Error::other(text("read x"))),
            Error::BadManifest {
                file: "/r/recipe.toml".into(),
                reason: text("/r/recipe.toml"),
            },
            Error::Broken {
                name: "vm".into(),
                reason: text("vm"),
            },
            Error::RecipeFailed {
                vm: "vm".into(),
                recipe: "r".into(),
                detail: text("detail"),
            },
        ]);
        for error in &errors {
            let message = error.message();
            assert_tidy(&message);
            assert!(message.contains("first line; second; third"), "{message:?}");
            assert_eq!(error.to_wire().message, message);
        }
        assert_eq!(
            Error::Tool {
                tool: "qemu-img".into(),
                message: "qemu-img: Could not open 'x'".into()
            }
            .message(),
            "qemu-img: Could not open 'x'"
        );
    }

    /// Names every setting and step in angle brackets, to see where a spelling applies.
    struct Marked;

    impl Spelling for Marked {
        fn setting(&self, setting: Setting, _: Option<&Value>) -> String {
            format!("<{}>", setting.words())
        }
        fn step(&self, step: &Step) -> String {
            format!("<{}>", step.op.words())
        }
    }

    #[test]
    fn a_spelled_failure_keeps_its_code_and_prefix_and_names_no_flag_by_default() {
        // As vm/spec.rs's ram check says it (the error room sits below vm).
        let ram = Error::spelled(
            Error::InvalidSpec,
            Said::text("ram 0 MB is below the minimum of 256 MB (e.g. ")
                .example(Setting::Ram, Value::Number(2048))
                .then(")"),
        );
        assert_eq!(ram.code(), ErrorCode::InvalidSpec);
        assert_eq!(
            ram.message(),
            "invalid spec: ram 0 MB is below the minimum of 256 MB (e.g. ram 2048)"
        );
        assert_eq!(ram.to_string(), ram.message());
        assert_eq!(ram.to_wire().message, ram.message());
        assert!(ram.message_in(&Marked).ends_with("(e.g. <ram>)"));
        let busy = Error::PortBusy {
            vm: "w".into(),
            port: 8080,
            what: "a forward",
            reason: "in use".into(),
            fix: Said::text("or ").step(Step::on(Op::Forward, "w")),
        };
        assert_eq!(busy.code(), ErrorCode::QemuStartFailed);
        assert!(busy.message_in(&Marked).ends_with("; or <forward>"));
        let failed = Error::RecipeFailed {
            vm: "w".into(),
            recipe: "r".into(),
            detail: "exit 1".into(),
        };
        assert_eq!(
            failed.message(),
            "recipe r failed in w: exit 1; the logs operation on w with which apply shows its output"
        );
        assert!(failed
            .message_in(&Marked)
            .ends_with("; <logs> shows its output"));
        for error in [ram, busy, failed] {
            assert!(!error.message().contains("--"), "{error}");
        }
    }

    #[test]
    fn qemu_errors_map_to_their_contract_codes() {
        use crate::qemu::QemuError;
        let cases = [
            (
                QemuError::QemuMissing {
                    binary: "q".into(),
                    reason: "r".into(),
                },
                ErrorCode::QemuMissing,
            ),
            (
                QemuError::QemuStartFailed {
                    stderr: "boom".into(),
                    hint: None,
                },
                ErrorCode::QemuStartFailed,
            ),
            (
                QemuError::KvmUnusable {
                    device: "/dev/kvm".into(),
                    reason: "r".into(),
                },
                ErrorCode::KvmUnusable,
            ),
            (
                QemuError::UnknownAccel { value: "x".into() },
                ErrorCode::InvalidSpec,
            ),
            (
                QemuError::InvalidOptionValue {
                    what: "w",
                    value: "v".into(),
                    reason: "r",
                },
                ErrorCode::InvalidSpec,
            ),
            (
                QemuError::MonitorUnreachable {
                    socket: "/s".into(),
                    reason: "r".into(),
                },
                ErrorCode::MonitorUnreachable,
            ),
            (
                QemuError::MonitorRejected {
                    command: "c".into(),
                    class: "k".into(),
                    desc: "d".into(),
                },
                ErrorCode::MonitorRejected,
            ),
            (
                QemuError::MonitorTimeout {
                    command: "c".into(),
                    after: std::time::Duration::from_secs(1),
                },
                ErrorCode::Timeout,
            ),
            (
                QemuError::MonitorProtocol { detail: "d".into() },
                ErrorCode::Internal,
            ),
        ];
        for (qemu, code) in cases {
            assert_eq!(Error::from(qemu).code(), code);
        }
        let start = Error::from(QemuError::QemuStartFailed {
            stderr: "boom".into(),
            hint: None,
        });
        assert_eq!(start.to_string(), "qemu failed to start: boom");
        // passt that could not listen on a port another program took says so as before.
        let taken = Error::from(QemuError::HostPortTaken {
            port: 2231,
            detail: "Failed to bind any port for '-t 127.0.0.1/2231:22'".into(),
        });
        assert_eq!(taken.code(), ErrorCode::QemuStartFailed);
        assert_eq!(
            taken.message(),
            "qemu failed to start: the network (passt) did not start: \
             Failed to bind any port for '-t 127.0.0.1/2231:22'"
        );
    }
}
