//! `pull`: download a catalog image into `isos/`, verifying it as it streams.
//!
//! Implements json-v3#streaming (progress only when the integer percent changes) and
//! the `pull` row of "Per-command data"; docs/contract.md behaviour#images for the rules (reuse of a verified
//! file, `<file>.<random>.part`, rename on success). Resume (not upstream): an interrupted
//! download that can be verified is kept as `isos/<file>.partial` and continued with an HTTP
//! Range request by the next pull (docs/decisions/images.md).
//!
//! The HTTP transfer runs on a worker thread that hands chunks over a small bounded channel,
//! so the caller's loop can notice a stall or a cancel within [`POLL`] whatever the socket
//! does, while memory stays constant.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use stoat_wire::dto::{ProgressData, PullData};

use super::catalog::{Catalog, CatalogEntry, Checksum};
use super::checksum::{self, Expected};
use super::local::PARTIAL_SUFFIX;
use super::store;
use crate::error::IoContext;
use crate::proxy::{ProxyEnv, Route};
use crate::{lock, Cancel, Env, Error, EventSink, Result, Root};

/// The stall window when `STOAT_PULL_STALL_SECS` is unset.
pub const DEFAULT_STALL: Duration = Duration::from_secs(60);
/// How often the download loop looks at the cancel flag and the stall clock.
const POLL: Duration = Duration::from_millis(100);
/// How much one read asks for.
const CHUNK: usize = 256 * 1024;
/// Chunks in flight between the socket and the disk: bounds memory.
const IN_FLIGHT: usize = 8;
/// The largest checksum file or release index stoat reads.
const METADATA_LIMIT: usize = 16 * 1024 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// What a pull needs besides the catalog: where events go and when to give up.
pub struct PullContext<'a> {
    /// For the host tools a pull may run (`qemu-img rebase`, see images::store).
    pub env: &'a Env,
    pub sink: &'a dyn EventSink,
    pub cancel: &'a Cancel,
    /// No bytes for this long is `download_stalled`.
    pub stall: Duration,
    /// Which requests go through a proxy.
    pub proxy: &'a ProxyEnv,
}

/// Returns the stall window: `STOAT_PULL_STALL_SECS` (seconds, decimals allowed) or 60 s.
pub fn stall_window(env: &Env) -> Result<Duration> {
    let Some(text) = env.get("STOAT_PULL_STALL_SECS") else {
        return Ok(DEFAULT_STALL);
    };
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs < 1e9 => {
            Ok(Duration::from_secs_f64(secs))
        }
        _ => Err(Error::InvalidSpec(format!(
            "STOAT_PULL_STALL_SECS={text:?} is not a positive number of seconds"
        ))),
    }
}

/// Downloads catalog image `id` (or reuses a verified copy) and says what happened.
pub fn pull(root: &Root, catalog: &Catalog, id: &str, cx: &PullContext) -> Result<PullData> {
    let entry = catalog
        .get(id)
        .ok_or_else(|| Error::NoSuchImage { id: id.to_owned() })?;
    let source = resolve(entry, cx)?;
    let isos = root.isos();
    std::fs::create_dir_all(&isos).context(|| format!("create {}", isos.display()))?;
    let target = isos.join(&source.file);
    let verified = source.expected.is_some();
    let answer = PullData {
        id: id.to_owned(),
        downloaded: true,
        verified,
        checksum_available: verified,
        fetched: false,
    };
    // One pull of a file at a time: a second waits, then finds the first one's file.
    let store_dir = store::dir(root);
    std::fs::create_dir_all(&store_dir).context(|| format!("create {}", store_dir.display()))?;
    let lock_path = store_dir.join(format!(".pull-{}.lock", source.file));
    let before = Seen::of(&target);
    let (_pull_lock, waited) = match lock::try_exclusive(&lock_path)? {
        Some(guard) => (guard, false),
        None => (lock::exclusive(&lock_path)?, true),
    };
    if let Some(expected) = &source.expected {
        if target.is_file() && digest_of_file(&target, expected, cx.cancel)? == expected.hex {
            store::mark_verified(root, &target)?;
            return Ok(answer);
        }
    } else if waited && target.is_file() && Seen::of(&target) != before {
        // Nothing can verify it, but it was fetched while this pull waited: it is the answer.
        return Ok(answer);
    }
    download(root, &source, id, cx)?;
    if verified {
        store::mark_verified(root, &target)?;
    }
    Ok(PullData {
        fetched: true,
        ..answer
    })
}

