//! A small, misbehaving-on-request HTTP/1.1 server on 127.0.0.1 (the image mirror and the
//! upstream behind a proxy, in the tests): one request per connection, files by path, each with
//! a [`Behaviour`]. Stops, and its handlers with it, when dropped.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a route answers.
#[derive(Clone)]
pub enum Behaviour {
    /// Content-Length and Range support.
    Normal,
    /// Content-Length, but Range ignored (always 200).
    NoRanges,
    /// No Content-Length: the body ends when the connection closes.
    NoLength,
    /// Content-Length of the whole, but the connection closes after this many bytes.
    CutAt(usize),
    /// Sends this many bytes, then nothing until the server stops.
    StallAt(usize),
    /// Sends `chunk` bytes every `delay`.
    Slow { chunk: usize, delay: Duration },
    /// Answers with this status and an empty body.
    Status(u16),
    /// Closes the connection without answering.
    DropConnection,
}

type Routes = HashMap<String, (Arc<Vec<u8>>, Behaviour)>;

#[derive(Default)]
struct Shared {
    routes: Mutex<Routes>,
    /// (path, Range header) of each request.
    log: Mutex<Vec<(String, Option<String>)>>,
    stop: AtomicBool,
}

/// The running server; [`Server::route`] adds files.
pub struct Server {
    port: u16,
    shared: Arc<Shared>,
    acceptor: crate::LoopbackAcceptor,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let acceptor = crate::LoopbackAcceptor::spawn(
            listener,
            shared.clone(),
            |shared| shared.stop.load(Ordering::SeqCst),
            |stream, shared| {
                let _ = handle(stream, shared);
            },
        );
        Server {
            port,
            shared,
            acceptor,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn route(&self, path: &str, body: Vec<u8>, behaviour: Behaviour) {
        self.shared
            .routes
            .lock()
            .unwrap()
            .insert(path.to_owned(), (Arc::new(body), behaviour));
    }

    pub fn clear_log(&self) {
        self.shared.log.lock().unwrap().clear();
    }

    pub fn requested_paths(&self) -> Vec<String> {
        let log = self.shared.log.lock().unwrap();
        log.iter().map(|(path, _)| path.clone()).collect()
    }

    /// The Range headers of requests for image files (not checksum files).
    pub fn ranges(&self) -> Vec<Option<String>> {
        let log = self.shared.log.lock().unwrap();
        log.iter()
            .filter(|(path, _)| path.ends_with(".qcow2"))
            .map(|(_, range)| range.clone())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.acceptor.join();
    }
}

fn handle(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_owned();
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("range") {
                range = Some(value.trim().to_owned());
            }
        }
    }
    shared
        .log
        .lock()
        .unwrap()
        .push((path.clone(), range.clone()));
    let route = shared.routes.lock().unwrap().get(&path).cloned();
    let mut out = stream;
    let Some((body, behaviour)) = route else {
        return write_head(&mut out, "404 Not Found", &[("Content-Length", "0".into())]);
    };
    let len = body.len();
    match behaviour {
        Behaviour::Status(code) => write_head(
            &mut out,
            &format!("{code} Oops"),
            &[("Content-Length", "0".into())],
        ),
        Behaviour::DropConnection => Ok(()),
        Behaviour::NoLength => {
            write_head(&mut out, "200 OK", &[])?;
            out.write_all(&body)
        }
        Behaviour::CutAt(n) => {
            write_head(&mut out, "200 OK", &[("Content-Length", len.to_string())])?;
            out.write_all(&body[..n])
        }
        Behaviour::StallAt(n) => {
            write_head(&mut out, "200 OK", &[("Content-Length", len.to_string())])?;
            out.write_all(&body[..n])?;
            out.flush()?;
            while !shared.stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(())
        }
        Behaviour::Slow { chunk, delay } => {
            write_head(&mut out, "200 OK", &[("Content-Length", len.to_string())])?;
            for piece in body.chunks(chunk) {
                if shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                out.write_all(piece)?;
                out.flush()?;
                std::thread::sleep(delay);
            }
            Ok(())
        }
        Behaviour::NoRanges => {
            write_head(&mut out, "200 OK", &[("Content-Length", len.to_string())])?;
            out.write_all(&body)
        }
        Behaviour::Normal => match range.as_deref().and_then(range_start) {
            Some(start) if start >= len => write_head(
                &mut out,
                "416 Range Not Satisfiable",
                &[
                    ("Content-Length", "0".into()),
                    ("Content-Range", format!("bytes */{len}")),
                ],
            ),
            Some(start) => {
                write_head(
                    &mut out,
                    "206 Partial Content",
                    &[
                        ("Content-Length", (len - start).to_string()),
                        ("Content-Range", format!("bytes {start}-{}/{len}", len - 1)),
                    ],
                )?;
                out.write_all(&body[start..])
            }
            None => {
                write_head(&mut out, "200 OK", &[("Content-Length", len.to_string())])?;
                out.write_all(&body)
            }
        },
    }
}

fn range_start(header: &str) -> Option<usize> {
    header
        .strip_prefix("bytes=")?
        .strip_suffix('-')?
        .parse()
        .ok()
}

fn write_head(
    out: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())
}
