//! Test helper: a [`TargetSchema`] built from `schemars` output, standing in for
//! `schema::target_schema` (another branch implements it).

use std::sync::Arc;

use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::schema::TargetSchema;

/// The envelope `{"value": <T>}` with `T`'s `$defs` hoisted to the root, as the schema
/// module builds it (the strict walk is not applied: the verifier reads only `full`).
pub(crate) fn target_for<T: JsonSchema>(type_name: &str) -> TargetSchema {
    let mut inner = serde_json::to_value(schemars::schema_for!(T)).unwrap();
    let mut defs = json!({});
    if let Value::Object(object) = &mut inner {
        object.remove("$schema");
        if let Some(hoisted) = object.remove("$defs") {
            defs = hoisted;
        }
    }
    envelope_target(type_name, inner, defs)
}

/// A target around a hand-written inner schema.
pub(crate) fn envelope_target(type_name: &str, inner: Value, defs: Value) -> TargetSchema {
    let full = json!({
        "type": "object",
        "properties": {"value": inner},
        "required": ["value"],
        "additionalProperties": false,
        "$defs": defs,
    });
    TargetSchema {
        type_name: type_name.to_owned(),
        strict: Arc::new(full.clone()),
        full: Arc::new(full),
        strict_compatible: true,
    }
}
