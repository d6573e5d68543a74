//! Owns the mutation operators: [`Op`], one variant each, and [`Op::about`], the one place
//! that says what an operator is called on the command line, what it breaks, which checks
//! must flag it, which scenarios give it something to break, and where it acts (`Act`).

use std::sync::OnceLock;

use serde_json::Value;

use super::result::Answer;
use super::{argv, around, line, result};
use crate::ids;

/// Declares [`Op`] and [`Op::ALL`] from one list, so the two cannot drift apart.
macro_rules! operators {
    ($($op:ident),+ $(,)?) => {
        /// One mutation operator; everything about it is [`Op::about`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Op {
            $($op),+
        }

        impl Op {
            /// Every operator, harmful ones first.
            pub const ALL: &'static [Op] = &[$(Op::$op),+];
        }
    };
}

operators![
    TwoResults,
    ResultNotLast,
    NoResult,
    NoResultExit0,
    ProseLine,
    NullList,
    OkOnEvent,
    OkMissing,
    DataAndError,
    Exit3,
    UsageExit1,
    UsageExit0,
    ErrorExit0,
    OkExit1,
    AnsiRaw,
    AnsiInString,
    LeakDataRoot,
    LeakPassword,
    ExecExitPassthrough,
    ExecLossy,
    ExecOmitEmpty,
    ExecBothFields,
    JsonEatenAfterExec,
    V2,
    WrongCmd,
    DoctorUnhealthyExit1,
    ReadStdin,
    Base64ForUtf8,
    ProgressRepeat,
    EventWithoutData,
    WriteHome,
    LeakPasswordBase64,
    LeakPasswordEscaped,
    LeakPasswordUrl,
    LeakPathInMessage,
    UpdateUnnamed,
    RestoreNoop,
    StreamBuffered,
    StdoutHeldOpen,
    ProgressKib,
    WaitedUs,
    CloneForwardsContradict,
    LsPrefieldDeny,
    AppliedNull,
    ShareInternal,
    RecipePinShort,
    RecipeUpdateStale,
    RecipeRmNoop,
    RecipeListNoPin,
    GitRequiredInternal,
    ShowUnknownInternal,
    RefreshAllCurrent,
    SearchDropsOs,
    MonitorRejectedInternal,
    UpNoApply,
    RecipeNewInternal,
    UpdateRecipesAccepted,
    LeakPasswordLogs,
    LeakPasswordHex,
    LeakPasswordSplitLog,
    LeakVmPathInMessage,
    ByoIsoInVm,
    DryRunRunsRecipes,
    PlanVersionNeverRan,
    LogLinesJoined,
    HealthAlwaysOk,
    SkippedReasonBlank,
    UpdateRamStoredElsewhere,
    ForwardRefusedStored,
    ProjectRmUnconfirmedDeletes,
    CapabilitiesCliEnforced,
    CreateExecAsManage,
    MonitorUnreachableInternal,
    WaitAppliedAsReachable,
    FanoutReversed,
    FanoutProse,
    StatusNoDrift,
    InitRelativePath,
    LsProjectNoKey,
    CliEnforcesAccess,
    ImageMissingNotFound,
    GuestShowOther,
    McpDeniedInternal,
    McpLeakPassword,
    McpLeakDataRoot,
    McpDoctorContract2,
    McpInstallNoop,
    McpDoctorStale,
    McpAnswerNotification,
    McpStrayLine,
    McpVersionOlder,
    McpTextDisagrees,
    McpRateUnlimited,
    CanceledNoResult,
    CanceledExit0,
    CanceledVmStarted,
    UpdatePersistedElsewhere,
    RmKeepsVm,
    ForwardClearUnsaved,
    CreateRaceBothWin,
    SnapshotDeleteKeepsSnapshot,
    CloneForwardsContradictAnswer,
    DownLeavesRunning,
    UpLeavesStopped,
    SnapshotSaveRunningUnsaved,
    UnknownEvent,
    UnknownEventFirst,
    UnknownEventInterleaved,
    ExtraFieldDeep,
    FieldOrder,
    JsonEscapeAll,
    ExtraField,
    StderrNoise,
];

/// The killer of an operator that breaks state across invocations: `stoat-conformance
/// explore` (its histories catch it; tests/explore.rs proves it). One whose history comes
/// within the small budget of `run`'s `EXPLORE.sequential` names that check too.
pub const EXPLORE: &str = "explore";
/// The killer of an operator that breaks only when commands overlap: `stoat-conformance
/// explore --concurrent K` (tests/explore.rs proves it, and that the sequential mode does not).
pub const EXPLORE_CONCURRENT: &str = "explore --concurrent";

/// What one operator is.
#[derive(Clone, Copy, Debug)]
pub struct About {
    /// Its name on the command line (`mutate --op NAME`).
    pub name: &'static str,
    /// The rule it breaks, in a few words ("nothing: ..." for a benign one).
    pub breaks: &'static str,
    /// Checks that must flag it; empty for a benign operator that must pass clean.
    pub caught_by: &'static [&'static str],
    /// The scenarios whose invocations it acts on: what a mutant run must select so the
    /// operator has something to break (the self-tests' model of each operator).
    pub triggers: &'static [&'static str],
    /// Where it acts, in the order a run meets them.
    pub(crate) acts: &'static [Act],
}

impl About {
    /// Whether `explore` must kill this operator (tests/explore.rs proves it); catalog
    /// checks may kill it too ([`About::checks`], the `EXPLORE.*` checks of `run`).
    pub fn explored(&self) -> bool {
        self.caught_by.contains(&EXPLORE) || self.concurrent()
    }

    /// Whether only `explore --concurrent` (or its check in `run`) can kill this operator.
    pub fn concurrent(&self) -> bool {
        self.caught_by.contains(&EXPLORE_CONCURRENT)
    }

