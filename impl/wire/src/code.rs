//! The error-code registry: every `error.code` stoat may emit.
//!
//! Codes are only ever added: never renamed, repurposed or removed. `ALL` is snapshot-tested
//! so a removal shows in review. Implements json-v3#error-codes.

use serde::{Serialize, Serializer};

macro_rules! codes {
    ($($variant:ident => $wire:literal : $doc:literal,)*) => {
        /// One error code of contract v3. Consumers branch on it; the message is prose.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $(#[doc = $doc] $variant,)*
        }

        impl ErrorCode {
            /// Every declared code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// Returns the code as it appears on the wire.
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $wire,)* }
            }

            /// Returns what the code means, as the contract's table says.
            pub fn meaning(self) -> &'static str {
                match self { $(ErrorCode::$variant => $doc,)* }
            }

            /// Looks a code up by its wire name.
            pub fn from_wire(name: &str) -> Option<ErrorCode> {
                match name { $($wire => Some(ErrorCode::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    NotFound => "not_found": "no such VM",
    Broken => "broken": "the VM's vm.toml will not parse",
    NameTaken => "name_taken": "a VM by that name already exists",
    InvalidSpec => "invalid_spec": "the request itself is malformed",
    ImageNotDownloaded => "image_not_downloaded": "the image exists in the catalog but not on disk",
    RecipeNotApplicable => "recipe_not_applicable": "a named recipe cannot run on this VM",
    InUse => "in_use": "a recipe is still listed by one or more VMs",
    GitRequired => "git_required": "a recipe operation needs Git on PATH",
    NotRunning => "not_running": "the operation needs a running VM",
    AlreadyRunning => "already_running": "the operation needs a stopped VM",
    NoDisk => "no_disk": "the VM has no qcow2 (a live VM has none)",
    ImmutableField => "immutable_field": "update was asked to change a field that cannot change",
    DiskShrink => "disk_shrink": "a disk can only grow",
    CannotReach => "cannot_reach": "wait was asked for a state this VM can never reach",
    UnknownLog => "unknown_log": "bad --which",
    QemuMissing => "qemu_missing": "qemu-system-x86_64 is not on PATH",
    KvmUnusable => "kvm_unusable": "/dev/kvm cannot be opened",
    QemuStartFailed => "qemu_start_failed": "qemu ran and refused to start the VM",
    MonitorUnreachable => "monitor_unreachable": "the VM's qemu monitor socket does not answer",
    MonitorRejected => "monitor_rejected": "qemu answered the monitor command with an error",
    NoConsolePassword => "no_console_password": "the VM has no console password to type",
    ShareInvalid => "share_invalid": "the configured share is not a directory",
    NoXattr => "no_xattr": "the share's filesystem cannot store user.* extended attributes",
    ScreenshotFailed => "screenshot_failed": "qemu refused the screendump",
    DownloadFailed => "download_failed": "a mirror or a checksum file did not answer with the image",
    DownloadStalled => "download_stalled": "the download stopped producing bytes",
    ChecksumMismatch => "checksum_mismatch": "the downloaded bytes do not match the published digest",
    NoSuchImage => "no_such_image": "the requested image is not in the index",
    Timeout => "timeout": "the deadline expired",
    Canceled => "canceled": "the context was cancelled",
    Usage => "usage": "a bad flag, a missing argument, an unknown subcommand",
    ConfirmationRequired => "confirmation_required": "a destructive command was run without -y",
    AccessDenied => "access_denied": "MCP guest access was refused because the VM's agent_access level is too low",
    RateLimited => "rate_limited": "MCP refused a tool call because its rate bucket was exhausted",
    LockOutOfDate => "lock_out_of_date": "a project declaration is not pinned in stoat.lock",
    HostUnsupported => "host_unsupported": "this host has no qualified native VM runtime yet",
    Internal => "internal": "anything unanticipated; the escape hatch",
}

/// Returns every declared code's wire name, sorted (the contract's `wire.Codes()`).
pub fn codes() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    names.sort_unstable();
    names
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_seven_codes_sorted_and_unique() {
        let names = codes();
        assert_eq!(names.len(), 37);
        let mut deduped = names.clone();
        deduped.dedup();
        assert_eq!(deduped, names);
        assert!(names.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn wire_names_round_trip() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_wire(code.as_str()), Some(*code));
        }
        assert_eq!(ErrorCode::from_wire("nope"), None);
    }
}
