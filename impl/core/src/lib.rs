//! stoat-core
