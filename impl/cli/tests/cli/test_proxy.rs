//! `pull` through an HTTP proxy, with the real binary: a forward proxy on 127.0.0.1 that these
//! tests start (see `proxy`) serves a made-up host that nothing else can reach, so a pull of
//! it succeeds only through `HTTP_PROXY`/`http_proxy`; `NO_PROXY` sends a host direct;
//! `https://` goes through `CONNECT` (the proxy records it, then refuses it: the tests have
//! no certificate stoat would trust); a proxy URL stoat cannot speak to is `invalid_spec`;
//! credentials reach the proxy and never a message.

use base64::Engine as _;

use crate::common::http::{Behaviour, Server};
use crate::common::TestEnv;
use crate::test_images::{payload, sha256_hex};
use proxy::Proxy;

/// The host only the test proxy knows (`.invalid` never resolves).
const HIDDEN: &str = "images.stoat-test.invalid";

/// An environment whose catalog has `tiny` at `{base}/tiny.qcow2` with a SHA256SUMS file.
fn env_for(base: &str) -> TestEnv {
    let mut env = TestEnv::new();
    let path = env.tmp().join("catalog.toml");
    let catalog = format!(
        "[[image]]\nid = \"tiny\"\nos = \"debian\"\nvariant = \"test\"\nbackend = \"cloudinit\"\nurl = \"{base}/tiny.qcow2\"\nchecksum_url = \"{base}/SHA256SUMS\"\nbytes = 1048576\n"
    );
    std::fs::write(&path, catalog).unwrap();
    env.set_env("STOAT_CATALOG", path.to_str().unwrap());
    env
}

/// An origin serving `tiny.qcow2` and its SHA256SUMS; returns the body too.
fn origin() -> (Server, Vec<u8>) {
    let body = payload(400_000);
    let server = Server::start();
    server.route("/tiny.qcow2", body.clone(), Behaviour::Normal);
    server.route(
        "/SHA256SUMS",
        format!("{}  tiny.qcow2\n", sha256_hex(&body)).into_bytes(),
        Behaviour::Normal,
    );
    (server, body)
}

fn pulled_bytes(env: &TestEnv) -> Option<Vec<u8>> {
    std::fs::read(env.root().join("isos/tiny.qcow2")).ok()
}

