//! Links the `stoat` executable position-dependent (`-no-pie`): a PIE relocates its pointer
//! tables at every start, a fifth of a short command's wall time (docs/decisions/performance.md).

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=stoat=-no-pie");
    }
}
