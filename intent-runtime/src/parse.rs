//! Lenient reading of replies: code fences, comments, trailing commas, bare primitives,
//! and schema-guided repair (property-name case, numbers in strings).
//!
//! STUB: the verification issue (#3) fills this module in.