#[test]
fn a_host_only_the_proxy_reaches_is_pulled_through_http_proxy_in_either_spelling() {
    let (server, body) = origin();
    for var in ["HTTP_PROXY", "http_proxy"] {
        let proxy = Proxy::start(&[(HIDDEN, 80, server.port())]);
        let mut env = env_for(&format!("http://{HIDDEN}"));
        env.set_env(var, &proxy.url());
        let run = env.json(&["pull", "tiny"]);
        assert!(run.ok(), "{var}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(run.data()["verified"], true);
        assert!(
            pulled_bytes(&env) == Some(body.clone()),
            "{var}: bytes differ"
        );
        let targets = proxy.targets();
        assert_eq!(
            targets,
            [
                format!("GET http://{HIDDEN}/SHA256SUMS"),
                format!("GET http://{HIDDEN}/tiny.qcow2")
            ],
            "{var}"
        );
    }
}

#[test]
fn without_a_proxy_variable_the_hidden_host_fails_and_the_proxy_sees_nothing() {
    let (server, _) = origin();
    let proxy = Proxy::start(&[(HIDDEN, 80, server.port())]);
    let mut env = env_for(&format!("http://{HIDDEN}"));
    // The other scheme's variable does not apply to http:// URLs.
    env.set_env("HTTPS_PROXY", &proxy.url());
    let message = env.json(&["pull", "tiny"]).error("download_failed");
    assert!(message.contains(HIDDEN), "{message}");
    assert!(proxy.targets().is_empty(), "{:?}", proxy.targets());
    assert!(pulled_bytes(&env).is_none());
}

#[test]
fn no_proxy_sends_a_listed_host_direct_and_others_through_the_proxy() {
    let (server, body) = origin();
    let base = server.base();
    for (list, proxied) in [
        ("127.0.0.1", false),
        ("example.org, 127.0.0.0/8", false),
        ("*", false),
        ("example.org", true),
    ] {
        for var in ["NO_PROXY", "no_proxy"] {
            let proxy = Proxy::start(&[]);
            let mut env = env_for(&base);
            env.set_env("HTTP_PROXY", &proxy.url());
            env.set_env(var, list);
            let run = env.json(&["pull", "tiny"]);
            assert!(run.ok(), "{var}={list}: {}", run.stdout);
            assert!(pulled_bytes(&env) == Some(body.clone()));
            assert_eq!(
                !proxy.targets().is_empty(),
                proxied,
                "{var}={list}: {:?}",
                proxy.targets()
            );
        }
    }
}

#[test]
fn proxy_credentials_reach_the_proxy_and_stay_out_of_messages() {
    let (server, body) = origin();
    let proxy = Proxy::start(&[(HIDDEN, 80, server.port())]);
    let mut env = env_for(&format!("http://{HIDDEN}"));
    let secret = "s3cret-proxy-pw";
    env.set_env(
        "HTTP_PROXY",
        &format!("http://stoat:{secret}@127.0.0.1:{}", proxy.port()),
    );
    let run = env.json(&["pull", "tiny"]);
    assert!(run.ok(), "{}", run.stdout);
    assert!(pulled_bytes(&env) == Some(body));
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("stoat:{secret}"))
    );
    assert!(
        proxy
            .seen()
            .iter()
            .all(|s| s.authorization.as_deref() == Some(expected.as_str())),
        "{:?}",
        proxy.seen()
    );
    // A failure names the proxy by address and variable, never by its URL.
    server.route("/tiny.qcow2", Vec::new(), Behaviour::DropConnection);
    std::fs::remove_file(env.root().join("isos/tiny.qcow2")).unwrap();
    let run = env.json(&["pull", "tiny"]);
    assert!(!run.ok());
    assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));
}

#[test]
fn https_goes_through_connect_to_https_proxy_and_a_refusal_names_the_proxy() {
    let proxy = Proxy::start(&[]);
    let mut env = env_for(&format!("https://{HIDDEN}"));
    let secret = "tunnel-pw-42";
    env.set_env(
        "https_proxy",
        &format!("http://stoat:{secret}@127.0.0.1:{}/", proxy.port()),
    );
    let run = env.json(&["pull", "tiny"]);
    let message = run.error("download_failed");
    assert_eq!(proxy.targets(), [format!("CONNECT {HIDDEN}:443")]);
    assert!(
        proxy.seen()[0].authorization.is_some(),
        "{:?}",
        proxy.seen()
    );
    let named = format!(
        "through the proxy 127.0.0.1:{} from https_proxy",
        proxy.port()
    );
    assert!(message.contains(&named), "{message}");
    assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));
}

#[test]
fn a_proxy_that_is_down_is_download_failed_naming_it() {
    let proxy = Proxy::start(&[]);
    let port = proxy.port();
    drop(proxy);
    let mut env = env_for(&format!("http://{HIDDEN}"));
    env.set_env("HTTP_PROXY", &format!("127.0.0.1:{port}"));
    let message = env.json(&["pull", "tiny"]).error("download_failed");
    assert!(
        message.contains(&format!("proxy 127.0.0.1:{port} from HTTP_PROXY")),
        "{message}"
    );
}

#[test]
fn a_proxy_url_of_another_scheme_is_invalid_spec_and_pulls_nothing() {
    let mut env = env_for(&format!("https://{HIDDEN}"));
    env.set_env("HTTPS_PROXY", "socks5://me:hush-hush@127.0.0.1:1080");
    let run = env.json(&["pull", "tiny"]);
    let message = run.error("invalid_spec");
    assert!(message.contains("HTTPS_PROXY"), "{message}");
    assert!(!run.stdout.contains("hush-hush") && !run.stderr.contains("hush-hush"));
    assert!(!env.root().join("isos").exists() || pulled_bytes(&env).is_none());
}

