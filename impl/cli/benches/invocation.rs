//! Benchmarks of stoat's fixed costs, each printed as a ratio against a named baseline:
//! - `stoat --json version` vs `/bin/true`: the cost of one invocation;
//! - `stoat --json ls` on an empty root vs `/bin/true` (aim: 1.5x);
//! - `stoat --json ls` over 1,000 and 10,000 VMs vs `cat` of the same vm.toml files (aim:
//!   1.5x), and the time per VM at 10,000 against 1,000 (linear: 1.0x).
//!
//! Run with `make bench` (release build). Timings are medians of repeated runs; nothing here
//! asserts a time, it only reports.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const STOAT: &str = env!("CARGO_BIN_EXE_stoat");

fn median_of(runs: usize, mut once: impl FnMut()) -> Duration {
    once(); // warm the page cache
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            once();
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples[runs / 2]
}

fn run_quiet(cmd: &mut Command) {
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    assert!(status.success(), "{cmd:?} failed");
}

fn report(name: &str, subject: Duration, baseline_name: &str, baseline: Duration) {
    let ratio = subject.as_secs_f64() / baseline.as_secs_f64().max(1e-9);
    println!(
        "{name:<34} {:>9.3} ms   {baseline_name:<28} {:>9.3} ms   ratio {ratio:>6.2}x",
        subject.as_secs_f64() * 1e3,
        baseline.as_secs_f64() * 1e3
    );
}

fn write_vms(root: &Path, count: usize) -> Vec<std::path::PathBuf> {
    (0..count)
        .map(|i| {
            let dir = root.join(format!("vm{i:04}"));
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("vm.toml");
            std::fs::write(
                &file,
                format!(
                    "name = \"vm{i:04}\"\nmode = \"cloud\"\nos = \"debian\"\nram = 1024\ncpus = 1\ndisk = \"8G\"\nsshport = {}\nsshuser = \"stoat\"\nbackend = \"cloudinit\"\nrecipes = [\"devtools\"]\n[[forwards]]\nhostport = {}\nguestport = 80\n",
                    2200 + i % 100,
                    10000 + i
                ),
            )
            .unwrap();
            file
        })
        .collect()
}

fn main() {
    let temp = tempfile::tempdir().unwrap();
    let home = temp.path();
    let stoat = |args: &[&str]| {
        let mut cmd = Command::new(STOAT);
        cmd.args(args).env("STOAT_HOME", home).env("HOME", home);
        cmd
    };

    let version = median_of(50, || run_quiet(&mut stoat(&["--json", "version"])));
    let truth = median_of(50, || run_quiet(&mut Command::new("/bin/true")));
    report("stoat --json version", version, "/bin/true", truth);

    let empty = median_of(50, || run_quiet(&mut stoat(&["--json", "ls"])));
    report("stoat --json ls (empty root)", empty, "/bin/true", truth);

    let mut per_vm = Vec::new();
    for count in [1000, 10_000] {
        let files = write_vms(home, count);
        let runs = if count > 1000 { 7 } else { 15 };
        let ls = median_of(runs, || run_quiet(&mut stoat(&["--json", "ls"])));
        let cat = median_of(runs, || run_quiet(Command::new("cat").args(&files)));
        report(
            &format!("stoat --json ls ({count} VMs)"),
            ls,
            &format!("cat of {count} vm.toml"),
            cat,
        );
        per_vm.push(ls.as_secs_f64() / count as f64);
    }
    // Linear: the time per VM stays the same from 1,000 to 10,000.
    println!(
        "ls time per VM, 10,000 VMs / 1,000 VMs: {:.2}x (1.00x is linear)",
        per_vm[1] / per_vm[0].max(1e-12)
    );
}
