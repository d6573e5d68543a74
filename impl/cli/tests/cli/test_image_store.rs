//! The image store through the real binary: a re-pull of an image whose file changed on the
//! mirror never changes the base of a VM built on the earlier one, `images` and `prune` say
//! who uses which copy and what can be freed, a VM made before the store is moved onto a
//! copy, and concurrent pulls of one image download it once. A loopback mirror
//! (`common::http`), the real qemu-img and qemu-io, stoat-fake's QEMU.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::http::{Behaviour, Server};
use crate::common::{eventually, fake_qemu, make_qcow2, Reaper, Spawned, TestEnv};
use crate::test_images::{entry, env_with_catalog, isos, payload};

/// A real qcow2 whose first MiB holds `pattern`, as bytes.
fn qcow2_with(env: &TestEnv, name: &str, pattern: u8) -> Vec<u8> {
    let path = env.tmp().join(name);
    make_qcow2(&path, "16M");
    let out = std::process::Command::new("qemu-io")
        .args(["-f", "qcow2", "-c", &format!("write -P {pattern} 0 1M")])
        .arg(&path)
        .output()
        .expect("qemu-io runs (apt install qemu-utils)");
    assert!(out.status.success(), "{out:?}");
    std::fs::read(&path).unwrap()
}

/// Whether two images show the guest the same bytes (`qemu-img compare`, exit 0).
fn same_content(a: &Path, b: &Path) -> bool {
    let out = std::process::Command::new("qemu-img")
        .args(["compare", "-U"])
        .arg(a)
        .arg(b)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "qemu-img compare failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.status.success()
}

fn write_file(env: &TestEnv, name: &str, bytes: &[u8]) -> PathBuf {
    let path = env.tmp().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn prune_items(env: &TestEnv, args: &[&str]) -> Vec<(String, String)> {
    env.json(args).data()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["class"].as_str().unwrap().to_owned(),
                item["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn a_repull_of_a_changed_image_never_changes_the_base_of_a_vm_built_on_it() -> TestEnv {
    let server = Server::start();
    let mut env = env_with_catalog(&server, &entry("rel", "rel.qcow2", ""));
    let first = qcow2_with(&env, "first.qcow2", 0x11);
    let second = qcow2_with(&env, "second.qcow2", 0x22);
    let first_copy = write_file(&env, "first-kept.qcow2", &first);
    let second_copy = write_file(&env, "second-kept.qcow2", &second);
    server.route("/rel.qcow2", first.clone(), Behaviour::Normal);
    fake_qemu(&env);
    env.set_env("STOAT_ACCEL", "tcg");
    let _reaper = Reaper::watch(&env, &["r1", "r2"]);

    assert_eq!(env.json(&["pull", "rel"]).data()["verified"], false);
    env.json(&["create", "r1", "--image", "rel", "--disk", "64M"])
        .data();
    env.json(&["up", "r1", "--no-wait"]).data();
    env.json(&["down", "r1"]).data();
    let r1_disk = env.root().join("r1/disk.qcow2");
    assert!(same_content(&r1_disk, &first_copy));

    // The mirror publishes a new file at the same URL.
    server.route("/rel.qcow2", second.clone(), Behaviour::Normal);
    let again = env.json(&["pull", "rel"]);
    assert_eq!(again.data()["downloaded"], true);
    assert_eq!(isos(&env), ["rel.qcow2"]);
    assert!(std::fs::read(env.root().join("isos/rel.qcow2")).unwrap() == second);
    assert!(
        same_content(&r1_disk, &first_copy),
        "r1 still reads the base it was built on"
    );
    assert!(!same_content(&r1_disk, &second_copy));
    let r1 = env.json(&["get", "r1"]).data().clone();
    assert_eq!(r1["vm"]["state"], "stopped", "{r1}");

    // A VM made now is built on the new file.
    env.json(&["create", "r2", "--image", "rel", "--disk", "64M"])
        .data();
    env.json(&["up", "r2", "--no-wait"]).data();
    env.json(&["down", "r2"]).data();
    let r2_disk = env.root().join("r2/disk.qcow2");
    assert!(same_content(&r2_disk, &second_copy));

    // `images` says who uses what; nothing can be freed while both are used.
    let listing = String::from_utf8(env.run(&["images"]).stdout).unwrap();
    let row = listing.lines().find(|l| l.starts_with("rel ")).unwrap();
    assert!(row.trim_end().ends_with("rel.qcow2  r2"), "{listing}");
    assert!(
        listing.contains("kept from earlier downloads")
            && listing.contains("\n  rel.qcow2  ")
            && listing.contains("used by r1"),
        "{listing}"
    );
    assert!(!listing.contains("frees it"), "{listing}");
    assert_eq!(prune_items(&env, &["prune", "--images"]), []);

    // Without r1 its copy can go, and only that.
    env.json(&["rm", "r1", "-y"]).data();
    let listing = String::from_utf8(env.run(&["images"]).stdout).unwrap();
    assert!(listing.contains("used by -"), "{listing}");
    assert!(
        listing.contains("`stoat prune --images --apply` frees it"),
        "{listing}"
    );
    let items = prune_items(&env, &["prune", "--images"]);
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0].0, "unused_image_copy");
    assert!(
        items[0]
            .1
            .starts_with(&env.root().join(".images").display().to_string()),
        "{items:?}"
    );
    assert_eq!(prune_items(&env, &["prune", "--images", "--apply"]), items);
    assert!(!Path::new(&items[0].1).exists());
    assert_eq!(prune_items(&env, &["prune", "--images"]), []);
    assert!(same_content(&r2_disk, &second_copy));
    env.json(&["up", "r2", "--no-wait"]).data();
    env.json(&["down", "r2"]).data();
    env
}

