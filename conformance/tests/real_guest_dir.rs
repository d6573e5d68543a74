//! The real tier's guest directory, through the binary against the fixture SUT: a
//! `guest.toml` that makes no sense errors the real check naming the file (bad input, never
//! a skip that reads as a pass, and no guest booted), and a directory without the image
//! skips it with the reason.

use assert_cmd::Command;

fn run_real(guest: &std::path::Path) -> (Option<i32>, String) {
    let output = Command::cargo_bin("stoat-conformance")
        .expect("binary")
        .args([
            "run", "--seed", "1", "--tier", "real", "--id", "REAL.*", "--guest",
        ])
        .arg(guest)
        .args(["--", env!("CARGO_BIN_EXE_stoat-fixture-sut")])
        .output()
        .expect("run");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn a_guest_file_that_makes_no_sense_errors_the_real_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("stoat-testguest-cloud.qcow2"),
        b"not booted",
    )
    .expect("image");
    std::fs::write(dir.path().join("guest.toml"), "ram_mib = 0\n").expect("guest.toml");
    let (code, out) = run_real(dir.path());
    // 3: a harness error (docs/conformance.md, "Exit status").
    assert_eq!(code, Some(3), "{out}");
    assert!(out.contains("ERROR REAL.lifecycle"), "{out}");
    assert!(out.contains("ram_mib must be at least 1"), "{out}");
    assert!(
        out.contains(&*dir.path().join("guest.toml").to_string_lossy()),
        "{out}"
    );
    assert!(!out.contains("SKIP"), "{out}");
}

#[test]
fn a_directory_without_the_image_skips_the_real_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("guest.toml"), "ram_mib = 1024\n").expect("guest.toml");
    let (code, out) = run_real(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no stoat-testguest-cloud.qcow2 in"), "{out}");
    assert!(out.contains("the real tier ran nothing"), "{out}");
}
