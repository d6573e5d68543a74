//! `cargo bench -p stoat-conformance`: the whole pure + fake run against the reference
//! stoat, timed, with the suite's own overhead (see `stoat_conformance::bench`). The SUT is
//! `STOAT_BENCH_SUT` (an executable), else the workspace's target/release/stoat, else
//! target/debug/stoat; with none built it prints SKIPPED. Numbers only, never asserted.

use std::path::PathBuf;

use stoat_conformance::bench;
use stoat_conformance::run::Sut;

fn reference() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("STOAT_BENCH_SUT") {
        return Some(PathBuf::from(path));
    }
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target");
    ["release/stoat", "debug/stoat"]
        .iter()
        .map(|p| target.join(p))
        .find(|p| p.is_file())
}

fn main() {
    let Some(program) = reference() else {
        println!("SKIPPED: no stoat built (cargo build -p stoat-cli) and STOAT_BENCH_SUT unset");
        return;
    };
    let sut = Sut {
        program: std::fs::canonicalize(&program).unwrap_or(program),
        leading: Vec::new(),
    };
    let fakes = PathBuf::from(env!("CARGO_BIN_EXE_stoat-fake"));
    match bench::measure(&sut, Some(fakes)) {
        Ok(timings) => print!("{}", bench::render(&sut, &timings)),
        Err(error) => println!("bench: harness error: {error}"),
    }
}