    /// The catalog checks that must flag this operator in a `run` (`caught_by` without the
    /// `explore` verb's own names): what the mutant self-tests hold it to.
    pub fn checks(&self) -> Vec<&'static str> {
        self.caught_by
            .iter()
            .copied()
            .filter(|id| *id != EXPLORE && *id != EXPLORE_CONCURRENT)
            .collect()
    }
}

/// Where an operator acts on a run of the SUT it wraps.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Act {
    /// Answers in place of the SUT for the command lines it knows (`None`: the SUT runs).
    Instead(fn(&[String]) -> Option<i32>),
    /// Changes the arguments handed to the SUT.
    Argv(fn(Vec<String>) -> Vec<String>),
    /// Reads the kit's own stdin to the end and hands it to the SUT.
    PipeStdin,
    /// Passes the kit's stdin on to the SUT line by line as it arrives (a conversation, as
    /// `stoat mcp`'s); a line the function returns is written to stdout at once, before the
    /// SUT has even read the line it answers.
    StdinLine(fn(&str) -> Option<String>),
    /// Writes a line of its own before the SUT's first line, given that line's `cmd`.
    FirstLine(fn(&str) -> String),
    /// Holds every line until the SUT exits: a stream that is silent until then.
    Buffer,
    /// Rewrites one JSON line (its value, its `type`, its text) on its way out, events as
    /// they stream and the rest at exit; `None` keeps the line as the SUT wrote it.
    Line(fn(&mut Value, &str, &str) -> Option<Vec<String>>),
    /// Rewrites the result, the lines around it and the exit status once the SUT exited.
    Result(fn(&mut Answer)),
    /// Acts on the rewritten answer just before it is written.
    BeforeAnswer(fn(&str)),
    /// Acts once the answer is written.
    AfterAnswer(fn(&str)),
}

/// Scenarios with an ok answer and a failed one: enough for an operator on any result.
const ANY_ANSWER: &[&str] = &["LS.lists-fixture", "GET.not-found"];

/// Scenarios answering every shape of stream (events, lists, exec bytes, errors, recipes):
/// what a benign operator must leave passing.
const EVERY_SHAPE: &[&str] = &[
    "GET.forwards-shape",
    "FORWARD.set-stopped",
    "APPLY.dry-run-plan",
    "APPLY.streams-stage-log",
    "STREAM.events-before-exit",
    "LEAK.sweep",
    "LS.lists-fixture",
    "GET.vm-status",
    "GET.not-found",
    "USAGE.unknown-command",
    "EXEC.utf8-plain",
    "EXEC.base64-stdout",
    "RM.deletes",
    "GUEST.cmd-is-guest",
    "PULL.progress-monotonic",
    "PULL.progress-bytes",
    "UP.applies-recipes",
    "RECIPE.remote-add-pins",
    "RECIPE.remote-list-row",
    "RECIPE.remote-project-scope",
    "RECIPE.remote-update-moves",
    "RECIPE.remote-rm-in-use",
    "RECIPE.git-required",
    "RECIPE.show-unknown",
    "RECIPE.refresh-statuses",
    "RECIPE.search-index",
    "ERRORS.monitor-rejected",
    // An interrupted command: the kit must pass the signal on and still write the answer.
    "SIGNAL.exec-canceled",
    "SIGNAL.up-canceled",
];

