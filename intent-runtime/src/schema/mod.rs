//! Strict schemas: the `{"value": ...}` envelope of a target type, the strict walk that
//! makes a schema acceptable to providers' strict modes, and runtime schemas.
//!
//! Every non-`String` target is asked for as one JSON object `{"value": <T>}`: providers
//! want an object at the root, and the envelope lets primitives, enums and arrays be
//! targets too. The envelope is built from the type's `schemars` schema (draft
//! 2020-12) with its `$defs` hoisted to the envelope root, so `#/$defs/...` pointers keep
//! resolving; a runtime schema given as a `serde_json::Value` gets the same treatment.
//!
//! Two versions of every envelope are kept (see [`TargetSchema`]): the `full` one, with
//! every constraint keyword, for validating replies locally, and the `strict` one, after
//! [`make_strict`], which is what a provider receives. The strict one also has every
//! definition used once written in place of its `$ref` (a name the model would read
//! three times for nothing); it admits the same values.

mod bounds;
mod compat;
pub(crate) mod derived;
mod envelope;
mod inline;
pub(crate) mod strict;

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

pub(crate) use bounds::bounds_text;
pub(crate) use envelope::json_kind;
pub use strict::{ACCEPTED_FORMATS, CONSTRAINT_KEYWORDS, OTHER_REJECTED_KEYWORDS, make_strict};

/// The name of the envelope's only property.
pub const ENVELOPE_PROPERTY: &str = "value";

/// The `type_name` of a runtime schema that has no `title`.
pub const RUNTIME_SCHEMA_NAME: &str = "JSON value";

/// The deepest nesting of arrays and objects a runtime schema may have: serde_json's own
/// limit when it reads JSON text, so every schema read from a file or a string fits, while
/// one built in code cannot make the recursive walks (wrapping, the strict walk,
/// serializing, compiling) overflow the stack.
pub const MAX_RUNTIME_SCHEMA_DEPTH: usize = 128;

crate::failure::debug_as_message!(SchemaError);

/// Why a schema could not be built.
#[derive(Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A runtime schema was not a JSON object (or the boolean schema `true`).
    #[error("a runtime schema must be a JSON object (or `true` for any JSON value); got {found}")]
    NotAnObject {
        /// The kind of JSON that was given.
        found: &'static str,
    },
    /// A runtime schema nests arrays and objects deeper than [`MAX_RUNTIME_SCHEMA_DEPTH`].
    #[error(
        "the runtime schema nests arrays and objects more than {limit} levels deep; no \
         model describes such a shape: flatten it, or name repeated parts in `$defs`"
    )]
    TooDeep {
        /// The deepest nesting allowed.
        limit: usize,
    },
}

/// The schemas of one target: strict (sent to the provider) and full (checked locally).
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSchema {
    /// The target's short type name, for messages (`Invoice`, `Vec<Line>`).
    pub type_name: String,
    /// The strict envelope: what the provider receives. Definitions used once are
    /// written in place of their `$ref` (tokens on every request); it admits the same
    /// values as before.
    pub strict: Arc<Value>,
    /// The envelope before the strict walk, constraint keywords kept.
    pub full: Arc<Value>,
    /// Whether the strict envelope is a faithful description of the type (false for maps,
    /// `serde_json::Value` members and recursive types: those are asked for in
    /// JSON-object mode instead).
    pub strict_compatible: bool,
}

impl TargetSchema {
    /// Builds both envelopes around a root schema (`$defs` at its root, `#` its root).
    fn from_root(type_name: String, root: &Value) -> Result<Self, SchemaError> {
        let full = envelope::wrap_in_envelope(root)?;
        let mut strict = full.clone();
        make_strict(&mut strict);
        inline::inline_single_use_definitions(&mut strict);
        Ok(TargetSchema {
            type_name,
            strict_compatible: compat::is_strict_compatible(&full),
            strict: Arc::new(strict),
            full: Arc::new(full),
        })
    }

    /// The schema of the envelope's `value` in the full envelope (constraints kept).
    ///
    /// Its `$ref`s resolve against [`TargetSchema::full`], where the definitions are.
    pub fn full_value_schema(&self) -> Option<&Value> {
        self.full
            .get("properties")
            .and_then(|properties| properties.get(ENVELOPE_PROPERTY))
    }
}

