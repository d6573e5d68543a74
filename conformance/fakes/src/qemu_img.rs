//! Owns the fake `qemu-img`: `create`, `resize`, `info`, and `snapshot -l/-c/-a/-d`, with
//! the disk's size and snapshots kept in sidecar files (`<disk>.fake-size`,
//! `<disk>.fake-snapshots`). A scripted rule matching the argv overrides the default.

use super::script::{FakeCall, FakeScript};
use super::{emit, log, ssh};

const DEFAULT_SIZE: u64 = 8 << 30;

pub fn run(args: &[String]) -> i32 {
    let script = FakeScript::load();
    log::append(&FakeCall {
        tool: "qemu-img".into(),
        argv: args.to_vec(),
        ..Default::default()
    });
    if let Some(rule) = script.find("qemu-img", args) {
        return ssh::answer(rule);
    }
    let operands: Vec<&String> = operands(args);
    match args.first().map(String::as_str) {
        Some("create") => create(&operands),
        Some("resize") => resize(&operands),
        Some("info") => info(
            &operands,
            args.iter().any(|a| a == "--output=json"),
            args.iter().any(|a| a == "--backing-chain"),
        ),
        Some("snapshot") => snapshot(args, &operands),
        other => {
            emit(
                &[],
                format!("qemu-img: unsupported command {other:?}\n").as_bytes(),
            );
            1
        }
    }
}

/// Positional arguments after the subcommand, skipping `-f fmt`, `-b base`, `-F fmt`, `-o opts`.
fn operands(args: &[String]) -> Vec<&String> {
    let mut out = Vec::new();
    let mut index = 1;
    while index < args.len() {
        let arg = &args[index];
        match arg.as_str() {
            "-f" | "-b" | "-F" | "-o" | "-c" | "-a" | "-d" => index += 2,
            flag if flag.starts_with('-') => index += 1,
            _ => {
                out.push(arg);
                index += 1;
            }
        }
    }
    out
}

fn parse_size(text: &str) -> Option<u64> {
    let upper = text.trim().to_ascii_uppercase();
    let (number, multiplier) = match upper.chars().last()? {
        'K' => (&upper[..upper.len() - 1], 1u64 << 10),
        'M' => (&upper[..upper.len() - 1], 1 << 20),
        'G' => (&upper[..upper.len() - 1], 1 << 30),
        'T' => (&upper[..upper.len() - 1], 1 << 40),
        _ => (upper.as_str(), 1),
    };
    let value: f64 = number.trim_start_matches('+').parse().ok()?;
    Some((value * multiplier as f64) as u64)
}

