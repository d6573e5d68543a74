//! The CLI adapters of the operations that change VMs: create, update, rm, clone, forward.
//! Each turns its clap args into the typed request of `stoat_core::app::vmops` and renders the
//! answer for a human; the envelope is written by `output`.
//!
//! json-v3#per-command-data rows create, update, rm, clone, forward; "What --json
//! implies" (rm never prompts under --json and never reads stdin).

use std::io::{BufRead, Write};

use stoat_core::app::vmops::{
    self, Backend, CreateSpec, DisplayPref, Edit, ForwardChange, Immutable, Mode, PortPair,
    UpdateSpec,
};
use stoat_core::{Error, Result};
use stoat_wire::dto::{AgentAccess, AppliesAt, ForwardData, UpdateData, Vm};

use crate::ctx::Ctx;
use crate::grammar::{CloneArgs, CreateArgs, ForwardArgs, RmArgs, UpdateArgs};
use crate::output::Reply;

/// `create`.
pub fn create(ctx: &Ctx, args: CreateArgs) -> Result<Reply> {
    let random_password = args.console_password.as_deref() == Some("random");
    let spec = CreateSpec {
        name: args.name,
        image: image_from_here(&args.image)?,
        os: args.os,
        backend: args.backend.as_deref().and_then(Backend::given),
        mode: args.mode.as_deref().and_then(Mode::given),
        ram_mb: args.ram,
        cpus: args.cpus,
        disk: args.disk,
        share: args.share,
        console_password: args.console_password,
        recipes: args.recipes,
        params: super::params::settings(&args.params)?,
        allow_exec: args.allow_exec,
        agent_access: access_given(args.agent_access.as_deref())?,
        display: display_given(args.display.as_deref())?,
        host_loopback: args.host_loopback,
        ssh_port: args.ssh_port,
        forwards: args
            .forwards
            .iter()
            .map(|pair| vmops::parse_pair_named(pair, "--forward"))
            .collect::<Result<_>>()?,
        ..CreateSpec::default()
    };
    let data = vmops::create(ctx, &spec)?;
    let human = ctx.prose(|| {
        let mut human = create_human(&data.vm);
        if random_password {
            // Shown this once, to the person who asked for it; never under --json, never logged.
            let password = vmops::console_password(ctx, &data.vm.name)?;
            human.push_str(&format!("console password (shown only now): {password}\n"));
        }
        Ok(human)
    })?;
    Ok(Reply::new(&data, human))
}

/// `--agent-access`'s level, when given.
fn access_given(text: Option<&str>) -> Result<Option<AgentAccess>> {
    text.map(vmops::parse_agent_access).transpose()
}

/// `--display`'s preference, when given.
fn display_given(text: Option<&str>) -> Result<Option<DisplayPref>> {
    text.map(vmops::parse_display).transpose()
}

/// `--image` as core resolves it: a relative path that names a file from here (it has a
/// `/`, so it is no catalog id or bare name in isos/) becomes absolute, as vm.toml keeps it.
fn image_from_here(image: &str) -> Result<String> {
    let path = std::path::Path::new(image.trim());
    if path.is_absolute() || image.starts_with('~') || !image.contains('/') {
        return Ok(image.to_owned());
    }
    let here = std::env::current_dir().map_err(|e| Error::io("find the current directory", e))?;
    let path: std::path::PathBuf = path
        .components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect();
    Ok(here.join(path).to_string_lossy().into_owned())
}

fn create_human(vm: &Vm) -> String {
    let disk = if vm.disk.is_empty() {
        String::new()
    } else {
        format!(", {} disk", vm.disk)
    };
    format!(
        "created {}: {} {} ({}), {} {}, {} MB{disk}, ssh port {}\nstart it with: stoat up {}\n",
        vm.name,
        if vm.os.is_empty() {
            "unknown-os"
        } else {
            &vm.os
        },
        vm.mode,
        vm.backend,
        vm.cpus,
        if vm.cpus == 1 { "cpu" } else { "cpus" },
        vm.ram_mb,
        vm.ssh_port,
        vm.name
    )
}

/// The flags `update` takes, for its "nothing to change" message.
const UPDATE_FLAGS: &str =
    "--ram, --cpus, --ssh-port, --disk, --share, --recipes, --agent-access, --allow-exec, --display, --host-loopback";

/// `update`.
pub fn update(ctx: &Ctx, args: UpdateArgs) -> Result<Reply> {
    let immutable: Vec<(Immutable, String)> = [
        (Immutable::Os, args.os),
        (Immutable::Backend, args.backend),
        (Immutable::Mode, args.mode),
        (Immutable::Image, args.image),
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
        // `--recipes a,b`: the CLI's comma list; `""` clears.
        recipes: args
            .recipes
            .map(|list| list.split(',').map(str::to_owned).collect()),
        agent_access: access_given(args.agent_access.as_deref())?,
        allow_exec: args.allow_exec,
        display: display_given(args.display.as_deref())?,
        host_loopback: args.host_loopback,
        immutable,
    };
    if spec.is_empty() {
        return Err(Error::Usage(format!(
            "update: nothing to change; pass at least one of {UPDATE_FLAGS}"
        )));
    }
    let data = vmops::update(ctx, &args.vm, &spec)?;
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
    // Without a VM name, dispatch sends rm to the project fan-out (commands::project::rm).
    let name = args
        .vm
        .ok_or_else(|| Error::Usage("rm needs a VM name: stoat rm <vm> -y".into()))?;
    vmops::check_removable(ctx, &name)?;
    if !args.yes {
        confirm_delete(ctx, &name)?;
    }
    let data = vmops::rm(ctx, &name)?;
    let human = format!(
        "deleted {name}
"
    );
    Ok(Reply::new(&data, human))
}

