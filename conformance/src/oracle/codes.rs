//! Owns the rule that `error.code` is one of the v3 registry's codes (CODES.known).
//!
//! The list is this suite's own reading of the contract's code table, kept independent of
//! `impl/wire` on purpose. Implements json-v3#error-codes.

use super::{at, Sink, Stream};

/// Every code of the v3 table, sorted.
pub const KNOWN_CODES: &[&str] = &[
    "access_denied",
    "already_running",
    "broken",
    "canceled",
    "cannot_reach",
    "checksum_mismatch",
    "confirmation_required",
    "disk_shrink",
    "download_failed",
    "download_stalled",
    "git_required",
    "host_unsupported",
    "image_not_downloaded",
    "immutable_field",
    "in_use",
    "internal",
    "invalid_spec",
    "kvm_unusable",
    "lock_out_of_date",
    "monitor_rejected",
    "monitor_unreachable",
    "name_taken",
    "no_console_password",
    "no_disk",
    "no_such_image",
    "no_xattr",
    "not_found",
    "not_running",
    "qemu_missing",
    "qemu_start_failed",
    "rate_limited",
    "recipe_not_applicable",
    "screenshot_failed",
    "share_invalid",
    "timeout",
    "unknown_log",
    "usage",
];

pub(crate) fn check(stream: &Stream, sink: &mut Sink) {
    let Some((index, result)) = &stream.result else {
        return;
    };
    let Some(code) = result.pointer("/error/code").and_then(|c| c.as_str()) else {
        return;
    };
    sink.touch("CODES.known");
    if KNOWN_CODES.binary_search(&code).is_err() {
        sink.find(
            "CODES.known",
            at(*index, "/error/code"),
            format!("error code {code:?} is not in the v3 code table (a consumer treats it as a generic failure)"),
        );
    }
}
