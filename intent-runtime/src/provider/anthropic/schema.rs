//! Which strict schemas Anthropic's structured outputs accept: a schema they would refuse
//! is not sent (the prompt's full contract carries it instead).

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::provider::http::{self};
use crate::provider::{ProviderRequest, ResponseFormat};
use crate::schema::derived::DerivedCache;

/// Keywords Anthropic's structured outputs reject: numeric and length constraints.
const UNSUPPORTED_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "minProperties",
    "maxProperties",
];

/// The schema to send as `output_config.format` (its JSON text), when the request wants
/// one and Anthropic accepts it; otherwise the prompt's contract alone shapes the reply.
pub(crate) fn output_schema(request: &ProviderRequest) -> Option<Arc<RawValue>> {
    match schema_verdict(request)? {
        Ok(text) => Some(text),
        Err(reason) => {
            tracing::trace!(
                provider = "anthropic",
                schema = %request.schema_name,
                %reason,
                "structured outputs would reject this schema; sending the prompt contract without a schema"
            );
            None
        }
    }
}

/// For a strict-schema request, whether Anthropic accepts its schema: the schema's JSON
/// text, or the reason it would be refused. `None` when the request sends no schema.
///
/// The verdict and the text are kept per schema: both walk the whole schema, and every
/// request for a typed target sends the same one (and asks twice: once whether the schema
/// is enforced, once to send it).
pub(crate) fn schema_verdict(request: &ProviderRequest) -> Option<Result<Arc<RawValue>, Arc<str>>> {
    static ACCEPTED: LazyLock<DerivedCache<Result<Arc<RawValue>, Arc<str>>>> =
        LazyLock::new(DerivedCache::new);
    if request.response_format != ResponseFormat::JsonSchema {
        return None;
    }
    let schema = request.schema.as_ref()?;
    Some(ACCEPTED.get_or_derive(schema, || {
        anthropic_accepts_schema(schema)
            .map(|()| http::schema_json(schema))
            .map_err(Arc::from)
    }))
}

/// Whether Anthropic's structured outputs accept `schema`; the reason when they do not.
///
/// Rejected: recursion (a `$ref` cycle), external or dangling `$ref`s, numeric and length
/// constraints, `minItems` above 1, and `additionalProperties` other than `false`.
pub fn anthropic_accepts_schema(schema: &Value) -> Result<(), String> {
    SchemaCheck {
        root: schema,
        expanding: Vec::new(),
        expanded: HashSet::new(),
    }
    .check(schema, "#")
}

struct SchemaCheck<'a> {
    root: &'a Value,
    /// The `$ref`s being expanded on the current path: meeting one again is recursion.
    expanding: Vec<&'a str>,
    /// `$ref`s already checked in full, so shared definitions are walked once.
    expanded: HashSet<&'a str>,
}

impl<'a> SchemaCheck<'a> {
    fn check(&mut self, node: &'a Value, at: &str) -> Result<(), String> {
        let Value::Object(map) = node else {
            return Ok(());
        };
        if let Some(keyword) = UNSUPPORTED_KEYWORDS.iter().find(|k| map.contains_key(**k)) {
            return Err(format!(
                "`{keyword}` at {at} (numeric and length constraints are not supported)"
            ));
        }
        if let Some(min) = map
            .get("minItems")
            .and_then(Value::as_u64)
            .filter(|min| *min > 1)
        {
            return Err(format!(
                "`minItems: {min}` at {at} (only 0 or 1 is supported)"
            ));
        }
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(format!("`additionalProperties` other than false at {at}"));
            }
        }
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            self.follow(reference, at)?;
        }
        for (keyword, child) in map {
            match keyword.as_str() {
                "properties" | "patternProperties" | "$defs" | "definitions" => {
                    for (name, schema) in child.as_object().into_iter().flatten() {
                        self.check(schema, &format!("{at}/{keyword}/{name}"))?;
                    }
                }
                "items" | "not" | "contains" | "if" | "then" | "else" | "propertyNames" => {
                    if let Value::Array(schemas) = child {
                        for (index, schema) in schemas.iter().enumerate() {
                            self.check(schema, &format!("{at}/{keyword}/{index}"))?;
                        }
                    } else {
                        self.check(child, &format!("{at}/{keyword}"))?;
                    }
                }
                "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                    for (index, schema) in child.as_array().into_iter().flatten().enumerate() {
                        self.check(schema, &format!("{at}/{keyword}/{index}"))?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn follow(&mut self, reference: &'a str, at: &str) -> Result<(), String> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(format!("external `$ref` \"{reference}\" at {at}"));
        };
        if self.expanding.contains(&reference) {
            return Err(format!("recursive `$ref` \"{reference}\" at {at}"));
        }
        if self.expanded.contains(reference) {
            return Ok(());
        }
        let Some(target) = self.root.pointer(pointer) else {
            return Err(format!("`$ref` \"{reference}\" at {at} points nowhere"));
        };
        self.expanding.push(reference);
        let result = self.check(target, reference);
        self.expanding.pop();
        self.expanded.insert(reference);
        result
    }
}