impl Op {
    /// Everything about this operator.
    pub const fn about(self) -> About {
        match self {
            Op::TwoResults => About {
                name: "two-results",
                breaks: "a second result line",
                caught_by: &["ENV.one-result"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::two_results)],
            },
            Op::ResultNotLast => About {
                name: "result-not-last",
                breaks: "an event after the result",
                caught_by: &["ENV.result-last"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::result_not_last)],
            },
            Op::NoResult => About {
                name: "no-result",
                breaks: "the result line dropped (exit 1)",
                caught_by: &["ENV.result-present"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::no_result)],
            },
            Op::NoResultExit0 => About {
                name: "no-result-exit-0",
                breaks: "the result line dropped, exit 0",
                caught_by: &["EXIT.crash-nonzero", "ENV.result-present"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::no_result_exit_0)],
            },
            Op::ProseLine => About {
                name: "prose-line",
                breaks: "a line of prose before the result",
                caught_by: &["ENV.json-lines"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::prose_line)],
            },
            Op::NullList => About {
                name: "null-list",
                breaks: "an empty list emitted as null",
                caught_by: &["LIST.never-null"],
                triggers: &["LS.empty-is-array"],
                acts: &[Act::Result(result::null_list)],
            },
            Op::OkOnEvent => About {
                name: "ok-on-event",
                breaks: "an event carrying ok",
                caught_by: &["ENV.ok-only-on-result"],
                triggers: &["PULL.progress-monotonic", "APPLY.streams-stage-log"],
                acts: &[Act::Result(result::ok_on_event)],
            },
            Op::OkMissing => About {
                name: "ok-missing",
                breaks: "the result without ok",
                caught_by: &["ENV.ok-bool"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::ok_missing)],
            },
            Op::DataAndError => About {
                name: "data-and-error",
                breaks: "data and error together",
                caught_by: &["ENV.data-xor-error"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::data_and_error)],
            },
            Op::Exit3 => About {
                name: "exit-3",
                breaks: "exit 3 instead of 1",
                caught_by: &["EXIT.status-range"],
                triggers: &["GET.not-found"],
                acts: &[Act::Result(result::exit_3)],
            },
            Op::UsageExit1 => About {
                name: "usage-exit-1",
                breaks: "a usage error exiting 1",
                caught_by: &["EXIT.usage-is-2"],
                triggers: &["USAGE.unknown-command"],
                acts: &[Act::Result(result::usage_exit_1)],
            },
            Op::UsageExit0 => About {
                name: "usage-exit-0",
                breaks: "a usage error exiting 0",
                caught_by: &["EXIT.usage-is-2", "EXIT.error-nonzero"],
                triggers: &["USAGE.unknown-command"],
                acts: &[Act::Result(result::usage_exit_0)],
            },
            Op::ErrorExit0 => About {
                name: "error-exit-0",
                breaks: "a failed result exiting 0",
                caught_by: &["EXIT.error-nonzero"],
                triggers: &["GET.not-found"],
                acts: &[Act::Result(result::error_exit_0)],
            },
            Op::OkExit1 => About {
                name: "ok-exit-1",
                breaks: "an ok result exiting 1",
                caught_by: &["EXIT.ok-is-0"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::ok_exit_1)],
            },
            Op::AnsiRaw => About {
                name: "ansi-raw",
                breaks: "ANSI colour around a line",
                caught_by: &["ENV.no-ansi", "ENV.json-lines"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::ansi_raw)],
            },
            Op::AnsiInString => About {
                name: "ansi-in-string",
                breaks: "ANSI colour inside a string value",
                caught_by: &["ENV.no-ansi"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::ansi_in_string)],
            },
            Op::LeakDataRoot => About {
                name: "leak-data-root",
                breaks: "a path under STOAT_HOME in data",
                caught_by: &["LEAK.host-path"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::leak_data_root)],
            },
            Op::LeakPassword => About {
                name: "leak-password",
                breaks: "the console password in data",
                caught_by: &["LEAK.console-password"],
                triggers: &["GET.vm-status"],
                acts: &[Act::Result(result::leak_password)],
            },
            Op::ExecExitPassthrough => About {
                name: "exec-exit-passthrough",
                breaks: "exec --json exiting with the guest's status",
                caught_by: &["EXIT.exec-ran-is-0"],
                triggers: &["EXEC.exit-code"],
                acts: &[Act::Result(result::exec_exit_passthrough)],
            },
            Op::ExecLossy => About {
                name: "exec-lossy",
                breaks: "non-UTF-8 exec output emitted lossily as plain text",
                caught_by: &["EXEC.base64-stdout", "EXEC.base64-stderr"],
                triggers: &["EXEC.base64-stdout", "EXEC.base64-stderr"],
                acts: &[Act::Result(result::exec_lossy)],
            },
            Op::ExecOmitEmpty => About {
                name: "exec-omit-empty",
                breaks: "empty exec streams omitted",
                caught_by: &["EXEC.empty-is-string", "EXEC.empty-streams"],
                triggers: &["EXEC.empty-streams"],
                acts: &[Act::Result(result::exec_omit_empty)],
            },
            Op::ExecBothFields => About {
                name: "exec-both-fields",
                breaks: "a plain field next to its base64 twin",
                caught_by: &["EXEC.stream-exclusive"],
                triggers: &["EXEC.base64-stdout"],
                acts: &[Act::Result(result::exec_both_fields)],
            },
            Op::JsonEatenAfterExec => About {
                name: "json-eaten-after-exec",
                breaks: "--json after exec's VM name taken as stoat's",
                caught_by: &["ARGV.json-after-exec-name", "ARGV.json-before-exec"],
                triggers: &["ARGV.json-after-exec-name", "ARGV.json-before-exec"],
                acts: &[Act::Argv(argv::json_eaten_after_exec)],
            },
            Op::V2 => About {
                name: "v-2",
                breaks: "v:2 on every line",
                caught_by: &["ENV.v-is-3"],
                triggers: ANY_ANSWER,
                acts: &[Act::Line(line::v_2)],
            },
            Op::WrongCmd => About {
                name: "wrong-cmd",
                breaks: "the result naming another cmd",
                caught_by: &["ENV.cmd-matches"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::wrong_cmd)],
            },
            Op::DoctorUnhealthyExit1 => About {
                name: "doctor-unhealthy-exit-1",
                breaks: "doctor exiting 1 when unhealthy",
                caught_by: &["EXIT.doctor-unhealthy-is-0"],
                triggers: &["DOCTOR.unhealthy-exit-0"],
                acts: &[Act::Result(result::doctor_unhealthy_exit_1)],
            },
            Op::ReadStdin => About {
                name: "read-stdin",
                breaks: "stdin consumed (a prompt)",
                caught_by: &["RM.confirmation-required-no-stdin"],
                triggers: &["RM.confirmation-required-no-stdin"],
                acts: &[Act::PipeStdin],
            },
            Op::Base64ForUtf8 => About {
                name: "base64-for-utf8",
                breaks: "base64 for valid UTF-8 output (SHOULD)",
                caught_by: &["EXEC.base64-only-non-utf8"],
                triggers: &["EXEC.utf8-plain"],
                acts: &[Act::Result(result::base64_for_utf8)],
            },
            Op::ProgressRepeat => About {
                name: "progress-repeat",
                breaks: "a progress event repeated with the same percentage",
                caught_by: &["PULL.progress-monotonic"],
                triggers: &["PULL.progress-monotonic"],
                acts: &[Act::Line(line::progress_repeat)],
            },
            Op::EventWithoutData => About {
                name: "event-without-data",
                breaks: "a progress/stage/log event without its data object",
                caught_by: &["ENV.event-data"],
                triggers: &["PULL.progress-monotonic", "APPLY.streams-stage-log"],
                acts: &[Act::Line(line::event_without_data)],
            },
            Op::WriteHome => About {
                name: "write-home",
                breaks: "a file written under HOME although STOAT_HOME is set",
                caught_by: &["SANDBOX.no-writes-outside"],
                triggers: ANY_ANSWER,
                acts: &[Act::AfterAnswer(around::write_home)],
            },
            Op::LeakPasswordBase64 => About {
                name: "leak-password-base64",
                breaks: "the console password base64-encoded in a VM object",
                caught_by: &["LEAK.console-password"],
                triggers: &["GET.vm-status", "LS.lists-fixture"],
                acts: &[Act::Result(result::leak_password_base64)],
            },
            Op::LeakPasswordEscaped => About {
                name: "leak-password-escaped",
                breaks: "the console password JSON-escaped (\\uXXXX) in a VM object",
                caught_by: &["LEAK.console-password"],
                triggers: &["GET.vm-status", "LS.lists-fixture"],
                acts: &[Act::Result(result::leak_password_escaped)],
            },
            Op::LeakPasswordUrl => About {
                name: "leak-password-url",
                breaks: "the console password URL-encoded in a VM object",
                caught_by: &["LEAK.console-password"],
                triggers: &["GET.vm-status", "LS.lists-fixture"],
                acts: &[Act::Result(result::leak_password_url)],
            },
            Op::LeakPathInMessage => About {
                name: "leak-path-in-message",
                breaks: "the data root named in an error message",
                caught_by: &["LEAK.host-path-in-message"],
                triggers: &["GET.not-found"],
                acts: &[Act::Result(result::leak_path_in_message)],
            },
            Op::UpdateUnnamed => About {
                name: "update-unnamed",
                breaks: "update also changing cpus, a field that was not passed (and not reporting it)",
                caught_by: &["STATE.update-unnamed-unchanged"],
                triggers: &["STATE.update-unnamed-unchanged"],
                acts: &[Act::Argv(argv::update_unnamed), Act::Result(result::update_unnamed)],
            },
            Op::RestoreNoop => About {
                name: "restore-noop",
                breaks: "snapshot --restore answering ok and restoring nothing",
                caught_by: &["STATE.snapshot-restore-restores"],
                triggers: &["STATE.snapshot-restore-restores"],
                acts: &[Act::Instead(argv::restore_noop)],
            },
            Op::StreamBuffered => About {
                name: "stream-buffered",
                breaks: "events held back until the process exits",
                caught_by: &["STREAM.events-before-exit"],
                triggers: &["STREAM.events-before-exit"],
                acts: &[Act::Buffer],
            },
            Op::StdoutHeldOpen => About {
                name: "stdout-held-open",
                breaks: "a child left holding stdout open after the process exits",
                caught_by: &["STREAM.eof-at-exit"],
                triggers: &["STREAM.eof-at-exit"],
                acts: &[Act::AfterAnswer(around::stdout_held_open)],
            },
            Op::ProgressKib => About {
                name: "progress-kib",
                breaks: "progress done/total in KiB instead of bytes",
                caught_by: &["PULL.progress-bytes"],
                triggers: &["PULL.progress-bytes"],
                acts: &[Act::Line(line::progress_kib)],
            },
            Op::WaitedUs => About {
                name: "waited-us",
                breaks: "wait's waited_ms in microseconds",
                caught_by: &["WAIT.waited-ms-wall"],
                triggers: &["WAIT.waited-ms-wall"],
                acts: &[Act::Result(result::waited_us)],
            },
            Op::CloneForwardsContradict => About {
                name: "clone-forwards-contradict",
                breaks: "clone storing the source's forwards while answering forwards_copied:false",
                caught_by: &["CLONE.forwards-agree"],
                triggers: &["CLONE.forwards-agree"],
                acts: &[Act::BeforeAnswer(around::clone_forwards_contradict)],
            },
            Op::LsPrefieldDeny => About {
                name: "ls-prefield-deny",
                breaks: "ls giving a VM that predates allow_exec allow_exec:false",
                caught_by: &["LS.allow-exec-prefield"],
                triggers: &["LS.allow-exec-prefield"],
                acts: &[Act::Result(result::ls_prefield_deny)],
            },
            Op::AppliedNull => About {
                name: "applied-null",
                breaks: "apply answering applied: null when nothing ran",
                caught_by: &["APPLY.nothing-to-run"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::applied_null)],
            },
            Op::ShareInternal => About {
                name: "share-internal",
                breaks: "a missing share answered with internal instead of share_invalid",
                caught_by: &["ERRORS.share-invalid"],
                triggers: ANY_ANSWER,
                acts: &[Act::Result(result::share_internal)],
            },
            Op::RecipePinShort => About {
                name: "recipe-pin-short",
                breaks: "recipe add/lock/sync/update answering the 7-character commit instead of the full resolved one",
                caught_by: &["RECIPE.remote-add-pins",
            "RECIPE.remote-lock-sync-keep",
            "RECIPE.remote-update-moves",],
                triggers: &["RECIPE.remote-add-pins", "RECIPE.remote-lock-sync-keep"],
                acts: &[Act::Result(result::recipe_pin_short)],
            },
            Op::RecipeUpdateStale => About {
                name: "recipe-update-stale",
                breaks: "recipe update that keeps every recipe at its old pin (runs a sync instead)",
                caught_by: &["RECIPE.remote-update-moves"],
                triggers: &["RECIPE.remote-update-moves"],
                acts: &[Act::Argv(argv::recipe_update_stale)],
            },
            Op::RecipeRmNoop => About {
                name: "recipe-rm-noop",
                breaks: "recipe rm answering {name, scope} and removing nothing, even a recipe a VM lists",
                caught_by: &["RECIPE.remote-rm", "RECIPE.remote-rm-in-use"],
                triggers: &["RECIPE.remote-rm", "RECIPE.remote-rm-in-use"],
                acts: &[Act::Instead(argv::recipe_rm_noop)],
            },
            Op::RecipeListNoPin => About {
                name: "recipe-list-no-pin",
                breaks: "recipe list rows of remote recipes without source, ref and commit",
                caught_by: &["RECIPE.remote-list-row", "RECIPE.remote-project-scope"],
                triggers: &["RECIPE.remote-list-row", "RECIPE.remote-project-scope"],
                acts: &[Act::Result(result::recipe_list_no_pin)],
            },
            Op::GitRequiredInternal => About {
                name: "git-required-internal",
                breaks: "a missing git answered with internal instead of git_required",
                caught_by: &["RECIPE.git-required"],
                triggers: &["RECIPE.git-required"],
                acts: &[Act::Result(result::git_required_internal)],
            },
            Op::ShowUnknownInternal => About {
                name: "show-unknown-internal",
                breaks: "recipe show of an unknown recipe answered with internal",
                caught_by: &["RECIPE.show-unknown"],
                triggers: &["RECIPE.show-unknown"],
                acts: &[Act::Result(result::show_unknown_internal)],
            },
            Op::RefreshAllCurrent => About {
                name: "refresh-all-current",
                breaks: "recipe refresh calling every file current, a file the user changed included",
                caught_by: &["RECIPE.refresh-statuses"],
                triggers: &["RECIPE.refresh-statuses"],
                acts: &[Act::Result(result::refresh_all_current)],
            },
            Op::SearchDropsOs => About {
                name: "search-drops-os",
                breaks: "recipe search answering every IndexEntry with os: []",
                caught_by: &["RECIPE.search-index"],
                triggers: &["RECIPE.search-index"],
                acts: &[Act::Result(result::search_drops_os)],
            },
            Op::MonitorRejectedInternal => About {
                name: "monitor-rejected-internal",
                breaks: "qemu refusing a monitor command answered with internal instead of monitor_rejected",
                caught_by: &["ERRORS.monitor-rejected"],
                triggers: &["ERRORS.monitor-rejected"],
                acts: &[Act::Result(result::monitor_rejected_internal)],
            },
            Op::UpNoApply => About {
                name: "up-no-apply",
                breaks: "up that never applies the VM's recipes after boot (the reference's --no-apply added to every `up VM`)",
                caught_by: &["UP.applies-recipes"],
                triggers: &["UP.applies-recipes"],
                acts: &[Act::Argv(argv::up_no_apply)],
            },
            Op::RecipeNewInternal => About {
                name: "recipe-new-internal",
                breaks: "recipe new validation answered with internal instead of invalid_spec",
                caught_by: &["ERRORS.recipe-new-invalid"],
                triggers: &["ERRORS.recipe-new-invalid"],
                acts: &[Act::Result(result::recipe_new_internal)],
            },
            Op::UpdateRecipesAccepted => About {
                name: "update-recipes-accepted",
                breaks: "update --recipes accepting a recipe that does not exist (stored, answered ok)",
                caught_by: &["ERRORS.update-recipes-unknown"],
                triggers: &["ERRORS.update-recipes-unknown"],
                acts: &[Act::Instead(argv::update_recipes_accepted)],
            },
            Op::LeakPasswordLogs => About {
                name: "leak-password-logs",
                breaks: "the console password in a line of `logs` (after up of a cloud VM)",
                caught_by: &["LEAK.console-password"],
                triggers: &["LEAK.after-cloud-up"],
                acts: &[Act::Result(result::leak_password_logs)],
            },
            Op::LeakPasswordHex => About {
                name: "leak-password-hex",
                breaks: "the console password hex-encoded in a line of `logs` (after up of a cloud VM)",
                caught_by: &["LEAK.console-password"],
                triggers: &["LEAK.after-cloud-up"],
                acts: &[Act::Result(result::leak_password_hex)],
            },
            Op::LeakPasswordSplitLog => About {
                name: "leak-password-split-log",
                breaks: "the console password split across two consecutive log events (neither half alone is it)",
                caught_by: &["LEAK.console-password"],
                triggers: &["APPLY.streams-stage-log", "UP.applies-recipes"],
                acts: &[Act::Line(line::leak_password_split_log)],
            },
            Op::LeakVmPathInMessage => About {
                name: "leak-vm-path-in-message",
                breaks: "a failed command's error.message naming the VM's monitor socket",
                caught_by: &["LEAK.vm-path-in-message"],
                triggers: &["ERRORS.monitor-unreachable", "CODES.not-running"],
                acts: &[Act::Result(result::leak_vm_path_in_message)],
            },
            Op::ByoIsoInVm => About {
                name: "byo-iso-in-vm",
                breaks: "VM objects carrying iso, a BYO image's absolute host path",
                caught_by: &["LEAK.byo-image-path", "LEAK.host-path"],
                triggers: &["LEAK.byo-image-path", "CREATE.byo-live"],
                acts: &[Act::Result(result::byo_iso_in_vm)],
            },
            Op::DryRunRunsRecipes => About {
                name: "dry-run-runs-recipes",
                breaks: "apply --dry-run running the recipes in the guest before answering its plan",
                caught_by: &["APPLY.dry-run-running"],
                triggers: &["APPLY.dry-run-running"],
                acts: &[Act::Instead(argv::dry_run_runs_recipes)],
            },
            Op::PlanVersionNeverRan => About {
                name: "plan-version-never-ran",
                breaks: "an ApplyPlan version present for a recipe that never ran",
                caught_by: &["APPLY.plan-version-absent"],
                triggers: &["APPLY.plan-version-absent"],
                acts: &[Act::Result(result::plan_version_never_ran)],
            },
            Op::LogLinesJoined => About {
                name: "log-lines-joined",
                breaks: "a recipe's consecutive output lines joined into one log event",
                caught_by: &["APPLY.log-per-line"],
                triggers: &["APPLY.log-per-line"],
                acts: &[Act::Buffer, Act::Result(result::log_lines_joined)],
            },
            Op::HealthAlwaysOk => About {
                name: "health-always-ok",
                breaks: "get reporting health ok (per recipe and aggregate) although the recipe's health check failed",
                caught_by: &["APPLY.health-failed"],
                triggers: &["APPLY.health-failed"],
                acts: &[Act::Result(result::health_always_ok)],
            },
            Op::SkippedReasonBlank => About {
                name: "skipped-reason-blank",
                breaks: "an apply that ran nothing (another apply held the VM) answering skipped_reason \"\"",
                caught_by: &["APPLY.locked-skipped-reason"],
                triggers: &["APPLY.locked-skipped-reason"],
                acts: &[Act::Result(result::skipped_reason_blank)],
            },
            Op::UpdateRamStoredElsewhere => About {
                name: "update-ram-stored-elsewhere",
                breaks: "update --ram N storing N+256 while its answer shows N",
                caught_by: &["STATE.update-read-back"],
                triggers: &["STATE.update-read-back"],
                acts: &[
                    Act::Argv(argv::update_ram_stored_elsewhere),
                    Act::Result(result::update_ram_stored_elsewhere),
                ],
            },
            Op::ForwardRefusedStored => About {
                name: "forward-refused-stored",
                breaks: "a forward refused with invalid_spec (host port under 1024) whose pair is stored anyway",
                caught_by: &["FORWARD.refused-unsaved"],
                triggers: &["FORWARD.refused-unsaved"],
                acts: &[Act::Instead(argv::forward_refused_stored)],
            },
            Op::ProjectRmUnconfirmedDeletes => About {
                name: "project-rm-unconfirmed-deletes",
                breaks: "no-name rm without -y answering confirmation_required after deleting the project's VMs",
                caught_by: &["PROJECT.rm-unconfirmed-keeps"],
                triggers: &["PROJECT.rm-unconfirmed-keeps"],
                acts: &[Act::Instead(argv::project_rm_unconfirmed_deletes)],
            },
            Op::CapabilitiesCliEnforced => About {
                name: "capabilities-cli-enforced",
                breaks: "capabilities.access_policy claiming the CLI enforces agent_access",
                caught_by: &["CAPABILITIES.access-policy"],
                triggers: &["CAPABILITIES.access-policy"],
                acts: &[Act::Result(result::capabilities_cli_enforced)],
            },
            Op::CreateExecAsManage => About {
                name: "create-exec-as-manage",
                breaks: "create's answer mapping a stored allow_exec = true to agent_access manage",
                caught_by: &["CREATE.agent-access-agrees"],
                triggers: &["CREATE.agent-access-agrees"],
                acts: &[Act::Result(result::create_exec_as_manage)],
            },
            Op::MonitorUnreachableInternal => About {
                name: "monitor-unreachable-internal",
                breaks: "a qemu without a monitor socket answered with internal instead of monitor_unreachable",
                caught_by: &["ERRORS.monitor-unreachable"],
                triggers: &["ERRORS.monitor-unreachable"],
                acts: &[Act::Result(result::monitor_unreachable_internal)],
            },
            Op::WaitAppliedAsReachable => About {
                name: "wait-applied-as-reachable",
                breaks: "wait --until applied treated as reachable (answering until: reachable)",
                caught_by: &["WAIT.until-applied"],
                triggers: &["WAIT.until-applied"],
                acts: &[Act::Result(result::wait_applied_as_reachable)],
            },
            Op::FanoutReversed => About {
                name: "fanout-reversed",
                breaks: "a ProjectRun listing the declared VMs in reverse declaration order",
                caught_by: &["PROJECT.fanout-order-skipped", "PROJECT.fanout-commands"],
                triggers: &["PROJECT.fanout-order-skipped", "PROJECT.fanout-commands"],
                acts: &[Act::Result(result::fanout_reversed)],
            },
            Op::FanoutProse => About {
                name: "fanout-prose",
                breaks: "an up/down/apply fan-out writing a human progress line before its ProjectRun (the defect the contract tolerates, which the design rule forbids)",
                caught_by: &["PROJECT.fanout-json-lines"],
                triggers: &["PROJECT.fanout-order-skipped", "PROJECT.fanout-commands"],
                acts: &[Act::Result(result::fanout_prose)],
            },
            Op::StatusNoDrift => About {
                name: "status-no-drift",
                breaks: "status reporting no drift although stoat.toml changed a field",
                caught_by: &["STATUS.drift"],
                triggers: &["STATUS.drift"],
                acts: &[Act::Result(result::status_no_drift)],
            },
            Op::InitRelativePath => About {
                name: "init-relative-path",
                breaks: "init answering a relative path instead of the stoat.toml it wrote",
                caught_by: &["INIT.result"],
                triggers: &["INIT.result"],
                acts: &[Act::Result(result::init_relative_path)],
            },
            Op::LsProjectNoKey => About {
                name: "ls-project-no-key",
                breaks: "ls rows of project VMs without their declaration key (key: \"\")",
                caught_by: &["PROJECT.ls-fields"],
                triggers: &["PROJECT.ls-fields"],
                acts: &[Act::Result(result::ls_project_no_key)],
            },
            Op::CliEnforcesAccess => About {
                name: "cli-enforces-access",
                breaks: "CLI exec refusing a VM whose agent_access is below exec with access_denied (only MCP enforces it)",
                caught_by: &["EXEC.cli-ignores-agent-access"],
                triggers: &["EXEC.cli-ignores-agent-access"],
                acts: &[Act::Instead(argv::cli_enforces_access)],
            },
            Op::ImageMissingNotFound => About {
                name: "image-missing-not-found",
                breaks: "create of a catalog image not yet pulled answered not_found instead of image_not_downloaded",
                caught_by: &["CREATE.image-not-downloaded"],
                triggers: &["CREATE.image-not-downloaded"],
                acts: &[Act::Result(result::image_missing_not_found)],
            },
            Op::GuestShowOther => About {
                name: "guest-show-other",
                breaks: "guest show answering a guest other than the one named",
                caught_by: &["GUEST.show"],
                triggers: &["GUEST.show"],
                acts: &[Act::Result(result::guest_show_other)],
            },
            Op::McpDeniedInternal => About {
                name: "mcp-denied-internal",
                breaks: "an MCP call refused for agent_access answered with internal instead of access_denied",
                caught_by: &["MCP.access-denied"],
                triggers: &["MCP.access-denied"],
                acts: &[Act::Line(line::mcp_denied_internal)],
            },
            Op::McpLeakPassword => About {
                name: "mcp-leak-password",
                breaks: "the console password inside every MCP result",
                caught_by: &["MCP.call-per-class", "MCP.access-denied"],
                triggers: &["MCP.call-per-class", "MCP.access-denied"],
                acts: &[Act::Line(line::mcp_leak_password)],
            },
            Op::McpLeakDataRoot => About {
                name: "mcp-leak-data-root",
                breaks: "every MCP result naming a disk path under the data root",
                caught_by: &["MCP.initialize", "MCP.tools-list", "MCP.call-per-class", "MCP.access-denied"],
                triggers: &["MCP.initialize", "MCP.call-per-class", "MCP.access-denied"],
                acts: &[Act::Line(line::mcp_leak_data_root)],
            },
            Op::McpDoctorContract2 => About {
                name: "mcp-doctor-contract-2",
                breaks: "mcp doctor naming contract 2 while version names 3",
                caught_by: &["MCP.doctor"],
                triggers: &["MCP.doctor"],
                acts: &[Act::Result(result::mcp_doctor_contract_2)],
            },
            Op::McpInstallNoop => About {
                name: "mcp-install-noop",
                breaks: "mcp install answering ok and writing no entry",
                caught_by: &["MCP.install", "MCP.install-current"],
                triggers: &["MCP.install", "MCP.install-current"],
                acts: &[Act::Instead(argv::mcp_install_noop)],
            },
            Op::McpDoctorStale => About {
                name: "mcp-doctor-stale",
                breaks: "mcp doctor calling every entry stale (current: false), the one this binary just wrote included",
                caught_by: &["MCP.install-current"],
                triggers: &["MCP.install", "MCP.install-current"],
                acts: &[Act::Result(result::mcp_doctor_stale)],
            },
            Op::McpAnswerNotification => About {
                name: "mcp-answer-notification",
                breaks: "stoat mcp answering every JSON-RPC notification (a message without an id) with a response of id null",
                caught_by: &["MCP.notification-unanswered"],
                triggers: &["MCP.notification-unanswered"],
                acts: &[Act::StdinLine(line::mcp_answer_notification)],
            },
            Op::McpStrayLine => About {
                name: "mcp-stray-line",
                breaks: "stoat mcp writing a line of prose to stdout before its answer to initialize",
                caught_by: &["MCP.stdout-messages-only"],
                triggers: &["MCP.stdout-messages-only"],
                acts: &[Act::Line(line::mcp_stray_line)],
            },
            Op::McpVersionOlder => About {
                name: "mcp-version-older",
                breaks: "stoat mcp answering initialize with the revision before the one it would have answered (the oldest stays), so a client asking for a revision the server speaks gets an older one",
                caught_by: &["MCP.version-echoed"],
                triggers: &["MCP.version-echoed"],
                acts: &[Act::Line(line::mcp_version_older)],
            },
            Op::McpTextDisagrees => About {
                name: "mcp-text-disagrees",
                breaks: "a tool result whose text block is JSON other than its structuredContent (one member more)",
                caught_by: &["MCP.structured-content-text"],
                triggers: &["MCP.structured-content-text"],
                acts: &[Act::Line(line::mcp_text_disagrees)],
            },
            Op::McpRateUnlimited => About {
                name: "mcp-rate-unlimited",
                breaks: "stoat mcp enforcing no rate bucket: a tool call refused with rate_limited is answered as allowed (that tool's last successful result in the session, under the refused call's id)",
                caught_by: &["MCP.rate-limited"],
                triggers: &["MCP.rate-limited"],
                acts: &[
                    Act::StdinLine(line::mcp_note_tool_call),
                    Act::Line(line::mcp_rate_unlimited),
                ],
            },
            Op::CanceledNoResult => About {
                name: "canceled-no-result",
                breaks: "an interrupted command ending without its canceled result line (exit 1, stdout empty of a result)",
                caught_by: &["SIGNAL.exec-canceled", "SIGNAL.up-canceled"],
                triggers: &["SIGNAL.exec-canceled", "SIGNAL.up-canceled"],
                acts: &[Act::Result(result::canceled_no_result)],
            },
            Op::CanceledExit0 => About {
                name: "canceled-exit-0",
                breaks: "the canceled result line of an interrupted command with exit status 0",
                caught_by: &["SIGNAL.exec-canceled", "SIGNAL.up-canceled"],
                triggers: &["SIGNAL.exec-canceled", "SIGNAL.up-canceled"],
                acts: &[Act::Result(result::canceled_exit_0)],
            },
            Op::CanceledVmStarted => About {
                name: "canceled-vm-started",
                breaks: "an up interrupted by a signal answering canceled while the VM is left started",
                caught_by: &["SIGNAL.up-canceled"],
                triggers: &["SIGNAL.up-canceled"],
                acts: &[Act::Result(result::canceled_vm_started)],
            },
            Op::UpdatePersistedElsewhere => About {
                name: "update-persisted-elsewhere",
                breaks: "update --cpus N storing N+1 while its answer shows N",
                caught_by: &[EXPLORE, ids::EXPLORE_SEQUENTIAL.name],
                triggers: &[ids::EXPLORE_SEQUENTIAL.name],
                acts: &[
                    Act::Argv(argv::update_persisted_elsewhere),
                    Act::Result(result::update_persisted_elsewhere),
                ],
            },
            Op::RmKeepsVm => About {
                name: "rm-keeps-vm",
                breaks: "rm -y answering {name, deleted: true} and deleting nothing",
                caught_by: &[EXPLORE, ids::EXPLORE_SEQUENTIAL.name],
                triggers: &[ids::EXPLORE_SEQUENTIAL.name],
                acts: &[Act::Instead(argv::rm_keeps_vm)],
            },
            Op::ForwardClearUnsaved => About {
                name: "forward-clear-unsaved",
                breaks: "forward --clear answering an empty list and saving nothing",
                caught_by: &[EXPLORE, ids::EXPLORE_SEQUENTIAL.name],
                triggers: &[ids::EXPLORE_SEQUENTIAL.name],
                acts: &[Act::Instead(argv::forward_clear_unsaved)],
            },
            Op::CreateRaceBothWin => About {
                name: "create-race-both-win",
                breaks: "two overlapping creates of one name both answering ok: a create that found the name free when it began and lost the race answers the winner's VM instead of name_taken",
                // Only overlapping creates show it, and whether two overlap in `run`'s few
                // histories is the host's timing: the explore verb's runs are held to it.
                caught_by: &[EXPLORE_CONCURRENT],
                triggers: &[EXPLORE_CONCURRENT],
                acts: &[
                    Act::Argv(argv::create_race_note),
                    Act::Result(result::create_race_both_win),
                ],
            },
            Op::SnapshotDeleteKeepsSnapshot => About {
                name: "snapshot-delete-keeps-snapshot",
                breaks: "snapshot VM TAG --delete on a disk VM answering {vm, tag, action: delete} and deleting nothing",
                caught_by: &[EXPLORE, ids::EXPLORE_SEQUENTIAL.name],
                triggers: &[ids::EXPLORE_SEQUENTIAL.name],
                acts: &[Act::Instead(argv::snapshot_delete_keeps_snapshot)],
            },
            Op::CloneForwardsContradictAnswer => About {
                name: "clone-forwards-contradict-answer",
                breaks: "clone answering forwards_copied:false (and storing none), then the clone's next change (update, forward) bringing in the source's forwards",
                // A clone of a VM with forwards, changed after, comes later than `run`'s budget
                // reaches: the explore verb's runs are held to it.
                caught_by: &[EXPLORE],
                triggers: &[EXPLORE],
                acts: &[
                    Act::Argv(argv::clone_forwards_late),
                    Act::AfterAnswer(around::clone_forwards_mark),
                ],
            },
            Op::DownLeavesRunning => About {
                name: "down-leaves-running",
                breaks: "down of a running VM answering ok with the VM stopped while it keeps running, as get and ls read it",
                caught_by: &[EXPLORE, ids::EXPLORE_SEQUENTIAL.name],
                triggers: &[ids::EXPLORE_SEQUENTIAL.name],
                acts: &[
                    Act::Argv(argv::down_leaves_running),
                    Act::Result(result::lifecycle_as_answered),
                ],
            },
            Op::UpLeavesStopped => About {
                name: "up-leaves-stopped",
                breaks: "up of a stopped VM answering ok with the VM running while it was never started, so the read-back disagrees with up's authoritative state",
                caught_by: &[EXPLORE, ids::EXPLORE_SEQUENTIAL.name],
                triggers: &[ids::EXPLORE_SEQUENTIAL.name],
                acts: &[
                    Act::Argv(argv::up_leaves_stopped),
                    Act::Result(result::lifecycle_as_answered),
                ],
            },
            Op::SnapshotSaveRunningUnsaved => About {
                name: "snapshot-save-running-unsaved",
                breaks: "snapshot VM TAG on a running disk VM answering {vm, tag, action: save} and saving nothing",
                // A save of a running disk VM comes about once in 40 histories: more than
                // `run`'s budget, so the explore verb's runs are held to it.
                caught_by: &[EXPLORE],
                triggers: &[EXPLORE],
                acts: &[Act::Instead(argv::snapshot_save_running_unsaved)],
            },
            Op::UnknownEvent => About {
                name: "unknown-event",
                breaks: "nothing: an unknown event type must be tolerated",
                caught_by: &[],
                triggers: EVERY_SHAPE,
                acts: &[Act::Result(result::unknown_event)],
            },
            Op::UnknownEventFirst => About {
                name: "unknown-event-first",
                breaks: "nothing: an unknown event type may come anywhere before the result",
                caught_by: &[],
                triggers: EVERY_SHAPE,
                acts: &[Act::FirstLine(around::unknown_event_first)],
            },
            Op::UnknownEventInterleaved => About {
                name: "unknown-event-interleaved",
                breaks: "nothing: an unknown event type before every event line (between progress, stage and log events) is allowed",
                caught_by: &[],
                triggers: EVERY_SHAPE,
                acts: &[Act::Line(line::unknown_event_interleaved)],
            },
            Op::ExtraFieldDeep => About {
                name: "extra-field-deep",
                breaks: "nothing: an extra member in every object at every depth is allowed",
                caught_by: &[],
                triggers: EVERY_SHAPE,
                acts: &[Act::Line(line::extra_field_deep)],
            },
            Op::FieldOrder => About {
                name: "field-order",
                breaks: "nothing: a consumer may not rely on field order",
                caught_by: &[],
                triggers: EVERY_SHAPE,
                acts: &[Act::Line(line::field_order)],
            },
            Op::JsonEscapeAll => About {
                name: "json-escape-all",
                breaks: "nothing: every string character written as a \\uXXXX escape is valid JSON",
                caught_by: &[],
                triggers: EVERY_SHAPE,
                acts: &[Act::Line(line::json_escape_all)],
            },
            Op::ExtraField => About {
                name: "extra-field",
                breaks: "nothing: additive fields are allowed",
                caught_by: &[],
                triggers: EVERY_SHAPE,
                acts: &[Act::Result(result::extra_field)],
            },
            Op::StderrNoise => About {
                name: "stderr-noise",
                breaks: "nothing: stderr is outside the contract",
                caught_by: &[],
                triggers: EVERY_SHAPE,
                acts: &[Act::AfterAnswer(around::stderr_noise)],
            },
        }
    }

    /// Whether `explore` is what must kill this operator (rather than catalog checks).
    pub fn explored(self) -> bool {
        self.about().explored()
    }

    pub const fn name(self) -> &'static str {
        self.about().name
    }

    /// The operator named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// The acts of this operator that `pick` selects, in order.
    pub(crate) fn acts<T>(self, pick: impl Fn(&Act) -> Option<T>) -> impl Iterator<Item = T> {
        self.about().acts.iter().filter_map(pick)
    }
}

/// Every operator's [`About`], in [`Op::ALL`] order.
pub fn operators() -> &'static [About] {
    static ABOUT: OnceLock<Vec<About>> = OnceLock::new();
    ABOUT.get_or_init(|| Op::ALL.iter().map(|op| op.about()).collect())
}
