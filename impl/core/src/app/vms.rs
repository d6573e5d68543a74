//! Reading VMs: `ls` and `get` (json-v3#per-command-data; VMStatus in json-v3#types).

use stoat_wire::dto::{GetData, Health, LsData, RecipeDetail, VmData, VmStatus};

use super::Session;
use crate::vm::Mode;
use crate::vm::{self, Loaded};
use crate::Result;

/// `ls`: every VM directory, broken ones included.
pub fn ls(s: &Session) -> Result<LsData> {
    let graphical = crate::display::graphical_session(&s.env);
    let vms = vm::list(s.root()?)?
        .iter()
        .map(|loaded| loaded.to_wire_in(graphical))
        .collect();
    Ok(LsData { vms })
}

/// `get <vm>`.
pub fn get(s: &Session, name: &str) -> Result<GetData> {
    let loaded = vm::load(s.root()?, name)?;
    Ok(GetData {
        vm: vm_status(s, &loaded),
    })
}

/// `name` as the wire shows it, re-read now: the answer of a person's `up` of a running VM
/// or `down` of a stopped one, which converge (docs/decisions/cli.md).
pub fn vm(s: &Session, name: &str) -> Result<VmData> {
    Ok(VmData {
        vm: vm::load_ok(s.root()?, name)?.to_wire(&s.env),
    })
}

/// The VMStatus of a loaded VM: its DTO plus its stored recipe state.
fn vm_status(s: &Session, loaded: &Loaded) -> VmStatus {
    let vm = loaded.to_wire(&s.env);
    let Loaded::Ok(stored) = loaded else {
        return VmStatus {
            vm,
            health: Health::Unknown,
            recipes_detail: Vec::new(),
        };
    };
    let details: Vec<RecipeDetail> = stored
        .config
        .recipes
        .iter()
        .map(|name| crate::recipe_state::detail(&stored.config, name))
        .collect();
    let health = crate::recipe_state::aggregate_health(&details);
    VmStatus {
        vm,
        health,
        recipes_detail: details,
    }
}

/// The display notice `up` prints (docs/contract.md behaviour#cli), only when it says
/// something this VM's person has not been shown (docs/decisions/cli.md "display notice"):
/// the first start with this surface and advice, and after either changed. Calling it
/// records the notice as shown, so a caller calls it only when it prints the lines. Human
/// output only: the lines name the VNC socket's host path, which never reaches the wire.
/// Empty for a broken VM.
pub fn display_notice(s: &Session, name: &str) -> Result<Vec<String>> {
    let Loaded::Ok(stored) = vm::load(s.root()?, name)? else {
        return Ok(Vec::new());
    };
    let socket = stored.files().vnc();
    let lines = crate::display::human_lines(&s.env, &stored.config.display, &socket);
    Ok(vm::display_notice::unseen(&stored.dir, lines))
}

/// The `display:` and `attach:` fields `get` prints every time: where the screen is and how
/// to attach, without the notice's paragraph. Human output only, like [`display_notice`].
/// Empty for a broken VM.
pub fn display_fields(s: &Session, name: &str) -> Result<Vec<String>> {
    let Loaded::Ok(stored) = vm::load(s.root()?, name)? else {
        return Ok(Vec::new());
    };
    let socket = stored.files().vnc();
    Ok(crate::display::compact_lines(
        &s.env,
        &stored.config.display,
        &socket,
    ))
}

/// A saved value the running QEMU does not have yet: it applies at the next start.
pub struct Pending {
    pub field: &'static str,
    pub saved: String,
    pub live: String,
}

/// What `get`'s human answer adds to the DTO: the image the VM boots from (a file name; the
/// wire never carries it) and, while it runs, the saved values its QEMU was started without.
pub struct GetFacts {
    pub image: String,
    pub pending: Vec<Pending>,
}

/// The [`GetFacts`] of `name`; `None` for a broken VM.
pub fn get_facts(s: &Session, name: &str) -> Result<Option<GetFacts>> {
    let Loaded::Ok(stored) = vm::load(s.root()?, name)? else {
        return Ok(None);
    };
    let config = &stored.config;
    let image = image_name(config);
    let mut pending = Vec::new();
    if let Some((pid, argv)) = stored
        .running_pid()
        .and_then(|pid| Some((pid, crate::qemu::launch::cmdline(pid)?)))
    {
        let after = |flag: &str| {
            argv.windows(2)
                .find(|pair| pair[0] == flag)
                .map(|pair| pair[1].clone())
        };
        for (field, flag, saved) in [
            ("ram", "-m", config.ram.to_string()),
            ("cpus", "-smp", config.cpus.to_string()),
        ] {
            if let Some(live) = after(flag).filter(|live| *live != saved) {
                pending.push(Pending { field, saved, live });
            }
        }
        let live_forwards =
            crate::qemu::launch::live_forwards(&stored.files().qemu(), pid).unwrap_or_default();
        let saved_forwards: Vec<(u16, u16)> = config
            .forwards
            .iter()
            .map(|f| (f.hostport, f.guestport))
            .collect();
        // Only an argv stoat built has a netdev to compare (a stand-in process has none).
        let is_qemu_argv = argv.iter().any(|arg| arg == "-netdev");
        if is_qemu_argv && live_forwards != saved_forwards {
            let show = |list: &[(u16, u16)]| {
                let words: Vec<String> = list.iter().map(|(h, g)| format!("{h}:{g}")).collect();
                if words.is_empty() {
                    "none".to_owned()
                } else {
                    words.join(", ")
                }
            };
            pending.push(Pending {
                field: "forwards",
                saved: show(&saved_forwards),
                live: show(&live_forwards),
            });
        }
    }
    Ok(Some(GetFacts { image, pending }))
}

/// The file name of the image a VM boots from: a cloud VM's base, else its ISO or disk image.
fn image_name(config: &crate::vm::VmConfig) -> String {
    let source = if config.mode == Mode::Cloud && !config.base.is_empty() {
        &config.base
    } else {
        &config.iso
    };
    std::path::Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Each VM's image file name by VM name, for `ls`'s human table (broken VMs have none).
pub fn image_names(s: &Session) -> Result<std::collections::BTreeMap<String, String>> {
    Ok(vm::list(s.root()?)?
        .iter()
        .filter_map(|loaded| match loaded {
            Loaded::Ok(stored) => Some((stored.name.clone(), image_name(&stored.config))),
            Loaded::Broken { .. } => None,
        })
        .collect())
}
