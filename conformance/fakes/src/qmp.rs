//! Owns the fake qemu's monitors: enough QMP (greeting, `qmp_capabilities`, `query-status`,
//! `system_powerdown`, `quit`, `screendump`, `human-monitor-command`) and enough HMP
//! (`system_powerdown`, `quit`, `savevm`, `loadvm`, `delvm`, `info snapshots`, `info status`)
//! for stoat's lifecycle, snapshot and screenshot paths.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use super::log;
use super::script::{FakeCall, QemuScript};

/// State shared by every monitor connection of one fake VM.
pub struct Control {
    pub script: QemuScript,
    pub snapshots: Mutex<Vec<String>>,
    /// The qcow2 drive, whose snapshots these are: `savevm`/`delvm`/`info snapshots` read and
    /// write its sidecar as the fake `qemu-img` does, since qemu keeps them in the qcow2 (so
    /// a snapshot saved while running lists after the VM stops, and one saved stopped lists
    /// while it runs). `None`: no qcow2 drive, the snapshots live in memory.
    pub disk: Option<PathBuf>,
    /// Pidfile and sockets to remove on exit, as qemu does.
    pub cleanup: Vec<PathBuf>,
}

impl Control {
    /// Removes the pidfile and sockets and exits the daemon.
    pub fn exit_now(&self) -> ! {
        for path in &self.cleanup {
            let _ = std::fs::remove_file(path);
        }
        std::process::exit(0)
    }

    fn schedule_exit(&self) {
        if self.script.ignore_powerdown {
            return;
        }
        let delay = Duration::from_millis(self.script.powerdown_exit_ms.unwrap_or(50));
        let cleanup = self.cleanup.clone();
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            for path in &cleanup {
                let _ = std::fs::remove_file(path);
            }
            std::process::exit(0);
        });
    }

    /// Runs `act` on the snapshot tags (loaded from the disk's sidecar, written back after).
    fn with_snapshots<R>(&self, act: impl FnOnce(&mut Vec<String>) -> R) -> R {
        let mut held = self
            .snapshots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(disk) = &self.disk else {
            return act(&mut held);
        };
        let mut tags = crate::qemu_img::load_snapshots(&disk.to_string_lossy());
        let before = tags.clone();
        let out = act(&mut tags);
        if tags != before {
            crate::qemu_img::store_snapshots(&disk.to_string_lossy(), &tags);
        }
        out
    }

    /// Runs one HMP command line; returns its text output.
    pub fn hmp(&self, line: &str) -> String {
        log_command(line);
        let mut words = line.split_whitespace();
        let verb = words.next().unwrap_or("");
        let arg = words.next().unwrap_or("").to_string();
        match (verb, arg.as_str()) {
            ("system_powerdown", _) => {
                self.schedule_exit();
                String::new()
            }
            ("quit" | "q", _) => self.exit_now(),
            ("savevm", _) if self.script.savevm_error.is_some() => {
                format!(
                    "Error: {}\r\n",
                    self.script.savevm_error.as_deref().unwrap_or("")
                )
            }
            ("savevm", tag) => {
                self.with_snapshots(|snapshots| {
                    if !snapshots.iter().any(|t| t == tag) {
                        snapshots.push(tag.to_string());
                    }
                });
                String::new()
            }
            ("loadvm", tag) if self.with_snapshots(|s| s.iter().any(|t| t == tag)) => String::new(),
            ("loadvm", tag) => {
                format!("Error: Snapshot '{tag}' does not exist in one or more devices\r\n")
            }
            ("delvm", tag) => {
                let removed = self.with_snapshots(|snapshots| {
                    let before = snapshots.len();
                    snapshots.retain(|t| t != tag);
                    snapshots.len() != before
                });
                if !removed {
                    format!("Error: Snapshot '{tag}' does not exist in one or more devices\r\n")
                } else {
                    String::new()
                }
            }
            ("info", "snapshots") => {
                let snapshots = self.with_snapshots(|s| s.clone());
                if snapshots.is_empty() {
                    "There is no snapshot available.\r\n".to_string()
                } else {
                    let mut out = String::from("List of snapshots present on all disks:\r\nID        TAG               VM_SIZE                DATE     VM_CLOCK     ICOUNT\r\n");
                    for tag in snapshots.iter() {
                        out.push_str(&format!("--        {tag:<17} 203 MiB 2026-08-04 12:00:00  0000:00:10.000          0\r\n"));
                    }
                    out
                }
            }
            ("info", "status") => "VM status: running\r\n".to_string(),
            _ => format!("unknown command: '{verb}'\r\n"),
        }
    }
}

fn log_command(command: &str) {
    log::append(&FakeCall {
        tool: "qemu-monitor".into(),
        monitor_command: Some(command.to_string()),
        ..Default::default()
    });
}

