//! Inspecting a bring-your-own image before a VM uses it: `qemu-img info --backing-chain`
//! says what the file really is, whatever its name. An image stoat did not download is
//! untrusted: a qcow2 can name any host file as its backing file, and QEMU would hand that
//! file to the guest.
//!
//! Rules: a disk image (the cloudinit backend's base) must be qcow2, and every file in its
//! backing chain must be a qcow2 in the image's own directory; any other file a layer names
//! (an external `data_file`, an extent, a child node) must sit there too; an installer or
//! live image (attached as a CD) must be raw, so it can name no other file at all, and a path
//! typed by the user must also carry the ISO 9660 signature.

use std::path::Path;

use serde::Deserialize;

use crate::hint::{Said, Setting, Value};
use crate::{Env, Error, Result};

/// The most `qemu-img info` output stoat reads (a chain of a few images is a few KiB).
const MAX_INFO: usize = 1 << 20;

/// What a VM does with the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// The base disk of a cloudinit VM's overlay.
    Disk,
    /// An installer or live ISO attached as a CD.
    Cdrom,
}

#[derive(Debug, Deserialize)]
struct Layer {
    format: String,
    #[serde(rename = "full-backing-filename")]
    full_backing_filename: Option<String>,
    #[serde(rename = "backing-filename")]
    backing_filename: Option<String>,
}

/// Where the ISO 9660 primary volume descriptor's standard identifier sits.
const ISO9660_OFFSET: u64 = 32769;
const ISO9660_MAGIC: &[u8] = b"CD001";

/// Refuses a file that is not an ISO 9660 image (`CD001` at byte 32769): an installer or live
/// image is one, and anything else (a key, a database, `/etc/shadow`) must not become a CD.
/// Most often the file was never meant as an image at all, so the message says what `--image`
/// takes.
pub fn require_iso9660(image: &Path) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut magic = [0u8; 5];
    let read = std::fs::File::open(image).and_then(|mut file| {
        file.seek(SeekFrom::Start(ISO9660_OFFSET))?;
        file.read_exact(&mut magic)
    });
    if read.is_ok() && magic == ISO9660_MAGIC {
        return Ok(());
    }
    Err(Error::spelled(
        Error::InvalidSpec,
        Said::text(format!(
            "image {} is not an ISO 9660 image (no CD001 at byte {ISO9660_OFFSET}); ",
            image.display()
        ))
        .setting(Setting::Image)
        .then(" takes a catalog id (see `stoat images`), a qcow2 disk image (named .qcow2 or .img, or with ")
        .set(Setting::Backend, Value::Text("cloudinit".into()))
        .then("), or an installer or live ISO"),
    ))
}

/// The keys under which `qemu-img info` names a file: the layer itself, its backing file, an
/// external data file, a vmdk extent, a child node.
const FILE_KEYS: &[&str] = &[
    "filename",
    "backing-filename",
    "full-backing-filename",
    "data-file",
];

/// Every file name a layer's report mentions, at any depth.
fn named_files(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, item) in map {
                match item {
                    serde_json::Value::String(name) if FILE_KEYS.contains(&key.as_str()) => {
                        out.push(name.clone())
                    }
                    other => named_files(other, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| named_files(item, out)),
        _ => {}
    }
}

/// What an accepted image turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    /// It names no other file (no backing chain): a copy of it alone is the whole image.
    pub self_contained: bool,
}

