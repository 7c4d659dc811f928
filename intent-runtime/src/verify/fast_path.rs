//! The fast path for a clean typed reply: strict JSON in a lone `{"value": ...}`
//! envelope that already conforms to the strict schema and meets the full schema's
//! constraints. Such a reply has nothing to repair and nothing to report, so it is
//! checked on a [`Tape`] of the text and read as its type from that tape, never building
//! a `serde_json::Value` nor parsing the text twice.
//!
//! The path only ever answers "yes, here is the value"; on any doubt it declines and
//! the verifier's ordinary steps run from step 5, so it can change how fast a reply is
//! read but never what the verifier concludes.

use jsonschema::json::Node as _;
use serde::de::DeserializeOwned;

use super::schema_rules;
use crate::parse::Tape;
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
    if !schema_rules::conforms_within_bounds_tape(target, &tape) {
        return None;
    }
    T::deserialize(value).ok()
}
