//! trybuild cases live in `tests/ui/`; this crate has no library code.
