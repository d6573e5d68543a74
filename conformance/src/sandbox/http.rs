//! Owns [`HttpServer`]: a loopback HTTP/1.1 server the suite starts itself (a std
//! `TcpListener` thread) so `pull` can be judged with no network: fixed routes answering a
//! body or a status, every request target recorded, stopped when the guard drops. The same
//! server is a forward proxy for one made-up host (`HTTP_PROXY`): an absolute-form request
//! for that host is served from the routes; `CONNECT` is recorded and refused (the suite does
//! not intercept TLS). Also the image fixtures `pull` scenarios serve ([`ImageFiles`]) and
//! the catalog file naming them, rendered in the format the SUT profile declares.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::Digest as _;

use crate::error::HarnessError;

/// What one path answers.
#[derive(Clone, Debug)]
pub enum Route {
    /// 200 with these bytes.
    Body(Vec<u8>),
    /// This status with an empty body.
    Status(u16),
}

/// A running loopback server; stops accepting when dropped.
pub struct HttpServer {
    pub port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl HttpServer {
    /// Serves `routes` (path → answer); any other path answers 404.
    pub fn start(routes: BTreeMap<String, Route>) -> Result<Self, HarnessError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(HarnessError::Sandbox)?;
        let port = listener.local_addr().map_err(HarnessError::Sandbox)?.port();
        listener
            .set_nonblocking(true)
            .map_err(HarnessError::Sandbox)?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, flag) = (requests.clone(), stop.clone());
        let routes = Arc::new(routes);
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (routes, seen) = (routes.clone(), seen.clone());
                        std::thread::spawn(move || serve(stream, &routes, &seen));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(HttpServer {
            port,
            requests,
            stop,
        })
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every request path served so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(mut stream: TcpStream, routes: &BTreeMap<String, Route>, seen: &Mutex<Vec<String>>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some((method, target)) = read_request_target(&mut stream) else {
        return;
    };
    if let Ok(mut seen) = seen.lock() {
        seen.push(if method == "CONNECT" {
            format!("CONNECT {target}")
        } else {
            target.clone()
        });
    }
    // Proxied (absolute-form) requests are served only for the made-up proxy host.
    let path = match target.strip_prefix("http://") {
        Some(rest) => match rest.split_once('/') {
            Some((host, path)) if host == PROXY_HOST => Some(format!("/{path}")),
            _ => None,
        },
        None if method == "CONNECT" => None,
        None => Some(target),
    };
    let (status, body) = match path.as_ref().map(|p| routes.get(p)) {
        Some(Some(Route::Body(bytes))) => (200, bytes.as_slice()),
        Some(Some(Route::Status(code))) => (*code, &[][..]),
        Some(None) => (404, &[][..]),
        None => (502, &[][..]),
    };
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    // In slices, so a streaming client sees the bytes arrive over several reads.
    for chunk in body.chunks(32 * 1024) {
        if stream.write_all(chunk).is_err() {
            return;
        }
    }
    let _ = stream.flush();
}

/// The host name only the suite's proxy serves (`.invalid` never resolves).
pub const PROXY_HOST: &str = "images.stoat-conformance.invalid";

/// Reads the request head; returns the method and target of `<METHOD> <target> HTTP/1.x`
/// (query stripped).
fn read_request_target(stream: &mut TcpStream) -> Option<(String, String)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        let n = stream.read(&mut byte).ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&byte[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next()?.split_whitespace();
    let method = words.next()?.to_string();
    let target = words.next()?.to_string();
    Some((method, target.split('?').next().unwrap_or("").to_string()))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        _ => "Status",
    }
}

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The images a `pull` scenario serves, and the catalog naming them.
///
/// * `tiny` (`/tiny.img`, verified through `/SHA256SUMS`),
/// * `bad` (`/bad.img`, whose `SHA256SUMS` line is wrong: checksum_mismatch),
/// * `gone` (`/gone.img`, answering 404: download_failed).
pub struct ImageFiles {
    pub server: HttpServer,
    /// The bytes of `tiny.img` (and of `bad.img`).
    pub payload: Vec<u8>,
    /// The catalog file's text, in the reference's format.
    pub catalog: String,
    /// The base of every image URL: the server itself, or the proxy-only host.
    base: String,
    digest: String,
}

