//! `cp` beyond one file: `-r`, several sources, and `-` for stdin/stdout, through the real
//! binary (docs/decisions/runtime.md "cp").
//!
//! FAKE tier: a fake running VM whose `scp` and `ssh` are `stoat-fake`; its ssh runs the remote
//! command on this host (`run_locally`), so the guest's side of a check or a `cat` is this
//! test's own directory, and the call log shows what scp was asked. REAL tier
//! (`real_cp_trees_and_streams`, ignored unless asked for): the same on the booted test guest,
//! bytes compared both ways.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::common::{free_port, real_guest, timed, RealGuard, Reaper, Spawned, TestEnv};
use crate::test_snapshots::human;

/// A running fake VM `w` whose ssh runs commands here; scp logs its argv (`fake_argvs`).
fn vm_with_fake_tools() -> (TestEnv, Reaper) {
    let (mut env, reaper, _) = crate::test_runtime::running_vm("w");
    env.fake_tool("scp");
    env.fake_tool("ssh");
    env.fake_script(&serde_json::json!({"tools": {"ssh": [{"run_locally": true}]}}));
    (env, reaper)
}

/// The operands of an scp argv: what follows the identity file (`-i KEY`), minus `-r`.
fn scp_operands(argv: &[String]) -> Vec<String> {
    let key = argv.iter().position(|a| a == "-i").unwrap() + 2;
    argv[key..].iter().filter(|a| *a != "-r").cloned().collect()
}

/// A tree in the sandbox's home: `tree/a.bin`, `tree/sub/b.txt`, and a file `one.txt`.
fn local_tree(env: &TestEnv) {
    let home = env.home();
    std::fs::create_dir_all(home.join("tree/sub")).unwrap();
    std::fs::write(home.join("tree/a.bin"), b"\x00\xff\xfe a\n").unwrap();
    std::fs::write(home.join("tree/sub/b.txt"), b"b\n").unwrap();
    std::fs::write(home.join("one.txt"), b"one\n").unwrap();
}

