//! Inspecting a bring-your-own image before a VM uses it: `qemu-img info --backing-chain`
//! says what the file really is, whatever its name. An image stoat did not download is
//! untrusted: a qcow2 can name any host file as its backing file, and QEMU would hand that
//! file to the guest.
//!
//! Rules: a disk image (the cloudinit backend's base) must be qcow2, and every file in its
//! backing chain must be a qcow2 in the image's own directory; an installer or live image
//! (attached as a CD) must be raw, so it can name no other file at all.

use std::path::Path;
use std::process::{Command, Stdio};

use serde::Deserialize;

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

/// Refuses an image whose real format or backing chain is unsafe for `usage`.
pub fn check(env: &Env, image: &Path, usage: Use) -> Result<()> {
    let shown = image.display();
    let chain = info_chain(env, image)?;
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
        let backing_dir = Path::new(backing)
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        if own_dir.is_none() || backing_dir != own_dir {
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
    Ok(())
}

/// `qemu-img info --backing-chain --output=json -U`, parsed.
fn info_chain(env: &Env, image: &Path) -> Result<Vec<Layer>> {
    let tool = env.which("qemu-img").ok_or_else(|| Error::Tool {
        tool: "qemu-img".into(),
        message: "not found on PATH; install qemu-utils (or qemu-img)".into(),
    })?;
    let mut command = Command::new(tool);
    command
        .args(["info", "--backing-chain", "--output=json", "-U"])
        .arg(image)
        .env("PATH", env.path_var())
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
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
    let layers = match value {
        serde_json::Value::Array(items) => items,
        other => vec![other],
    };
    layers
        .into_iter()
        .map(|v| {
            serde_json::from_value(v)
                .map_err(|e| Error::Internal(format!("qemu-img info output: {e}")))
        })
        .collect()
}
