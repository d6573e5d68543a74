//! The fixture SUT's streaming commands, written from the contract alone: `images` over the
//! `STOAT_CATALOG` file, `pull` over plain HTTP with `progress` events (only when the
//! percentage changes), and `apply` (a `--dry-run` plan, or each recipe fed to
//! `ssh ... sh -s` with a `stage` event at its boundary and a `log` event per output line).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::Digest as _;

use super::{fail, root, ssh_argv, Answer, Failure, Parsed, Vm};

/// Writes one non-terminal event line, flushed at once (json mode only).
fn event(json_mode: bool, cmd: &str, kind: &str, data: Value) {
    if json_mode {
        let mut out = std::io::stdout();
        let _ = writeln!(
            out,
            "{}",
            json!({"v": super::contract(), "type": kind, "cmd": cmd, "data": data})
        );
        let _ = out.flush();
    }
}

struct Image {
    id: String,
    os: String,
    variant: String,
    backend: String,
    url: String,
    checksum_url: Option<String>,
    sha256: Option<String>,
    bytes: u64,
}

impl Image {
    fn file(&self) -> String {
        self.url.rsplit('/').next().unwrap_or("").to_string()
    }
    fn path(&self) -> PathBuf {
        root().join("isos").join(self.file())
    }
}

/// The `STOAT_CATALOG` file's images; the fixture has no built-in catalog.
fn catalog() -> Result<Vec<Image>, Failure> {
    let Some(path) = std::env::var_os("STOAT_CATALOG") else {
        return Ok(Vec::new());
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| fail("invalid_spec", format!("catalog: {e}")))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| fail("invalid_spec", format!("catalog: {e}")))?;
    let rows = table
        .get("image")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    let text_of =
        |row: &toml::Value, key: &str| row.get(key).and_then(|v| v.as_str()).map(str::to_string);
    Ok(rows
        .iter()
        .map(|row| Image {
            id: text_of(row, "id").unwrap_or_default(),
            os: text_of(row, "os").unwrap_or_default(),
            variant: text_of(row, "variant").unwrap_or_default(),
            backend: text_of(row, "backend").unwrap_or_default(),
            url: text_of(row, "url").unwrap_or_default(),
            checksum_url: text_of(row, "checksum_url"),
            sha256: text_of(row, "sha256"),
            bytes: row.get("bytes").and_then(|v| v.as_integer()).unwrap_or(0) as u64,
        })
        .collect())
}

pub fn images() -> Answer {
    let rows: Vec<Value> = catalog()?
        .iter()
        .map(|image| {
            let size = std::fs::metadata(image.path()).ok().map(|m| m.len());
            json!({"id": image.id, "os": image.os, "variant": image.variant, "backend": image.backend,
                "file": if size.is_some() { image.file() } else { String::new() },
                "downloaded": size.is_some(), "bytes": size.unwrap_or(image.bytes),
                "bytes_exact": size.is_some(), "byo": false})
        })
        .collect();
    Ok(json!({"images": rows}))
}

/// An open HTTP response: the status, the declared length and the body reader.
fn http_get(url: &str) -> Result<(u16, Option<u64>, BufReader<TcpStream>), String> {
    let rest = url.strip_prefix("http://").ok_or("only http:// URLs")?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    // Through HTTP_PROXY when set: the proxy gets the absolute URL.
    let proxy = std::env::var("HTTP_PROXY")
        .or_else(|_| std::env::var("http_proxy"))
        .ok()
        .filter(|p| !p.is_empty());
    let (connect_to, target) = match &proxy {
        Some(proxy) => (
            proxy
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_string(),
            url.to_string(),
        ),
        None => (host.to_string(), path.to_string()),
    };
    let mut stream =
        TcpStream::connect(connect_to.as_str()).map_err(|e| format!("{connect_to}: {e}"))?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader
        .read_line(&mut status_line)
        .map_err(|e| e.to_string())?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no HTTP status line")?;
    let mut length = None;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).map_err(|e| e.to_string())?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok();
            }
        }
    }
    Ok((status, length, reader))
}

fn published_digest(image: &Image) -> Result<Option<String>, Failure> {
    if let Some(hex) = &image.sha256 {
        return Ok(Some(hex.to_ascii_lowercase()));
    }
    let Some(url) = &image.checksum_url else {
        return Ok(None);
    };
    let failed = |why: String| fail("download_failed", format!("checksum file: {why}"));
    let (status, _, mut reader) = http_get(url).map_err(failed)?;
    if status != 200 {
        return Err(failed(format!("HTTP {status}")));
    }
    let mut text = String::new();
    reader
        .read_to_string(&mut text)
        .map_err(|e| failed(e.to_string()))?;
    let file = image.file();
    text.lines()
        .filter_map(|line| line.split_once(char::is_whitespace))
        .find(|(_, name)| name.trim().trim_start_matches('*') == file)
        .map(|(hex, _)| Some(hex.to_ascii_lowercase()))
        .ok_or_else(|| failed(format!("{file} is not listed")))
}

pub fn pull(id: &str, json_mode: bool) -> Answer {
    let images = catalog()?;
    let Some(image) = images.iter().find(|i| i.id == id) else {
        return Err(fail(
            "no_such_image",
            format!("{id} is not in the image index"),
        ));
    };
    let part = root()
        .join("isos")
        .join(format!("{}.{}.part", image.file(), std::process::id()));
    let outcome = download(image, &part, json_mode);
    if outcome.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    outcome
}

