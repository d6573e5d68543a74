//! `images` and `pull` through the real binary, against real HTTP servers on 127.0.0.1 that
//! these tests start and stop (see `server`): checksums in GNU and BSD files and inline, a
//! wrong digest, 404, refused and dropped connections, a body cut short, a stall, no
//! Content-Length, Range resume, reuse of a verified file, and SIGINT mid-download.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256, Sha512};

use crate::common::http::{Behaviour, Server};
use crate::common::{eventually, JsonRun, TestEnv};

/// Deterministic, incompressible-looking bytes.
pub(crate) fn payload(len: usize) -> Vec<u8> {
    let mut state: u32 = 0x1234_5678;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 24) as u8
        })
        .collect()
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn sha512_hex(bytes: &[u8]) -> String {
    hex::encode(Sha512::digest(bytes))
}

/// A test environment whose catalog is `catalog` (TOML, `{base}` replaced by the server URL).
pub(crate) fn env_with_catalog(server: &Server, catalog: &str) -> TestEnv {
    let mut env = TestEnv::new();
    let path = env.tmp().join("catalog.toml");
    std::fs::write(&path, catalog.replace("{base}", &server.base())).unwrap();
    env.set_env("STOAT_CATALOG", path.to_str().unwrap());
    env
}

pub(crate) fn entry(id: &str, file: &str, checksum_line: &str) -> String {
    format!(
        "[[image]]\nid = \"{id}\"\nos = \"debian\"\nvariant = \"test\"\nbackend = \"cloudinit\"\nurl = \"{{base}}/{file}\"\n{checksum_line}\nbytes = 1048576\n\n"
    )
}