/// Serves one QMP connection until it closes.
pub fn serve_qmp(stream: UnixStream, control: &Control) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let greeting = json!({"QMP": {"version": {"qemu": {"micro": 0, "minor": 0, "major": 10}, "package": "stoat-fake"}, "capabilities": ["oob"]}});
    if write_json(&mut writer, &greeting).is_err() {
        return;
    }
    let commands = serde_json::Deserializer::from_reader(stream).into_iter::<Value>();
    for command in commands {
        let Ok(command) = command else { return };
        let name = command
            .get("execute")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        log_command(&name);
        let mut reply = match name.as_str() {
            "qmp_capabilities" => json!({"return": {}}),
            "query-status" => {
                json!({"return": {"status": "running", "singlestep": false, "running": true}})
            }
            "system_powerdown" => {
                control.schedule_exit();
                let _ = write_json(&mut writer, &json!({"return": {}}));
                let _ = write_json(
                    &mut writer,
                    &json!({"event": "POWERDOWN", "timestamp": {"seconds": 0, "microseconds": 0}}),
                );
                continue;
            }
            "quit" => {
                let _ = write_json(&mut writer, &json!({"return": {}}));
                control.exit_now();
            }
            "screendump" => screendump(&command, control),
            "human-monitor-command" => {
                let line = command
                    .pointer("/arguments/command-line")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                json!({"return": control.hmp(line)})
            }
            other => {
                json!({"error": {"class": "CommandNotFound", "desc": format!("The command {other} has not been found")}})
            }
        };
        if let Some(id) = command.get("id") {
            reply["id"] = id.clone();
        }
        if write_json(&mut writer, &reply).is_err() {
            return;
        }
    }
}

/// Serves one human-monitor connection until it closes. Every command that arrived is run,
/// even when the client has closed (or shut down its read side) before reading a reply: a
/// client may write `sendkey ...` and hang up at once, as real qemu allows.
pub fn serve_monitor(stream: UnixStream, control: &Control) {
    let mut writer = stream.try_clone().ok();
    let mut say = |bytes: &[u8]| {
        if let Some(w) = writer.as_mut() {
            if w.write_all(bytes).is_err() {
                writer = None;
            }
        }
    };
    say(b"QEMU 10.0.0 monitor - type 'help' for more information\r\n(qemu) ");
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let output = control.hmp(line.trim());
        say(output.as_bytes());
        say(b"(qemu) ");
    }
}

fn write_json(writer: &mut UnixStream, value: &Value) -> std::io::Result<()> {
    writer.write_all(format!("{value}\r\n").as_bytes())
}

/// Width and height of every fake screendump.
pub const SCREEN: (u32, u32) = (64, 48);

fn screendump(command: &Value, control: &Control) -> Value {
    if let Some(description) = &control.script.screendump_error {
        return json!({"error": {"class": "GenericError", "desc": description}});
    }
    let Some(filename) = command
        .pointer("/arguments/filename")
        .and_then(Value::as_str)
    else {
        return json!({"error": {"class": "GenericError", "desc": "Parameter 'filename' is missing"}});
    };
    let png = command.pointer("/arguments/format").and_then(Value::as_str) == Some("png");
    let bytes = if png {
        png_image(SCREEN.0, SCREEN.1)
    } else {
        ppm_image(SCREEN.0, SCREEN.1)
    };
    match std::fs::write(filename, bytes) {
        Ok(()) => json!({"return": {}}),
        Err(error) => {
            json!({"error": {"class": "GenericError", "desc": format!("failed to write {filename}: {error}")}})
        }
    }
}

/// A binary PPM (qemu's default screendump format) of a grey screen.
pub fn ppm_image(width: u32, height: u32) -> Vec<u8> {
    let mut out = format!("P6\n{width} {height}\n255\n").into_bytes();
    out.extend(std::iter::repeat_n(0x80u8, (width * height * 3) as usize));
    out
}

/// A valid RGB PNG of a grey screen (zlib with stored blocks; no compressor needed).
pub fn png_image(width: u32, height: u32) -> Vec<u8> {
    let mut raw = Vec::new();
    for _ in 0..height {
        raw.push(0u8);
        raw.extend(std::iter::repeat_n(0x80u8, (width * 3) as usize));
    }
    let mut zlib = vec![0x78, 0x01];
    let chunks: Vec<&[u8]> = raw.chunks(65535).collect();
    for (index, chunk) in chunks.iter().enumerate() {
        zlib.push(u8::from(index + 1 == chunks.len()));
        let len = chunk.len() as u16;
        zlib.extend(len.to_le_bytes());
        zlib.extend((!len).to_le_bytes());
        zlib.extend(*chunk);
    }
    zlib.extend(adler32(&raw).to_be_bytes());
    let mut ihdr = Vec::new();
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    let mut out = vec![0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
    for (kind, body) in [(b"IHDR", ihdr), (b"IDAT", zlib), (b"IEND", Vec::new())] {
        out.extend((body.len() as u32).to_be_bytes());
        let mut crc_input = kind.to_vec();
        crc_input.extend(&body);
        out.extend(kind);
        out.extend(&body);
        out.extend(crc32(&crc_input).to_be_bytes());
    }
    out
}

fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for byte in bytes {
        a = (a + u32::from(*byte)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_known_value() {
        assert_eq!(crc32(b"IEND"), 0xae42_6082);
    }

    #[test]
    fn png_has_signature_and_size() {
        let png = png_image(4, 3);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[16..24], &[0, 0, 0, 4, 0, 0, 0, 3]);
    }
}
