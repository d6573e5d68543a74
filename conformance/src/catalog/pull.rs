//! Owns the `pull` and after-pull `images` checks, against a loopback HTTP server the suite
//! starts itself and a catalog file pointing the SUT at it (contract "Streaming", the pull
//! row of "Per-command data", the download error codes). These are the scenarios that make
//! a SUT stream `progress` events, so ENV.event-data and ENV.ok-only-on-result judge real
//! events here.
//!
//! The contract names no way to point an implementation at a catalog: the SUT profile
//! declares one (default: the reference's `STOAT_CATALOG` and format), and every check first
//! probes that `images` lists the suite's images through it, else SKIPs naming the knob.
//! PULL.through-proxy fetches from a host only the suite's loopback proxy serves, and SKIPs
//! when the SUT ignores `HTTP_PROXY`/`HTTPS_PROXY` (the contract does not require them).

use serde_json::{json, Value};

use super::def::{declared, scenario, CheckDef, Tier};
use super::helpers::{expect_eq, str_at};
use crate::error::HarnessError;
use crate::finding::Level::Must;
use crate::run::{Case, Ran};
use crate::sandbox::{ImageFiles, Sandbox};
use crate::spec::{Editions, Requirement, Source};

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "PULL.progress-monotonic",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#streaming",
        quote: "progress fires only when the percentage changes, not per read.",
        title: "`pull` streams progress events {id, done, total, percent} before its result: percent strictly increasing, done never above total",
        tags: &["pull", "events"],
        ..scenario(progress_monotonic)
    },
    CheckDef {
        id: "PULL.result-shape",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "pull {\"id\":\"alpine-virt\",\"downloaded\":true,\"verified\":true,\"checksum_available\":true}",
        title: "`pull` of an image with a checksum file answers {id, downloaded: true, verified: true, checksum_available: true}",
        tags: &["pull"],
        ..scenario(result_shape)
    },
    declared(
        CheckDef {
            id: "PULL.verified",
            level: Must,
            tier: Tier::Pure,
            spec: "design#decisions",
            quote: "`STOAT_CATALOG=<file.toml>` replaces it (mirrors, offline hosts, loopback tests)",
            title: "after `pull`, isos/ holds exactly the served bytes under the URL's file name, no partial file, and the checksum file was fetched",
            tags: &["pull"],
            source: Source::Design,
            ..scenario(verified)
        },
        Requirement::Catalog,
    ),
    CheckDef {
        id: "PULL.checksum-mismatch",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "checksum_mismatch the downloaded bytes do not match the published digest",
        title: "bytes whose digest differs from SHA256SUMS fail with checksum_mismatch and leave no file in isos/",
        tags: &["pull", "errors"],
        editions: Editions::V3 { change: "contract 2 has no checksum_mismatch code" },
        ..scenario(checksum_mismatch)
    },
    CheckDef {
        id: "PULL.download-failed-404",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "download_failed a mirror or a checksum file did not answer with the image",
        title: "a mirror answering 404 fails with download_failed and leaves no file in isos/",
        tags: &["pull", "errors"],
        editions: Editions::V3 { change: "contract 2 has no download_failed code" },
        ..scenario(download_failed)
    },
    CheckDef {
        id: "PULL.through-proxy",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "pull {\"id\":\"alpine-virt\",\"downloaded\":true,\"verified\":true,\"checksum_available\":true}",
        title: "`pull` from a host only the suite's loopback HTTP proxy serves (HTTP_PROXY/HTTPS_PROXY) answers {downloaded: true, verified: true} with the served bytes; SKIP when the SUT ignores the proxy variables",
        tags: &["pull", "proxy"],
        ..scenario(through_proxy)
    },
    CheckDef {
        id: "IMAGES.file-bare-name",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "Image.file is a bare filename under the data root's isos/, never an absolute path.",
        title: "after `pull tiny`, `images` lists tiny downloaded, file the bare name tiny.img, bytes exact (bytes_exact true), byo false",
        tags: &["images", "pull"],
        ..scenario(images_after_pull)
    },
    CheckDef {
        id: "CREATE.image-not-downloaded",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "image_not_downloaded the image exists in the catalog but not on disk",
        title: "`create x --image tiny` while `images` lists tiny as not downloaded fails with image_not_downloaded and creates no VM (SKIP when the SUT downloads the image itself instead)",
        tags: &["create", "images", "errors"],
        ..scenario(image_not_downloaded)
    },
];

/// A sandbox whose catalog (through the profile's knob) names the loopback server's
/// images; `None`, with the check skipped, when the SUT's `images` does not list them.
pub(super) fn with_catalog(
    case: &mut Case<'_>,
) -> Result<Option<(Sandbox, ImageFiles)>, HarnessError> {
    let files = ImageFiles::start(case.seed())?;
    catalog_sandbox(case, files)
}

