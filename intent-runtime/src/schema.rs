//! Strict schemas: the `{"value": ...}` envelope of a target type, the strict walk that
//! makes a schema acceptable to providers' strict modes, and runtime schemas.
//!
//! STUB: the foundation issue (#2) fills this module in; the signatures are the contract.

use std::sync::Arc;

use schemars::JsonSchema;
use serde_json::Value;

/// The name of the envelope's only property.
pub const ENVELOPE_PROPERTY: &str = "value";

/// Why a schema could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A runtime schema was not a JSON object (or boolean schema).
    #[error("a runtime schema must be a JSON object; got {found}")]
    NotAnObject {
        /// The kind of JSON that was given.
        found: &'static str,
    },
}

/// The schemas of one target: strict (sent to the provider) and full (checked locally).
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSchema {
    /// The target's short type name, for messages (`Invoice`, `Vec<Line>`).
    pub type_name: String,
    /// The strict envelope: what the provider receives.
    pub strict: Arc<Value>,
    /// The envelope before the strict walk, constraint keywords kept.
    pub full: Arc<Value>,
    /// Whether the strict envelope is a faithful description of the type (false for maps,
    /// `serde_json::Value` members and recursive types: those are asked for in
    /// JSON-object mode instead).
    pub strict_compatible: bool,
}

/// The envelope schemas of `T`, built once per type and cached.
pub fn target_schema<T: JsonSchema + ?Sized + 'static>() -> Result<Arc<TargetSchema>, SchemaError> {
    let _ = schemars::schema_for!(T);
    unimplemented!("foundation issue")
}

/// The envelope schemas around a caller's schema; the caller's value is not modified.
pub fn runtime_target_schema(schema: &Value) -> Result<TargetSchema, SchemaError> {
    let _ = schema;
    unimplemented!("foundation issue")
}

/// The strict walk, in place.
pub fn make_strict(schema: &mut Value) {
    let _ = schema;
}
