//! Runnable examples live in `examples/`; this crate has no library code.
