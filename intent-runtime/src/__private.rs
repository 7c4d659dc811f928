//! Functions the generated code calls. Not public API: no semver guarantees.
//!
//! STUB: the macro issue (#4) fills this module in.

pub use serde_json;
