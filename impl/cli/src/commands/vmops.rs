//! The commands that change VMs: create, update, rm, clone, forward. Each turns its clap args
//! into a `stoat_core::ops` call and renders the result for a human or the wire.
//!
//! json-v3#per-command-data rows create, update, rm, clone, forward; "What --json
//! implies" (rm never prompts under --json and never reads stdin).

use std::io::{BufRead, IsTerminal, Write};

use stoat_core::ops::{self, create::CreateSpec, forward::PortPair, update::UpdateSpec};
use stoat_core::{Error, Result};
use stoat_wire::dto::{AppliesAt, CloneData, ForwardData, RmData, UpdateData, Vm, VmData};

use crate::ctx::Ctx;
use crate::grammar::{CloneArgs, CreateArgs, ForwardArgs, RmArgs, UpdateArgs};
use crate::Reply;

/// `create`.
pub fn create(ctx: &Ctx, args: CreateArgs) -> Result<Reply> {
    let root = ctx.root()?;
    let spec = CreateSpec {
        name: args.name,
        image: args.image,
        os: args.os,
        backend: args.backend,
        mode: args.mode,
        ram_mb: args.ram,
        cpus: args.cpus,
        disk: args.disk,
        share: args.share,
        console_password: args.console_password,
        recipes: args.recipes,
        params: args.params,
        allow_exec: args.allow_exec,
        agent_access: args.agent_access,
        display: args.display,
        ..CreateSpec::default()
    };
    let stored = ops::create::create(root, &ctx.env, &spec)?;
    stoat_core::log::append(root, "info", &format!("created vm={}", stored.name));
    let vm = stored.to_wire(&ctx.env);
    let human = create_human(&vm);
    Ok(Reply::new(&VmData { vm }, human))
}

fn create_human(vm: &Vm) -> String {
    let disk = if vm.disk.is_empty() {
        String::new()
    } else {
        format!(", {} disk", vm.disk)
    };
    format!(
        "created {}: {} {} ({}), {} cpus, {} MB{disk}, ssh port {}\nstart it with: stoat up {}\n",
        vm.name,
        if vm.os.is_empty() {
            "unknown-os"
        } else {
            &vm.os
        },
        vm.mode,
        vm.backend,
        vm.cpus,
        vm.ram_mb,
        vm.ssh_port,
        vm.name
    )
}

/// `update`.
pub fn update(ctx: &Ctx, args: UpdateArgs) -> Result<Reply> {
    let immutable: Vec<(&'static str, String)> = [
        ("os", args.os),
        ("backend", args.backend),
        ("mode", args.mode),
        ("image", args.image),
    ]
    .into_iter()
    .filter_map(|(field, value)| value.map(|v| (field, v)))
    .collect();
    let spec = UpdateSpec {
        ram_mb: args.ram,
        cpus: args.cpus,
        ssh_port: args.ssh_port,
        disk: args.disk,
        share: args.share,
        recipes: args.recipes,
        agent_access: args.agent_access,
        allow_exec: args.allow_exec,
        display: args.display,
        immutable,
    };
    if spec.is_empty() {
        return Err(Error::Usage(format!(
            "update: nothing to change; pass at least one of {}",
            ops::update::UPDATE_FLAGS
        )));
    }
    let root = ctx.root()?;
    let updated = ops::update::update(root, &ctx.env, &args.vm, &spec)?;
    let data = UpdateData {
        vm: updated.vm.to_wire(&ctx.env),
        changed: updated.changed,
        applies_at: updated.applies_at,
    };
    let human = update_human(&data);
    Ok(Reply::new(&data, human))
}

fn update_human(data: &UpdateData) -> String {
    let name = &data.vm.name;
    if data.changed.is_empty() {
        return format!("{name}: nothing changed\n");
    }
    let mut out = format!("updated {name}: {}\n", data.changed.join(", "));
    if data.applies_at == AppliesAt::NextStart {
        out.push_str(&format!(
            "{name} is running; this takes effect at next start\n"
        ));
    }
    out
}

