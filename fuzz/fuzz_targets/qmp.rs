//! QMP message decoding as stoat does it: `qemu::Qmp::connect` (greeting, capabilities) then
//! `query_status` and an `execute`, against a Unix-socket server that answers with the fuzz
//! input and closes. No pure decode function exists, so this reaches qapi's JSON-line handling
//! through stoat's own guards (EOF before the greeting, deadlines). Never panics.
#![no_main]

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use stoat_core::fuzzing::Qmp;

struct Server {
    socket: PathBuf,
    inputs: Mutex<Sender<Vec<u8>>>,
    _dir: tempfile::TempDir,
}

/// One server thread for the whole process: for each connection, writes the next input,
/// closes its write side and drains what the client sends.
fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("qmp.sock");
        let listener = UnixListener::bind(&socket).expect("bind");
        let (sender, receiver) = mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || {
            for input in receiver {
                let Ok((mut stream, _)) = listener.accept() else {
                    continue;
                };
                let _ = stream.write_all(&input);
                let _ = stream.shutdown(std::net::Shutdown::Write);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut sink = Vec::new();
                let _ = stream.read_to_end(&mut sink);
            }
        });
        Server {
            socket,
            inputs: Mutex::new(sender),
            _dir: dir,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let server = server();
    if server
        .inputs
        .lock()
        .expect("lock")
        .send(data.to_vec())
        .is_err()
    {
        return;
    }
    if let Ok(mut qmp) = Qmp::connect(&server.socket, Duration::from_millis(500)) {
        let _ = qmp.qemu_version();
        let _ = qmp.query_status();
        let _ = qmp.execute("query-version", serde_json::json!({}));
    }
});