fn size_of(disk: &str) -> u64 {
    std::fs::read_to_string(format!("{disk}.fake-size"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(DEFAULT_SIZE)
}

fn create(operands: &[&String]) -> i32 {
    let Some(disk) = operands.first() else {
        emit(&[], b"qemu-img: Expecting image file name\n");
        return 1;
    };
    let size = operands
        .get(1)
        .and_then(|s| parse_size(s))
        .unwrap_or(DEFAULT_SIZE);
    if std::fs::write(disk, b"QFI\xfb fake qcow2 written by stoat-fake\n").is_err() {
        emit(
            &[],
            format!("qemu-img: {disk}: Could not create image\n").as_bytes(),
        );
        return 1;
    }
    let _ = std::fs::write(format!("{disk}.fake-size"), size.to_string());
    emit(
        format!("Formatting '{disk}', fmt=qcow2 size={size}\n").as_bytes(),
        &[],
    );
    0
}

fn resize(operands: &[&String]) -> i32 {
    let (Some(disk), Some(size_text)) = (operands.first(), operands.get(1)) else {
        emit(&[], b"qemu-img: Expecting image file name and size\n");
        return 1;
    };
    let current = size_of(disk);
    let new_size = if let Some(delta) = size_text.strip_prefix('+') {
        parse_size(delta).map(|d| current + d)
    } else {
        parse_size(size_text)
    };
    match new_size {
        Some(size) if size >= current => {
            let _ = std::fs::write(format!("{disk}.fake-size"), size.to_string());
            emit(b"Image resized.\n", &[]);
            0
        }
        Some(_) => {
            emit(
                &[],
                b"qemu-img: Use the --shrink option to perform a shrink operation.\n",
            );
            1
        }
        None => {
            emit(
                &[],
                format!("qemu-img: Invalid image size specified: {size_text}\n").as_bytes(),
            );
            1
        }
    }
}

fn info(operands: &[&String], json: bool, backing_chain: bool) -> i32 {
    let Some(disk) = operands.first() else {
        return 1;
    };
    if !std::path::Path::new(disk.as_str()).exists() {
        emit(&[], format!("qemu-img: Could not open '{disk}': Could not open '{disk}': No such file or directory\n").as_bytes());
        return 1;
    }
    // Like qemu-img: the format is what the bytes are (qcow2 magic, else raw).
    let qcow2 = std::fs::read(disk.as_str()).is_ok_and(|b| b.starts_with(b"QFI\xfb"));
    let (format, size) = if qcow2 {
        ("qcow2", size_of(disk))
    } else {
        let bytes = std::fs::metadata(disk.as_str()).map_or(0, |m| m.len());
        ("raw", bytes)
    };
    if json {
        let value = serde_json::json!({"virtual-size": size, "filename": disk, "format": format, "actual-size": 200704, "dirty-flag": false});
        // --backing-chain answers a list, one entry per image of the chain (here: one).
        let value = if backing_chain {
            serde_json::json!([value])
        } else {
            value
        };
        emit(format!("{value:#}\n").as_bytes(), &[]);
    } else {
        emit(
            format!(
                "image: {disk}\nfile format: {format}\nvirtual size: {} GiB ({size} bytes)\n",
                size >> 30
            )
            .as_bytes(),
            &[],
        );
    }
    0
}

fn snapshots_path(disk: &str) -> String {
    format!("{disk}.fake-snapshots")
}

pub(crate) fn load_snapshots(disk: &str) -> Vec<String> {
    std::fs::read_to_string(snapshots_path(disk))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The table `qemu-img snapshot -l` prints, one row per tag.
pub fn snapshot_table(tags: &[String]) -> String {
    let mut out = String::from("Snapshot list:\nID        TAG               VM_SIZE                DATE     VM_CLOCK     ICOUNT\n");
    for (index, tag) in tags.iter().enumerate() {
        out.push_str(&format!(
            "{:<9} {:<17}     0 B 2026-08-04 00:21:33  0000:00:00.000          0\n",
            index + 1,
            tag
        ));
    }
    out
}

fn snapshot(args: &[String], operands: &[&String]) -> i32 {
    let Some(disk) = operands.last() else {
        emit(&[], b"qemu-img: Expecting image file name\n");
        return 1;
    };
    if !std::path::Path::new(disk.as_str()).exists() {
        emit(
            &[],
            format!("qemu-img: Could not open '{disk}': No such file or directory\n").as_bytes(),
        );
        return 1;
    }
    let mut tags = load_snapshots(disk);
    let value = |flag: &str| super::keygen::value_after(args, flag).map(str::to_string);
    if args.iter().any(|a| a == "-l") {
        if !tags.is_empty() {
            emit(snapshot_table(&tags).as_bytes(), &[]);
        }
        return 0;
    }
    if let Some(tag) = value("-c") {
        tags.push(tag);
    } else if let Some(tag) = value("-a") {
        if !tags.contains(&tag) {
            emit(&[], format!("qemu-img: Could not apply snapshot '{tag}': Failed to load snapshot: No such file or directory\n").as_bytes());
            return 1;
        }
    } else if let Some(tag) = value("-d") {
        // Like qemu-img: `-d` removes ONE snapshot, the first (oldest) of that name.
        let first = tags.iter().position(|t| *t == tag);
        if let Some(at) = first {
            tags.remove(at);
        } else {
            emit(
                &[],
                format!("qemu-img: Could not delete snapshot '{tag}': snapshot not found\n")
                    .as_bytes(),
            );
            return 1;
        }
    } else {
        emit(&[], b"qemu-img: snapshot needs one of -l -c -a -d\n");
        return 1;
    }
    store_snapshots(disk, &tags);
    0
}

pub(crate) fn store_snapshots(disk: &str, tags: &[String]) {
    let _ = std::fs::write(snapshots_path(disk), tags.join("\n"));
}