/// What a name shows at one moment: a rename over it, or a rewrite, changes it.
#[derive(Debug, PartialEq, Eq)]
struct Seen(Option<(store::FileId, u64, Option<std::time::SystemTime>)>);

impl Seen {
    fn of(path: &Path) -> Seen {
        let meta = std::fs::metadata(path).ok();
        Seen(
            store::FileId::of(path)
                .zip(meta)
                .map(|(id, meta)| (id, meta.len(), meta.modified().ok())),
        )
    }
}

/// Where an image comes from once its catalog entry is resolved.
struct Source {
    url: String,
    file: String,
    expected: Option<Expected>,
}

/// Resolves the image URL, file name and expected digest (fetching the checksum file or the
/// release index when the entry names one).
fn resolve(entry: &CatalogEntry, cx: &PullContext) -> Result<Source> {
    if let Some(flavor) = &entry.flavor {
        return resolve_flavor(entry, flavor, cx);
    }
    let expected = match &entry.checksum {
        Checksum::None => None,
        Checksum::Sha256(hex) | Checksum::Sha512(hex) => Some(
            Expected::from_hex(hex)
                .ok_or_else(|| Error::Internal(format!("catalog digest of {}", entry.id)))?,
        ),
        Checksum::Url(url) => {
            let text = fetch_text(url, "checksum file", cx)?;
            Some(checksum::find(&text, &entry.file).ok_or_else(|| {
                Error::DownloadFailed(format!(
                    "checksum file {url} lists no sha256 or sha512 digest for {}",
                    entry.file
                ))
            })?)
        }
    };
    Ok(Source {
        url: entry.url.clone(),
        file: entry.file.clone(),
        expected,
    })
}

fn resolve_flavor(entry: &CatalogEntry, flavor: &str, cx: &PullContext) -> Result<Source> {
    let text = fetch_text(&entry.url, "release index", cx)?;
    let (file, sha256) = release_index_lookup(&text, flavor).ok_or_else(|| {
        Error::DownloadFailed(format!(
            "release index {} lists no .iso for flavor {flavor}",
            entry.url
        ))
    })?;
    if file.contains('/') || file.starts_with('.') {
        return Err(Error::DownloadFailed(format!(
            "release index {} names an unsafe file {file:?}",
            entry.url
        )));
    }
    let base = entry.url.rsplit_once('/').map(|(dir, _)| dir).unwrap_or("");
    Ok(Source {
        url: format!("{base}/{file}"),
        expected: sha256.as_deref().and_then(Expected::from_hex),
        file,
    })
}

/// Finds the first record of an Alpine `latest-releases.yaml` with this flavour whose file
/// ends in `.iso`; returns its file and sha256. (A line reader: the format is a flat list of
/// `key: value` maps, and stoat needs no YAML library for it.)
pub fn release_index_lookup(text: &str, flavor: &str) -> Option<(String, Option<String>)> {
    let mut records: Vec<Vec<(String, String)>> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed == "---" || trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let body = match trimmed.strip_prefix('-') {
            Some(rest) if line.starts_with('-') => {
                records.push(Vec::new());
                rest.trim()
            }
            _ => trimmed,
        };
        if let (Some(record), Some((key, value))) = (records.last_mut(), body.split_once(':')) {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            record.push((key.trim().to_owned(), value.to_owned()));
        }
    }
    let field = |record: &[(String, String)], key: &str| {
        record
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    records.iter().find_map(|record| {
        let file = field(record, "file")?;
        (field(record, "flavor")? == flavor && file.ends_with(".iso"))
            .then(|| (file, field(record, "sha256")))
    })
}

