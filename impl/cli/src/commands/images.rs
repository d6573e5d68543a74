//! `images` and `pull`: the catalog and local images as a table or `{"images":[...]}`, and a
//! download with progress as JSON `progress` events, a terminal progress bar, or a plain line
//! per ten percent (json-v3#streaming; docs/decisions/images.md).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use stoat_core::images::{catalog, local, pull};
use stoat_core::{EventSink, NullSink, Result};
use stoat_wire::dto::{Image, ImagesData, LogData, ProgressData, PullData, StageData};

use crate::ctx::Ctx;
use crate::human;
use crate::Reply;

/// `images`.
pub fn images(ctx: &Ctx) -> Result<Reply> {
    let catalog = catalog::load(&ctx.env)?;
    let root = ctx.root()?;
    let images = local::list(root, &catalog)?;
    let text = images_human(&images);
    Ok(Reply::new(&ImagesData { images }, text))
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
    let catalog = catalog::load(&ctx.env)?;
    let stall = pull::stall_window(&ctx.env)?;
    let root = ctx.root()?;
    let human_sink = HumanProgress::new();
    let sink: &dyn EventSink = if ctx.json {
        ctx.sink()
    } else if ctx.quiet {
        &NullSink
    } else {
        &human_sink
    };
    let cx = pull::PullContext {
        sink,
        cancel: &ctx.cancel,
        stall,
    };
    let outcome = pull::pull(root, &catalog, id, &cx);
    human_sink.finish();
    let data = outcome?;
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

/// Human progress on stderr: a bar (bytes, rate, ETA) on a terminal, else a plain line at
/// each ten percent.
struct HumanProgress {
    terminal: bool,
    state: Mutex<HumanState>,
}

#[derive(Default)]
struct HumanState {
    bar: Option<ProgressBar>,
    last_tenth: Option<u32>,
}

impl HumanProgress {
    fn new() -> HumanProgress {
        HumanProgress {
            terminal: std::io::stderr().is_terminal(),
            state: Mutex::new(HumanState::default()),
        }
    }

    fn finish(&self) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bar) = &state.bar {
            bar.finish_and_clear();
        }
    }

    fn bar(id: &str, total: u64) -> ProgressBar {
        let bar = ProgressBar::new(total);
        let style = ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(id.to_owned());
        bar
    }
}

impl EventSink for HumanProgress {
    fn progress(&self, data: &ProgressData) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if self.terminal {
            let bar = state
                .bar
                .get_or_insert_with(|| HumanProgress::bar(&data.id, data.total));
            bar.set_position(data.done);
            return;
        }
        let tenth = data.percent / 10;
        if state.last_tenth != Some(tenth) {
            state.last_tenth = Some(tenth);
            let _ = writeln!(
                std::io::stderr(),
                "{}: {:>3}%  {} of {}",
                data.id,
                tenth * 10,
                human::bytes(data.done),
                human::bytes(data.total)
            );
        }
    }

    fn stage(&self, _: &StageData) {}
    fn log(&self, _: &LogData) {}
}
