//! The shared test helpers (`stoat-testkit`), under the name every test file imports them by.

pub use stoat_testkit::*;
