//! The fast path for a clean typed reply: strict JSON in a lone `{"value": ...}`
//! envelope that already conforms to the strict schema and meets the full schema's
//! constraints. Such a reply has nothing to repair and nothing to report, so it is
//! checked on a [`Tape`] of the text and read as its type from that tape, never building
//! a `serde_json::Value` nor parsing the text twice.
//!
//! The path only ever answers "yes, here is the value"; on any doubt it declines and
//! the verifier's ordinary steps run from step 5, so it can change how fast a reply is
//! read but never what the verifier concludes.
//!
//! Everything that belongs only to this path is in this folder, in layer order:
//!
//! - `tape` (with `tape/scan.rs` and `tape/read.rs`): the flat, borrowed parse of a strict
//!   JSON text, its hand-written scanner, and the serde `Deserializer` that reads `T`
//!   from it; the tape is also a JSON representation `jsonschema` validates
//!   ([`TapeJson`](tape::TapeJson));
//! - `tape_check`: the checker that closed strict schemas compile into, run on the tape;
//! - `tape_schema`: which schema a target's tapes are checked against, and the hand-off
//!   from the checker to `jsonschema`;
//! - this module: the conditions under which a reply takes the path.
//!
//! # Closed
//!
//! This folder is closed to new schema keywords. The checker reads a fixed set: `type`,
//! `enum` and `const` of strings, `minLength`, `maxLength`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `minItems`, `maxItems`, `prefixItems`,
//! `items`, `properties`, `additionalProperties: false`, `required`, `anyOf`, `oneOf`,
//! `allOf`, `$ref`, `format` on non-strings, and annotations (`title`, `description`,
//! `$defs`, ...). A schema with any other keyword does not compile into a checker
//! (`TapeCheck::compile` returns `None` at the catch-all arm of
//! `Compiler::compile_object` in `tape_check.rs`), and `TapeSchema::accepts` in
//! `tape_schema.rs` then hands the tape to `jsonschema`, whose answer stands; it does the
//! same for any tape the checker does not accept, since the checker's "no" may only mean
//! it could not tell. A new keyword therefore needs no code here: support it in
//! `jsonschema` (and the verifier's `schema_rules`), and the fast path hands it over.
//! Teach the checker a keyword only to make a measured case faster, with a test that its
//! answers equal `jsonschema`'s (see the property tests in `tape_check.rs`).

mod tape;
mod tape_check;
mod tape_schema;

use jsonschema::json::Node as _;
use serde::de::DeserializeOwned;

pub(crate) use tape::Tape;
#[cfg(test)]
pub(crate) use tape_schema::conforms_tape;
pub(crate) use tape_schema::conforms_within_bounds_tape;

use crate::schema::{ENVELOPE_PROPERTY, TargetSchema};

/// The value of a reply text (fence already stripped) that the ordinary steps would
/// accept without a repair or an issue, or `None` when that is not certain.
///
/// Each condition is one the ordinary steps check, in their terms:
/// - strict JSON: step 5 records no leniency (a tape parses exactly what a strict
///   `Value` parse does), with no repeated name (a `Value` keeps only the last; the
///   schema check refuses repeats);
/// - the root is an object whose only member is `value`: step 6 unwraps it with no
///   repair, whatever the envelope rule;
/// - the value is not null: step 8 has nothing to say;
/// - the strict schema is faithful and the envelope conforms to it: the schema-guided
///   walk is skipped there too, so nothing is repaired;
/// - `T` reads from the tape: step 7 reads it from a `Value` of the same content, and
///   the tape answers as a `Value` does;
/// - the full schema's constraints hold: step 9's schema check finds nothing.
pub(crate) fn clean_typed_reply<T: DeserializeOwned>(
    text: &str,
    target: &TargetSchema,
) -> Option<T> {
    if !target.strict_compatible {
        return None;
    }
    let tape = Tape::parse(text).ok()?;
    // Numbers beyond 64 bits read exactly from text but as floats into a `Value`. A
    // repeated member name is refused by the schema check below.
    if tape.has_wide_numbers() {
        return None;
    }
    let value = tape.sole_root_member(ENVELOPE_PROPERTY)?;
    if value.is_null() {
        return None;
    }
    if !conforms_within_bounds_tape(target, &tape) {
        return None;
    }
    T::deserialize(value).ok()
}