/// `rm`.
pub fn rm(ctx: &Ctx, args: RmArgs) -> Result<Reply> {
    // TODO(projects): with no VM name inside a project, fan out over its VMs (ProjectRun).
    let name = args
        .vm
        .ok_or_else(|| Error::Usage("rm needs a VM name: stoat rm <vm> -y".into()))?;
    let root = ctx.root()?;
    ops::remove::check_removable(root, &name)?;
    if !args.yes {
        confirm_delete(ctx, &name)?;
    }
    ops::remove::remove(root, &name)?;
    stoat_core::log::append(root, "info", &format!("deleted vm={name}"));
    let human = format!("deleted {name}\n");
    Ok(Reply::new(
        &RmData {
            name,
            deleted: true,
        },
        human,
    ))
}

/// Asks on stderr when a human is at a terminal; refuses otherwise. Under --json stdin is
/// never read.
fn confirm_delete(ctx: &Ctx, name: &str) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::ConfirmationRequired(format!(
            "rm {name} deletes the VM and its disk; {why}"
        )))
    };
    if ctx.json {
        return refuse("pass -y to confirm");
    }
    if ctx.quiet || !std::io::stdin().is_terminal() {
        return refuse("not asking without a terminal; pass -y to confirm");
    }
    let mut stderr = std::io::stderr();
    let _ = write!(stderr, "delete VM {name}? [y/N] ");
    let _ = stderr.flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Error::io("read the answer", e))?;
    match answer.trim() {
        "y" | "Y" | "yes" | "YES" | "Yes" => Ok(()),
        _ => refuse("not confirmed"),
    }
}

/// `clone`.
pub fn clone(ctx: &Ctx, args: CloneArgs) -> Result<Reply> {
    let root = ctx.root()?;
    let stored = ops::clone::clone(root, &ctx.env, &args.source, &args.name, &ctx.cancel)?;
    stoat_core::log::append(
        root,
        "info",
        &format!("cloned vm={} source={}", stored.name, args.source),
    );
    let vm = stored.to_wire(&ctx.env);
    let human = format!(
        "cloned {} as {} (ssh port {}); port forwards are not copied\n",
        args.source, vm.name, vm.ssh_port
    );
    Ok(Reply::new(
        &CloneData {
            vm,
            source: args.source,
            forwards_copied: false,
        },
        human,
    ))
}

/// `forward`: show with no pairs, set with pairs, clear with --clear.
pub fn forward(ctx: &Ctx, args: ForwardArgs) -> Result<Reply> {
    if args.clear && !args.pairs.is_empty() {
        return Err(Error::Usage(
            "forward: --clear takes no HOST:GUEST pairs".into(),
        ));
    }
    let pairs: Vec<PortPair> = args
        .pairs
        .iter()
        .map(|pair| ops::forward::parse_pair(pair))
        .collect::<Result<_>>()?;
    let root = ctx.root()?;
    let data = if args.clear || !pairs.is_empty() {
        ops::forward::set(root, &args.vm, &pairs)?
    } else {
        ops::forward::show(root, &args.vm)?
    };
    let human = forward_human(&data);
    Ok(Reply::new(&data, human))
}

fn forward_human(data: &ForwardData) -> String {
    let mut out = String::new();
    if data.forwards.is_empty() {
        out.push_str(&match data.applies_at {
            Some(_) => format!("cleared {}'s port forwards\n", data.vm),
            None => format!("{} has no port forwards\n", data.vm),
        });
    }
    for forward in &data.forwards {
        out.push_str(&format!("{}:{}\n", forward.host_port, forward.guest_port));
    }
    if data.applies_at == Some(AppliesAt::NextStart) {
        out.push_str(&format!(
            "{} is running; this takes effect at next start\n",
            data.vm
        ));
    }
    out
}
