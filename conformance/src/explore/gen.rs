//! Owns generating random histories, deterministic by seed: a small splitmix64 stream
//! picks commands (live and disk creates, clones, snapshots, up, down, wait and exec,
//! images and a pull of an id no catalog has, init, status and the project's down among
//! them) over a pool of
//! three VM names (so creates collide, removed VMs are named
//! again) and host ports from a range of each name's own (so no two VMs ever compete for a
//! port, a question the contract leaves to the host).

use super::model::{Cmd, ACCESS, EXEC_CODES, NO_IMAGE, RECIPES};

/// The seed a run uses unless told otherwise: every run without `--seed` explores the same
/// histories.
pub const DEFAULT_SEED: u64 = 26;
/// Histories per run by default.
pub const DEFAULT_HISTORIES: u64 = 200;

/// A splitmix64 stream: tiny, fast and the same on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Half the time one of `items`, else nothing.
fn maybe_pick<T: Copy>(rng: &mut Rng, items: &[T]) -> Option<T> {
    let item = *rng.pick(items);
    (rng.below(2) == 0).then_some(item)
}

const NAMES: &[&str] = &["a", "b", "c"];
const CPUS: &[u64] = &[1, 2, 3, 4];
const RAM: &[u64] = &[512, 1024, 2048];

/// The seed of history `index` of a run seeded `seed`: each history can be rerun alone.
pub fn history_seed(seed: u64, index: u64) -> u64 {
    Rng::new(seed ^ index.wrapping_mul(0xA24B_AED4_963E_E407)).next_u64()
}

/// A host port of `name`'s own range (8100.. for a, 8200.. for b...), slot 0..4.
fn host_port(name: &str, slot: u64) -> u64 {
    let base = NAMES.iter().position(|n| *n == name).unwrap_or(0) as u64;
    8100 + base * 100 + slot
}

fn forward(rng: &mut Rng, name: &str) -> (u64, u64) {
    let slot = rng.below(4);
    (host_port(name, slot), 80 + rng.below(3))
}