fn catalog_sandbox(
    case: &mut Case<'_>,
    files: ImageFiles,
) -> Result<Option<(Sandbox, ImageFiles)>, HarnessError> {
    let mut sandbox = case.sandbox()?;
    let knob = case.profile().catalog.clone();
    let path = sandbox.root.join("catalog");
    std::fs::write(&path, files.render(&knob)).map_err(|e| HarnessError::io(&path, e))?;
    sandbox.set_env(&knob.env, &path.to_string_lossy());
    let probe = case.json(&sandbox, &["images"])?;
    let listed = probe
        .data()
        .and_then(|d| d.get("images"))
        .and_then(Value::as_array)
        .is_some_and(|rows| rows.iter().any(|r| str_at(r, "/id") == Some("tiny")));
    if !listed {
        case.skip(format!(
            "the SUT's `images` does not list the suite's catalog when {} names it: {} is a knob \
             of the reference, not of the contract; declare how this implementation reads a \
             catalog in the --profile file's [catalog] table",
            knob.env, knob.env
        ));
        return Ok(None);
    }
    Ok(Some((sandbox, files)))
}

/// The entries of `<root>/isos` (empty when it does not exist).
fn isos_entries(sandbox: &Sandbox) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(sandbox.data.join("isos"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn progress_events(ran: &Ran) -> Vec<Value> {
    ran.judgement
        .events()
        .into_iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("progress"))
        .cloned()
        .collect()
}

fn progress_monotonic(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, _files)) = with_catalog(case)? else {
        return Ok(());
    };
    let ran = case.json(&sandbox, &["pull", "tiny"])?;
    if case.expect_ok(&ran).is_none() {
        return Ok(());
    }
    let events = progress_events(&ran);
    if !case.ensure(
        !events.is_empty(),
        "stdout",
        "a pull that downloaded 1 MiB emitted no progress event",
    ) {
        return Ok(());
    }
    let mut last_percent: Option<i64> = None;
    let mut last_done = 0i64;
    for (index, event) in events.iter().enumerate() {
        let at = |field: &str| format!("progress {}/data/{field}", index + 1);
        let number = |field: &str| {
            event
                .pointer(&format!("/data/{field}"))
                .and_then(Value::as_i64)
        };
        let (Some(done), Some(total), Some(percent)) =
            (number("done"), number("total"), number("percent"))
        else {
            case.fail(
                at(""),
                format!(
                    "progress data needs integer done, total, percent: {}",
                    event["data"]
                ),
            );
            continue;
        };
        expect_eq(case, &event["data"], "/id", &json!("tiny"));
        case.ensure(
            done <= total,
            &at("done"),
            format!("done {done} is above total {total}"),
        );
        case.ensure(
            done >= last_done,
            &at("done"),
            format!("done went backwards: {last_done} then {done}"),
        );
        if let Some(previous) = last_percent {
            case.ensure(
                percent > previous,
                &at("percent"),
                format!("percent {percent} after {previous}: progress fires only when the percentage changes"),
            );
        }
        last_percent = Some(percent);
        last_done = done;
    }
    Ok(())
}

fn result_shape(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, _files)) = with_catalog(case)? else {
        return Ok(());
    };
    let ran = case.json(&sandbox, &["pull", "tiny"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/id", &json!("tiny"));
        expect_eq(case, &data, "/downloaded", &json!(true));
        expect_eq(case, &data, "/verified", &json!(true));
        expect_eq(case, &data, "/checksum_available", &json!(true));
    }
    Ok(())
}

fn verified(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, files)) = with_catalog(case)? else {
        return Ok(());
    };
    let ran = case.json(&sandbox, &["pull", "tiny"])?;
    if case.expect_ok(&ran).is_none() {
        return Ok(());
    }
    let path = sandbox.data.join("isos").join("tiny.img");
    match std::fs::read(&path) {
        Ok(bytes) => {
            case.ensure(
                bytes == files.payload,
                "isos/tiny.img",
                format!(
                    "the pulled file holds {} bytes that differ from the {} served",
                    bytes.len(),
                    files.payload.len()
                ),
            );
        }
        Err(_) => case.fail(
            "isos/tiny.img",
            "pull answered ok but isos/tiny.img does not exist",
        ),
    }
    let entries = isos_entries(&sandbox);
    case.ensure(
        entries == ["tiny.img"],
        "isos/",
        format!("after one pull isos/ should hold only tiny.img, holds {entries:?}"),
    );
    let requests = files.server.requests();
    case.ensure(
        requests.iter().any(|r| r == "/SHA256SUMS"),
        "http",
        format!("verified:true without fetching the checksum file (requests: {requests:?})"),
    );
    Ok(())
}

