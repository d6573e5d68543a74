//! The `stoat-conformance` binary; everything lives in [`stoat_conformance::cli`].

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    stoat_conformance::cli::main()
}