/// One random history of `steps` commands.
/// Three commands in four name a VM the history has made (by create or clone, and not
/// removed since), half of those the one the command before named, so a VM meets several
/// commands in a row (created, started, snapshotted while running, stopped); the rest
/// name any of the three, so missing VMs and taken names still come up. A forward clear
/// names the VM a set or add last gave forwards, a clone copies it and the next update
/// or add names that clone, a snapshot delete names the disk VM and tag a save last named
/// (else the disk VM last created), and a save the last disk VM that runs, when there is
/// one. Which VMs exist
/// is the generator's guess (a create may fail); the model judges what really happened.
pub fn history(seed: u64, steps: usize) -> Vec<Cmd> {
    let mut rng = Rng::new(seed);
    let mut made: Vec<String> = Vec::new();
    // The made VMs a forward set or add named since (the generator's guess, too).
    let mut forwarded: Vec<String> = Vec::new();
    // The disk VMs created (so snapshots are theirs to save), and the tags a save named on
    // one and no delete since.
    let mut disks: Vec<String> = Vec::new();
    // A clone of a VM given forwards that no update or add has named since.
    let mut cloned: Option<String> = None;
    // The made VMs an up named and no down since.
    let mut running: Vec<String> = Vec::new();
    let mut saved: Vec<(String, &'static str)> = Vec::new();
    let mut last = NAMES[0].to_string();
    (0..steps)
        .map(|_| {
            let name = if made.is_empty() || rng.below(4) == 0 {
                rng.pick(NAMES).to_string()
            } else if made.contains(&last) && rng.below(2) == 0 {
                last.clone()
            } else {
                rng.pick(&made).clone()
            };
            let mut cmd = command(&mut rng, name);
            // A clear shows only on a VM with forwards, a delete only on a saved tag: each
            // names the last VM given some, the delete the tag saved (drawing nothing more,
            // so the rest of the history is as it would have been).
            match (&mut cmd, forwarded.last(), saved.last(), disks.last()) {
                (Cmd::ForwardClear { name }, Some(with), ..) => name.clone_from(with),
                (Cmd::SnapshotDelete { name, tag }, _, Some((with, saved_tag)), _) => {
                    name.clone_from(with);
                    *tag = saved_tag;
                }
                (Cmd::SnapshotDelete { name, .. }, _, None, Some(with)) => name.clone_from(with),
                // A clone copies a VM given forwards, and the next update or add names that
                // clone, when there are such: a clone's forwards show only when it changes.
                (Cmd::Clone { source, .. }, Some(with), ..) => source.clone_from(with),
                (Cmd::Update { name, .. } | Cmd::ForwardAdd { name, .. }, ..)
                    if cloned.is_some() =>
                {
                    if let Some(with) = cloned.take() {
                        *name = with;
                    }
                }
                // A save names a disk VM that runs (the save a monitor makes) when there is one.
                (Cmd::SnapshotSave { name, .. }, ..) => {
                    if let Some(with) = disks.iter().rev().find(|d| running.contains(d)) {
                        name.clone_from(with);
                    }
                }
                _ => {}
            }
            match &cmd {
                Cmd::Create { name, disk, .. } if !made.contains(name) => {
                    made.push(name.clone());
                    if *disk {
                        disks.push(name.clone());
                    }
                }
                Cmd::Clone { name, source } if !made.contains(name) => {
                    made.push(name.clone());
                    if forwarded.contains(source) {
                        cloned = Some(name.clone());
                    }
                }
                Cmd::Rm { name, yes: true } => {
                    made.retain(|m| m != name);
                    forwarded.retain(|m| m != name);
                    saved.retain(|(m, _)| m != name);
                    disks.retain(|m| m != name);
                    running.retain(|m| m != name);
                }
                Cmd::ForwardSet { name, .. } | Cmd::ForwardAdd { name, .. }
                    if made.contains(name) && !forwarded.contains(name) =>
                {
                    forwarded.push(name.clone())
                }
                Cmd::ForwardClear { name } => forwarded.retain(|m| m != name),
                Cmd::Up { name } if made.contains(name) && !running.contains(name) => {
                    running.push(name.clone())
                }
                Cmd::Down { name } => running.retain(|m| m != name),
                Cmd::SnapshotSave { name, tag } if disks.contains(name) => {
                    saved.push((name.clone(), tag))
                }
                Cmd::SnapshotDelete { name, tag } => saved.retain(|(m, t)| m != name || t != tag),
                _ => {}
            }
            if let Some(target) = cmd.target() {
                last = target.to_string();
            }
            cmd
        })
        .collect()
}

const TAGS: &[&str] = &["t1", "t2"];

fn tag(rng: &mut Rng) -> &'static str {
    TAGS[rng.below(TAGS.len() as u64) as usize]
}

/// Slots of [`command`]'s draw, one command kind (or a weight of one) each.
const SLOTS: u64 = 52;

fn command(rng: &mut Rng, name: String) -> Cmd {
    match rng.below(SLOTS) {
        36 => Cmd::Images,
        37 => Cmd::Pull { id: NO_IMAGE },
        38 => Cmd::Init,
        39 => Cmd::Status,
        40 => Cmd::ProjectDown,
        // Clears, adds and snapshot deletes weigh more than the other commands: a clear
        // shows only on a VM that has forwards and a delete only on a disk VM, which most
        // histories would otherwise never give them.
        11 | 41..=43 => Cmd::ForwardClear { name },
        30 => Cmd::Apply {
            dry_run: rng.below(2) == 0,
            name,
        },
        31 => Cmd::Recipes,
        32 => Cmd::RecipeShow {
            recipe: RECIPES[rng.below(RECIPES.len() as u64) as usize],
        },
        19..=21 => Cmd::Up { name },
        22 | 23 => Cmd::Down { name },
        24 | 25 => Cmd::Exec {
            code: *rng.pick(EXEC_CODES),
            name,
        },
        26 => Cmd::Wait {
            until: if rng.below(2) == 0 {
                "stopped"
            } else {
                "reachable"
            },
            name,
        },
        0 | 1 | 27..=29 => Cmd::Create {
            cpus: maybe_pick(rng, CPUS),
            ram: maybe_pick(rng, RAM),
            access: maybe_pick(rng, ACCESS),
            disk: rng.below(2) == 0,
            name,
        },
        13 => Cmd::Clone {
            source: name,
            name: rng.pick(NAMES).to_string(),
        },
        14 => Cmd::SnapshotList { name },
        15 | 16 | 33..=35 => Cmd::SnapshotSave {
            tag: tag(rng),
            name,
        },
        17 => Cmd::SnapshotRestore {
            tag: tag(rng),
            name,
        },
        18 | 48..=51 => Cmd::SnapshotDelete {
            tag: tag(rng),
            name,
        },
        2 => Cmd::Rm {
            yes: rng.below(4) != 0,
            name,
        },
        3 | 4 => {
            let cpus = maybe_pick(rng, CPUS);
            let ram = maybe_pick(rng, RAM);
            let access = maybe_pick(rng, ACCESS);
            Cmd::Update {
                cpus: if cpus.is_none() && ram.is_none() && access.is_none() {
                    Some(*rng.pick(CPUS))
                } else {
                    cpus
                },
                ram,
                access,
                name,
            }
        }
        5 => Cmd::Get { name },
        6 => Cmd::Ls,
        7 => {
            let mut forwards: Vec<(u64, u64)> = Vec::new();
            for _ in 0..rng.below(3) + 1 {
                let f = forward(rng, &name);
                if !forwards.iter().any(|(h, _)| *h == f.0) {
                    forwards.push(f);
                }
            }
            Cmd::ForwardSet { name, forwards }
        }
        8 | 9 | 44..=47 => Cmd::ForwardAdd {
            forward: forward(rng, &name),
            name,
        },
        10 => Cmd::ForwardRemove {
            host: host_port(&name, rng.below(4)),
            name,
        },
        _ => Cmd::ForwardShow { name },
    }
}

