// Unsafe code is allowed only on the `.init_array` entry (docs/decisions/unsafe.md).
#![deny(unsafe_code)]

fn main() {
    std::process::exit(stoat_cli::main())
}

/// Runs before `main`, before even Rust's runtime set-up: SIGINT and SIGTERM are held
/// pending from the process's first instructions until the handler is in place.
#[used]
#[allow(unsafe_code)] // link_section (docs/decisions/unsafe.md)
#[link_section = ".init_array"]
static HOLD_SIGNALS: extern "C" fn() = hold_signals;

extern "C" fn hold_signals() {
    stoat_cli::hold_signals();
}
