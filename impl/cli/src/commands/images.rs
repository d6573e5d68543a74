//! The CLI adapters of `images` and `pull` (`stoat_core::app::images`): the images table, and
//! the pull summary; the download's progress is rendered by `progress` through the sink
//! (json-v3#streaming; docs/decisions/images.md).

use stoat_core::app::images;
use stoat_core::Result;
use stoat_wire::dto::{Image, PullData};

use crate::ctx::Ctx;
use crate::human;
use crate::Reply;

/// `images`.
pub fn images(ctx: &Ctx) -> Result<Reply> {
    let data = images::images(ctx)?;
    let text = images_human(&data.images);
    Ok(Reply::new(&data, text))
}

fn images_human(images: &[Image]) -> String {
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
            ]
        })
        .collect();
    let table = human::table(
        &["ID", "OS", "VARIANT", "BACKEND", "SIZE", "STATE", "FILE"],
        &rows,
    );
    // A catalog row without a file would otherwise end in padding.
    table
        .lines()
        .map(|line| format!("{}\n", line.trim_end()))
        .collect()
}

/// `pull <id>`.
pub fn pull(ctx: &Ctx, id: &str) -> Result<Reply> {
    let data = images::pull(ctx, id)?;
    let text = pull_human(&data);
    Ok(Reply::new(&data, text))
}

fn pull_human(data: &PullData) -> String {
    if data.checksum_available {
        format!("{}: downloaded and verified", data.id)
    } else {
        format!(
            "{}: downloaded, UNVERIFIED (no published checksum)",
            data.id
        )
    }
}