/// The names concurrent clients share: two, so creates of one name collide often.
pub const CONCURRENT_NAMES: &[&str] = &["a", "b"];

/// One concurrent plan: `clients` lists of `rounds` commands each (`None`: the client sits
/// the round out, as shrinking leaves it), deterministic by seed.
pub fn plan(seed: u64, clients: usize, rounds: usize) -> Vec<Vec<Option<Cmd>>> {
    let mut rng = Rng::new(seed);
    (0..clients)
        .map(|_| {
            (0..rounds)
                .map(|_| Some(concurrent_command(&mut rng)))
                .collect()
        })
        .collect()
}

/// A command for a concurrent client: creates (live and disk), single-field updates (two
/// updates of one VM touch different fields as often as the same one), removals, clones of
/// one name into the other (so a clone meets the source's rm, or a create of its name),
/// snapshot save, delete and list of one tag (so two saves of it, or a save and a delete,
/// overlap), `up` and `down` on the fake tier (so a start meets an update, an rm, a clone
/// or a snapshot of its VM), forwards and reads.
fn concurrent_command(rng: &mut Rng) -> Cmd {
    let name = rng.pick(CONCURRENT_NAMES).to_string();
    match rng.below(19) {
        0..=2 => Cmd::Create {
            cpus: maybe_pick(rng, CPUS),
            ram: None,
            access: None,
            disk: rng.below(2) == 0,
            name,
        },
        3 => Cmd::Rm { yes: true, name },
        4..=6 => {
            let (mut cpus, mut ram, mut access) = (None, None, None);
            match rng.below(3) {
                0 => cpus = Some(*rng.pick(CPUS)),
                1 => ram = Some(*rng.pick(RAM)),
                _ => access = Some(*rng.pick(ACCESS)),
            }
            Cmd::Update {
                name,
                cpus,
                ram,
                access,
            }
        }
        7 => Cmd::Get { name },
        8 => Cmd::Ls,
        9 | 10 => Cmd::ForwardAdd {
            forward: forward(rng, &name),
            name,
        },
        11 => Cmd::Clone {
            name: CONCURRENT_NAMES
                .iter()
                .find(|n| **n != name)
                .map_or("b", |n| n)
                .to_string(),
            source: name,
        },
        12 | 13 => Cmd::SnapshotSave { tag: "t1", name },
        14 => Cmd::SnapshotDelete { tag: "t1", name },
        15 => Cmd::SnapshotList { name },
        16 => Cmd::Up { name },
        17 => Cmd::Down { name },
        _ => Cmd::ForwardShow { name },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::model::{Model, Power, Project, Vm, QUOTES};
    use std::collections::{BTreeMap, BTreeSet};

    /// Every transition the model allows, for every command of the default histories in
    /// states of every kind (no VM; stopped, running and stopping VMs with and without a
    /// disk, snapshots and forwards; with and without a project and a listed catalog), quotes
    /// one of the contract sentences [`QUOTES`] lists and restates its rule.
    #[test]
    fn every_transition_quotes_the_contract() {
        let mut states = vec![Model::default()];
        for power in [Power::Stopped, Power::Running, Power::Stopping] {
            for disk in [Some(true), Some(false), None] {
                let mut model = Model::default();
                for name in ["a", "b", "c"] {
                    model.vms.insert(
                        name.into(),
                        Vm {
                            power,
                            disk,
                            forwards: [(8100, 80)].into(),
                            snapshots: Some(["t1".to_string()].into()),
                            started: (power != Power::Stopped).then(BTreeSet::new),
                            ..Vm::default()
                        },
                    );
                }
                model.project = Some(Project::default());
                model.images = Some(BTreeMap::new());
                states.push(model);
            }
        }
        let mut kinds = std::collections::HashSet::new();
        for index in 0..DEFAULT_HISTORIES {
            let seed = history_seed(DEFAULT_SEED, index);
            for cmd in history(seed, 12) {
                kinds.insert(std::mem::discriminant(&cmd));
                for state in &states {
                    for allowed in state.predict(&cmd) {
                        assert!(
                            QUOTES.contains(&allowed.quote) && allowed.rule.len() > 10,
                            "{}: {} quotes {:?}",
                            cmd.shell(),
                            allowed.describe(),
                            allowed.quote
                        );
                    }
                }
            }
        }
        assert_eq!(kinds.len(), 27, "every command kind is generated");
    }

    #[test]
    fn histories_are_deterministic_by_seed_and_differ_between_seeds() {
        assert_eq!(
            history(history_seed(7, 3), 12),
            history(history_seed(7, 3), 12)
        );
        assert_ne!(
            history(history_seed(7, 3), 12),
            history(history_seed(8, 3), 12)
        );
        assert_ne!(
            history(history_seed(7, 3), 12),
            history(history_seed(7, 4), 12)
        );
        assert_eq!(plan(5, 3, 4), plan(5, 3, 4));
        assert_ne!(plan(5, 3, 4), plan(6, 3, 4));
        assert_eq!(plan(5, 3, 4).len(), 3);
    }

    /// The default run starts VMs it made, saves snapshots of running disk VMs and clears
    /// the forwards of VMs given some: the lifecycle's states are reached, not only named,
    /// and a clear that saves nothing has something to lose.
    #[test]
    fn the_default_histories_start_made_vms_and_snapshot_running_disk_vms() {
        let (mut ups, mut live_saves, mut clears) = (0, 0, 0);
        for index in 0..DEFAULT_HISTORIES {
            // name -> (a disk VM, running), as the generator's guess has it
            let mut vms: std::collections::BTreeMap<String, (bool, bool)> = Default::default();
            let mut forwarded = std::collections::BTreeSet::new();
            for cmd in history(history_seed(DEFAULT_SEED, index), 12) {
                match cmd {
                    Cmd::ForwardSet { name, .. } | Cmd::ForwardAdd { name, .. }
                        if vms.contains_key(&name) =>
                    {
                        forwarded.insert(name);
                    }
                    Cmd::ForwardClear { name } if forwarded.remove(&name) => clears += 1,
                    Cmd::Create { name, disk, .. } => {
                        vms.entry(name).or_insert((disk, false));
                    }
                    Cmd::Rm { name, yes: true } => {
                        vms.remove(&name);
                        forwarded.remove(&name);
                    }
                    Cmd::Up { name } => {
                        if let Some(vm) = vms.get_mut(&name) {
                            vm.1 = true;
                            ups += 1;
                        }
                    }
                    Cmd::Down { name } => {
                        if let Some(vm) = vms.get_mut(&name) {
                            vm.1 = false;
                        }
                    }
                    Cmd::SnapshotSave { name, .. } if vms.get(&name) == Some(&(true, true)) => {
                        live_saves += 1;
                    }
                    _ => {}
                }
            }
        }
        assert!(ups >= 35, "{ups} ups of a made VM");
        assert!(clears >= 15, "{clears} clears of a VM given forwards");
        assert!(live_saves >= 3, "{live_saves} saves of a running disk VM");
    }
}
