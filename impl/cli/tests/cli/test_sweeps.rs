//! The two sweeps over what the outside world can do to stoat, each a table so a new case is
//! one row, each run by `make test` (both together take about a minute on the 2-core CI host;
//! every row prints its time):
//!
//! * `kill_sweep`: every command that changes a VM × each moment it can be killed or canceled
//!   (SIGKILL at a `STOAT_FAULT` point, so no handler runs; SIGTERM while its qemu-img runs,
//!   the tool dying of it or first finishing its work). After every row: no VM lists as
//!   broken; the bystander VM's disk and the base image are byte for byte as before; the VM's
//!   own disk reads as before (`qemu-img compare` against a raw copy) unless the command took
//!   and its work is to change it; a `canceled` answer means the command did not take and any
//!   other answer that it did; once the next VM is made, no staging leftover is left. The interrupted
//!   `up`, `exec` and `apply` rows are whole tests of test_cancel.rs.
//! * `hostile_sweep`: every hostile input (images that name host files, recipe files that are
//!   links out of their directory, a share that is a link, FIFOs where files are parsed,
//!   guest-fed bytes of any size or content). Each row is a test of its own file showing the
//!   refusal or the bound; a host file a row could leak holds [`HOST_SECRET`], and after the
//!   row the sweep finds that text nowhere under the data root (VM directories, seeds, kept
//!   images; gzip members read unpacked) nor in anything handed to a fake guest tool.
//!
//! A row's failure does not stop the sweep: every row runs and the failures are listed at the
//! end. A row runs under [`bounded`] ([`ROW_BOUND`]): a stoat command it runs through
//! `TestEnv::run`/`json`/`json_raw` that is still running 90 s after it started is killed and
//! fails the row, naming the command, so a hang fails one row instead of hanging `make test`
//! (`a_command_past_the_bound_is_killed_and_fails_its_row`); what a row runs in the background
//! (`Spawned`) has its own deadlines. `STOAT_SWEEP_ROW=<text>` runs only the rows whose name
//! contains it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{bounded, create_disk_args, JsonRun, TestEnv, ALPINE_VIRT};
use crate::test_cancel::{
    finish_then_die, qemu_io, slow_qemu_img_when, spawn_json, wait_for_tool, ANSWER,
};
use crate::test_integrity::{killed_at, leftovers};

/// The text every host file a hostile row plants holds; it must never reach a guest.
pub(crate) const HOST_SECRET: &str = "stoat-host-secret-4711";

/// The time limit on each stoat command a sweep's row runs ([`bounded`]): far above what any
/// command of a row takes (the slowest, a guest row's, take seconds), far below forever.
const ROW_BOUND: Duration = Duration::from_secs(90);

/// Runs each `(name, row)`, catching a failed row so the others still run; fails at the end
/// naming every failed row. Each row's stoat commands are bounded by [`ROW_BOUND`].
fn sweep<S: AsRef<str>, R>(what: &str, rows: &[(S, R)], run: impl Fn(&R)) {
    sweep_within(ROW_BOUND, what, rows, run)
}

/// [`sweep`] with `limit` on each row's stoat commands.
fn sweep_within<S: AsRef<str>, R>(limit: Duration, what: &str, rows: &[(S, R)], run: impl Fn(&R)) {
    let only = std::env::var("STOAT_SWEEP_ROW").unwrap_or_default();
    let started = Instant::now();
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, row) in rows {
        let name = name.as_ref();
        if !name.contains(only.as_str()) {
            continue;
        }
        ran += 1;
        let at = Instant::now();
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| bounded(limit, || run(row))));
        eprintln!("{what}: {name}: {:?}", at.elapsed());
        if outcome.is_err() {
            failed.push(name);
        }
    }
    eprintln!("{what}: {ran} rows in {:?}", started.elapsed());
    assert!(ran > 0, "no row of {what} matches STOAT_SWEEP_ROW={only:?}");
    assert!(failed.is_empty(), "{what}: failed rows: {failed:?}");
}