#[test]
fn several_sources_run_one_scp_per_source_each_way() {
    let (env, _reaper) = vm_with_fake_tools();
    let _masked = env.snapshot_settings().bind_to_scope();
    local_tree(&env);
    let guest_dir = env.tmp().join("guest-dst");
    std::fs::create_dir_all(&guest_dir).unwrap();
    let dst = format!("w:{}", guest_dir.display());

    // Human: one line per source, one scp run with -r per source, in order.
    insta::assert_snapshot!(human(&env, &["cp", "-r", "tree", "one.txt", &dst], true), @r"
    copied [HOME]/tree to w:[TMP]/guest-dst
    copied [HOME]/one.txt to w:[TMP]/guest-dst
    ");
    let scp = env.fake_argvs("scp");
    assert_eq!(scp.len(), 2, "{scp:?}");
    assert!(
        scp.iter().all(|argv| argv.contains(&"-r".to_owned())),
        "{scp:?}"
    );
    let home = env.home().display().to_string();
    let target = format!("root@127.0.0.1:{}", guest_dir.display());
    assert_eq!(
        scp_operands(&scp[0]),
        vec![format!("{home}/tree"), target.clone()]
    );
    assert_eq!(
        scp_operands(&scp[1]),
        vec![format!("{home}/one.txt"), target]
    );

    // From the guest, into an existing local directory.
    std::fs::create_dir_all(env.home().join("back")).unwrap();
    insta::assert_snapshot!(
        human(&env, &["cp", "w:/etc/hostname", "w:/etc/hosts", "back"], true),
        @r"
        copied w:/etc/hostname to [HOME]/back
        copied w:/etc/hosts to [HOME]/back
        "
    );
    // One scp per guest source, in order (a dropbear guest drops a session that opens
    // while the one before is still closing, which one scp of several sources does), each
    // into a hidden name in `back` that then takes the file's own name.
    let scp = env.fake_argvs("scp");
    assert_eq!(scp.len(), 4, "{scp:?}");
    for (argv, source) in scp[2..].iter().zip(["hostname", "hosts"]) {
        let operands = scp_operands(argv);
        assert_eq!(operands[0], format!("root@127.0.0.1:/etc/{source}"));
        assert!(
            operands[1].starts_with(&format!("{home}/back/.stoat-cp-")),
            "{operands:?}"
        );
    }
    assert_eq!(entries(&env.home().join("back")), ["hostname", "hosts"]);

    // --json copies one source: several are a usage error, and nothing runs.
    let refused = env.json(&["cp", "tree/a.bin", "one.txt", &dst]);
    assert_eq!(refused.exit, 2);
    assert_eq!(refused.lines.len(), 1);
    let message = refused.error("usage");
    assert!(message.contains("one source"), "{message}");
    // One source with -r answers the contract's one-record shape.
    let tree = env.json(&["cp", "-r", "tree", &dst]);
    assert_eq!(
        tree.data(),
        &serde_json::json!({
            "vm": "w",
            "direction": "to_guest",
            "local": format!("{home}/tree"),
            "remote": guest_dir.display().to_string(),
        })
    );
    let scp = env.fake_argvs("scp");
    assert_eq!(scp.len(), 5, "the refused run ran nothing");
    assert!(scp[4].contains(&"-r".to_owned()), "{:?}", scp[4]);
    let from = env.json(&["cp", "--recursive", "w:/etc", "etc-copy"]);
    assert_eq!(from.data()["local"], format!("{home}/etc-copy"));
    assert_eq!(from.data()["remote"], "/etc");
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A file copied from the guest is all or nothing: an scp that wrote part of it and failed
/// leaves the local target as it was and nothing beside it; one that ends well replaces it.
#[test]
fn a_file_from_the_guest_replaces_its_target_only_once_whole() {
    let (env, _reaper) = vm_with_fake_tools();
    let dir = env.home().join("dst");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("out.txt"), "old\n").unwrap();
    // An scp that writes half the file, then loses the guest's disk.
    crate::common::stub(
        &env,
        "scp",
        "for arg; do dst=$arg; done\nprintf half > \"$dst\"\necho 'scp: /etc/hostname: read: Input/output error' >&2\nexit 1\n",
    );
    let message = env
        .json(&["cp", "w:/etc/hostname", "dst/out.txt"])
        .error("internal");
    assert!(message.contains("Input/output error"), "{message}");
    assert!(!message.contains(".stoat-cp-"), "{message}");
    assert_eq!(
        std::fs::read_to_string(dir.join("out.txt")).unwrap(),
        "old\n"
    );
    assert_eq!(entries(&dir), ["out.txt"]);
    // One that writes all of it.
    crate::common::stub(
        &env,
        "scp",
        "for arg; do dst=$arg; done\nprintf 'new\\n' > \"$dst\"\n",
    );
    env.json(&["cp", "w:/etc/hostname", "dst/out.txt"]).data();
    assert_eq!(
        std::fs::read_to_string(dir.join("out.txt")).unwrap(),
        "new\n"
    );
    // Into a directory, under the guest file's own name.
    env.json(&["cp", "w:/etc/hostname", "dst"]).data();
    assert_eq!(
        std::fs::read_to_string(dir.join("hostname")).unwrap(),
        "new\n"
    );
    assert_eq!(entries(&dir), ["hostname", "out.txt"]);
}

/// A file copied into the guest is all or nothing too: scp writes a hidden name beside the
/// target, which one ssh call renames over it once scp ended well. An scp that wrote part of
/// the file and failed leaves the guest's target as it was and nothing beside it; a directory
/// in the way is refused, as scp refuses it. (ssh runs on this host: the "guest" directory is
/// the test's own.)
#[test]
fn a_file_into_the_guest_replaces_its_target_only_once_whole() {
    let (env, _reaper) = vm_with_fake_tools();
    let guest = env.tmp().join("guest-dst");
    std::fs::create_dir_all(&guest).unwrap();
    std::fs::write(guest.join("out.txt"), "old\n").unwrap();
    std::fs::write(env.home().join("f.txt"), "new\n").unwrap();
    let target = format!("w:{}/out.txt", guest.display());
    // scp's last operand is `user@host:path`; these write to that path on this host.
    let scp_writing = |what: &str, then: &str| {
        crate::common::stub(
            &env,
            "scp",
            &format!("for arg; do dst=${{arg#*:}}; done\nprintf '{what}' > \"$dst\"\n{then}"),
        )
    };
    scp_writing(
        "half",
        "echo \"scp: $dst: write: Broken pipe\" >&2\nexit 1\n",
    );
    let message = env.json(&["cp", "f.txt", &target]).error("internal");
    assert!(message.contains("Broken pipe"), "{message}");
    assert!(message.contains("out.txt"), "{message}");
    assert!(!message.contains(".stoat-cp-"), "{message}");
    assert_eq!(
        std::fs::read_to_string(guest.join("out.txt")).unwrap(),
        "old\n"
    );
    assert_eq!(entries(&guest), ["out.txt"]);

    scp_writing("new\\n", "");
    env.json(&["cp", "f.txt", &target]).data();
    assert_eq!(
        std::fs::read_to_string(guest.join("out.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(entries(&guest), ["out.txt"]);
    // Into a directory, under the host file's name.
    env.json(&["cp", "f.txt", &format!("w:{}", guest.display())])
        .data();
    assert_eq!(
        std::fs::read_to_string(guest.join("f.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(entries(&guest), ["f.txt", "out.txt"]);
    // A directory where the file would go stays, and nothing is left beside it.
    std::fs::create_dir(guest.join("g.txt")).unwrap();
    std::fs::write(env.home().join("g.txt"), "g\n").unwrap();
    let message = env
        .json(&["cp", "g.txt", &format!("w:{}/", guest.display())])
        .error("internal");
    assert!(message.contains("g.txt: Is a directory"), "{message}");
    assert_eq!(entries(&guest), ["f.txt", "g.txt", "out.txt"]);
    assert!(entries(&guest.join("g.txt")).is_empty());
}

/// ssh runs on this host; scp fails, saying `said`, for the one source whose argument holds
/// `source`, and copies every other.
fn scp_fails_for(env: &mut TestEnv, source: &str, said: &str) {
    env.fake_script(&serde_json::json!({"tools": {
        "ssh": [{"run_locally": true}],
        "scp": [{"when": {"arg_contains": source}, "stderr": {"text": said}, "exit": 1}]
    }}));
}

/// A copy from the guest that fails for one of several sources says which failed and which
/// were copied (one scp ran per source), in one line, exit 1.
#[test]
fn a_failed_guest_source_is_named_beside_the_sources_that_were_copied() {
    let (mut env, _reaper) = vm_with_fake_tools();
    // A source that is there and scp cannot read (a missing one is refused before any copy).
    scp_fails_for(
        &mut env,
        "/etc/shadow",
        "scp: /etc/shadow: Permission denied\n",
    );
    std::fs::create_dir_all(env.home().join("back")).unwrap();
    let out = env.run(&[
        "cp",
        "w:/etc/hostname",
        "w:/etc/shadow",
        "w:/etc/hosts",
        "back",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "1 of 3 sources failed: w:/etc/shadow (/etc/shadow: Permission denied); copied: w:/etc/hostname, w:/etc/hosts"
        ),
        "{stderr}"
    );
    assert_eq!(env.fake_argvs("scp").len(), 3, "every source was tried");
}

/// The same to the guest: each host source is its own scp, so a failed one is named beside
/// the ones that arrived.
#[test]
fn a_failed_host_source_is_named_beside_the_sources_that_were_copied() {
    let (mut env, _reaper) = vm_with_fake_tools();
    local_tree(&env);
    std::fs::write(env.home().join("two.txt"), b"two\n").unwrap();
    scp_fails_for(
        &mut env,
        "two.txt",
        "scp: dest open \"/tmp/two.txt\": Permission denied\n",
    );
    let guest_dir = env.tmp().join("guest-dst");
    std::fs::create_dir_all(&guest_dir).unwrap();
    let dst = format!("w:{}", guest_dir.display());
    let out = env.run(&["cp", "one.txt", "two.txt", &dst]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let home = env.home().display().to_string();
    assert!(
        stderr.contains(&format!(
            "1 of 2 sources failed: {home}/two.txt (dest open \"/tmp/two.txt\": Permission denied); copied: {home}/one.txt"
        )),
        "{stderr}"
    );
    assert_eq!(env.fake_argvs("scp").len(), 2, "every source was tried");
}

#[test]
fn bad_copies_are_refused_and_copy_nothing() {
    let (mut env, _reaper) = vm_with_fake_tools();
    local_tree(&env);
    let home = env.home().display().to_string();

    // A local directory without -r, alone or among files.
    for args in [
        &["cp", "tree", "w:/tmp/x"][..],
        &["cp", "one.txt", "tree", "w:/tmp/"],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr,
            format!(
                "stoat: cp: invalid spec: {home}/tree is a directory; use -r to copy it and what it holds\n"
            )
        );
    }
    let message = env.json(&["cp", "tree", "w:/tmp/x"]).error("invalid_spec");
    assert!(message.contains("use -r"), "{message}");

    // A host source that is not there, alone or among files: nothing runs.
    let calls = env.fake_argvs("scp").len();
    for args in [
        &["cp", "gone.txt", "w:/tmp/x"][..],
        &["cp", "one.txt", "gone.txt", "w:/tmp/"],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "stoat: cp: invalid spec: {home}/gone.txt does not exist; nothing was copied\n"
            )
        );
    }
    env.json(&["cp", "gone.txt", "w:/tmp/x"])
        .error("invalid_spec");
    assert_eq!(env.fake_argvs("scp").len(), calls, "no scp ran");

    // A guest directory without -r (the guest is this host here). One source: scp refuses it
    // as scp 9 does, having copied nothing, and the guest then says why.
    let guest_dir = env.tmp().join("guest-tree");
    std::fs::create_dir_all(&guest_dir).unwrap();
    let src = format!("w:{}", guest_dir.display());
    env.fake_script(&serde_json::json!({"tools": {
        "ssh": [{"run_locally": true}],
        "scp": [{"when": {"arg_contains": "guest-tree"}, "exit": 1,
                 "stderr": {"text": "scp: download /x/: not a regular file\n"}}],
    }}));
    let message = env.json(&["cp", &src, "out"]).error("invalid_spec");
    assert_eq!(
        message,
        format!("invalid spec: {src} is a directory; use -r to copy it and what it holds")
    );
    assert_eq!(env.fake_argvs("scp").len(), 1);
    // A source the guest does not have: copied nothing, and said so (not scp's `internal`).
    let missing = format!("w:{}/nope", guest_dir.display());
    let message = env.json(&["cp", &missing, "out"]).error("invalid_spec");
    assert_eq!(
        message,
        format!("invalid spec: {missing} does not exist in the guest; nothing was copied")
    );
    // A failure on a file that is there keeps scp's words, without scp's program name.
    std::fs::write(guest_dir.join("there"), "x").unwrap();
    let there = format!("w:{}/there", guest_dir.display());
    let message = env.json(&["cp", &there, "out"]).error("internal");
    assert!(
        message.contains("w: download /x/: not a regular file"),
        "{message}"
    );
    env.clear_fake_calls();
    // Several with one the guest does not have: asked first, and scp never runs.
    let out = env.run(&["cp", "w:/etc/hostname", &missing, "."]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("does not exist in the guest"), "{stderr}");
    assert_eq!(env.fake_argvs("scp").len(), 0);
    // Several: the guest is asked first, and scp never runs.
    let out = env.run(&["cp", "w:/etc/hostname", &src, "."]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is a directory; use -r"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Several sources into something that is not a directory, on either side.
    for dst in ["one.txt", "missing"] {
        let out = env.run(&["cp", "w:/etc/hostname", "w:/etc/hosts", dst]);
        assert_eq!(out.status.code(), Some(1), "{dst}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("stoat: cp: invalid spec: {home}/{dst} is not a directory; several sources are copied into an existing directory\n")
        );
    }
    let guest_file = env.tmp().join("guest-file");
    std::fs::write(&guest_file, b"keep").unwrap();
    let out = env.run(&[
        "cp",
        "one.txt",
        "tree/a.bin",
        &format!("w:{}", guest_file.display()),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a directory in the guest"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    assert!(
        env.fake_argvs("scp").is_empty(),
        "no scp ran with several sources"
    );
    assert!(!env.home().join("out").exists() && !env.home().join("missing").exists());
    assert_eq!(std::fs::read(&guest_file).unwrap(), b"keep");
    assert_eq!(std::fs::read(env.home().join("one.txt")).unwrap(), b"one\n");

    // One source into a guest directory that is not there: scp fails, the guest says why.
    env.fake_script(&serde_json::json!({"tools": {
        "ssh": [{"run_locally": true}],
        "scp": [{"when": {"arg_contains": "no-such-dir"}, "exit": 1,
                 "stderr": {"text": "scp: dest open \"/x\": No such file or directory\n"}}],
    }}));
    let nowhere = env.tmp().join("no-such-dir");
    for dst in [
        format!("w:{}/x", nowhere.display()),
        format!("w:{}/", nowhere.display()),
    ] {
        let message = env.json(&["cp", "one.txt", &dst]).error("invalid_spec");
        assert_eq!(
            message,
            format!(
                "invalid spec: w:{} does not exist in the guest; nothing was copied",
                nowhere.display()
            )
        );
    }
    assert!(!nowhere.exists());

    // Sides that do not fit: usage errors, whatever the mode.
    for (args, says) in [
        (&["cp", "w:/a", "v:/b", "out"][..], "two VMs"),
        (&["cp", "w:/a", "b", "out"], "mix host paths"),
        (&["cp", "a", "b", "c"], "must name a VM"),
        (&["cp", "a", "w:/b", "w:/c"], "mix host paths"),
        (&["cp", "w:/a", "w:/b"], "only one side"),
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// Runs human `stoat` with `stdin` as its standard input.
fn run_with_stdin(env: &TestEnv, args: &[&str], stdin: &[u8]) -> std::process::Output {
    let mut cp = Spawned::start(env.std_cmd(args).stdin(Stdio::piped()));
    cp.stdin().as_mut().unwrap().write_all(stdin).unwrap();
    cp.wait(std::time::Duration::from_secs(60))
}

const RAW: &[u8] = b"\x00\x01\xff\xfe not UTF-8\r\n\x1b[0m tail";

#[test]
fn a_dash_streams_one_guest_file() {
    let (env, _reaper) = vm_with_fake_tools();
    // A guest path that needs quoting: a space, a quote and a `$`.
    let guest_file = env.tmp().join("it's a $file");
    let remote = format!("w:{}", guest_file.display());

    let put = run_with_stdin(&env, &["cp", "-", &remote], RAW);
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    assert_eq!(std::fs::read(&guest_file).unwrap(), RAW);
    assert_eq!(
        String::from_utf8_lossy(&put.stdout),
        format!("copied stdin to {remote}\n")
    );
    let get = env.run(&["cp", &remote, "-"]);
    assert!(
        get.status.success(),
        "{}",
        String::from_utf8_lossy(&get.stderr)
    );
    assert_eq!(
        get.stdout, RAW,
        "stdout is the file's bytes and nothing else"
    );
    assert!(get.stderr.is_empty());
    // The flag form takes `-` too.
    let flags = env.run(&[
        "cp",
        "--vm",
        "w",
        "--direction",
        "from",
        "--local",
        "-",
        "--remote",
        guest_file.to_str().unwrap(),
    ]);
    assert_eq!(flags.stdout, RAW);

    // A guest file that is not there: exit 1, the guest's reason, nothing on stdout.
    let missing = env.run(&["cp", "w:/nonexistent/f", "-"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(missing.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.starts_with("stoat: cp: ssh: w: ") && stderr.contains("/nonexistent/f"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    // Under --json, `-` would put file bytes where only JSON lines go: a usage error saying
    // why, one result line, and no guest command.
    let before = env.fake_argvs("ssh").len();
    for args in [
        &["cp", &remote, "-"][..],
        &["cp", "-", &remote],
        &[
            "cp",
            "--vm",
            "w",
            "--direction",
            "to",
            "--local",
            "-",
            "--remote",
            "/t",
        ],
    ] {
        let refused = env.json(args);
        assert_eq!(refused.exit, 2, "{args:?}");
        assert_eq!(refused.lines.len(), 1, "{}", refused.stdout);
        let message = refused.error("usage");
        assert!(message.contains("JSON lines"), "{message}");
    }
    assert_eq!(env.fake_argvs("ssh").len(), before);

    // `-` stands alone: not with -r, not among several sources.
    for args in [
        &["cp", "-r", &remote, "-"][..],
        &["cp", "-", "a", &remote],
        &["cp", &remote, &remote, "-"],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

// ---- REAL tier ----------------------------------------------------------------------------

/// Every file under `dir`, relative, with its bytes, sorted.
fn tree_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(next) = todo.pop() {
        for entry in std::fs::read_dir(&next).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path.strip_prefix(dir).unwrap().to_path_buf(), bytes));
            }
        }
    }
    out.sort();
    out
}

fn guest_sh(env: &TestEnv, script: &str) -> Value {
    let run = env.json_raw(&["--json", "exec", "t1", "sh", "-c", script]);
    run.data().clone()
}

#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_cp_trees_and_streams() {
    let guest = real_guest();
    let env = TestEnv::new();
    env.write_vm(
        "t1",
        &format!(
            "name = \"t1\"\nmode = \"cloud\"\nos = \"\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\ndisk = \"256M\"\nsshport = {}\nsshuser = \"stoat\"\nbase = \"{}\"\n",
            free_port(),
            guest.image.display()
        ),
    );
    let _guard = RealGuard(env.root().join("t1"));
    timed("up", || env.json(&["up", "t1"]));

    // A tree with a non-UTF-8 file, an empty one and a nested directory: up with -r, back
    // with -r, byte for byte.
    let tree = env.home().join("tree");
    std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    std::fs::write(tree.join("a.bin"), RAW).unwrap();
    std::fs::write(tree.join("sub/b.txt"), b"b\n").unwrap();
    std::fs::write(tree.join("sub/deeper/empty"), b"").unwrap();
    let up = timed("cp -r to", || env.json(&["cp", "-r", "tree", "t1:/tmp/up"]));
    assert_eq!(up.data()["local"], tree.display().to_string());
    let listed = guest_sh(&env, "cd /tmp/up && find . -type f | sort");
    assert_eq!(
        listed["stdout"],
        "./a.bin\n./sub/b.txt\n./sub/deeper/empty\n"
    );
    let back = env.home().join("back");
    timed("cp -r from", || {
        env.json(&["cp", "-r", "t1:/tmp/up", "back"])
    });
    assert_eq!(tree_bytes(&back), tree_bytes(&tree));

    // Several sources, human, into a guest directory and back into a local one.
    guest_sh(&env, "mkdir -p /tmp/many");
    let many = env.run(&["cp", "tree/a.bin", "tree/sub/b.txt", "t1:/tmp/many"]);
    assert!(
        many.status.success(),
        "{}",
        String::from_utf8_lossy(&many.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&many.stdout).lines().count(), 2);
    std::fs::create_dir_all(env.home().join("many")).unwrap();
    let many = env.run(&["cp", "t1:/tmp/many/a.bin", "t1:/tmp/many/b.txt", "many"]);
    assert!(
        many.status.success(),
        "{}",
        String::from_utf8_lossy(&many.stderr)
    );
    assert_eq!(std::fs::read(env.home().join("many/a.bin")).unwrap(), RAW);
    assert_eq!(
        std::fs::read(env.home().join("many/b.txt")).unwrap(),
        b"b\n"
    );

    // `-` both ways, through a path that needs quoting.
    let remote = "t1:/tmp/it's a $file";
    let put = timed("cp - to", || {
        run_with_stdin(&env, &["cp", "-", remote], RAW)
    });
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let get = timed("cp - from", || env.run(&["cp", remote, "-"]));
    assert!(
        get.status.success(),
        "{}",
        String::from_utf8_lossy(&get.stderr)
    );
    assert_eq!(get.stdout, RAW);
    let size = guest_sh(&env, "wc -c < \"/tmp/it's a \\$file\"");
    assert_eq!(
        size["stdout"].as_str().unwrap().trim(),
        RAW.len().to_string()
    );

    // Refusals leave nothing behind.
    let message = env.json(&["cp", "t1:/tmp/up", "out"]).error("invalid_spec");
    assert!(message.contains("is a directory; use -r"), "{message}");
    assert!(!env.home().join("out").exists());
    let message = env
        .json(&["cp", "tree", "t1:/tmp/flat"])
        .error("invalid_spec");
    assert!(message.contains("is a directory; use -r"), "{message}");
    let refused = env.json(&["cp", remote, "-"]);
    assert_eq!((refused.exit, refused.lines.len()), (2, 1));
    refused.error("usage");
    let onto_file = env.run(&["cp", "tree/a.bin", "tree/sub/b.txt", "t1:/tmp/up/a.bin"]);
    assert_eq!(onto_file.status.code(), Some(1));
    let into_file = env.run(&[
        "cp",
        "t1:/tmp/up/a.bin",
        "t1:/tmp/up/sub/b.txt",
        "back/a.bin",
    ]);
    assert_eq!(into_file.status.code(), Some(1));
    let missing = env.run(&["cp", "t1:/tmp/nope", "-"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(missing.stdout.is_empty());
    let left = guest_sh(
        &env,
        "test ! -e /tmp/flat && test ! -e /tmp/up/a.bin/b.txt && cmp -s /tmp/up/a.bin /tmp/many/a.bin && echo clean",
    );
    assert_eq!(left["stdout"], "clean\n");
    assert_eq!(tree_bytes(&back), tree_bytes(&tree));
    env.json(&["down", "t1"]);
}
