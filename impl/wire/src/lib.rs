//! stoat-wire
