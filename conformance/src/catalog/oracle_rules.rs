//! Owns the catalog entries of the oracle's universal rules (ENV, EXIT, LIST, LEAK, SCHEMA,
//! CODES and the exec encoding rules). Their logic lives in [`crate::oracle`].

use super::def::{declared, rule, CheckDef};
use crate::ids;
use crate::spec::{Editions, Requirement, Source};

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        quote: "Every line of stdout is one JSON object. Nothing else is ever written to stdout in --json mode",
        title: "every stdout line parses as one JSON object (no prose, no blank lines)",
        tags: &["envelope", "stream"],
        ..rule(ids::ENV_JSON_LINES)
    },
    CheckDef {
        quote: "No ANSI colour, regardless of terminal detection.",
        title: "no ESC byte on stdout, and no \\u001b in any decoded string outside guest output",
        tags: &["envelope", "stream"],
        ..rule(ids::ENV_NO_ANSI)
    },
    CheckDef {
        quote: "\"v\" is an integer contract version, not the build version. It is 3.",
        title: "every line carries v, the integer 3",
        tags: &["envelope"],
        editions: Editions::V3 { change: "contract 2 says v is 2" },
        ..rule(ids::ENV_V_IS_3)
    },
    CheckDef {
        quote: "\"v\" is an integer contract version, not the build version. It is 2.",
        title: "every line carries v, the integer 2",
        tags: &["envelope"],
        editions: Editions::V2,
        source: Source::ContractV2,
        ..rule(ids::ENV_V_IS_2)
    },
    CheckDef {
        quote: "type string always cmd string always",
        title: "every line carries type and cmd as strings",
        tags: &["envelope"],
        ..rule(ids::ENV_LINE_FIELDS)
    },
    CheckDef {
        quote: "Either you get a result line, or the process died.",
        title: "every invocation answers with a result line (none = CRASHED, reported apart from FAILED)",
        tags: &["envelope", "stream"],
        ..rule(ids::ENV_RESULT_PRESENT)
    },
    CheckDef {
        quote: "Exactly one line has \"type\":\"result\", and it is last.",
        title: "exactly one result line per invocation",
        tags: &["envelope", "stream"],
        ..rule(ids::ENV_ONE_RESULT)
    },
    CheckDef {
        quote: "Exactly one line has \"type\":\"result\", and it is last.",
        title: "the result line is the last line",
        tags: &["envelope", "stream"],
        ..rule(ids::ENV_RESULT_LAST)
    },
    CheckDef {
        quote: "ok bool result lines only",
        title: "non-terminal events never carry ok",
        tags: &["envelope", "events"],
        ..rule(ids::ENV_OK_ONLY_ON_RESULT)
    },
    CheckDef {
        quote: "ok bool result lines only",
        title: "the result line carries ok as a bool",
        tags: &["envelope"],
        ..rule(ids::ENV_OK_BOOL)
    },
    CheckDef {
        quote: "data and error are mutually exclusive on a result line.",
        title: "a result carries exactly one of data and error",
        tags: &["envelope"],
        ..rule(ids::ENV_DATA_XOR_ERROR)
    },
    CheckDef {
        quote: "data object on success, and on non-terminal events error object on failure only",
        title: "ok:true carries data, ok:false carries error",
        tags: &["envelope"],
        ..rule(ids::ENV_OK_MATCHES_PAYLOAD)
    },
    CheckDef {
        quote: "data object on success, and on non-terminal events",
        title: "data is a JSON object",
        tags: &["envelope"],
        ..rule(ids::ENV_DATA_OBJECT)
    },
    CheckDef {
        quote: "data object on success, and on non-terminal events",
        title: "progress/stage/log events carry a data object and no error",
        tags: &["envelope", "events"],
        ..rule(ids::ENV_EVENT_DATA)
    },
    CheckDef {
        quote: "code string always message string always",
        title: "error is an object with string code and message",
        tags: &["envelope", "errors"],
        ..rule(ids::ENV_ERROR_SHAPE)
    },
    CheckDef {
        quote: "message string always, human-readable, not machine-parseable",
        title: "error.message says something",
        tags: &["errors"],
        ..rule(ids::ENV_ERROR_MESSAGE_NONEMPTY)
    },
    CheckDef {
        quote: "All recipe subcommands report \"cmd\":\"recipe\"",
        title: "the result's cmd is the command's contract name (provision answers apply, recipe/guest subcommands answer recipe/guest)",
        tags: &["envelope"],
        ..rule(ids::ENV_CMD_MATCHES)
    },
    CheckDef {
        quote: "up emits the stage and log events of the apply it runs after boot, with \"cmd\":\"up\"",
        title: "every line of one invocation carries the same cmd",
        tags: &["envelope", "events"],
        ..rule(ids::ENV_CMD_CONSISTENT)
    },
    CheckDef {
        quote: "0 success, 1 runtime failure, 2 usage error. Nothing else",
        title: "the exit status is 0, 1 or 2",
        tags: &["exit"],
        ..rule(ids::EXIT_STATUS_RANGE)
    },
    CheckDef {
        quote: "0 success, 1 runtime failure, 2 usage error.",
        title: "a usage error exits 2, and exit 2 means a usage error",
        tags: &["exit", "usage"],
        ..rule(ids::EXIT_USAGE_IS_2)
    },
    CheckDef {
        quote: "0 success, 1 runtime failure, 2 usage error.",
        title: "an ok:true result exits 0",
        tags: &["exit"],
        ..rule(ids::EXIT_OK_IS_0)
    },
    CheckDef {
        quote: "0 success, 1 runtime failure, 2 usage error.",
        title: "an ok:false result never exits 0",
        tags: &["exit"],
        ..rule(ids::EXIT_ERROR_NONZERO)
    },
    CheckDef {
        quote: "The second case is detectable as \"exit code is nonzero and no result line was seen\".",
        title: "no result line implies a non-zero exit",
        tags: &["exit", "stream"],
        ..rule(ids::EXIT_CRASH_NONZERO)
    },
    CheckDef {
        quote: "exec exits 0 whenever the guest command RAN, whatever the guest returned.",
        title: "exec --json exits 0 when the guest command ran, whatever data.exit_code",
        tags: &["exit", "exec"],
        ..rule(ids::EXIT_EXEC_RAN_IS_0)
    },
    CheckDef {
        quote: "doctor exits 0 with healthy:false.",
        title: "doctor --json exits 0 with healthy:false",
        tags: &["exit", "doctor"],
        ..rule(ids::EXIT_DOCTOR_UNHEALTHY_IS_0)
    },
    CheckDef {
        quote: "Codes are only ever added. Never renamed, never repurposed, never removed.",
        title: "error.code is one of the v3 table's codes (a new one only warns: codes are additive)",
        tags: &["errors"],
        ..rule(ids::CODES_KNOWN)
    },
    CheckDef {
        quote: "Every list-valued field is [] when empty, never null.",
        title: "no list-valued field (vms, forwards, recipes, checks, fix, items, ...) is null, and data is never null",
        tags: &["lists"],
        ..rule(ids::LIST_NEVER_NULL)
    },
    CheckDef {
        quote: "The table above is for the CLI's --json results.",
        title: "each line validates against the published schemas/ for its cmd and event type, and against this suite's own builtin shapes",
        tags: &["schema"],
        editions: Editions::V3 { change: "contract 2's data shapes differ: VM has no agent_access or project fields, get answers a VM, Check has no optional, Recipe is {name, description}, recipe list is {dir, recipes}" },
        ..rule(ids::SCHEMA_DATA)
    },
    CheckDef {
        quote: "None reach the wire.",
        title: "the sandbox's STOAT_HOME, HOME, TMPDIR and BYO image paths appear only at pointers the contract allows (cp local, recipe paths, prune items, ...)",
        tags: &["leaks"],
        ..rule(ids::LEAK_HOST_PATH)
    },
    CheckDef {
        quote: "None reach the wire.",
        title: "error.message does not name the data root, HOME or TMPDIR",
        tags: &["leaks", "errors"],
        ..rule(ids::LEAK_HOST_PATH_IN_MESSAGE)
    },
    CheckDef {
        quote: "core.VM carries six absolute host paths (its disk, console log, monitor socket, and so on). None reach the wire.",
        title: "error.message names no path of a VM: neither its directory under the data root nor anything in it (disk, console log, monitor socket)",
        tags: &["leaks", "errors"],
        ..rule(ids::LEAK_VM_PATH_IN_MESSAGE)
    },
    CheckDef {
        quote: "it must never reach a wire format.",
        title: "the planted console password (and the key console_password) never appears in any form a consumer decodes: raw, JSON-unescaped strings and keys, URL-decoded, base64 anywhere (either alphabet, any alignment), hex, and split across consecutive log events",
        tags: &["leaks"],
        ..rule(ids::LEAK_CONSOLE_PASSWORD)
    },
    CheckDef {
        quote: "The plain field is omitted when its base64 counterpart is present, and vice versa.",
        title: "an exec stream is never both plain and *_base64",
        tags: &["exec"],
        ..rule(ids::EXEC_STREAM_EXCLUSIVE)
    },
    CheckDef {
        quote: "exec {\"vm\":\"work\",\"exit_code\":1,\"stdout\":\"...\",\"stderr\":\"...\"}",
        title: "an exec stream is always reported: plain (\"\" when empty) or *_base64",
        tags: &["exec"],
        ..rule(ids::EXEC_EMPTY_IS_STRING)
    },
    CheckDef {
        quote: "Encoding is reported per stream, because stdout and stderr can independently be invalid.",
        title: "*_encoding is \"base64\" exactly when *_base64 is present",
        tags: &["exec"],
        ..rule(ids::EXEC_ENCODING_TAG)
    },
    CheckDef {
        quote: "Stoat therefore uses base64 for a stream that is not valid UTF-8",
        title: "*_base64 is standard padded base64",
        tags: &["exec"],
        ..rule(ids::EXEC_BASE64_VALID)
    },
    CheckDef {
        quote: "Stoat therefore uses base64 for a stream that is not valid UTF-8",
        title: "base64 is used only for bytes that are not valid UTF-8",
        tags: &["exec"],
        ..rule(ids::EXEC_BASE64_ONLY_NON_UTF8)
    },
    declared(
        CheckDef {
            quote: "`$STOAT_HOME`, else `$HOME/.stoat`",
            title: "no invocation creates, modifies or deletes anything outside STOAT_HOME, TMPDIR and its cwd (HOME, a planted canary dir and the sandbox root are snapshotted around every invocation)",
            tags: &["sandbox"],
            source: Source::Design,
            ..rule(ids::SANDBOX_NO_WRITES_OUTSIDE)
        },
        Requirement::DataRootVar,
    ),
];