#[test]
fn a_vm_made_before_the_store_is_moved_onto_a_copy_before_its_file_is_replaced() {
    let server = Server::start();
    let mut env = env_with_catalog(&server, &entry("rel", "rel.qcow2", ""));
    let first = qcow2_with(&env, "first.qcow2", 0x11);
    let second = qcow2_with(&env, "second.qcow2", 0x22);
    let first_copy = write_file(&env, "first-kept.qcow2", &first);
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    let old_base = env.root().join("isos/rel.qcow2");
    std::fs::write(&old_base, &first).unwrap();
    // What an older stoat wrote: the VM names isos/rel.qcow2 itself, and so does its disk.
    env.write_vm(
        "old",
        &format!(
            "name = \"old\"\nmode = \"cloud\"\nos = \"debian\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\ndisk = \"64M\"\nsshport = 29311\nsshuser = \"stoat\"\nbase = \"{}\"\n",
            old_base.display()
        ),
    );
    let disk = env.root().join("old/disk.qcow2");
    crate::common::qemu_img(&[
        "create".as_ref(),
        "-q".as_ref(),
        "-f".as_ref(),
        "qcow2".as_ref(),
        "-b".as_ref(),
        old_base.as_os_str(),
        "-F".as_ref(),
        "qcow2".as_ref(),
        disk.as_os_str(),
    ]);
    server.route("/rel.qcow2", second.clone(), Behaviour::Normal);
    env.set_env("STOAT_ACCEL", "tcg");

    // While it runs, its disk cannot be moved: the pull is refused and changes nothing.
    let running = crate::common::FakeRunningVm::start(&env.root().join("old"));
    let refused = env.json(&["pull", "rel"]);
    let message = refused.error("already_running");
    assert!(message.contains("old"), "{message}");
    assert!(std::fs::read(&old_base).unwrap() == first);
    assert!(env.vm_toml("old").contains(&old_base.display().to_string()));
    drop(running);

    env.json(&["pull", "rel"]).data();
    assert!(std::fs::read(&old_base).unwrap() == second);
    assert!(
        same_content(&disk, &first_copy),
        "the old VM keeps its base"
    );
    let info = crate::common::qemu_info(&disk);
    let backing = info["backing-filename"].as_str().unwrap().to_owned();
    assert!(backing.contains("/.images/"), "{info}");
    assert!(env.vm_toml("old").contains(&backing));
    assert_eq!(env.json(&["get", "old"]).data()["vm"]["state"], "stopped");
}

/// Starts `stoat --json pull <id>` in the background, `STOAT_FAULT` set to `fault`.
fn spawn_pull(env: &TestEnv, id: &str, fault: &str) -> Spawned {
    Spawned::start(
        env.std_cmd(&["--json", "pull", id])
            .env("STOAT_FAULT", fault),
    )
}

/// Waits until `pull` has stopped itself (state `T`) where it found the lock held.
fn wait_until_stopped(pull: &Spawned) {
    eventually(Duration::from_secs(20), || pull.proc_state() == Some('T'));
}

#[test]
fn concurrent_pulls_of_one_image_download_it_once() {
    let body = payload(1_500_000);
    let server = Server::start();
    let slow = Behaviour::Slow {
        chunk: 64 * 1024,
        delay: Duration::from_millis(20),
    };
    server.route("/c.img", body.clone(), slow);
    // No published checksum: the case where a second pull cannot tell by digest.
    let env = env_with_catalog(&server, &entry("c", "c.img", ""));
    let mut pulls = vec![spawn_pull(&env, "c", "none")];
    eventually(Duration::from_secs(20), || {
        server.requested_paths().iter().any(|p| p == "/c.img")
    });
    // Two more pulls stop themselves where they find the first one's lock held.
    for _ in 0..2 {
        let waiting = spawn_pull(&env, "c", "lock-busy");
        wait_until_stopped(&waiting);
        pulls.push(waiting);
    }
    for waiting in &pulls[1..] {
        waiting.signal(libc::SIGCONT);
    }
    let results: Vec<serde_json::Value> = pulls
        .iter_mut()
        .map(|pull| pull.json(Duration::from_secs(60)).result)
        .collect();
    for result in &results {
        assert_eq!(result["ok"], true, "{result}");
        assert_eq!(result["data"]["downloaded"], true, "{result}");
    }
    let fetched = server
        .requested_paths()
        .iter()
        .filter(|p| p.as_str() == "/c.img")
        .count();
    assert_eq!(fetched, 1, "three pulls, one download");
    assert_eq!(isos(&env), ["c.img"]);
    assert!(std::fs::read(env.root().join("isos/c.img")).unwrap() == body);
}
