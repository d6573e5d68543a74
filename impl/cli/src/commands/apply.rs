//! The CLI adapter of `apply` (and its hidden alias `provision`, which answers `cmd:"apply"`)
//! and `apply --dry-run` (json-v3#per-command-data, json-v3#streaming); the work is in
//! `stoat_core::app::runtime`.

use stoat_core::app::runtime::{self, ApplyRequest};
use stoat_core::{Error, Result};
use stoat_wire::dto::ApplyData;

use crate::ctx::Ctx;
use crate::grammar::ApplyArgs;
use crate::output::Reply;

/// `apply <vm> [--only a,b] [--dry-run] [--param r.p=v]`.
pub fn apply(ctx: &Ctx, args: &ApplyArgs) -> Result<Reply> {
    let name = args
        .vm
        .as_deref()
        .ok_or_else(|| Error::Usage("apply needs a VM name".into()))?;
    let request = ApplyRequest {
        only: args
            .only
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        params: super::params::settings(&args.params)?,
    };
    if args.dry_run {
        let data = runtime::apply_dry_run(ctx, name, &request)?;
        let human: String = if data.plan.is_empty() {
            format!("{} has no recipes to plan\n", data.vm)
        } else {
            data.plan
                .iter()
                .map(|p| format!("{:<4} {:<16} {}\n", p.action, p.name, p.reason))
                .collect()
        };
        return Ok(Reply::new(&data, human));
    }
    let data = runtime::apply(ctx, name, &request)?;
    let human = apply_human(&data);
    Ok(Reply::new(&data, human))
}

/// The human summary of an apply.
pub fn apply_human(data: &ApplyData) -> String {
    if !data.skipped_reason.is_empty() {
        format!("{}: nothing applied: {}", data.vm, data.skipped_reason)
    } else {
        format!("{}: recipes applied: {}", data.vm, data.applied.join(", "))
    }
}