/// A stoat command that never ends on its own (`logs -f` of stoat's own log follows it until
/// Ctrl-C) is killed at a row's bound, and the row fails naming it; the sweep goes on to its
/// next row and lists the failed one.
#[test]
fn a_command_past_the_bound_is_killed_and_fails_its_row() {
    let env = TestEnv::new();
    let bound = Duration::from_secs(2);
    let started = Instant::now();
    let failed = std::panic::catch_unwind(|| bounded(bound, || env.run(&["logs", "-f"])));
    let took = started.elapsed();
    let message = *failed.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.starts_with("`stoat logs -f` ran past its bound of 2s and was killed"),
        "{message}"
    );
    assert!(took >= bound && took < bound * 5, "{took:?}");
    // Nothing of it runs on (every run starts from the sandbox's HOME).
    assert!(
        runs_from(&env.home()).is_empty(),
        "{:?}",
        runs_from(&env.home())
    );
    // In a sweep: the row fails, the next one still runs, the failure names the row.
    let rows = [("follows forever", true), ("answers", false)];
    let ran = std::cell::RefCell::new(Vec::new());
    let swept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sweep_within(bound, "bound check", &rows, |forever| {
            ran.borrow_mut().push(*forever);
            let args: &[&str] = if *forever { &["logs", "-f"] } else { &["ls"] };
            assert!(env.run(args).status.success());
        })
    }));
    let message = *swept.unwrap_err().downcast::<String>().unwrap();
    assert_eq!(message, r#"bound check: failed rows: ["follows forever"]"#);
    assert_eq!(*ran.borrow(), [true, false]);
}

