//! Owns the check ids that code names outside the check's own catalog entry, as typed
//! constants: the oracle's universal rules (judged in [`crate::oracle`], listed in the
//! catalog), the smoke check the runner reports and the sandbox rule every case applies.
//! A scenario's own findings carry the id of its catalog entry instead.

use crate::finding::CheckId;
use crate::finding::Level::{Must, Should};

pub const ENV_JSON_LINES: CheckId =
    CheckId::new("ENV.json-lines", Must, "json-v3#consumer-contract");
pub const ENV_NO_ANSI: CheckId = CheckId::new("ENV.no-ansi", Must, "json-v3#json-implies");
pub const ENV_V_IS_3: CheckId = CheckId::new("ENV.v-is-3", Must, "json-v3#versioning");
pub const ENV_V_IS_2: CheckId = CheckId::new("ENV.v-is-2", Must, "json-v2#versioning");
pub const ENV_LINE_FIELDS: CheckId = CheckId::new("ENV.line-fields", Must, "json-v3#envelope");
pub const ENV_RESULT_PRESENT: CheckId =
    CheckId::new("ENV.result-present", Must, "json-v3#consumer-contract");
pub const ENV_ONE_RESULT: CheckId =
    CheckId::new("ENV.one-result", Must, "json-v3#consumer-contract");
pub const ENV_RESULT_LAST: CheckId =
    CheckId::new("ENV.result-last", Must, "json-v3#consumer-contract");
pub const ENV_OK_ONLY_ON_RESULT: CheckId =
    CheckId::new("ENV.ok-only-on-result", Must, "json-v3#envelope");
pub const ENV_OK_BOOL: CheckId = CheckId::new("ENV.ok-bool", Must, "json-v3#envelope");
pub const ENV_DATA_XOR_ERROR: CheckId =
    CheckId::new("ENV.data-xor-error", Must, "json-v3#envelope");
pub const ENV_OK_MATCHES_PAYLOAD: CheckId =
    CheckId::new("ENV.ok-matches-payload", Must, "json-v3#envelope");
pub const ENV_DATA_OBJECT: CheckId = CheckId::new("ENV.data-object", Must, "json-v3#envelope");
pub const ENV_EVENT_DATA: CheckId = CheckId::new("ENV.event-data", Must, "json-v3#envelope");
pub const ENV_ERROR_SHAPE: CheckId = CheckId::new("ENV.error-shape", Must, "json-v3#error-object");
pub const ENV_ERROR_MESSAGE_NONEMPTY: CheckId =
    CheckId::new("ENV.error-message-nonempty", Should, "json-v3#error-object");
pub const ENV_CMD_MATCHES: CheckId =
    CheckId::new("ENV.cmd-matches", Must, "json-v3#per-command-data");
pub const ENV_CMD_CONSISTENT: CheckId =
    CheckId::new("ENV.cmd-consistent", Must, "json-v3#streaming");
pub const EXIT_STATUS_RANGE: CheckId =
    CheckId::new("EXIT.status-range", Must, "json-v3#exit-codes");
pub const EXIT_USAGE_IS_2: CheckId = CheckId::new("EXIT.usage-is-2", Must, "json-v3#exit-codes");
pub const EXIT_OK_IS_0: CheckId = CheckId::new("EXIT.ok-is-0", Must, "json-v3#exit-codes");
pub const EXIT_ERROR_NONZERO: CheckId =
    CheckId::new("EXIT.error-nonzero", Must, "json-v3#exit-codes");
pub const EXIT_CRASH_NONZERO: CheckId =
    CheckId::new("EXIT.crash-nonzero", Must, "json-v3#consumer-contract");
pub const EXIT_EXEC_RAN_IS_0: CheckId =
    CheckId::new("EXIT.exec-ran-is-0", Must, "json-v3#exit-codes");
pub const EXIT_DOCTOR_UNHEALTHY_IS_0: CheckId =
    CheckId::new("EXIT.doctor-unhealthy-is-0", Must, "json-v3#exit-codes");
pub const CODES_KNOWN: CheckId = CheckId::new("CODES.known", Should, "json-v3#error-codes");
pub const LIST_NEVER_NULL: CheckId = CheckId::new("LIST.never-null", Must, "json-v3#types");
pub const SCHEMA_DATA: CheckId = CheckId::new("SCHEMA.data", Must, "json-v3#per-command-data");
pub const LEAK_HOST_PATH: CheckId = CheckId::new("LEAK.host-path", Must, "json-v3#absent");
pub const LEAK_HOST_PATH_IN_MESSAGE: CheckId =
    CheckId::new("LEAK.host-path-in-message", Should, "json-v3#absent");
pub const LEAK_CONSOLE_PASSWORD: CheckId =
    CheckId::new("LEAK.console-password", Must, "json-v3#absent");
pub const LEAK_VM_PATH_IN_MESSAGE: CheckId =
    CheckId::new("LEAK.vm-path-in-message", Must, "json-v3#absent");
pub const EXEC_STREAM_EXCLUSIVE: CheckId =
    CheckId::new("EXEC.stream-exclusive", Must, "json-v3#exec-bytes");
pub const EXEC_EMPTY_IS_STRING: CheckId =
    CheckId::new("EXEC.empty-is-string", Must, "json-v3#per-command-data");
pub const EXEC_ENCODING_TAG: CheckId =
    CheckId::new("EXEC.encoding-tag", Must, "json-v3#exec-bytes");
pub const EXEC_BASE64_VALID: CheckId =
    CheckId::new("EXEC.base64-valid", Must, "json-v3#exec-bytes");
pub const EXEC_BASE64_ONLY_NON_UTF8: CheckId =
    CheckId::new("EXEC.base64-only-non-utf8", Should, "json-v3#exec-bytes");
/// A declared requirement: a SHOULD in the catalog, a MUST in a run whose profile declares it.
pub const SANDBOX_NO_WRITES_OUTSIDE: CheckId =
    CheckId::new("SANDBOX.no-writes-outside", Should, "design#decisions");
pub const PROJECT_FANOUT_JSON_LINES: CheckId =
    CheckId::new("PROJECT.fanout-json-lines", Should, "design#decisions");
pub const SMOKE_VERSION: CheckId = CheckId::new("SMOKE.version", Must, "json-v3#per-command-data");
/// The `explore` engine inside `run` (catalog/explore.rs); the mutant kit names them as the
/// killers of its state-breaking operators.
pub const EXPLORE_SEQUENTIAL: CheckId =
    CheckId::new("EXPLORE.sequential", Must, "json-v3#per-command-data");
pub const EXPLORE_CONCURRENT: CheckId =
    CheckId::new("EXPLORE.concurrent", Should, "design#decisions");