fn failed_pull_leaves_nothing(
    case: &mut Case<'_>,
    id: &str,
    code: &str,
) -> Result<(), HarnessError> {
    let Some((sandbox, _files)) = with_catalog(case)? else {
        return Ok(());
    };
    let ran = case.json(&sandbox, &["pull", id])?;
    case.expect_error(&ran, code);
    let entries = isos_entries(&sandbox);
    case.ensure(
        entries.is_empty(),
        "isos/",
        format!("a failed pull left files behind in isos/: {entries:?}"),
    );
    Ok(())
}

fn checksum_mismatch(case: &mut Case<'_>) -> Result<(), HarnessError> {
    failed_pull_leaves_nothing(case, "bad", "checksum_mismatch")
}

fn download_failed(case: &mut Case<'_>) -> Result<(), HarnessError> {
    failed_pull_leaves_nothing(case, "gone", "download_failed")
}

fn images_after_pull(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, _files)) = with_catalog(case)? else {
        return Ok(());
    };
    let pulled = case.json(&sandbox, &["pull", "tiny"])?;
    if case.expect_ok(&pulled).is_none() {
        return Ok(());
    }
    let ran = case.json(&sandbox, &["images"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    let images = data
        .get("images")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(index) = images.iter().position(|i| str_at(i, "/id") == Some("tiny")) else {
        case.fail(
            "/data/images",
            "images does not list the catalog image tiny",
        );
        return Ok(());
    };
    let row = &images[index];
    let pointer = |field: &str| format!("/images/{index}/{field}");
    expect_eq(case, &data, &pointer("file"), &json!("tiny.img"));
    expect_eq(case, &data, &pointer("downloaded"), &json!(true));
    expect_eq(
        case,
        &data,
        &pointer("bytes"),
        &json!(crate::sandbox::http::IMAGE_BYTES),
    );
    expect_eq(case, &data, &pointer("bytes_exact"), &json!(true));
    expect_eq(case, &data, &pointer("byo"), &json!(false));
    let file = str_at(row, "/file").unwrap_or("");
    case.ensure(
        !file.contains('/'),
        &pointer("file"),
        format!("file must be a bare filename, got {file:?}"),
    );
    Ok(())
}

/// The proxy variables, both spellings (implementations read one or the other).
const PROXY_VARS: &[&str] = &["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];

fn through_proxy(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let files = ImageFiles::start_behind_proxy(case.seed())?;
    let proxy = files.proxy_url();
    let Some((mut sandbox, files)) = catalog_sandbox(case, files)? else {
        return Ok(());
    };
    for var in PROXY_VARS {
        sandbox.set_env(var, &proxy);
    }
    let ran = case.json(&sandbox, &["pull", "tiny"])?;
    let requests = files.server.requests();
    let proxied = requests
        .iter()
        .any(|r| r.contains(crate::sandbox::http::PROXY_HOST));
    if !proxied && ran.data().is_none() {
        case.skip(
            "the SUT did not send its download through HTTP_PROXY/HTTPS_PROXY (the contract does \
             not require proxy support), so the proxy path cannot be judged",
        );
        return Ok(());
    }
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/downloaded", &json!(true));
        expect_eq(case, &data, "/verified", &json!(true));
        let path = sandbox.data.join("isos").join("tiny.img");
        case.ensure(
            std::fs::read(&path).is_ok_and(|bytes| bytes == files.payload),
            "isos/tiny.img",
            "the pulled file does not hold the bytes the proxy served",
        );
    }
    Ok(())
}

fn image_not_downloaded(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, _files)) = with_catalog(case)? else {
        return Ok(());
    };
    let images = case.json(&sandbox, &["images"])?;
    let tiny = case
        .expect_ok(&images)
        .and_then(|d| d.get("images"))
        .and_then(Value::as_array)
        .and_then(|rows| {
            rows.iter()
                .find(|r| str_at(r, "/id") == Some("tiny"))
                .cloned()
        });
    if let Some(tiny) = &tiny {
        expect_eq(case, tiny, "/downloaded", &json!(false));
    }
    let ran = case.json(&sandbox, &["create", "x", "--image", "tiny"])?;
    if ran.data().is_some() {
        case.skip("`create --image tiny` downloaded the image itself, so image_not_downloaded is never reached");
        let _ = case.json(&sandbox, &["rm", "x", "-y"])?;
        return Ok(());
    }
    case.expect_error(&ran, "image_not_downloaded");
    let listed = case.json(&sandbox, &["ls"])?;
    if let Some(vms) = case
        .expect_ok(&listed)
        .and_then(|d| d.get("vms"))
        .and_then(Value::as_array)
    {
        case.ensure(
            !vms.iter().any(|v| str_at(v, "/name") == Some("x")),
            "/data/vms",
            "a refused create left a VM x",
        );
    }
    Ok(())
}
