//! stoat-schemas
