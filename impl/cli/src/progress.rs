//! The one human progress renderer: a download's progress on stderr, as a bar (bytes, rate,
//! ETA) on a terminal, else a plain line at each ten percent. Under --json progress is a
//! `progress` event instead (`ctx`'s sink picks).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use stoat_wire::dto::ProgressData;

use crate::human;

/// Human progress on stderr: a bar (bytes, rate, ETA) on a terminal, else a plain line at
/// each ten percent.
pub struct HumanProgress {
    terminal: bool,
    state: Mutex<HumanState>,
}

#[derive(Default)]
struct HumanState {
    bar: Option<ProgressBar>,
    last_tenth: Option<u32>,
}

impl HumanProgress {
    pub fn new() -> HumanProgress {
        HumanProgress {
            terminal: std::io::stderr().is_terminal(),
            state: Mutex::new(HumanState::default()),
        }
    }

    /// Clears the bar, if one is shown.
    pub fn finish(&self) {
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

impl HumanProgress {
    /// Shows a download's progress.
    pub fn progress(&self, data: &ProgressData) {
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
}