/// Hashes a file already on disk.
fn digest_of_file(path: &Path, expected: &Expected, cancel: &Cancel) -> Result<String> {
    let mut file = File::open(path).context(|| format!("open {}", path.display()))?;
    let mut hasher = expected.algorithm.hasher();
    hash_prefix(&mut file, u64::MAX, &mut hasher, cancel)
        .context(|| format!("read {}", path.display()))?;
    cancel.check()?;
    Ok(hasher.finish())
}

/// Feeds up to `limit` bytes of `reader` to `hasher`; stops early when cancelled.
fn hash_prefix(
    reader: &mut impl Read,
    limit: u64,
    hasher: &mut checksum::Hasher,
    cancel: &Cancel,
) -> std::io::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut done = 0u64;
    while done < limit && !cancel.is_cancelled() {
        let want = (limit - done).min(CHUNK as u64) as usize;
        let n = reader.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        done += n as u64;
    }
    Ok(done)
}

/// The temporary `isos/<file>.<pid>.<random>.part` (see images::part): removed when dropped
/// unless renamed away.
struct PartFile {
    path: PathBuf,
    armed: bool,
}

impl PartFile {
    fn create(isos: &Path, file: &str) -> Result<PartFile> {
        let temp = tempfile::Builder::new()
            .prefix(&super::part::prefix(file))
            .suffix(".part")
            .tempfile_in(isos)
            .context(|| format!("create a temporary file in {}", isos.display()))?;
        let (_, path) = temp
            .keep()
            .map_err(|e| Error::io(format!("keep {}", isos.display()), e.error))?;
        Ok(PartFile { path, armed: true })
    }