/// The names in `isos/`, sorted.
pub(crate) fn isos(env: &TestEnv) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(env.root().join("isos"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn progress_events(run: &JsonRun) -> Vec<&Value> {
    run.lines
        .iter()
        .filter(|l| l["type"] == "progress")
        .collect()
}

/// Progress is for the right id, strictly increasing in percent, consistent, ends at 100.
fn assert_progress_sane(run: &JsonRun, id: &str, total: u64) {
    let events = progress_events(run);
    assert!(!events.is_empty(), "no progress: {}", run.stdout);
    let mut last_percent = -1i64;
    let mut last_done = 0u64;
    for event in &events {
        let data = &event["data"];
        assert_eq!(data["id"], id);
        assert_eq!(data["total"], total);
        let done = data["done"].as_u64().unwrap();
        let percent = data["percent"].as_i64().unwrap();
        assert!(
            percent > last_percent,
            "percent changes every event: {}",
            run.stdout
        );
        assert!(done >= last_done);
        assert_eq!(percent as u64, done * 100 / total);
        last_percent = percent;
        last_done = done;
    }
    assert_eq!(last_percent, 100);
    assert_eq!(last_done, total);
}

fn assert_pulled(env: &TestEnv, run: &JsonRun, id: &str, file: &str, body: &[u8], verified: bool) {
    let data = run.data();
    assert_eq!(data["id"], id);
    assert_eq!(data["downloaded"], true);
    assert_eq!(data["verified"], verified);
    assert_eq!(data["checksum_available"], verified);
    assert_eq!(isos(env), [file]);
    let on_disk = std::fs::read(env.root().join("isos").join(file)).unwrap();
    assert!(on_disk == body, "downloaded bytes differ");
}

#[test]
fn pull_with_a_gnu_sha256_file_streams_progress_and_verifies() {
    let body = payload(1_000_000);
    let sums = format!(
        "{}  other.img\n{}  tiny.qcow2\n",
        sha256_hex(b"x"),
        sha256_hex(&body)
    );
    let server = Server::start();
    server.route("/tiny.qcow2", body.clone(), Behaviour::Normal);
    server.route("/SHA256SUMS", sums.into_bytes(), Behaviour::Normal);
    let env = env_with_catalog(
        &server,
        &entry("tiny", "tiny.qcow2", "checksum_url = \"{base}/SHA256SUMS\""),
    );
    let run = env.json(&["pull", "tiny"]);
    assert_pulled(&env, &run, "tiny", "tiny.qcow2", &body, true);
    assert_progress_sane(&run, "tiny", body.len() as u64);
}

#[test]
fn pull_with_a_bsd_sha512_file_verifies() {
    let body = payload(300_000);
    let sums = format!(
        "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n# Fedora-Cloud\nSHA512 (Fedora.qcow2) = {}\n-----BEGIN PGP SIGNATURE-----\nxyz\n",
        sha512_hex(&body)
    );
    let server = Server::start();
    server.route("/Fedora.qcow2", body.clone(), Behaviour::Normal);
    server.route("/CHECKSUM", sums.into_bytes(), Behaviour::Normal);
    let env = env_with_catalog(
        &server,
        &entry("fed", "Fedora.qcow2", "checksum_url = \"{base}/CHECKSUM\""),
    );
    let run = env.json(&["pull", "fed"]);
    assert_pulled(&env, &run, "fed", "Fedora.qcow2", &body, true);
}

#[test]
fn pull_with_an_inline_sha256_verifies() {
    let body = payload(200_000);
    let server = Server::start();
    server.route("/inline.qcow2", body.clone(), Behaviour::Normal);
    let env = env_with_catalog(
        &server,
        &entry(
            "inline",
            "inline.qcow2",
            &format!("sha256 = \"{}\"", sha256_hex(&body)),
        ),
    );
    let run = env.json(&["pull", "inline"]);
    assert_pulled(&env, &run, "inline", "inline.qcow2", &body, true);
}

#[test]
fn pull_without_a_checksum_is_unverified_and_says_so() {
    let body = payload(50_000);
    let server = Server::start();
    server.route("/plain.qcow2", body.clone(), Behaviour::Normal);
    let env = env_with_catalog(&server, &entry("plain", "plain.qcow2", ""));
    let run = env.json(&["pull", "plain"]);
    assert_pulled(&env, &run, "plain", "plain.qcow2", &body, false);
    let human = env.run(&["pull", "plain"]);
    assert!(human.status.success());
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert!(
        stdout.contains("UNVERIFIED (no published checksum)"),
        "{stdout}"
    );
}

#[test]
fn a_wrong_digest_is_checksum_mismatch_and_leaves_nothing() {
    let body = payload(100_000);
    let server = Server::start();
    server.route("/bad.qcow2", body, Behaviour::Normal);
    let env = env_with_catalog(
        &server,
        &entry(
            "bad",
            "bad.qcow2",
            &format!("sha256 = \"{}\"", sha256_hex(b"other")),
        ),
    );
    let message = env.json(&["pull", "bad"]).error("checksum_mismatch");
    assert!(message.contains(&sha256_hex(b"other")), "{message}");
    assert!(isos(&env).is_empty(), "{:?}", isos(&env));
}

#[test]
fn http_404_is_download_failed() {
    let server = Server::start();
    server.route("/gone.qcow2", Vec::new(), Behaviour::Status(404));
    let env = env_with_catalog(
        &server,
        &entry(
            "gone",
            "gone.qcow2",
            &format!("sha256 = \"{}\"", sha256_hex(b"")),
        ),
    );
    let message = env.json(&["pull", "gone"]).error("download_failed");
    assert!(message.contains("404"), "{message}");
    assert!(isos(&env).is_empty());
}

#[test]
fn a_missing_checksum_file_or_line_is_download_failed() {
    let server = Server::start();
    server.route("/a.qcow2", payload(10), Behaviour::Normal);
    server.route("/SUMS", b"0000  unrelated\n".to_vec(), Behaviour::Normal);
    let env = env_with_catalog(
        &server,
        &format!(
            "{}{}",
            entry("a", "a.qcow2", "checksum_url = \"{base}/SUMS\""),
            entry("b", "a.qcow2", "checksum_url = \"{base}/NOSUMS\"")
        ),
    );
    let message = env.json(&["pull", "a"]).error("download_failed");
    assert!(message.contains("a.qcow2"), "{message}");
    let message = env.json(&["pull", "b"]).error("download_failed");
    assert!(message.contains("404"), "{message}");
    assert!(isos(&env).is_empty());
}

#[test]
fn a_refused_connection_is_download_failed() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut env = TestEnv::new();
    let catalog = entry("x", "x.qcow2", "").replace("{base}", &format!("http://127.0.0.1:{port}"));
    let path = env.tmp().join("catalog.toml");
    std::fs::write(&path, catalog).unwrap();
    env.set_env("STOAT_CATALOG", path.to_str().unwrap());
    let message = env.json(&["pull", "x"]).error("download_failed");
    assert!(message.contains("refused"), "{message}");
    assert!(isos(&env).is_empty());
}

#[test]
fn a_connection_dropped_before_answering_is_download_failed() {
    let server = Server::start();
    server.route("/drop.qcow2", payload(10), Behaviour::DropConnection);
    let env = env_with_catalog(&server, &entry("drop", "drop.qcow2", ""));
    env.json(&["pull", "drop"]).error("download_failed");
    assert!(isos(&env).is_empty());
}

#[test]
fn a_body_cut_short_is_download_failed_and_kept_only_when_verifiable() {
    let body = payload(400_000);
    let server = Server::start();
    server.route("/cut.qcow2", body.clone(), Behaviour::CutAt(150_000));
    let catalog = format!(
        "{}{}",
        entry(
            "cut",
            "cut.qcow2",
            &format!("sha256 = \"{}\"", sha256_hex(&body))
        ),
        entry("cutplain", "cut.qcow2", "")
    );
    let env = env_with_catalog(&server, &catalog);
    let message = env.json(&["pull", "cutplain"]).error("download_failed");
    assert!(message.contains("cut short"), "{message}");
    assert!(isos(&env).is_empty(), "unverifiable bytes are not kept");
    let message = env.json(&["pull", "cut"]).error("download_failed");
    assert!(message.contains("cut short"), "{message}");
    assert_eq!(isos(&env), ["cut.qcow2.partial"]);
    let kept = std::fs::read(env.root().join("isos/cut.qcow2.partial")).unwrap();
    assert_eq!(kept, body[..150_000]);
}

#[test]
fn a_stall_is_download_stalled_within_the_window() {
    let body = payload(400_000);
    let server = Server::start();
    server.route("/stall.qcow2", body, Behaviour::StallAt(100_000));
    let mut env = env_with_catalog(&server, &entry("stall", "stall.qcow2", ""));
    env.set_env("STOAT_PULL_STALL_SECS", "1");
    let started = Instant::now();
    let message = env.json(&["pull", "stall"]).error("download_stalled");
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
    assert!(message.contains("no data"), "{message}");
    assert!(isos(&env).is_empty());
}

#[test]
fn a_bad_stall_window_is_invalid_spec() {
    let mut env = TestEnv::new();
    env.set_env("STOAT_PULL_STALL_SECS", "soon");
    env.json(&["pull", "alpine-virt"]).error("invalid_spec");
}

#[test]
fn without_content_length_there_is_no_progress() {
    let body = payload(250_000);
    let server = Server::start();
    server.route("/nolen.qcow2", body.clone(), Behaviour::NoLength);
    let env = env_with_catalog(
        &server,
        &entry(
            "nolen",
            "nolen.qcow2",
            &format!("sha256 = \"{}\"", sha256_hex(&body)),
        ),
    );
    let run = env.json(&["pull", "nolen"]);
    assert_pulled(&env, &run, "nolen", "nolen.qcow2", &body, true);
    assert!(progress_events(&run).is_empty(), "{}", run.stdout);
}

#[test]
fn a_verified_file_is_reused_without_downloading() {
    let body = payload(120_000);
    let server = Server::start();
    server.route("/reuse.qcow2", body.clone(), Behaviour::Normal);
    server.route(
        "/SHA256SUMS",
        format!("{}  reuse.qcow2\n", sha256_hex(&body)).into_bytes(),
        Behaviour::Normal,
    );
    let env = env_with_catalog(
        &server,
        &entry(
            "reuse",
            "reuse.qcow2",
            "checksum_url = \"{base}/SHA256SUMS\"",
        ),
    );
    env.json(&["pull", "reuse"]).data();
    server.clear_log();
    let run = env.json(&["pull", "reuse"]);
    assert_pulled(&env, &run, "reuse", "reuse.qcow2", &body, true);
    assert!(progress_events(&run).is_empty(), "{}", run.stdout);
    assert_eq!(server.requested_paths(), ["/SHA256SUMS"]);
}

#[test]
fn a_partial_download_resumes_with_a_range_request() {
    let body = payload(500_000);
    let server = Server::start();
    server.route("/res.qcow2", body.clone(), Behaviour::Normal);
    let env = env_with_catalog(
        &server,
        &entry(
            "res",
            "res.qcow2",
            &format!("sha512 = \"{}\"", sha512_hex(&body)),
        ),
    );
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    std::fs::write(env.root().join("isos/res.qcow2.partial"), &body[..250_000]).unwrap();
    let run = env.json(&["pull", "res"]);
    assert_pulled(&env, &run, "res", "res.qcow2", &body, true);
    assert_eq!(server.ranges(), [Some("bytes=250000-".to_owned())]);
    let first = progress_events(&run)[0]["data"]["percent"]
        .as_u64()
        .unwrap();
    assert!(
        first >= 50,
        "progress counts the kept bytes: {}",
        run.stdout
    );
    assert_progress_sane(&run, "res", body.len() as u64);
}

#[test]
fn a_server_without_range_support_starts_over() {
    let body = payload(300_000);
    let server = Server::start();
    server.route("/over.qcow2", body.clone(), Behaviour::NoRanges);
    let env = env_with_catalog(
        &server,
        &entry(
            "over",
            "over.qcow2",
            &format!("sha256 = \"{}\"", sha256_hex(&body)),
        ),
    );
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    // Kept bytes that are not even a prefix: a restart must not mix them in.
    std::fs::write(env.root().join("isos/over.qcow2.partial"), payload(7)).unwrap();
    let run = env.json(&["pull", "over"]);
    assert_pulled(&env, &run, "over", "over.qcow2", &body, true);
    assert_eq!(server.ranges(), [Some("bytes=7-".to_owned())]);
}

#[test]
fn sigint_mid_download_answers_canceled_and_a_later_pull_resumes() {
    let body = payload(2_000_000);
    let server = Server::start();
    server.route(
        "/slow.qcow2",
        body.clone(),
        Behaviour::Slow {
            chunk: 16 * 1024,
            delay: Duration::from_millis(40),
        },
    );
    let env = env_with_catalog(
        &server,
        &entry(
            "slow",
            "slow.qcow2",
            &format!("sha256 = \"{}\"", sha256_hex(&body)),
        ),
    );
    let mut pull = env.spawn(&["--json", "pull", "slow"]);
    wait_for_part_bytes(&env.root().join("isos"), 1);
    let started = Instant::now();
    pull.signal(libc::SIGINT);
    let run = pull.json(Duration::from_secs(15));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    run.error("canceled");
    assert!(!progress_events(&run).is_empty());
    assert_eq!(isos(&env), ["slow.qcow2.partial"], "no stray .part");

    server.route("/slow.qcow2", body.clone(), Behaviour::Normal);
    server.clear_log();
    let run = env.json(&["pull", "slow"]);
    assert_pulled(&env, &run, "slow", "slow.qcow2", &body, true);
    let ranges = server.ranges();
    assert!(
        matches!(ranges.as_slice(), [Some(r)] if r.starts_with("bytes=") && r != "bytes=0-"),
        "{ranges:?}"
    );
}

/// Waits until a `.part` file in `isos` holds at least `bytes`; returns its name.
fn wait_for_part_bytes(isos: &Path, bytes: u64) -> String {
    eventually(Duration::from_secs(20), || {
        let entry = std::fs::read_dir(isos).ok()?.flatten().find(|e| {
            e.file_name().to_string_lossy().ends_with(".part")
                && e.metadata().is_ok_and(|m| m.len() >= bytes)
        })?;
        Some(entry.file_name().into_string().unwrap())
    })
}

fn partial_items(env: &TestEnv, args: &[&str]) -> Vec<String> {
    let run = env.json(args);
    run.data()["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["class"] == "partial_download")
        .map(|item| item["path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_killed_pull_leaves_a_part_the_next_pull_resumes_and_prune_knows() {
    let body = payload(2_000_000);
    let server = Server::start();
    let slow = Behaviour::Slow {
        chunk: 16 * 1024,
        delay: Duration::from_millis(40),
    };
    server.route("/slow.qcow2", body.clone(), slow.clone());
    let env = env_with_catalog(
        &server,
        &entry(
            "slow",
            "slow.qcow2",
            &format!("sha256 = \"{}\"", sha256_hex(&body)),
        ),
    );
    let isos_dir = env.root().join("isos");

    // In flight, the part is the running pull's: prune leaves it alone.
    let mut pull = env.spawn(&["--json", "pull", "slow"]);
    let name = wait_for_part_bytes(&isos_dir, 64 * 1024);
    assert!(partial_items(&env, &["prune"]).is_empty());
    pull.kill();
    assert_eq!(isos(&env), [name.as_str()], "the kill left its part");

    // Its writer is gone: prune lists it at once (no two-minute wait).
    let part = isos_dir.join(&name).display().to_string();
    assert_eq!(partial_items(&env, &["prune"]), [part.as_str()]);

    // The next pull of the image resumes from it, and nothing is left over.
    server.route("/slow.qcow2", body.clone(), Behaviour::Normal);
    server.clear_log();
    let run = env.json(&["pull", "slow"]);
    assert_pulled(&env, &run, "slow", "slow.qcow2", &body, true);
    let ranges = server.ranges();
    assert!(
        matches!(ranges.as_slice(), [Some(r)] if r.starts_with("bytes=") && r != "bytes=0-"),
        "{ranges:?}"
    );

    // Killed again, the part is removed by prune --apply.
    std::fs::remove_file(isos_dir.join("slow.qcow2")).unwrap();
    server.route("/slow.qcow2", body.clone(), slow);
    let mut pull = env.spawn(&["--json", "pull", "slow"]);
    let name = wait_for_part_bytes(&isos_dir, 16 * 1024);
    pull.kill();
    let part = isos_dir.join(&name).display().to_string();
    assert_eq!(partial_items(&env, &["prune", "--apply"]), [part]);
    assert!(isos(&env).is_empty(), "{:?}", isos(&env));
}

#[test]
fn an_unknown_id_is_no_such_image() {
    let env = TestEnv::new();
    let message = env.json(&["pull", "no-such-thing"]).error("no_such_image");
    assert!(message.contains("no-such-thing"));
}

#[test]
fn the_builtin_catalog_lists_declared_sizes_in_order() {
    let env = TestEnv::new();
    let run = env.json(&["images"]);
    let images = run.data()["images"].as_array().unwrap();
    let ids: Vec<&str> = images.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "ubuntu-24.04",
            "debian-13",
            "fedora-cloud",
            "arch-cloud",
            "alpine-standard",
            "alpine-virt",
            "alpine-cloud"
        ]
    );
    let virt = &images[5];
    assert_eq!(virt["bytes"], 69206016);
    assert_eq!(virt["bytes_exact"], false);
    assert_eq!(virt["downloaded"], false);
    assert_eq!(virt["file"], "");
    assert_eq!(virt["byo"], false);
    assert_eq!(virt["backend"], "apkovl");
}

#[test]
fn images_lists_catalog_rows_then_byo_files() {
    let server = Server::start();
    let catalog = format!(
        "{}{}",
        entry("tiny", "tiny.qcow2", ""),
        "[[image]]\nid = \"alp\"\nos = \"alpine\"\nbackend = \"apkovl\"\nurl = \"{base}/alp.iso\"\nbytes = 2048\n"
    );
    let env = env_with_catalog(&server, &catalog);
    let isos_dir = env.root().join("isos");
    std::fs::create_dir_all(isos_dir.join("a-directory")).unwrap();
    for (name, len) in [
        ("tiny.qcow2", 5000),
        ("zeta-freebsd.iso", 3),
        ("beta-ubuntu.qcow2", 7),
        ("tiny.qcow2.abc123.part", 1),
        ("alp.iso.partial", 1),
    ] {
        std::fs::write(isos_dir.join(name), vec![0u8; len]).unwrap();
    }
    let run = env.json(&["images"]);
    run.assert_absent(&env.root().display().to_string());
    let images = run.data()["images"].as_array().unwrap();
    let rows: Vec<(String, String, u64, bool, bool, bool)> = images
        .iter()
        .map(|i| {
            (
                i["id"].as_str().unwrap().to_owned(),
                i["file"].as_str().unwrap().to_owned(),
                i["bytes"].as_u64().unwrap(),
                i["bytes_exact"].as_bool().unwrap(),
                i["downloaded"].as_bool().unwrap(),
                i["byo"].as_bool().unwrap(),
            )
        })
        .collect();
    let row = |id: &str, file: &str, bytes, exact, downloaded, byo| {
        (
            id.to_owned(),
            file.to_owned(),
            bytes,
            exact,
            downloaded,
            byo,
        )
    };
    assert_eq!(
        rows,
        [
            row("tiny", "tiny.qcow2", 5000, true, true, false),
            row("alp", "", 2048, false, false, false),
            row("", "beta-ubuntu.qcow2", 7, true, true, true),
            row("", "zeta-freebsd.iso", 3, true, true, true),
        ]
    );
    assert_eq!(images[2]["os"], "ubuntu");
    assert_eq!(images[2]["backend"], "cloudinit");
    assert_eq!(images[2]["variant"], "");
    assert_eq!(images[3]["backend"], "ssh");

    let human = env.run(&["images"]);
    let text = String::from_utf8(human.stdout).unwrap();
    insta::assert_snapshot!(text, @r"
    ID    OS      VARIANT  BACKEND    SIZE     STATE           FILE               USED BY
    tiny  debian  test     cloudinit  4.9KiB   downloaded      tiny.qcow2         -
    alp   alpine           apkovl     ~2.0KiB  not downloaded
    -     ubuntu           cloudinit  7B       byo             beta-ubuntu.qcow2  -
    -                      ssh        3B       byo             zeta-freebsd.iso   -

    4.9KiB in images no VM uses: `stoat prune --images --apply` frees it
    ");
}

#[test]
fn a_malformed_catalog_names_the_file_and_the_line() {
    let mut env = TestEnv::new();
    let path = env.tmp().join("bad-catalog.toml");
    std::fs::write(
        &path,
        "[[image]]\nid = \"a\"\nos = \"x\"\nbackend = \"ssh\"\nurl = \"http://h/a\"\n\n[[image]]\nid = \"b\"\nos = \"x\"\nbackend = \"ssh\"\nmirror = \"http://h/b\"\n",
    )
    .unwrap();
    env.set_env("STOAT_CATALOG", path.to_str().unwrap());
    for args in [&["images"][..], &["pull", "a"]] {
        let message = env.json(args).error("invalid_spec");
        assert!(message.contains("bad-catalog.toml"), "{message}");
        assert!(message.contains("line 11"), "{message}");
        assert!(message.contains("mirror"), "{message}");
    }
    std::fs::write(&path, "[[image]\nid = 1\n").unwrap();
    let message = env.json(&["images"]).error("invalid_spec");
    assert!(message.contains("line 1"), "{message}");
    env.set_env("STOAT_CATALOG", "/nonexistent/catalog.toml");
    let message = env.json(&["images"]).error("invalid_spec");
    assert!(message.contains("/nonexistent/catalog.toml"), "{message}");
}

/// A catalog of one verified image `h` served on loopback with `body` (keep the server).
fn served_verified_h(body: &[u8]) -> (Server, TestEnv) {
    let server = Server::start();
    server.route("/h.qcow2", body.to_vec(), Behaviour::Normal);
    let env = env_with_catalog(
        &server,
        &entry(
            "h",
            "h.qcow2",
            &format!("sha256 = \"{}\"", sha256_hex(body)),
        ),
    );
    (server, env)
}

#[test]
fn human_pull_off_a_terminal_prints_a_line_per_ten_percent() {
    let (_server, env) = served_verified_h(&payload(1_000_000));
    let output = env.run(&["pull", "h"]);
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    let percents: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert!(percents.len() <= 11, "{stderr}");
    assert_eq!(percents.last(), Some(&"100%"), "{stderr}");
    assert!(!stderr.contains('\r'), "{stderr:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("h: downloaded, verified"), "{stdout}");
}

#[test]
fn a_second_human_pull_says_nothing_was_fetched() {
    let (_server, env) = served_verified_h(&payload(10_000));
    let first = env.run(&["pull", "h"]);
    assert_eq!(
        String::from_utf8_lossy(&first.stdout).trim_end(),
        "h: downloaded, verified"
    );
    let second = env.run(&["pull", "h"]);
    assert!(second.status.success());
    assert_eq!(
        String::from_utf8_lossy(&second.stdout).trim_end(),
        "h: already downloaded, nothing fetched; verified"
    );
    // The wire keeps the contract's meaning: the image is on disk.
    let data = env.json(&["pull", "h"]).data().clone();
    assert_eq!(data["downloaded"], true);
    assert_eq!(data["verified"], true);
}
