//! The project fan-out: one action over every declared VM, in declaration order, stopping at
//! the first failure (json-v3#types: ProjectRun, ProjectRunVM).
//!
//! Every declared VM is in the answer: `ok`, `error` (with the message), or `skipped` when an
//! earlier VM failed and this one was never attempted. Progress goes to `on_event` as it
//! happens: `started` before a VM is attempted, then its outcome; skipped VMs are reported
//! too, so a consumer following the events sees every declared VM exactly as the result does.

use stoat_wire::dto::{ProjectRun, ProjectRunVm};

use super::file::{Declaration, Project};
use crate::hint::Spelling;
use crate::Result;

/// A VM's fan-out status before its outcome is known (events only, never in the result).
pub const STARTED: &str = "started";

/// Runs `act` on each declaration in order; after the first failure the rest are skipped.
/// `act` answers what it did (a few words, such as "started" or "not created"), which the
/// human table shows beside `ok`; a failure's message is in the caller's `spelling`.
pub fn run(
    project: &Project,
    spelling: &dyn Spelling,
    mut on_event: impl FnMut(&ProjectRunVm),
    mut act: impl FnMut(&Declaration) -> Result<&'static str>,
) -> ProjectRun {
    let mut failed = false;
    let mut vms = Vec::with_capacity(project.vms.len());
    for decl in &project.vms {
        let row = |status: &str, error: Option<String>| ProjectRunVm {
            key: decl.key.clone(),
            name: decl.name.clone(),
            status: status.to_owned(),
            error,
            done: None,
        };
        let outcome = if failed {
            row("skipped", None)
        } else {
            on_event(&row(STARTED, None));
            match act(decl) {
                Ok(done) => ProjectRunVm {
                    done: Some(done),
                    ..row("ok", None)
                },
                Err(err) => {
                    failed = true;
                    row("error", Some(err.message_in(spelling)))
                }
            }
        };
        on_event(&outcome);
        vms.push(outcome);
    }
    ProjectRun {
        project: project.name.clone(),
        vms,
    }
}

/// Whether any VM of a fan-out failed.
pub fn any_failed(run: &ProjectRun) -> bool {
    run.vms.iter().any(|vm| vm.status == "error")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use std::path::PathBuf;

    fn project(keys: &[&str]) -> Project {
        Project {
            name: "p".into(),
            dir: PathBuf::from("/p"),
            vms: keys
                .iter()
                .map(|k| Declaration {
                    key: (*k).into(),
                    name: format!("p-{k}"),
                    image: "x".into(),
                    ..Declaration::default()
                })
                .collect(),
            remote_recipes: Default::default(),
        }
    }

    #[test]
    fn a_failure_in_the_middle_skips_the_rest_and_lists_everyone() {
        let mut attempted = Vec::new();
        let mut events = Vec::new();
        let run = run(
            &project(&["a", "b", "c", "d"]),
            &crate::hint::Plain,
            |e| events.push(format!("{}:{}", e.key, e.status)),
            |decl| {
                attempted.push(decl.key.clone());
                if decl.key == "b" {
                    Err(Error::InvalidSpec("boom".into()))
                } else {
                    Ok("started")
                }
            },
        );
        assert_eq!(attempted, ["a", "b"]);
        let statuses: Vec<&str> = run.vms.iter().map(|v| v.status.as_str()).collect();
        assert_eq!(statuses, ["ok", "error", "skipped", "skipped"]);
        assert_eq!(run.vms[1].error.as_deref(), Some("invalid spec: boom"));
        assert!(run.vms[2].error.is_none());
        assert_eq!(
            events,
            [
                "a:started",
                "a:ok",
                "b:started",
                "b:error",
                "c:skipped",
                "d:skipped"
            ]
        );
        assert!(any_failed(&run));
    }

    #[test]
    fn an_empty_project_runs_nothing() {
        let run = run(
            &project(&[]),
            &crate::hint::Plain,
            |_| {},
            |_| Ok("started"),
        );
        assert!(run.vms.is_empty());
        assert!(!any_failed(&run));
    }
}