/// Asks on stderr when a human is at a terminal; refuses otherwise. Under --json stdin is
/// never read.
fn confirm_delete(ctx: &Ctx, name: &str) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::ConfirmationRequired(format!(
            "rm {name} deletes the VM and its disk; {why}"
        )))
    };
    if let Some(why) = ctx.prompt_refusal() {
        return refuse(why);
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
    let data = vmops::clone(ctx, &args.source, &args.name)?;
    let human = format!(
        "cloned {} as {} (ssh port {}); port forwards are not copied\n",
        data.source, data.vm.name, data.vm.ssh_port
    );
    Ok(Reply::new(&data, human))
}

/// `forward`: show with no pairs, replace with pairs, clear with --clear, edit with
/// --add/--remove.
pub fn forward(ctx: &Ctx, args: ForwardArgs) -> Result<Reply> {
    let change = forward_change(&args.pairs, args.clear, &args.add, &args.remove)?;
    let data = vmops::forward(ctx, &args.vm, &change)?;
    let live = match change {
        ForwardChange::Show => vmops::live_forwards(ctx, &args.vm)?,
        ForwardChange::Edit(_) => None,
    };
    let human = forward_human(&data, live.as_deref());
    Ok(Reply::new(&data, human))
}

/// The change `forward <vm> [PAIR...] [--clear] [--add PAIR]... [--remove PORT]...` asks
/// for. Pairs, `--clear` and `--add`/`--remove` are three ways to say it: one at a time.
fn forward_change(
    pairs: &[String],
    clear: bool,
    add: &[String],
    remove: &[String],
) -> Result<ForwardChange> {
    let editing = !add.is_empty() || !remove.is_empty();
    if clear && !pairs.is_empty() {
        return Err(Error::Usage(
            "forward: --clear takes no HOST:GUEST pairs".into(),
        ));
    }
    if editing && (clear || !pairs.is_empty()) {
        return Err(Error::Usage(
            "forward: --add/--remove change the list; HOST:GUEST pairs and --clear replace it; use one or the other".into(),
        ));
    }
    let parse_pairs = |texts: &[String]| -> Result<Vec<PortPair>> {
        texts.iter().map(|t| vmops::parse_pair(t)).collect()
    };
    if editing {
        let removal = |text: &String| match vmops::parse_removal(text) {
            // A bare port that is no number: said in the flag's terms.
            Err(_) if !text.contains(':') => Err(Error::Usage(format!(
                "forward --remove: {text:?} is not HOST or HOST:GUEST (port numbers)"
            ))),
            other => other,
        };
        return Ok(ForwardChange::Edit(Edit::Change {
            add: parse_pairs(add)?,
            remove: remove.iter().map(removal).collect::<Result<_>>()?,
        }));
    }
    // `forward w add 8080:80`, as other tools spell it: the flag it means, named.
    if let Some(verb) = pairs.first() {
        let flag = match verb.as_str() {
            "add" => Some("--add"),
            "remove" | "rm" | "delete" => Some("--remove"),
            "clear" => Some("--clear"),
            _ => None,
        };
        if let Some(flag) = flag {
            let rest = pairs[1..].join(" ");
            let example = if flag == "--clear" {
                "--clear".to_owned()
            } else {
                format!(
                    "{flag} {}",
                    if rest.is_empty() { "HOST:GUEST" } else { &rest }
                )
            };
            return Err(Error::Usage(format!(
                "forward: {verb:?} is not HOST:GUEST; to {} forwards, use the flag: forward VM {example}",
                &flag[2..]
            )));
        }
    }
    let pairs = parse_pairs(pairs)?;
    Ok(match (clear, pairs.is_empty()) {
        (true, _) => ForwardChange::Edit(Edit::Replace(Vec::new())),
        (false, true) => ForwardChange::Show,
        (false, false) => ForwardChange::Edit(Edit::Replace(pairs)),
    })
}

/// One line per forward; when showing a running VM's, each says whether it is live (its QEMU
/// has it) or waits for the next start, and a live one no longer saved is listed too.
fn forward_human(data: &ForwardData, live: Option<&[(u16, u16)]>) -> String {
    let mut out = String::new();
    if data.forwards.is_empty() && live.is_none_or(<[_]>::is_empty) {
        out.push_str(&match data.applies_at {
            Some(_) => format!("cleared {}'s port forwards\n", data.vm),
            None => format!("{} has no port forwards\n", data.vm),
        });
    }
    let saved: Vec<(u16, u16)> = data
        .forwards
        .iter()
        .map(|f| (f.host_port, f.guest_port))
        .collect();
    for (host, guest) in &saved {
        let note = match live {
            Some(live) if live.contains(&(*host, *guest)) => "  live",
            Some(_) => "  saved; live from the next start",
            None => "",
        };
        out.push_str(&format!("{host}:{guest}{note}\n"));
    }
    for (host, guest) in live.unwrap_or_default() {
        if !saved.contains(&(*host, *guest)) {
            out.push_str(&format!(
                "{host}:{guest}  live until the VM stops; removed\n"
            ));
        }
    }
    if data.applies_at == Some(AppliesAt::NextStart) {
        out.push_str(&format!(
            "{} is running; this takes effect at next start\n",
            data.vm
        ));
    }
    out
}