/// Size of the served image: big enough for many distinct percentages.
pub const IMAGE_BYTES: usize = 1024 * 1024 + 12_345;

impl ImageFiles {
    /// Starts the server with a payload derived from `seed`.
    pub fn start(seed: u64) -> Result<Self, HarnessError> {
        Self::start_with(seed, false)
    }

    /// The same images, at URLs on [`PROXY_HOST`]: reachable only through the server as
    /// `HTTP_PROXY`.
    pub fn start_behind_proxy(seed: u64) -> Result<Self, HarnessError> {
        Self::start_with(seed, true)
    }

    /// `http://127.0.0.1:<port>`, to give the SUT as its proxy.
    pub fn proxy_url(&self) -> String {
        self.server.url("")
    }

    /// The catalog file in the format `knob` declares.
    pub fn render(&self, knob: &crate::run::profile::CatalogKnob) -> String {
        let wrong = sha256_hex(b"not the served bytes");
        let urls: Vec<(String, String, String)> = ["tiny", "bad", "gone"]
            .iter()
            .map(|id| {
                (
                    id.to_string(),
                    format!("{}/{id}.img", self.base),
                    format!("{id}.img"),
                )
            })
            .collect();
        let checksum_url = format!("{}/SHA256SUMS", self.base);
        let images: Vec<crate::run::profile::CatalogImage<'_>> = urls
            .iter()
            .map(|(id, url, file)| crate::run::profile::CatalogImage {
                id,
                os: "debian",
                variant: "test",
                backend: "cloudinit",
                url,
                checksum_url: &checksum_url,
                sha256: if id == "bad" { &wrong } else { &self.digest },
                bytes: IMAGE_BYTES,
                file,
            })
            .collect();
        knob.render(&images)
    }

    fn start_with(seed: u64, behind_proxy: bool) -> Result<Self, HarnessError> {
        let payload = pseudo_random(seed, IMAGE_BYTES);
        let digest = sha256_hex(&payload);
        let wrong = sha256_hex(b"not the served bytes");
        let sums = format!("{digest}  tiny.img\n{wrong}  bad.img\n");
        let routes = BTreeMap::from([
            ("/tiny.img".to_string(), Route::Body(payload.clone())),
            ("/bad.img".to_string(), Route::Body(payload.clone())),
            ("/gone.img".to_string(), Route::Status(404)),
            ("/SHA256SUMS".to_string(), Route::Body(sums.into_bytes())),
        ]);
        let server = HttpServer::start(routes)?;
        let base = if behind_proxy {
            format!("http://{PROXY_HOST}")
        } else {
            server.url("")
        };
        let mut files = ImageFiles {
            server,
            payload,
            catalog: String::new(),
            base,
            digest,
        };
        files.catalog = files.render(&Default::default());
        Ok(files)
    }
}

fn pseudo_random(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.max(1) ^ 0x5354_4f41_545f_4346;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(port: u16, path: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("write");
        let mut out = Vec::new();
        stream.read_to_end(&mut out).expect("read");
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn serves_routes_and_404_and_records_paths() {
        let files = ImageFiles::start(7).expect("server");
        let sums = get(files.server.port, "/SHA256SUMS");
        assert!(sums.starts_with("HTTP/1.1 200"), "{sums}");
        assert!(sums.contains(&sha256_hex(&files.payload)));
        assert!(get(files.server.port, "/gone.img").starts_with("HTTP/1.1 404"));
        assert!(get(files.server.port, "/nope?x=1").starts_with("HTTP/1.1 404"));
        let body = get(files.server.port, "/tiny.img");
        assert!(body.contains(&format!("Content-Length: {IMAGE_BYTES}")));
        assert_eq!(
            files.server.requests(),
            vec!["/SHA256SUMS", "/gone.img", "/nope", "/tiny.img"]
        );
        let catalog: toml::Value = toml::from_str(&files.catalog).expect("toml");
        assert_eq!(catalog["image"].as_array().map(Vec::len), Some(3));
    }
}
