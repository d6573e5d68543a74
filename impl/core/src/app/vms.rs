//! Reading VMs: `ls` and `get` (json-v3#per-command-data; VMStatus in json-v3#types).

use stoat_wire::dto::{GetData, Health, LsData, RecipeDetail, VmStatus};

use super::Session;
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

/// The VMStatus of a loaded VM: its DTO plus its stored recipe state.
pub fn vm_status(s: &Session, loaded: &Loaded) -> VmStatus {
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

/// The human `display:` lines of a VM (docs/contract.md behaviour#cli): human output only,
/// since they name the VNC socket's host path, which never reaches the wire. Empty for a
/// broken VM.
pub fn display_lines(s: &Session, name: &str) -> Result<Vec<String>> {
    let Loaded::Ok(stored) = vm::load(s.root()?, name)? else {
        return Ok(Vec::new());
    };
    let socket = crate::qemu::VmPaths::new(&stored.dir).vnc_socket;
    Ok(crate::display::human_lines(
        &s.env,
        &stored.config.display,
        &socket,
    ))
}
