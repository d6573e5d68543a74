//! Owns the rule that `error.code` is one of the judged edition's codes (CODES.known).
//!
//! The lists are this suite's own reading of each edition's code table, kept independent of
//! `impl/wire` on purpose. Implements json-v3#error-codes and its
//! contract-2 reading (docs/contract.md).

use super::sink::{at, Sink, Stream};
use crate::ids;
use crate::spec::Edition;

/// Every code of the contract-2 table, sorted. `applied_at_boot` is contract 2's alone:
/// contract 3 reports that case as `applied: []` with a `skipped_reason`.
pub const KNOWN_CODES_V2: &[&str] = &[
    "already_running",
    "applied_at_boot",
    "broken",
    "canceled",
    "cannot_reach",
    "confirmation_required",
    "disk_shrink",
    "image_not_downloaded",
    "immutable_field",
    "internal",
    "invalid_spec",
    "name_taken",
    "no_disk",
    "not_found",
    "not_running",
    "recipe_not_applicable",
    "timeout",
    "unknown_log",
    "usage",
];

/// The code table of an edition.
pub fn known_codes(edition: Edition) -> &'static [&'static str] {
    match edition {
        Edition::V2 => KNOWN_CODES_V2,
        Edition::V3 => KNOWN_CODES,
    }
}

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

pub(crate) fn check(stream: &Stream, edition: Edition, sink: &mut Sink) {
    let Some((index, result)) = &stream.result else {
        return;
    };
    let Some(code) = result.pointer("/error/code").and_then(|c| c.as_str()) else {
        return;
    };
    sink.touch(ids::CODES_KNOWN);
    if known_codes(edition).binary_search(&code).is_err() {
        sink.find(
            ids::CODES_KNOWN,
            at(*index, "/error/code"),
            format!("error code {code:?} is not in the contract-{edition} code table (a consumer treats it as a generic failure)"),
        );
    }
}
