//! TODO: owned by its issue; see lib.rs.
