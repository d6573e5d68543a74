//! The CLI adapters of the read-only VM operations, ls and get (`stoat_core::app::vms`), and
//! their human tables.

use stoat_core::app::vms;
use stoat_core::Result;
use stoat_wire::dto::{Health, Vm, VmState, VmStatus};

use crate::ctx::Ctx;
use crate::grammar::LsArgs;
use crate::human;
use crate::output::Reply;

/// `ls`.
pub fn ls(ctx: &Ctx, _args: &LsArgs) -> Result<Reply> {
    let data = vms::ls(ctx)?;
    // The image column reads each vm.toml again: human mode only, the JSON path stays as is.
    let human = ctx.prose(|| Ok(ls_human(&data.vms, &vms::image_names(ctx)?)))?;
    Ok(Reply::new(&data, human))
}

/// The VM table: name, mode, state, cpus, ram, disk, image file, ssh port; broken VMs after it.
pub(crate) fn ls_human(vms: &[Vm], images: &std::collections::BTreeMap<String, String>) -> String {
    if vms.is_empty() {
        return "no VMs; create one with `stoat create <name> --image <id>`".into();
    }
    let (good, broken): (Vec<&Vm>, Vec<&Vm>) = vms.iter().partition(|v| v.state != VmState::Broken);
    let rows: Vec<Vec<String>> = good
        .iter()
        .map(|v| {
            vec![
                v.name.clone(),
                v.mode.clone(),
                state_word(v.state).into(),
                v.cpus.to_string(),
                format!("{}M", v.ram_mb),
                if v.disk.is_empty() {
                    "-".into()
                } else {
                    v.disk.clone()
                },
                images.get(&v.name).cloned().unwrap_or_default(),
                format!(":{}", v.ssh_port),
            ]
        })
        .collect();
    let mut out = human::table(
        &[
            "NAME", "MODE", "STATE", "CPUS", "RAM", "DISK", "IMAGE", "SSH",
        ],
        &rows,
    );
    for v in broken {
        out.push_str(&format!(
            "{}  broken: {}\n",
            v.name,
            v.error.as_deref().unwrap_or("")
        ));
    }
    out
}

fn health_word(health: Health) -> &'static str {
    match health {
        Health::Ok => "ok",
        Health::Failed => "failed",
        Health::Unknown => "unknown",
    }
}

fn state_word(state: VmState) -> &'static str {
    match state {
        VmState::Stopped => "stopped",
        VmState::Running => "running",
        VmState::Broken => "broken",
    }
}

/// `get`.
pub fn get(ctx: &Ctx, name: &str) -> Result<Reply> {
    let data = vms::get(ctx, name)?;
    let human = ctx.prose(|| get_prose(ctx, name, &data.vm))?;
    Ok(Reply::new(&data, human))
}

/// The fields, then where the screen is and how to attach (unless `-q`).
fn get_prose(ctx: &Ctx, name: &str, status: &VmStatus) -> Result<String> {
    let facts = vms::get_facts(ctx, name)?;
    let mut human = get_human(status, facts.as_ref());
    let display = if ctx.is_quiet() {
        Vec::new()
    } else {
        vms::display_fields(ctx, name)?
    };
    for line in display {
        human.push_str(&line);
        human.push('\n');
    }
    Ok(human)
}

/// One `key: value` line per field; a saved value the running QEMU does not have yet says so
/// (`(pending: running with X until the next start)`).
fn get_human(status: &VmStatus, facts: Option<&vms::GetFacts>) -> String {
    let v = &status.vm;
    let pending = |field: &str| -> String {
        facts
            .and_then(|f| f.pending.iter().find(|p| p.field == field))
            .map(|p| {
                let unit = if p.field == "ram" { " MB" } else { "" };
                format!(
                    " (pending: running with {}{unit} until the next start)",
                    p.live
                )
            })
            .unwrap_or_default()
    };
    let forwards: Vec<String> = v
        .forwards
        .iter()
        .map(|f| format!("{}:{}", f.host_port, f.guest_port))
        .collect();
    let mut out = String::new();
    let mut line = |k: &str, val: String| out.push_str(&format!("{k}: {val}\n"));
    line("name", v.name.clone());
    if v.state == VmState::Broken {
        line("state", "broken".into());
        line("error", v.error.clone().unwrap_or_default());
        return out;
    }
    // A VM made from the user's own image has no OS stoat knows; an empty value read as a bug.
    line(
        "os",
        if v.os.is_empty() {
            "unknown".into()
        } else {
            v.os.clone()
        },
    );
    line(
        "image",
        or_none(facts.map(|f| f.image.clone()).unwrap_or_default()),
    );
    line("mode", v.mode.clone());
    line("backend", v.backend.clone());
    line("state", state_word(v.state).into());
    line("health", health_word(status.health).into());
    line("cpus", format!("{}{}", v.cpus, pending("cpus")));
    line("ram", format!("{} MB{}", v.ram_mb, pending("ram")));
    line("disk", or_none(v.disk.clone()));
    line("share", or_none(v.share.clone()));
    line("ssh port", v.ssh_port.to_string());
    line("ssh user", v.ssh_user.clone());
    line("recipes", or_none(v.recipes.join(", ")));
    line(
        "forwards",
        format!("{}{}", or_none(forwards.join(", ")), pending("forwards")),
    );
    line("agent access", v.agent_access.as_str().into());
    for detail in &status.recipes_detail {
        let state = if detail.applied {
            let version = if detail.version.is_empty() {
                String::new()
            } else {
                format!(" {}", detail.version)
            };
            let at = if detail.at.is_empty() {
                String::new()
            } else {
                format!(" at {}", detail.at)
            };
            format!(
                "applied{version}{at}, health {}",
                health_word(detail.health)
            )
        } else {
            "not applied".into()
        };
        line(&format!("recipe {}", detail.name), state);
        // A recipe's params and outputs (the guest wrote the outputs: shown, not obeyed).
        for (kind, values) in [("param", &detail.params), ("output", &detail.outputs)] {
            for (key, value) in values {
                let text = match value {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                line(&format!("  {kind} {key}"), crate::human::visible(&text));
            }
        }
    }
    out
}

/// An empty field reads as `none`, not as a bare label.
fn or_none(value: String) -> String {
    if value.is_empty() {
        "none".into()
    } else {
        value
    }
}