type Cache = RwLock<HashMap<TypeId, Arc<TargetSchema>>>;

/// Built envelopes by target type. Reads vastly outnumber the one write per type, so a
/// read lock keeps cached lookups cheap on the hot path of every call.
static CACHE: LazyLock<Cache> = LazyLock::new(Cache::default);

/// The envelope schemas of `T`, built once per type and cached.
///
/// The schema comes from `schemars` with draft 2020-12 settings, so `Option<T>` is a
/// nullable type (`["string", "null"]`, or `anyOf` with `{"type": "null"}`), never an
/// optional property: the strict walk lists every property as required. A recursive
/// type's `#` references are rewritten to reach the value inside the envelope.
pub fn target_schema<T: JsonSchema + ?Sized + 'static>() -> Result<Arc<TargetSchema>, SchemaError> {
    let id = TypeId::of::<T>();
    // A panic while a lock was held cannot leave a half-written entry (entries are
    // inserted whole), so a poisoned cache is still sound to use.
    if let Some(cached) = CACHE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
    {
        return Ok(Arc::clone(cached));
    }
    let root = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    let built = Arc::new(TargetSchema::from_root(
        short_type_name(std::any::type_name::<T>()),
        &root,
    )?);
    let mut cache = CACHE.write().unwrap_or_else(PoisonError::into_inner);
    Ok(Arc::clone(cache.entry(id).or_insert(built)))
}

/// The envelope schemas around a caller's schema; the caller's value is not modified.
///
/// Works on a deep copy: the root's `$schema`, `$id` and `$anchor` are dropped (the copy
/// is no longer a document root), its `$defs` / `definitions` are hoisted to the
/// envelope root, and root-relative `$ref`s are rewritten to reach the same schema:
///
/// | `$ref` in the caller's schema | in the envelope |
/// | --- | --- |
/// | `#` | `#/properties/value` |
/// | `#/$defs/...`, `#/definitions/...` | unchanged |
/// | any other `#/...` | prefixed with `#/properties/value` |
/// | external, or a `#name` anchor | unchanged |
///
/// The strict walk then runs over the whole envelope, hoisted definitions included. The
/// boolean schema `true` is accepted as "any JSON value" (its target is then not
/// strict-compatible); `false` and non-object JSON are a [`SchemaError`].
///
/// The `type_name` is the schema's `title`, or [`RUNTIME_SCHEMA_NAME`].
///
/// A schema nested deeper than [`MAX_RUNTIME_SCHEMA_DEPTH`] is refused before any walk
/// over it ([`SchemaError::TooDeep`]).
pub fn runtime_target_schema(schema: &Value) -> Result<TargetSchema, SchemaError> {
    check_runtime_schema_depth(schema)?;
    let type_name = schema
        .get("title")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|title| !title.is_empty())
        .unwrap_or(RUNTIME_SCHEMA_NAME);
    TargetSchema::from_root(type_name.to_owned(), schema)
}

/// Refuses a schema nested deeper than [`MAX_RUNTIME_SCHEMA_DEPTH`], without recursion:
/// it runs before anything that walks the schema recursively, serializing included.
pub(crate) fn check_runtime_schema_depth(schema: &Value) -> Result<(), SchemaError> {
    let mut pending: Vec<(&Value, usize)> = vec![(schema, 1)];
    while let Some((value, depth)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        if depth > MAX_RUNTIME_SCHEMA_DEPTH {
            return Err(SchemaError::TooDeep {
                limit: MAX_RUNTIME_SCHEMA_DEPTH,
            });
        }
        pending.extend(children.map(|child| (child, depth + 1)));
    }
    Ok(())
}

/// `std::any::type_name` without module paths:
/// `alloc::vec::Vec<my_crate::Line>` becomes `Vec<Line>`.
fn short_type_name(full: &str) -> String {
    let mut short = String::with_capacity(full.len());
    let mut segment_start = 0;
    for (index, c) in full.char_indices() {
        if !(c.is_alphanumeric() || c == '_' || c == ':') {
            short.push_str(last_path_segment(&full[segment_start..index]));
            short.push(c);
            segment_start = index + c.len_utf8();
        }
    }
    short.push_str(last_path_segment(&full[segment_start..]));
    short
}

fn last_path_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

#[cfg(test)]
mod tests;
