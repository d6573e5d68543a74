//! The values the grammar offers for completion (clap's dynamic engine asks for them on every
//! Tab, see complete.rs): VM names and image ids as they are in the data root now, exec's VM
//! word, and cp's paths (local files, or `VM:` for a path in a guest).

use std::ffi::OsStr;

use clap_complete::engine::{
    ArgValueCandidates, ArgValueCompleter, CompletionCandidate, PathCompleter, ValueCompleter,
};
use stoat_core::app::complete;
use stoat_core::Env;

/// Completes a VM name.
pub fn vm_names() -> ArgValueCandidates {
    ArgValueCandidates::new(|| candidates(complete::vm_names(&Env::capture())))
}

/// Completes an image: a catalog id or a file in `isos/`.
pub fn image_ids() -> ArgValueCandidates {
    ArgValueCandidates::new(|| candidates(complete::image_ids(&Env::capture())))
}

/// Completes exec's words: the VM name first; the guest's command after it is the guest's.
pub fn exec_words() -> ArgValueCompleter {
    ArgValueCompleter::new(ExecWords)
}

/// Completes cp's paths: local files, or `VM:` for a path in a guest.
pub fn cp_paths() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        let typed = current.to_string_lossy();
        if typed.contains(':') {
            // A guest path: the guest's files are not known here.
            return Vec::new();
        }
        let mut found: Vec<CompletionCandidate> = complete::vm_names(&Env::capture())
            .into_iter()
            .filter(|name| name.starts_with(typed.as_ref()))
            .map(|name| CompletionCandidate::new(format!("{name}:")))
            .collect();
        found.extend(PathCompleter::any().complete(current));
        found
    })
}

struct ExecWords;

impl ValueCompleter for ExecWords {
    fn complete(&self, current: &OsStr) -> Vec<CompletionCandidate> {
        self.complete_at(0, current)
    }

    fn complete_at(&self, index: usize, current: &OsStr) -> Vec<CompletionCandidate> {
        if index > 0 {
            return Vec::new();
        }
        let typed = current.to_string_lossy();
        complete::vm_names(&Env::capture())
            .into_iter()
            .filter(|name| name.starts_with(typed.as_ref()))
            .map(CompletionCandidate::new)
            .collect()
    }
}

fn candidates(values: Vec<String>) -> Vec<CompletionCandidate> {
    values.into_iter().map(CompletionCandidate::new).collect()
}