/// The processes of this user whose working directory is `dir`.
fn runs_from(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if entry.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == dir) {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

// ---------------------------------------------------------------- the kill sweep

/// How a row interrupts its command.
#[derive(Clone, Copy)]
enum Kill {
    /// SIGKILL at this `STOAT_FAULT` point: there is no answer.
    At(&'static str),
    /// SIGTERM once the slow qemu-img for the shell test `when` runs; the tool dies of it.
    Term(&'static str),
    /// As [`Kill::Term`], but the tool does its work first and then dies of the signal.
    TermAfterWork(&'static str),
}

struct KillRow {
    args: &'static [&'static str],
    kill: Kill,
    /// Whether the command's effect is in place, read from the data root.
    took: fn(&TestEnv) -> bool,
    /// The command's work is to change (or remove) `n`'s data when it takes.
    changes_n: bool,
}

fn disk(env: &TestEnv, name: &str) -> PathBuf {
    env.root().join(name).join("disk.qcow2")
}

fn listed(env: &TestEnv, name: &str) -> bool {
    env.json(&["ls"]).data()["vms"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["name"] == name)
}

fn ram(env: &TestEnv) -> u64 {
    env.json(&["get", "n"]).data()["vm"]["ram_mb"]
        .as_u64()
        .unwrap()
}

fn virtual_size(env: &TestEnv) -> u64 {
    crate::common::qemu_info(&disk(env, "n"))["virtual-size"]
        .as_u64()
        .unwrap()
}

fn has_snapshot(env: &TestEnv, tag: &str) -> bool {
    env.json(&["snapshot", "n"]).data()["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["tag"] == tag)
}

/// `n` (a disk VM with data, snapshot `s0`, then more data), the bystander `b`, the base ISO.
fn kill_setup() -> TestEnv {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    env.json(&create_disk_args("n")).data();
    env.json(&create_disk_args("b")).data();
    assert!(qemu_io(&disk(&env, "n"), "write -P 0x5a 0 64k"));
    env.json(&["snapshot", "n", "s0"]).data();
    assert!(qemu_io(&disk(&env, "n"), "write -P 0xa5 64k 64k"));
    assert!(qemu_io(&disk(&env, "b"), "write -P 0x3c 0 64k"));
    env
}

fn raw_copy(env: &TestEnv, from: &Path, to: &Path) {
    crate::common::qemu_img(&[
        "convert".as_ref(),
        "-U".as_ref(),
        "-f".as_ref(),
        "qcow2".as_ref(),
        "-O".as_ref(),
        "raw".as_ref(),
        from.as_os_str(),
        to.as_os_str(),
    ]);
    assert!(to.exists(), "{} copied", env.path_str(from));
}

/// `qemu-img compare`: what the guest reads is the same (a grown disk's new part reads 0).
fn same_content(raw: &Path, disk: &Path) -> bool {
    std::process::Command::new("qemu-img")
        .args(["compare", "-U", "-f", "raw", "-F", "qcow2"])
        .arg(raw)
        .arg(disk)
        .output()
        .unwrap()
        .status
        .success()
}

fn run_kill_row(row: &KillRow) {
    let env = kill_setup();
    let n_before = env.tmp().join("n.raw");
    raw_copy(&env, &disk(&env, "n"), &n_before);
    let bystander = std::fs::read(disk(&env, "b")).unwrap();
    let base = std::fs::read(env.root().join("isos").join(ALPINE_VIRT)).unwrap();

    let answer: Option<JsonRun> = match row.kill {
        Kill::At(point) => {
            killed_at(&env, point, row.args);
            None
        }
        Kill::Term(when) | Kill::TermAfterWork(when) => {
            let on_term = match row.kill {
                Kill::TermAfterWork(_) => finish_then_die(),
                _ => String::new(),
            };
            let pid_file = slow_qemu_img_when(&env, when, &on_term);
            let mut run = spawn_json(&env, row.args);
            wait_for_tool(&mut run, &pid_file);
            run.signal(libc::SIGTERM);
            let answer = run.json(ANSWER);
            std::fs::remove_file(env.bin().join("qemu-img")).unwrap();
            Some(answer)
        }
    };
    let took = (row.took)(&env);
    if let Some(answer) = &answer {
        if answer.ok() {
            assert!(took, "{:?} answered ok but did not take", row.args);
        } else {
            answer.error("canceled");
            assert!(!took, "{:?} answered canceled but took", row.args);
        }
    }
    for vm in env.json(&["ls"]).data()["vms"].as_array().unwrap() {
        assert_ne!(
            vm["state"], "broken",
            "{:?} left a broken VM: {vm}",
            row.args
        );
    }
    assert_eq!(
        std::fs::read(disk(&env, "b")).unwrap(),
        bystander,
        "the bystander's disk"
    );
    assert_eq!(
        std::fs::read(env.root().join("isos").join(ALPINE_VIRT)).unwrap(),
        base,
        "the base image"
    );
    if !(took && row.changes_n) {
        assert!(
            same_content(&n_before, &disk(&env, "n")),
            "{:?}: n's disk reads as before",
            row.args
        );
    }
    // The command again (whatever it answers now), then the next VM made: nothing staged is
    // left behind.
    let _ = env.json(row.args);
    env.json(&create_disk_args("z")).data();
    assert!(
        leftovers(&env.root()).is_empty(),
        "{:?}",
        leftovers(&env.root())
    );
}

const CREATE_X: &[&str] = &[
    "create",
    "x",
    "--image",
    "alpine-virt",
    "--mode",
    "disk",
    "--disk",
    "64M",
];
const CLONE_X: &[&str] = &["clone", "n", "x"];
const RM_N: &[&str] = &["rm", "n", "-y"];
const RAM_N: &[&str] = &["update", "n", "--ram", "512"];
const GROW_N: &[&str] = &["update", "n", "--disk", "128M"];
const SAVE_N: &[&str] = &["snapshot", "n", "s1"];
const DELETE_N: &[&str] = &["snapshot", "n", "s0", "--delete"];
const RESTORE_N: &[&str] = &["snapshot", "n", "s0", "--restore"];

fn x_listed(env: &TestEnv) -> bool {
    listed(env, "x")
}
fn n_gone(env: &TestEnv) -> bool {
    !listed(env, "n")
}
fn ram_changed(env: &TestEnv) -> bool {
    ram(env) == 512
}
fn grown(env: &TestEnv) -> bool {
    virtual_size(env) == 128 << 20
}
fn saved(env: &TestEnv) -> bool {
    has_snapshot(env, "s1")
}
fn deleted(env: &TestEnv) -> bool {
    !has_snapshot(env, "s0")
}
fn restored(env: &TestEnv) -> bool {
    // The data written after s0 is gone once the restore took.
    qemu_io(&disk(env, "n"), "read -P 0 64k 64k")
}

fn row(args: &'static [&'static str], kill: Kill, took: fn(&TestEnv) -> bool) -> KillRow {
    KillRow {
        args,
        kill,
        took,
        changes_n: false,
    }
}

fn changing(args: &'static [&'static str], kill: Kill, took: fn(&TestEnv) -> bool) -> KillRow {
    KillRow {
        changes_n: true,
        ..row(args, kill, took)
    }
}

#[test]
fn kill_sweep() {
    use Kill::*;
    let save = r#"[ "$1" = snapshot ] && [ "$2" = -c ]"#;
    let delete = r#"[ "$1" = snapshot ] && [ "$2" = -d ]"#;
    let restore = r#"[ "$1" = snapshot ] && [ "$2" = -a ]"#;
    let resize = r#"[ "$1" = resize ]"#;
    let create = r#"[ "$1" = create ]"#;
    // create and clone stop at the same four points of the staging they share.
    let mut rows: Vec<(String, KillRow)> = Vec::new();
    for (cmd, argv) in [("create", CREATE_X), ("clone", CLONE_X)] {
        for point in ["staged", "filled", "commit", "temp-written"] {
            let name = match point {
                "commit" => format!("{cmd} killed at commit"),
                _ => format!("{cmd} killed {point}"),
            };
            rows.push((name, row(argv, At(point), x_listed)));
        }
    }
    let more: Vec<(&str, KillRow)> = vec![
        (
            "create canceled in qemu-img",
            row(CREATE_X, Term(create), x_listed),
        ),
        ("rm killed removed", changing(RM_N, At("removed"), n_gone)),
        (
            "update ram killed temp-written",
            row(RAM_N, At("temp-written"), ram_changed),
        ),
        (
            "update disk killed resize-noted",
            changing(GROW_N, At("resize-noted"), grown),
        ),
        (
            "update disk killed resized",
            changing(GROW_N, At("resized"), grown),
        ),
        (
            "update disk canceled in qemu-img",
            changing(GROW_N, Term(resize), grown),
        ),
        (
            "update disk canceled after the resize",
            changing(GROW_N, TermAfterWork(resize), grown),
        ),
        ("snapshot save canceled", row(SAVE_N, Term(save), saved)),
        (
            "snapshot save canceled after the save",
            row(SAVE_N, TermAfterWork(save), saved),
        ),
        (
            "snapshot delete canceled",
            row(DELETE_N, Term(delete), deleted),
        ),
        (
            "snapshot delete canceled after the delete",
            row(DELETE_N, TermAfterWork(delete), deleted),
        ),
        (
            "snapshot restore canceled",
            changing(RESTORE_N, Term(restore), restored),
        ),
        (
            "snapshot restore canceled after the restore",
            changing(RESTORE_N, TermAfterWork(restore), restored),
        ),
    ];
    rows.extend(more.into_iter().map(|(name, row)| (name.to_owned(), row)));
    sweep("kill_sweep", &rows, run_kill_row);
    // The interrupted commands that run a guest (their truth is the guest's and QEMU's).
    let whole: Vec<(&str, fn())> = vec![
        ("up canceled while it waits", crate::test_cancel::canceling_up_while_it_waits_stops_the_qemu_it_started_in_both_modes),
        ("exec canceled", crate::test_cancel::canceling_exec_stops_ssh_then_the_guest_command_and_answers_canceled_in_both_modes),
        ("a blocked command canceled", crate::test_cancel::sigterm_of_a_command_blocked_on_a_read_answers_within_two_seconds),
        ("a signal at any moment", crate::test_cancel::a_signal_at_any_moment_from_the_first_instruction_still_yields_one_result_line),
    ];
    sweep("kill_sweep (guests)", &whole, |f| f());
}

// ---------------------------------------------------------------- the hostile-input sweep

/// Whether `haystack` holds `needle`.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Every regular file under `dir` (links, FIFOs and sockets are never opened).
fn regular_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => stack.push(entry.path()),
                Ok(kind) if kind.is_file() => found.push(entry.path()),
                _ => {}
            }
        }
    }
    found
}

