//! stoat-conformance
