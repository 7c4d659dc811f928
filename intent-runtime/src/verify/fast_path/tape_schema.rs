//! What a target's tapes are checked against, and the hand-off between the fast path's
//! own checker and `jsonschema`.
//!
//! A tape is checked against one schema per target: the full schema with its objects
//! closed when it has constraints, else the strict schema ([`conforms_within_bounds_tape`]).
//! [`TapeSchema::accepts`] is where the fast path's closed set of keywords ends: the
//! checker ([`TapeCheck`]) decides the schemas it reads and says only "certainly valid";
//! for a schema with a keyword it does not read (it does not compile), or a tape it does
//! not accept, `jsonschema` validates the tape (as [`TapeJson`]) and its answer stands.

use std::sync::{Arc, LazyLock, OnceLock};

use serde_json::Value;

use super::tape::{Tape, TapeJson};
use super::tape_check::TapeCheck;
use crate::schema::TargetSchema;
use crate::schema::derived::DerivedCache;
use crate::schema::strict::close_objects;
use crate::verify::schema_rules;

/// A schema compiled for tapes, each part on first use.
#[derive(Default)]
struct TapeSchema {
    /// The schema for `jsonschema`; `None` when it does not compile.
    tape_validator: OnceLock<Option<jsonschema::Validator<TapeJson>>>,
    /// The checker for the schemas it reads (`None` otherwise), tried before
    /// `tape_validator`.
    tape_check: OnceLock<Option<TapeCheck>>,
}

impl TapeSchema {
    /// Whether `tape` is valid against `schema` (the schema this was made for), with no
    /// object naming a member twice; a schema that cannot be compiled accepts nothing.
    fn accepts(&self, schema: &Value, tape: &Tape<'_>) -> bool {
        let check = self.tape_check.get_or_init(|| TapeCheck::compile(schema));
        // The checker's "yes" is certain and covers repeated names; its "no" may only
        // mean it could not tell, so `jsonschema` then decides.
        if check.as_ref().is_some_and(|check| check.accepts(tape)) {
            return true;
        }
        if tape.has_duplicate_keys() {
            return false;
        }
        let validator = self.tape_validator.get_or_init(|| {
            schema_rules::options_for_schemas::<TapeJson>()
                .build(schema)
                .ok()
        });
        validator
            .as_ref()
            .is_some_and(|validator| validator.is_valid(tape.root()))
    }
}

/// Whether the tape conforms to `schema`, as `schema_rules::conforms` says of a `Value`.
/// A tape with a repeated member name conforms to nothing: a `Value` would keep only the
/// last. (The fast path goes through [`conforms_within_bounds_tape`]; this is its
/// reference in tests.)
#[cfg(test)]
pub(crate) fn conforms_tape(schema: &Arc<Value>, tape: &Tape<'_>) -> bool {
    static REFERENCE: LazyLock<DerivedCache<Arc<TapeSchema>>> = LazyLock::new(DerivedCache::new);
    REFERENCE
        .get_or_derive(schema, || Arc::new(TapeSchema::default()))
        .accepts(schema, tape)
}

/// Whether the tape, an envelope, both conforms to `target`'s strict schema and meets
/// every constraint of its full schema, in one walk of the tape, with no object naming a
/// member twice.
///
/// When the full schema has constraints, the tape is checked once against the full schema
/// with its objects closed ([`close_objects`]), which demands all of both; otherwise the
/// strict schema alone says it. The answer may be a needless "no" (a `oneOf` whose
/// branches overlap once closed) but is never a wrong "yes".
pub(crate) fn conforms_within_bounds_tape(target: &TargetSchema, tape: &Tape<'_>) -> bool {
    let fast = FAST_PATH.get_or_derive(&target.full, || {
        let schema = if schema_rules::has_constraints(&target.full) {
            let mut closed = Value::clone(&target.full);
            close_objects(&mut closed);
            Arc::new(closed)
        } else {
            Arc::clone(&target.strict)
        };
        Arc::new(FastPathSchema {
            schema,
            compiled: TapeSchema::default(),
        })
    });
    fast.compiled.accepts(&fast.schema, tape)
}

/// What [`conforms_within_bounds_tape`] checks a target's tapes against, found with one
/// cache lookup per call.
struct FastPathSchema {
    /// The full schema with its objects closed, or the strict one when the full schema
    /// has no constraints.
    schema: Arc<Value>,
    compiled: TapeSchema,
}

/// The fast path's schema of each target, keyed by the target's full schema.
static FAST_PATH: LazyLock<DerivedCache<Arc<FastPathSchema>>> = LazyLock::new(DerivedCache::new);
