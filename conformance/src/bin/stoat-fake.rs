//! The multi-call fake host tools; the code is the `stoat-fakes` crate, its entry point
//! [`stoat_fakes::dispatch`].

#![forbid(unsafe_code)]

fn main() {
    stoat_fakes::dispatch::main()
}