    /// Renames the part file to `to`; it is no longer ours to remove.
    fn rename_to(mut self, to: &Path) -> Result<()> {
        std::fs::rename(&self.path, to)
            .context(|| format!("rename {} to {}", self.path.display(), to.display()))?;
        self.armed = false;
        Ok(())
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Downloads into a part file, resuming `isos/<file>.partial` when there is one; renames to
/// `isos/<file>` once the digest matches.
fn download(root: &Root, source: &Source, id: &str, cx: &PullContext) -> Result<()> {
    let isos = root.isos();
    let isos = isos.as_path();
    let partial = isos.join(format!("{}{PARTIAL_SUFFIX}", source.file));
    take_over_killed_parts(&partial, isos, source);
    let part = PartFile::create(isos, &source.file)?;
    // Claiming by rename: of two concurrent pulls, only one gets the resumable bytes.
    let resumable = source.expected.is_some() && std::fs::rename(&partial, &part.path).is_ok();
    if !resumable {
        let _ = std::fs::remove_file(&partial);
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&part.path)
        .context(|| format!("open {}", part.path.display()))?;
    let outcome = transfer(&mut file, source, id, cx);
    drop(file);
    match outcome {
        Ok(()) => {
            // Under the data-root lock, so no create pins the old file halfway.
            let target = isos.join(&source.file);
            let _root_lock = lock::exclusive(&root.lock_file())?;
            store::protect_users(root, cx.env, &target, cx.cancel)?;
            part.rename_to(&target)
        }
        Err(err @ Error::ChecksumMismatch(_)) => Err(err),
        Err(err) => {
            let kept = std::fs::metadata(&part.path).map(|m| m.len()).unwrap_or(0);
            if source.expected.is_some() && kept > 0 {
                let _ = part.rename_to(&partial);
            }
            Err(err)
        }
    }
}

/// What killed pulls of this file left: the largest part becomes the kept download to resume
/// (when the image can be verified and nothing is kept yet), the others are removed.
fn take_over_killed_parts(partial: &Path, isos: &Path, source: &Source) {
    let mut resume_from_one = source.expected.is_some() && !partial.exists();
    for stale in super::part::stale_of(isos, &source.file) {
        if resume_from_one && std::fs::rename(&stale, partial).is_ok() {
            resume_from_one = false;
            continue;
        }
        let _ = std::fs::remove_file(&stale);
    }
}

/// Streams the image into `file` (which may already hold a prefix), verifying as it goes.
fn transfer(file: &mut File, source: &Source, id: &str, cx: &PullContext) -> Result<()> {
    let mut offset = file
        .seek(SeekFrom::End(0))
        .context(|| "seek the part file".into())?;
    let mut request = Request::start(&source.url, offset, cx)?;
    if offset > 0 && request.head.status == 416 {
        // The kept bytes do not fit the file the server has now: start over.
        offset = 0;
        request = Request::start(&source.url, 0, cx)?;
    }
    let head = &request.head;
    let total = match (head.status, offset) {
        (206, start) if start > 0 => content_range_total(head, start, &source.url)?,
        (200, _) | (206, _) => {
            offset = 0;
            head.content_length
        }
        _ => return Err(status_error(head, &source.url)),
    };
    file.set_len(offset)
        .context(|| "truncate the part file".into())?;
    file.seek(SeekFrom::Start(offset))
        .context(|| "seek the part file".into())?;
    let mut hasher = source.expected.as_ref().map(|e| e.algorithm.hasher());
    if let Some(hasher) = hasher.as_mut() {
        file.seek(SeekFrom::Start(0))
            .context(|| "seek the part file".into())?;
        hash_prefix(&mut *file, offset, hasher, cx.cancel)
            .context(|| "read the kept part of an interrupted pull".into())?;
        cx.cancel.check()?;
    }
    let mut progress = Progress::new(id, total, cx.sink);
    let mut done = offset;
    progress.update(done);
    while let Some(chunk) = request.next_chunk()? {
        file.write_all(&chunk)
            .context(|| "write the part file".into())?;
        if let Some(hasher) = hasher.as_mut() {
            hasher.update(&chunk);
        }
        done += chunk.len() as u64;
        progress.update(done);
    }
    if let Some(total) = total {
        if done < total {
            return Err(Error::DownloadFailed(format!(
                "body cut short: got {done} of {total} bytes from {}",
                source.url
            )));
        }
    }
    file.sync_all().context(|| "sync the part file".into())?;
    if let (Some(hasher), Some(expected)) = (hasher, &source.expected) {
        let got = hasher.finish();
        if got != expected.hex {
            return Err(Error::ChecksumMismatch(format!(
                "{}: {} got {got}, want {}",
                source.file,
                expected.algorithm.name(),
                expected.hex
            )));
        }
    }
    Ok(())
}

/// Reads a 206's total size and checks the range starts where stoat asked.
fn content_range_total(head: &Head, start: u64, url: &str) -> Result<Option<u64>> {
    let range = head.content_range.as_deref().unwrap_or("");
    let spec = range.trim().strip_prefix("bytes ").unwrap_or("");
    let (span, total) = spec.split_once('/').unwrap_or(("", "*"));
    let first: Option<u64> = span.split_once('-').and_then(|(a, _)| a.parse().ok());
    if first != Some(start) {
        return Err(Error::DownloadFailed(format!(
            "{url} answered a resume from byte {start} with Content-Range {range:?}"
        )));
    }
    Ok(total
        .parse()
        .ok()
        .or(head.content_length.map(|len| start + len)))
}

fn status_error(head: &Head, url: &str) -> Error {
    Error::DownloadFailed(format!("HTTP {} {} from {url}", head.status, head.reason))
}

/// Emits progress only when the integer percentage changes (never without a total).
struct Progress<'a> {
    id: &'a str,
    total: Option<u64>,
    last: Option<u64>,
    sink: &'a dyn EventSink,
}

impl<'a> Progress<'a> {
    fn new(id: &'a str, total: Option<u64>, sink: &'a dyn EventSink) -> Progress<'a> {
        Progress {
            id,
            total: total.filter(|t| *t > 0),
            last: None,
            sink,
        }
    }

    fn update(&mut self, done: u64) {
        let Some(total) = self.total else { return };
        let percent = (done.min(total) as u128 * 100 / total as u128) as u64;
        if self.last == Some(percent) || (self.last.is_none() && done == 0) {
            return;
        }
        self.last = Some(percent);
        self.sink.progress(&ProgressData {
            id: self.id.to_owned(),
            done,
            total,
            percent: percent as u32,
        });
    }
}