fn download(image: &Image, part: &PathBuf, json_mode: bool) -> Answer {
    let failed = |why: String| fail("download_failed", format!("{}: {why}", image.url));
    let (status, length, mut reader) = http_get(&image.url).map_err(failed)?;
    if status != 200 {
        return Err(failed(format!("HTTP {status}")));
    }
    let total = length.unwrap_or(image.bytes);
    let mut file = std::fs::File::create(part).map_err(|e| fail("internal", e.to_string()))?;
    let mut hasher = sha2::Sha256::new();
    let (mut done, mut last_percent) = (0u64, None);
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = reader
            .read(&mut buffer)
            .map_err(|e| failed(e.to_string()))?;
        if n == 0 {
            break;
        }
        file.write_all(&buffer[..n])
            .map_err(|e| fail("internal", e.to_string()))?;
        hasher.update(&buffer[..n]);
        done += n as u64;
        let percent = (done.min(total) * 100).checked_div(total).unwrap_or(100) as i64;
        if last_percent != Some(percent) {
            last_percent = Some(percent);
            event(
                json_mode,
                "pull",
                "progress",
                json!({"id": image.id, "done": done.min(total), "total": total, "percent": percent}),
            );
        }
    }
    if length.is_some_and(|l| l != done) {
        return Err(failed(format!("body cut short at {done} bytes")));
    }
    let expected = published_digest(image)?;
    let actual: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if expected.as_ref().is_some_and(|e| *e != actual) {
        return Err(fail(
            "checksum_mismatch",
            format!("{}: sha256 {actual} is not the published digest", image.id),
        ));
    }
    std::fs::rename(part, image.path()).map_err(|e| fail("internal", e.to_string()))?;
    Ok(
        json!({"id": image.id, "downloaded": true, "verified": expected.is_some(),
        "checksum_available": expected.is_some()}),
    )
}

/// The VM's recipes, or `--only`'s.
fn recipes_of(vm: &Vm, parsed: &Parsed) -> Vec<String> {
    if let Some(only) = parsed.flag("--only") {
        return only
            .split(',')
            .map(str::to_string)
            .filter(|s| !s.is_empty())
            .collect();
    }
    vm.table()
        .get("recipes")
        .and_then(|r| r.as_array())
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn recipe_script(name: &str) -> Result<String, Failure> {
    let dir = root().join("recipes").join(name);
    let manifest: toml::Table = std::fs::read_to_string(dir.join("recipe.toml"))
        .ok()
        .and_then(|t| toml::from_str(&t).ok())
        .ok_or_else(|| fail("recipe_not_applicable", format!("no recipe {name}")))?;
    let script = manifest
        .get("script")
        .and_then(|s| s.as_str())
        .unwrap_or("install.sh");
    std::fs::read_to_string(dir.join(script))
        .map_err(|e| fail("recipe_not_applicable", format!("{name}: {e}")))
}

/// Waits up to 10 s for an SSH banner on the VM's port.
fn wait_for_sshd(vm: &Vm) -> Result<(), Failure> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", vm.int("sshport") as u16)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut banner = [0u8; 4];
            if stream.read_exact(&mut banner).is_ok() && &banner == b"SSH-" {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(fail("timeout", format!("{}: sshd did not answer", vm.name)))
}

/// `apply` (and `provision`, which answers for itself in contract 2 and as `apply` in 3).
pub fn apply(vm: Vm, parsed: &Parsed, json_mode: bool, provision: bool) -> Answer {
    let v2 = super::v2();
    let cmd = if v2 && provision {
        "provision"
    } else {
        "apply"
    };
    let answer = |applied: Vec<String>, skipped_reason: &str| {
        if !v2 {
            json!({"vm": vm.name, "applied": applied, "skipped_reason": skipped_reason})
        } else if provision {
            json!({"vm": vm.name, "provisioned": !applied.is_empty(), "skipped_reason": skipped_reason})
        } else {
            json!({"vm": vm.name, "applied": applied})
        }
    };
    let recipes = recipes_of(&vm, parsed);
    // Contract 2 names no --dry-run; this fixture has it in both editions (an implementation
    // may), so an edition-2 run judges what it answers.
    if parsed.has("--dry-run") {
        let plan: Vec<Value> = recipes
            .iter()
            .map(|r| json!({"name": r, "action": "run", "reason": "never applied"}))
            .collect();
        return Ok(json!({"vm": vm.name, "dry_run": true, "plan": plan}));
    }
    if !vm.running() {
        return Err(fail("not_running", format!("{} is not running", vm.name)));
    }
    if recipes.is_empty() {
        return Ok(answer(Vec::new(), "no recipes"));
    }
    wait_for_sshd(&vm)?;
    for recipe in &recipes {
        let script = recipe_script(recipe)?;
        event(json_mode, cmd, "stage", json!({"recipe": recipe}));
        event(
            json_mode,
            cmd,
            "log",
            json!({"line": format!("=== recipe {recipe} ===")}),
        );
        run_recipe(&vm, recipe, &script, json_mode, cmd)?;
    }
    Ok(answer(recipes, ""))
}

fn run_recipe(
    vm: &Vm,
    recipe: &str,
    script: &str,
    json_mode: bool,
    cmd: &str,
) -> Result<(), Failure> {
    let argv = ssh_argv(vm);
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .args(["sh", "-s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| fail("internal", format!("ssh: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(script.as_bytes());
    }
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            event(
                json_mode,
                cmd,
                "log",
                json!({"line": line.trim_end_matches('\r')}),
            );
        }
    }
    let status = child.wait().map_err(|e| fail("internal", e.to_string()))?;
    if !status.success() {
        return Err(fail(
            "internal",
            format!("recipe {recipe} failed ({status})"),
        ));
    }
    Ok(())
}