/// [`HOST_SECRET`] is in no file under the data root (a gzip file, such as an apkovl seed,
/// is read unpacked too) and in nothing the fakes were handed (their call log holds every
/// argv, remote command and stdin they saw).
fn assert_the_secret_went_nowhere(env: &TestEnv) {
    let secret = HOST_SECRET.as_bytes();
    for file in regular_files(&env.root()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !holds(&bytes, secret),
            "{} holds the host's secret",
            file.display()
        );
        if bytes.starts_with(&[0x1f, 0x8b]) {
            let unpacked = std::process::Command::new("gzip")
                .arg("-dc")
                .arg(&file)
                .output()
                .unwrap()
                .stdout;
            assert!(
                !holds(&unpacked, secret),
                "{} (unpacked) holds the host's secret",
                file.display()
            );
        }
    }
    for file in regular_files(&env.tmp()) {
        if file.file_name().is_some_and(|n| n == "fake-calls.jsonl") {
            let calls = std::fs::read(&file).unwrap();
            assert!(
                !holds(&calls, secret),
                "a fake tool was handed the host's secret"
            );
        }
    }
}

/// The look finds the secret where it is, plain or in a gzip member: a sweep that could never
/// fail would read as a pass.
fn the_look_finds_a_planted_secret() {
    let env = TestEnv::new();
    let vm = env.root().join("w");
    std::fs::create_dir_all(&vm).unwrap();
    let plain = vm.join("seed.txt");
    std::fs::write(&plain, format!("before {HOST_SECRET} after")).unwrap();
    eprintln!("hostile_sweep: the look's self-check (two panics expected below)");
    let found = std::panic::catch_unwind(|| assert_the_secret_went_nowhere(&env));
    assert!(found.is_err(), "a plain copy is found");
    let packed = std::process::Command::new("gzip")
        .arg(&plain)
        .status()
        .unwrap();
    assert!(packed.success() && vm.join("seed.txt.gz").exists());
    let found = std::panic::catch_unwind(|| assert_the_secret_went_nowhere(&env));
    assert!(found.is_err(), "a gzipped copy is found");
}