/// A fetched checksum file or release index, as text.
fn fetch_text(url: &str, what: &str, cx: &PullContext) -> Result<String> {
    let mut request = Request::start(url, 0, cx)?;
    if request.head.status != 200 {
        let head = &request.head;
        return Err(Error::DownloadFailed(format!(
            "{what} {url}: HTTP {} {}",
            head.status, head.reason
        )));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = request.next_chunk()? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > METADATA_LIMIT {
            return Err(Error::DownloadFailed(format!(
                "{what} {url} is larger than {METADATA_LIMIT} bytes"
            )));
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The status line and the headers a download needs.
struct Head {
    status: u16,
    reason: String,
    content_length: Option<u64>,
    content_range: Option<String>,
}

/// What the worker thread says.
enum Msg {
    Head(Head),
    Data(Vec<u8>),
    End,
    Failed(Error),
}

/// An HTTP GET running on a worker thread.
struct Request<'a> {
    head: Head,
    rx: Receiver<Msg>,
    url: String,
    cx: &'a PullContext<'a>,
    last_bytes: Instant,
}

impl<'a> Request<'a> {
    /// Sends the request (with `Range: bytes=<offset>-` when offset > 0) and waits for the
    /// status line, watching cancel and the stall window.
    fn start(url: &str, offset: u64, cx: &'a PullContext<'a>) -> Result<Request<'a>> {
        let (tx, rx) = mpsc::sync_channel(IN_FLIGHT);
        let worker_url = url.to_owned();
        // The socket timeout only bounds the worker's life: the caller gives up at `stall`.
        let socket_timeout = cx.stall + Duration::from_secs(5);
        let (agent, route) = cx.proxy.agent_for(url)?;
        std::thread::Builder::new()
            .name("stoat-pull".into())
            .spawn(move || run_request(&worker_url, agent, route, offset, socket_timeout, &tx))
            .context(|| "start the download thread".into())?;
        let mut request = Request {
            head: Head {
                status: 0,
                reason: String::new(),
                content_length: None,
                content_range: None,
            },
            rx,
            url: url.to_owned(),
            cx,
            last_bytes: Instant::now(),
        };
        match request.next_msg()? {
            Msg::Head(head) => request.head = head,
            Msg::Failed(err) => return Err(err),
            Msg::Data(_) | Msg::End => {
                return Err(Error::Internal(
                    "download thread answered out of order".into(),
                ))
            }
        }
        Ok(request)
    }

    /// Returns the next chunk of the body; `None` at its end.
    fn next_chunk(&mut self) -> Result<Option<Vec<u8>>> {
        match self.next_msg()? {
            Msg::Data(chunk) => Ok(Some(chunk)),
            Msg::End => Ok(None),
            Msg::Failed(err) => Err(err),
            Msg::Head(_) => Err(Error::Internal("download thread sent a second head".into())),
        }
    }

    fn next_msg(&mut self) -> Result<Msg> {
        loop {
            self.cx.cancel.check()?;
            match self.rx.recv_timeout(POLL) {
                Ok(msg) => {
                    self.last_bytes = Instant::now();
                    return Ok(msg);
                }
                Err(RecvTimeoutError::Timeout) => {
                    if self.last_bytes.elapsed() >= self.cx.stall {
                        return Err(Error::DownloadStalled(format!(
                            "no data for {:.1}s from {}",
                            self.cx.stall.as_secs_f64(),
                            self.url
                        )));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::DownloadFailed(format!(
                        "the download of {} ended without a word",
                        self.url
                    )))
                }
            }
        }
    }
}

/// The worker: performs the GET and sends the head, then the body in chunks. Stops as soon
/// as the caller hangs up.
fn run_request(
    url: &str,
    agent: ureq::AgentBuilder,
    route: Option<Route>,
    offset: u64,
    socket_timeout: Duration,
    tx: &SyncSender<Msg>,
) {
    let agent = agent
        .timeout_connect(CONNECT_TIMEOUT)
        .timeout_read(socket_timeout)
        .build();
    let mut call = agent.get(url);
    if let Some(route) = &route {
        call = route.prepare(call, url);
    }
    if offset > 0 {
        call = call.set("Range", &format!("bytes={offset}-"));
    }
    let response = match call.call() {
        Ok(response) | Err(ureq::Error::Status(_, response)) => response,
        Err(ureq::Error::Transport(transport)) => {
            let _ = tx.send(Msg::Failed(Error::DownloadFailed(format!(
                "cannot fetch {url}{}: {}",
                route.as_ref().map(Route::describe).unwrap_or_default(),
                describe_transport(&transport)
            ))));
            return;
        }
    };
    let head = Head {
        status: response.status(),
        reason: response.status_text().to_owned(),
        content_length: response
            .header("Content-Length")
            .and_then(|v| v.trim().parse().ok()),
        content_range: response.header("Content-Range").map(str::to_owned),
    };
    let success = matches!(head.status, 200 | 206);
    if tx.send(Msg::Head(head)).is_err() || !success {
        return;
    }
    let mut body = response.into_reader();
    loop {
        let mut chunk = vec![0u8; CHUNK];
        let msg = match body.read(&mut chunk) {
            Ok(0) => Msg::End,
            Ok(n) => {
                chunk.truncate(n);
                Msg::Data(chunk)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => Msg::Failed(Error::DownloadFailed(format!(
                "body cut short: reading {url}: {e}"
            ))),
        };
        let last = !matches!(msg, Msg::Data(_));
        if tx.send(msg).is_err() || last {
            return;
        }
    }
}

/// Says plainly why a request never got a status line (refused, DNS, TLS...).
fn describe_transport(transport: &ureq::Transport) -> String {
    let text = transport.to_string();
    if text.contains("Connection refused") {
        "connection refused".into()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = "---\n-\n  title: \"Mini root filesystem\"\n  flavor: alpine-minirootfs\n  file: alpine-minirootfs-3.24.1-x86_64.tar.gz\n  sha256: aa\n-\n  title: \"Virtual\"\n  flavor: alpine-virt\n  file: alpine-virt-3.24.1-x86_64.iso\n  sha256: 0123\n";

    #[test]
    fn release_index_finds_the_iso_of_a_flavor() {
        let (file, sha) = release_index_lookup(INDEX, "alpine-virt").unwrap();
        assert_eq!(file, "alpine-virt-3.24.1-x86_64.iso");
        assert_eq!(sha.as_deref(), Some("0123"));
        assert!(release_index_lookup(INDEX, "alpine-minirootfs").is_none());
        assert!(release_index_lookup(INDEX, "alpine-standard").is_none());
    }

    #[test]
    fn stall_window_parses_decimals() {
        let env = Env::from_pairs([("STOAT_PULL_STALL_SECS", "1.5")]);
        assert_eq!(stall_window(&env).unwrap(), Duration::from_millis(1500));
        assert_eq!(stall_window(&Env::default()).unwrap(), DEFAULT_STALL);
        let bad = Env::from_pairs([("STOAT_PULL_STALL_SECS", "-3")]);
        assert!(stall_window(&bad).is_err());
    }

    #[derive(Default)]
    struct Recorder(std::sync::Mutex<Vec<u32>>);
    impl EventSink for Recorder {
        fn progress(&self, data: &ProgressData) {
            self.0.lock().unwrap().push(data.percent);
        }
        fn stage(&self, _: &stoat_wire::dto::StageData) {}
        fn log(&self, _: &stoat_wire::dto::LogData) {}
    }

    #[test]
    fn progress_fires_only_on_percent_change() {
        let sink = Recorder::default();
        let mut progress = Progress::new("x", Some(1000), &sink);
        for done in [0, 1, 5, 9, 10, 11, 500, 999, 1000] {
            progress.update(done);
        }
        assert_eq!(*sink.0.lock().unwrap(), [0, 1, 50, 99, 100]);
        let silent = Recorder::default();
        let mut progress = Progress::new("x", None, &silent);
        progress.update(10);
        assert!(silent.0.lock().unwrap().is_empty());
    }
}