/// Refuses an image whose real format, backing chain or any other file it names is unsafe
/// for `usage`.
pub fn check(env: &Env, image: &Path, usage: Use) -> Result<Accepted> {
    let shown = image.display();
    let reports = info_chain(env, image)?;
    let chain: Vec<Layer> = reports
        .iter()
        .map(|v| {
            serde_json::from_value(v.clone())
                .map_err(|e| Error::Internal(format!("qemu-img info output: {e}")))
        })
        .collect::<Result<_>>()?;
    let Some(top) = chain.first() else {
        return Err(Error::InvalidSpec(format!(
            "image {shown}: qemu-img reported nothing"
        )));
    };
    match usage {
        Use::Cdrom if top.format != "raw" => {
            return Err(Error::InvalidSpec(format!(
                "image {shown} is a {} image, not an ISO; a live or installer image must be raw",
                top.format
            )))
        }
        Use::Disk if top.format != "qcow2" => {
            return Err(Error::InvalidSpec(format!(
                "image {shown} is {}, not qcow2; a cloud image must be qcow2 (qemu-img convert -O qcow2 makes one)",
                top.format
            )))
        }
        _ => {}
    }
    let own_dir = image
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let in_own_dir = |name: &str| {
        let dir = Path::new(name)
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        own_dir.is_some() && dir == own_dir
    };
    for (layer, next) in chain
        .iter()
        .zip(chain.iter().skip(1).map(Some).chain([None]))
    {
        let Some(backing) = layer
            .full_backing_filename
            .as_ref()
            .or(layer.backing_filename.as_ref())
        else {
            continue;
        };
        if !in_own_dir(backing) {
            return Err(Error::InvalidSpec(format!(
                "image {shown} has a backing file outside its own directory; refusing it (qemu-img convert -O qcow2 flattens it)"
            )));
        }
        if next.is_none_or(|n| n.format != "qcow2") {
            return Err(Error::InvalidSpec(format!(
                "image {shown} has a backing file that is not qcow2; refusing it"
            )));
        }
    }
    // The top layer's own name aside (a file in isos/ may be a copy in the image store), any
    // file a layer names must sit beside the image: an external data file is the guest's disk.
    let mut named = Vec::new();
    for (index, report) in reports.iter().enumerate() {
        let mut files = Vec::new();
        named_files(report, &mut files);
        if index == 0 {
            let own = report.get("filename").and_then(|f| f.as_str());
            files.retain(|f| Some(f.as_str()) != own);
        }
        named.extend(files);
    }
    if let Some(outside) = named.iter().find(|name| !in_own_dir(name)) {
        let what = if reports.iter().any(|r| {
            r.pointer("/format-specific/data/data-file")
                .and_then(|v| v.as_str())
                == Some(outside)
        }) {
            "an external data file"
        } else {
            "a file"
        };
        return Err(Error::InvalidSpec(format!(
            "image {shown} names {what} outside its own directory; refusing it (qemu-img convert -O qcow2 makes a self-contained copy)"
        )));
    }
    Ok(Accepted {
        self_contained: chain.len() == 1 && named.is_empty(),
    })
}

/// `qemu-img info --backing-chain --output=json -U`, parsed.
/// The size the guest sees of `image` (`qemu-img info`'s virtual size); `None` when qemu-img
/// cannot say (then the caller has nothing to compare).
pub fn virtual_size(env: &Env, image: &Path) -> Option<u64> {
    let top = info_chain(env, image).ok()?.into_iter().next()?;
    top.get("virtual-size")?.as_u64()
}

fn info_chain(env: &Env, image: &Path) -> Result<Vec<serde_json::Value>> {
    let mut command = super::qemu_img::command(env)?;
    command
        .args(["info", "--backing-chain", "--output=json", "-U"])
        .arg(image);
    let output = crate::child::output(&mut command, crate::child::Group::Own)
        .map_err(|e| e.into_error("run qemu-img info"))?;
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stderr);
        let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
        return Err(Error::InvalidSpec(format!(
            "image {} cannot be inspected: {why}",
            image.display()
        )));
    }
    if output.stdout.len() > MAX_INFO {
        return Err(Error::InvalidSpec(format!(
            "image {}: qemu-img info said too much",
            image.display()
        )));
    }
    // One image prints an object; a chain prints an array.
    let value: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| Error::Internal(format!("qemu-img info output: {e}")))?;
    Ok(match value {
        serde_json::Value::Array(items) => items,
        other => vec![other],
    })
}