/// A hostile row: a test that returns its environment for the look for the secret.
type HostileRow = fn() -> TestEnv;

#[test]
fn hostile_sweep() {
    the_look_finds_a_planted_secret();
    use crate::{test_apply, test_host, test_image_store, test_integrity, test_mcp};
    use crate::{test_recipes, test_remote, test_runtime};
    let rows: Vec<(&str, HostileRow)> = vec![
        ("a re-pulled image never rewrites a VM's base", test_image_store::a_repull_of_a_changed_image_never_changes_the_base_of_a_vm_built_on_it),
        ("a backing file on the host", test_integrity::an_untrusted_image_cannot_reach_host_files),
        ("a data_file on the host", test_integrity::a_qcow2_whose_data_file_is_a_host_file_is_refused),
        ("an unverified catalog image backed by a host file", test_integrity::an_unverified_catalog_image_backed_by_a_host_file_is_refused),
        ("a host file that is no ISO", test_integrity::a_host_file_that_is_not_an_iso_is_never_attached_as_one),
        ("a share that is a symlink", test_integrity::a_share_given_as_a_symlink_is_recorded_as_the_directory_it_names),
        ("a local recipe script linked out of its directory", test_apply::a_recipe_script_that_is_a_symlink_out_of_its_directory_never_reaches_the_guest),
        ("a remote recipe script linked to a host file", test_remote::add_refuses_what_is_not_a_recipe_and_leaves_nothing),
        ("FIFOs where files are parsed", test_integrity::a_fifo_in_place_of_a_parsed_file_never_hangs_a_command),
        ("recipe outputs over their bound", test_apply::outputs_over_16_kib_fail_the_recipe_and_leave_the_vm_readable),
        ("--json exec of 100 MiB", test_runtime::exec_capture_of_100_mib_is_cut_at_8_mib_with_a_flag_in_bounded_memory),
        ("a 40 MB console line and terminal escapes", test_host::logs_of_a_40_mb_line_are_read_in_linear_work_cut_and_escapes_show_only_to_a_human),
        ("a console that never stops", test_runtime::a_running_boot_s_console_log_never_passes_its_cap),
        ("terminal escapes in a recipe", test_recipes::a_recipes_terminal_escapes_reach_a_human_only_as_visible_text),
        ("a 15 MB name sent to MCP", test_mcp::an_over_long_name_is_echoed_back_only_cut),
        ("MCP logs of a 40 MB console line", test_mcp::mcp_logs_of_a_40_mb_line_answer_cut_and_the_session_goes_on),
    ];
    sweep("hostile_sweep", &rows, |row| {
        assert_the_secret_went_nowhere(&row())
    });
}
