//! The CLI adapters of `images` and `pull` (`stoat_core::app::images`): the images table, and
//! the pull summary; the download's progress is rendered by `progress` through the sink
//! (json-v3#streaming; docs/decisions/images.md).

use stoat_core::app::images::{self, Usage};
use stoat_core::Result;
use stoat_wire::dto::{Image, PullData};

use crate::ctx::Ctx;
use crate::human;
use crate::output::Reply;

/// `images`.
pub fn images(ctx: &Ctx) -> Result<Reply> {
    let data = images::images(ctx)?;
    let text = ctx.prose(|| Ok(images_human(&data.images, &images::usage(ctx)?)))?;
    Ok(Reply::new(&data, text))
}

fn images_human(images: &[Image], usage: &Usage) -> String {
    let rows: Vec<Vec<String>> = images
        .iter()
        .map(|image| {
            let size = if image.bytes_exact {
                human::bytes(image.bytes)
            } else {
                format!("~{}", human::bytes(image.bytes))
            };
            let state = match (image.byo, image.downloaded) {
                (true, _) => "byo",
                (false, true) => "downloaded",
                (false, false) => "not downloaded",
            };
            vec![
                if image.id.is_empty() {
                    "-".into()
                } else {
                    image.id.clone()
                },
                image.os.clone(),
                image.variant.clone(),
                image.backend.clone(),
                size,
                state.into(),
                image.file.clone(),
                used_by(usage.by_file.get(&image.file)),
            ]
        })
        .collect();
    let table = human::table(
        &[
            "ID", "OS", "VARIANT", "BACKEND", "SIZE", "STATE", "FILE", "USED BY",
        ],
        &rows,
    );
    // A catalog row without a file would otherwise end in padding.
    let mut text: String = table
        .lines()
        .map(|line| format!("{}\n", line.trim_end()))
        .collect();
    if !usage.kept.is_empty() {
        text.push_str("\nkept from earlier downloads (a pull replaced them in isos/):\n");
        for (file, bytes, users) in &usage.kept {
            text.push_str(&format!(
                "  {file}  {}  used by {}\n",
                human::bytes(*bytes),
                used_by(Some(users))
            ));
        }
    }
    if usage.freeable > 0 {
        text.push_str(&format!(
            "\n{} in images no VM uses: `stoat prune --images --apply` frees it\n",
            human::bytes(usage.freeable)
        ));
    }
    text
}

/// The VMs using a file, `-` for none; empty for a catalog image not on disk.
fn used_by(users: Option<&Vec<String>>) -> String {
    match users {
        None => String::new(),
        Some(users) if users.is_empty() => "-".into(),
        Some(users) => users.join(", "),
    }
}

/// `pull <id>`.
pub fn pull(ctx: &Ctx, id: &str) -> Result<Reply> {
    let data = images::pull(ctx, id)?;
    let text = pull_human(&data);
    Ok(Reply::new(&data, text))
}

fn pull_human(data: &PullData) -> String {
    let check = if data.verified {
        "verified"
    } else if data.checksum_available {
        "not verified"
    } else {
        "UNVERIFIED (no published checksum)"
    };
    if data.fetched {
        format!("{}: downloaded, {check}", data.id)
    } else {
        format!("{}: already downloaded, nothing fetched; {check}", data.id)
    }
}