/// A forward HTTP proxy on 127.0.0.1: absolute-form requests are forwarded to their host
/// (a mapped made-up host, or a loopback address), `CONNECT` is recorded and answered 403.
/// Every request line and its `Proxy-Authorization` are recorded.
mod proxy {
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    #[derive(Debug, Clone)]
    pub struct Seen {
        pub line: String,
        pub authorization: Option<String>,
    }

    #[derive(Default)]
    struct Shared {
        /// `host:port` → loopback port.
        hosts: HashMap<String, u16>,
        seen: Mutex<Vec<Seen>>,
        stop: AtomicBool,
    }

    pub struct Proxy {
        port: u16,
        shared: Arc<Shared>,
        acceptor: crate::common::LoopbackAcceptor,
    }

    impl Proxy {
        /// Starts the proxy; `hosts` maps (name, port) to the loopback port serving it.
        pub fn start(hosts: &[(&str, u16, u16)]) -> Proxy {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let shared = Arc::new(Shared {
                hosts: hosts
                    .iter()
                    .map(|(name, port, to)| (format!("{name}:{port}"), *to))
                    .collect(),
                ..Shared::default()
            });
            let acceptor = crate::common::LoopbackAcceptor::spawn(
                listener,
                shared.clone(),
                |shared| shared.stop.load(Ordering::SeqCst),
                |stream, shared| {
                    let _ = handle(&stream, shared);
                    let _ = stream.shutdown(Shutdown::Both);
                },
            );
            Proxy {
                port,
                shared,
                acceptor,
            }
        }

        pub fn port(&self) -> u16 {
            self.port
        }

        pub fn url(&self) -> String {
            format!("http://127.0.0.1:{}", self.port)
        }

        pub fn seen(&self) -> Vec<Seen> {
            self.shared.seen.lock().unwrap().clone()
        }

        /// "METHOD target" of every request, in order.
        pub fn targets(&self) -> Vec<String> {
            self.seen().into_iter().map(|s| s.line).collect()
        }
    }

    impl Drop for Proxy {
        fn drop(&mut self) {
            self.shared.stop.store(true, Ordering::SeqCst);
            self.acceptor.join();
        }
    }

    /// Where `host:port` is served: a mapped name, or a loopback address as it is.
    fn upstream(shared: &Shared, authority: &str) -> Option<u16> {
        if let Some(port) = shared.hosts.get(authority) {
            return Some(*port);
        }
        authority.strip_prefix("127.0.0.1:")?.parse().ok()
    }

    fn handle(stream: &TcpStream, shared: &Shared) -> std::io::Result<()> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut request_line = String::new();
        reader.read_line(&mut request_line)?;
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or("").to_owned();
        let target = parts.next().unwrap_or("").to_owned();
        let mut headers = Vec::new();
        let mut authorization = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                break;
            }
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            if name.eq_ignore_ascii_case("proxy-authorization") {
                authorization = Some(value.trim().to_owned());
            } else if !name.to_ascii_lowercase().starts_with("proxy-")
                && !name.eq_ignore_ascii_case("connection")
            {
                headers.push(line.trim_end().to_owned());
            }
        }
        shared.seen.lock().unwrap().push(Seen {
            line: format!("{method} {target}"),
            authorization,
        });
        let mut out = stream;
        if method == "CONNECT" {
            return out.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        }
        let Some(rest) = target.strip_prefix("http://") else {
            return out.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let authority = if authority.contains(':') {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        let Some(port) = upstream(shared, &authority) else {
            return out.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        };
        let mut origin = TcpStream::connect(("127.0.0.1", port))?;
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        for header in headers {
            head.push_str(&header);
            head.push_str("\r\n");
        }
        head.push_str("Connection: close\r\n\r\n");
        origin.write_all(head.as_bytes())?;
        let mut buf = [0u8; 32 * 1024];
        loop {
            let n = origin.read(&mut buf)?;
            if n == 0 {
                break;
            }
            out.write_all(&buf[..n])?;
        }
        origin.shutdown(Shutdown::Both)
    }
}
