//! Compile-time strictness: the [`StrictCompatible`] marker trait for types whose schema
//! can be made strict.
//!
//! STUB: the macro issue (#4) fills this module in.

/// A type whose JSON schema can be sent to a provider in strict mode.
pub trait StrictCompatible {}
