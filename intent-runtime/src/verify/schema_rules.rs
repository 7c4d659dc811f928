//! Step 9's validators from the full schema: the constraint keywords the strict walk
//! removes before the schema reaches the provider (ranges, lengths, patterns, item
//! counts, uniqueness) are checked here, locally, with the `jsonschema` crate.
//!
//! External `$ref`s fail closed: the validator is built offline, so a schema that names
//! a URL or a file is never fetched; it fails to compile and the attempt gets an input
//! issue saying so.
//!
//! Compiled validators are cached per schema (`schema::derived`), so each typed target's
//! schema is compiled once. The verifier's fast path checks replies read as a tape rather
//! than a `Value` with its own validators (`verify/fast_path/tape_schema.rs`), built with
//! the same options ([`options_for_schemas`]).

use std::sync::{Arc, LazyLock};

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, ValidationError};
use serde_json::{Map, Value};

use super::mismatch;
use crate::parse::schema_nav::MAX_SCHEMA_HOPS;
use crate::result::{IssueDetail, IssueSource, ResultIssue};
use crate::schema::derived::DerivedCache;
use crate::schema::{CONSTRAINT_KEYWORDS, ENVELOPE_PROPERTY};

/// At most this many schema issues per attempt; one more issue counts the rest, so that
/// one turn of feedback stays short.
const MAX_SCHEMA_ISSUES: usize = 8;

/// Which violations become issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Only the constraint keywords: serde has already judged the value's shape.
    ConstraintsOnly,
    /// Every violation: a runtime shape has no serde type to judge its shape.
    Everything,
}

/// A full schema compiled for local checks.
struct Compiled {
    validator: Result<jsonschema::Validator, String>,
    has_constraints: bool,
}

static CACHE: LazyLock<DerivedCache<Arc<Compiled>>> = LazyLock::new(DerivedCache::new);

/// Checks `value`, placed in the envelope `{"value": value}`, against the envelope schema
/// `full`; returns the value and one validator issue per violation.
pub(crate) fn check_against_full_schema(
    full: &Arc<Value>,
    value: Value,
    scope: Scope,
    attempt: u32,
) -> (Value, Vec<ResultIssue>) {
    let compiled = compiled(full);
    if scope == Scope::ConstraintsOnly && !compiled.has_constraints {
        return (value, Vec::new());
    }
    let validator = match &compiled.validator {
        Ok(validator) => validator,
        Err(reason) => {
            let issue = ResultIssue::new(
                IssueSource::Input,
                format!(
                    "The output schema cannot be checked locally ({reason}); fix the schema: \
                     external references are never fetched."
                ),
                attempt,
            );
            return (value, vec![issue]);
        }
    };
    let (value, messages) = in_envelope(value, |envelope| {
        let mut messages = Vec::new();
        // Listing the errors of a valid instance costs more than asking whether it is valid.
        let errors = (!validator.is_valid(envelope)).then(|| validator.iter_errors(envelope));
        for error in said_once(errors.into_iter().flatten().collect()) {
            let explained = constraint_messages(&error, full, &mut messages);
            if !explained && scope == Scope::Everything {
                shape_messages(&error, full, &mut messages);
            }
        }
        messages
    });
    (value, capped(messages, IssueSource::Validator, attempt))
}

/// Every mismatch of a typed reply (`value`, which serde could not read as the target)
/// with the target's full schema, as verification issues: all of them at once, each with
/// its path, rather than serde's first. Empty when the schema finds nothing (serde's
/// own rules are stricter there) or cannot be compiled: the caller's message stands.
pub(crate) fn mismatches(full: &Arc<Value>, value: Value, attempt: u32) -> Vec<ResultIssue> {
    let compiled = compiled(full);
    let Ok(validator) = &compiled.validator else {
        return Vec::new();
    };
    let (_, messages) = in_envelope(value, |envelope| {
        let mut messages = Vec::new();
        for error in said_once(validator.iter_errors(envelope).collect()) {
            if !constraint_messages(&error, full, &mut messages) {
                shape_messages(&error, full, &mut messages);
            }
        }
        messages
    });
    capped(messages, IssueSource::Verification, attempt)
}

/// The errors without an `enum` or `const` violation where the same place also breaks
/// `type`: the type's message names the allowed values already.
fn said_once(errors: Vec<ValidationError<'_>>) -> Vec<ValidationError<'_>> {
    let mistyped: Vec<String> = errors
        .iter()
        .filter(|error| matches!(error.kind(), ValidationErrorKind::Type { .. }))
        .map(|error| error.instance_path().as_str().to_owned())
        .collect();
    errors
        .into_iter()
        .filter(|error| {
            !matches!(
                error.kind(),
                ValidationErrorKind::Enum { .. } | ValidationErrorKind::Constant { .. }
            ) || !mistyped
                .iter()
                .any(|path| path == error.instance_path().as_str())
        })
        .collect()
}

/// The messages as issues, the first [`MAX_SCHEMA_ISSUES`] of them and a count of the
/// rest; a message said twice (two branches of a union) is said once.
fn capped(
    mut messages: Vec<mismatch::Said>,
    source: IssueSource,
    attempt: u32,
) -> Vec<ResultIssue> {
    let mut seen = std::collections::HashSet::new();
    messages.retain(|(message, _)| seen.insert(message.clone()));
    let total = messages.len();
    let mut issues: Vec<ResultIssue> = messages
        .into_iter()
        .take(MAX_SCHEMA_ISSUES)
        .map(|(message, facts)| {
            let issue = ResultIssue::new(source, message, attempt);
            match facts {
                Some(facts) => issue.with_detail(IssueDetail::Schema(Box::new(facts))),
                None => issue,
            }
        })
        .collect();
    if total > MAX_SCHEMA_ISSUES {
        issues.push(ResultIssue::new(
            source,
            format!(
                "{} more mismatches like these; check every field against the schema.",
                total - MAX_SCHEMA_ISSUES
            ),
            attempt,
        ));
    }
    issues
}

/// Why the envelope schema `full` cannot be compiled for the local checks (an unknown
/// `type`, a `$ref` to nothing, a `pattern` that is no regular expression, an external
/// `$ref`), or `None` when it compiles. The compiled schema is kept for the checks of the
/// replies, so asking before the first request costs nothing later.
pub(crate) fn compile_error(full: &Arc<Value>) -> Option<String> {
    compiled(full).validator.as_ref().err().cloned()
}

/// Whether `value`, placed in the envelope `{"value": value}`, is valid against the
/// envelope schema `schema`; the value is handed back.
pub(crate) fn conforms_in_envelope(schema: &Arc<Value>, value: Value) -> (Value, bool) {
    in_envelope(value, |envelope| conforms(schema, envelope))
}

/// Runs `check` on `{"value": value}` (what the envelope schemas describe) and hands the
/// value back, moved in and out rather than copied.
fn in_envelope<R>(value: Value, check: impl FnOnce(&Value) -> R) -> (Value, R) {
    let envelope = Value::Object(Map::from_iter([(ENVELOPE_PROPERTY.to_owned(), value)]));
    let result = check(&envelope);
    let value = match envelope {
        Value::Object(mut envelope) => envelope.remove(ENVELOPE_PROPERTY),
        _ => None,
    };
    (value.unwrap_or(Value::Null), result)
}

/// Whether `instance` is valid against `schema` (compiled once and cached like the full
/// schemas). A schema that cannot be compiled conforms to nothing.
pub(crate) fn conforms(schema: &Arc<Value>, instance: &Value) -> bool {
    match &compiled(schema).validator {
        Ok(validator) => validator.is_valid(instance),
        Err(_) => false,
    }
}

/// Whether the schema `full` mentions any constraint keyword (compiled once and cached
/// like the full schemas).
pub(crate) fn has_constraints(full: &Arc<Value>) -> bool {
    compiled(full).has_constraints
}

/// Adds the messages of the constraint violations that make up `error`; returns whether
/// they explain it entirely. A failed union (`anyOf`, `oneOf`: an `Option<Line>` whose
/// line breaks a bound) is explained by the first branch that failed on bounds alone,
/// since that is the branch the value's shape matched.
fn constraint_messages(
    error: &ValidationError<'_>,
    full: &Value,
    out: &mut Vec<mismatch::Said>,
) -> bool {
    if is_constraint(error.kind()) {
        out.extend(mismatch::message(error, full));
        return true;
    }
    let (ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context }) =
        error.kind()
    else {
        return false;
    };
    for branch in context {
        let mut messages = Vec::new();
        let explained = !branch.is_empty()
            && branch
                .iter()
                .all(|inner| constraint_messages(inner, full, &mut messages));
        if explained {
            out.extend(messages);
            return true;
        }
    }
    false
}

/// Adds the messages of a violation of the value's shape. A failed union is explained by
/// the branch of the value's kind with the fewest violations (the `Line` of an
/// `Option<Line>` holding an object), or, when no branch is of its kind, as the union.
fn shape_messages(error: &ValidationError<'_>, full: &Value, out: &mut Vec<mismatch::Said>) {
    let (ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context }) =
        error.kind()
    else {
        out.extend(mismatch::message(error, full));
        return;
    };
    let here = error.instance_path();
    let of_its_kind = context
        .iter()
        .filter(|branch| {
            !branch.is_empty()
                && !branch.iter().any(|inner| {
                    inner.instance_path() == here
                        && matches!(
                            inner.kind(),
                            ValidationErrorKind::Type { .. }
                                | ValidationErrorKind::Enum { .. }
                                | ValidationErrorKind::Constant { .. }
                        )
                })
        })
        .min_by_key(|branch| branch.len());
    match of_its_kind {
        Some(branch) => {
            for inner in branch {
                if !constraint_messages(inner, full, out) {
                    shape_messages(inner, full, out);
                }
            }
        }
        None => out.push(mismatch::union_message(error, full)),
    }
}

/// Whether a violation is of a constraint keyword (a bound) rather than of the shape.
fn is_constraint(kind: &ValidationErrorKind) -> bool {
    matches!(
        kind,
        ValidationErrorKind::Minimum { .. }
            | ValidationErrorKind::Maximum { .. }
            | ValidationErrorKind::ExclusiveMinimum { .. }
            | ValidationErrorKind::ExclusiveMaximum { .. }
            | ValidationErrorKind::MultipleOf { .. }
            | ValidationErrorKind::MinLength { .. }
            | ValidationErrorKind::MaxLength { .. }
            | ValidationErrorKind::Pattern { .. }
            | ValidationErrorKind::MinItems { .. }
            | ValidationErrorKind::MaxItems { .. }
            | ValidationErrorKind::UniqueItems
    )
}

/// The compiled validator for `full`, from the cache or freshly compiled.
fn compiled(full: &Arc<Value>) -> Arc<Compiled> {
    CACHE.get_or_derive(full, || Arc::new(compile(full)))
}

fn compile(full: &Value) -> Compiled {
    let validator = options_for_schemas::<jsonschema::json::SerdeJson>()
        .build(full)
        .map_err(|error| error.to_string());
    Compiled {
        validator,
        has_constraints: mentions_constraint(full, 0),
    }
}

/// The options every validator here is built with, for the representation `F`: Draft
/// 2020-12 and no fetching of external references.
pub(crate) fn options_for_schemas<'i, F: jsonschema::json::Json>()
-> jsonschema::ValidationOptions<'i, Arc<dyn jsonschema::Retrieve>, F> {
    jsonschema::options_for::<F>()
        .with_draft(Draft::Draft202012)
        .offline()
}

/// Whether any constraint keyword appears in the schema. A property that happens to be
/// named like one only costs a needless check.
fn mentions_constraint(schema: &Value, depth: usize) -> bool {
    if depth > 4 * MAX_SCHEMA_HOPS {
        return true;
    }
    match schema {
        Value::Object(object) => object.iter().any(|(key, child)| {
            CONSTRAINT_KEYWORDS.contains(&key.as_str()) || mentions_constraint(child, depth + 1)
        }),
        Value::Array(items) => items
            .iter()
            .any(|item| mentions_constraint(item, depth + 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::TargetSchema;
    use crate::verify::fast_path::{Tape, conforms_tape, conforms_within_bounds_tape};
    use serde_json::json;

    fn envelope(inner: Value, defs: Value) -> Arc<Value> {
        Arc::new(json!({"type": "object", "properties": {"value": inner},
                        "required": ["value"], "additionalProperties": false, "$defs": defs}))
    }

    fn messages(full: &Arc<Value>, value: Value, scope: Scope) -> Vec<String> {
        let (back, issues) = check_against_full_schema(full, value.clone(), scope, 1);
        assert_eq!(back, value, "the value comes back unchanged");
        issues.into_iter().map(|issue| issue.message).collect()
    }

    #[test]
    fn minimum_names_the_path_and_the_bound() {
        let full = envelope(
            json!({"type": "object", "properties": {"total": {"type": "integer", "minimum": 10}}}),
            json!({}),
        );
        assert_eq!(
            messages(&full, json!({"total": 5}), Scope::ConstraintsOnly),
            vec!["value/total: the number is too small; allowed: at least 10."]
        );
        assert!(messages(&full, json!({"total": 10}), Scope::ConstraintsOnly).is_empty());
    }

    #[test]
    fn each_constraint_keyword_is_described() {
        let full = envelope(
            json!({"type": "object", "properties": {
                "max": {"maximum": 3}, "xmin": {"exclusiveMinimum": 0},
                "xmax": {"exclusiveMaximum": 1}, "step": {"multipleOf": 5},
                "short": {"minLength": 3}, "long": {"maxLength": 2},
                "code": {"pattern": "^[A-Z]+$"}, "few": {"minItems": 2},
                "many": {"maxItems": 1}, "set": {"uniqueItems": true}}}),
            json!({}),
        );
        let breaks = [
            (
                "max",
                json!(4),
                "the number is too large; allowed: at most 3.",
            ),
            (
                "xmin",
                json!(0),
                "the number is too small; allowed: more than 0.",
            ),
            (
                "xmax",
                json!(1),
                "the number is too large; allowed: less than 1.",
            ),
            (
                "step",
                json!(7),
                "the number is not a multiple of the step; allowed: a multiple of 5.",
            ),
            (
                "short",
                json!("ab"),
                "the text has 2 characters; allowed: at least 3 characters.",
            ),
            (
                "long",
                json!("abc"),
                "the text has 3 characters; allowed: at most 2 characters.",
            ),
            (
                "code",
                json!("ab"),
                "the text does not match; allowed: matching the regex ^[A-Z]+$.",
            ),
            (
                "few",
                json!([1]),
                "the list has 1 items; allowed: at least 2 items.",
            ),
            (
                "many",
                json!([1, 2]),
                "the list has 2 items; allowed: at most 1 item.",
            ),
            (
                "set",
                json!([1, 1]),
                "the list repeats an item; allowed: no repeated items.",
            ),
        ];
        for (key, bad, said) in breaks {
            let value = Value::Object(Map::from_iter([(key.to_owned(), bad)]));
            assert_eq!(
                messages(&full, value, Scope::ConstraintsOnly),
                vec![format!("value/{key}: {said}")]
            );
        }
    }

    #[test]
    fn bounds_behind_a_nullable_ref_are_reported() {
        let full = envelope(
            json!({"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]}),
            json!({"Line": {"type": "object", "properties": {"qty": {"minimum": 1}}}}),
        );
        assert_eq!(
            messages(&full, json!({"qty": 0}), Scope::ConstraintsOnly),
            vec!["value/qty: the number is too small; allowed: at least 1."]
        );
        assert!(messages(&full, Value::Null, Scope::ConstraintsOnly).is_empty());
    }

    #[test]
    fn shape_errors_count_only_for_runtime_shapes() {
        let full = envelope(
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}},
                   "required": ["n"]}),
            json!({}),
        );
        assert!(messages(&full, json!({}), Scope::ConstraintsOnly).is_empty());
        let found = messages(&full, json!({}), Scope::Everything);
        assert_eq!(
            found,
            vec!["value: the required field `n` is missing; add it: integer (at least 0)."]
        );
        // A value of the wrong type is named by its type, never quoted.
        let found = messages(&full, json!({"n": "secret"}), Scope::Everything);
        assert_eq!(
            found,
            vec!["value/n: expected integer (at least 0), found a string."]
        );
    }

    #[test]
    fn external_refs_are_never_fetched_and_fail_closed() {
        // A listener the schema points at: a fetch would show up as a connection.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let url = format!("http://{address}/schema.json");
        let full = envelope(json!({"$ref": url}), json!({}));
        let (_, issues) = check_against_full_schema(&full, json!(1), Scope::Everything, 2);
        listener.set_nonblocking(true).unwrap();
        let connection = listener.accept();
        assert!(
            matches!(&connection, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "the schema's URL was fetched"
        );
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].source, IssueSource::Input);
        assert_eq!(issues[0].attempt, 2);
        assert!(
            issues[0].message.contains("never fetched"),
            "{}",
            issues[0].message
        );
        let file = envelope(json!({"$ref": "file:///etc/passwd"}), json!({}));
        let (_, issues) = check_against_full_schema(&file, json!(1), Scope::Everything, 1);
        assert_eq!(issues[0].source, IssueSource::Input);
    }

    #[test]
    fn schemas_without_constraints_skip_validation() {
        let full = envelope(json!({"type": "integer"}), json!({}));
        assert!(messages(&full, json!("not checked"), Scope::ConstraintsOnly).is_empty());
        assert_eq!(messages(&full, json!("x"), Scope::Everything).len(), 1);
    }

    #[test]
    fn a_schema_is_compiled_once_while_it_lives() {
        let full = envelope(json!({"minimum": 1}), json!({}));
        let first = compiled(&full);
        let second = compiled(&full);
        assert!(Arc::ptr_eq(&first, &second));
        let copy = Arc::new((*full).clone());
        assert!(!Arc::ptr_eq(&first, &compiled(&copy)));
    }

    #[test]
    fn dropped_schemas_leave_the_cache() {
        let key = {
            let full = envelope(json!({"maximum": 2}), json!({}));
            compiled(&full);
            Arc::as_ptr(&full) as usize
        };
        let other = envelope(json!({"maximum": 3}), json!({}));
        compiled(&other);
        // Gone, unless another test's live schema has since taken the freed address.
        assert!(!CACHE.holds_dead_entry(key));
    }

    #[test]
    fn a_tape_with_a_repeated_name_conforms_to_nothing() {
        let schema = Arc::new(json!({"properties": {"a": {"minimum": 2}}}));
        let text = r#"{"a": 1, "a": 2}"#;
        // A `Value` keeps the last `a`, which conforms; the tape cannot say which it holds.
        assert!(conforms(&schema, &serde_json::from_str(text).unwrap()));
        assert!(!conforms_tape(&schema, &Tape::parse(text).unwrap()));
        let target = target_of(envelope(
            json!({"type": "integer", "minimum": 2}),
            json!({}),
        ));
        let repeated = Tape::parse(r#"{"value": 1, "value": 2}"#).unwrap();
        assert!(!conforms_within_bounds_tape(&target, &repeated));
        assert!(conforms_tape(&schema, &Tape::parse(r#"{"a": 2}"#).unwrap()));
    }

    /// The target the verifier would build around the envelope schema `full`.
    fn target_of(full: Arc<Value>) -> TargetSchema {
        let mut strict = Value::clone(&full);
        crate::schema::make_strict(&mut strict);
        TargetSchema {
            type_name: "T".to_owned(),
            strict: Arc::new(strict),
            full,
            strict_compatible: true,
        }
    }

    fn within_bounds(target: &TargetSchema, text: &str) -> bool {
        conforms_within_bounds_tape(target, &Tape::parse(text).unwrap())
    }

    #[test]
    fn the_single_tape_check_demands_the_strict_shape_and_the_bounds() {
        let target = target_of(envelope(
            json!({"type": "object", "properties": {
                "total": {"type": "integer", "minimum": 0},
                "note": {"type": ["string", "null"], "maxLength": 4}
            }, "required": ["total"]}),
            json!({}),
        ));
        assert!(within_bounds(
            &target,
            r#"{"value": {"total": 3, "note": null}}"#
        ));
        assert!(within_bounds(
            &target,
            r#"{"value": {"total": 0, "note": "abcd"}}"#
        ));
        // Below a bound or past a length: the full schema's constraints.
        assert!(!within_bounds(
            &target,
            r#"{"value": {"total": -1, "note": null}}"#
        ));
        assert!(!within_bounds(
            &target,
            r#"{"value": {"total": 1, "note": "abcde"}}"#
        ));
        // Valid against the full schema, but not the strict shape: every property is
        // required there and no other is allowed.
        assert!(!within_bounds(&target, r#"{"value": {"total": 3}}"#));
        assert!(!within_bounds(
            &target,
            r#"{"value": {"total": 3, "note": null, "extra": 1}}"#
        ));
        assert!(!within_bounds(
            &target,
            r#"{"value": {"total": 3, "note": null}, "x": 1}"#
        ));
    }

    #[test]
    fn without_constraints_the_single_check_is_the_strict_check() {
        let target = target_of(envelope(
            json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
            json!({}),
        ));
        assert!(within_bounds(&target, r#"{"value": {"a": -5}}"#));
        assert!(!within_bounds(&target, r#"{"value": {}}"#));
        assert!(!within_bounds(&target, r#"{"value": {"a": "x"}}"#));
    }

    #[test]
    fn a_schema_that_does_not_compile_accepts_no_tape() {
        let broken = Arc::new(json!({"$ref": "http://example.invalid/schema.json"}));
        assert!(!conforms_tape(&broken, &Tape::parse("1").unwrap()));
    }

    #[test]
    fn violations_beyond_the_cap_are_summarised() {
        let full = envelope(json!({"type": "array", "items": {"minimum": 1}}), json!({}));
        let found = messages(&full, json!(vec![0; 30]), Scope::ConstraintsOnly);
        assert_eq!(found.len(), MAX_SCHEMA_ISSUES + 1);
        assert_eq!(
            found[MAX_SCHEMA_ISSUES],
            "22 more mismatches like these; check every field against the schema."
        );
    }

    /// Schemas that between them use most keywords, so that the tape's accessors are
    /// exercised by every kind of check the validator makes.
    fn schemas() -> Vec<Arc<Value>> {
        let kitchen_sink = envelope(
            json!({"anyOf": [
                {"type": "object",
                 "properties": {
                     "a": {"type": "integer", "minimum": 0, "multipleOf": 2},
                     "b": {"type": "string", "maxLength": 3, "pattern": "^[a-m]*$"},
                     "c": {"type": "array", "items": {"type": ["integer", "null"]},
                           "uniqueItems": true, "maxItems": 3}},
                 "required": ["a"],
                 "additionalProperties": {"type": "boolean"}},
                {"type": "array", "prefixItems": [{"type": "string"}],
                 "contains": {"const": true}},
                {"enum": [1, "x", null, [1], {"k": 2}]},
                {"type": "string", "minLength": 2},
                {"$ref": "#/$defs/Pair"}
            ]}),
            json!({"Pair": {"type": "array", "minItems": 2, "maxItems": 2,
                            "items": {"type": "number", "exclusiveMaximum": 10.5}}}),
        );
        let names = Arc::new(json!({
            "type": "object",
            "propertyNames": {"pattern": "^[a-c]+$"},
            "minProperties": 1,
            "maxProperties": 3,
            "not": {"required": ["cc"]},
            "dependentRequired": {"a": ["b"]},
            "if": {"properties": {"value": {"type": "string"}}},
            "then": {"properties": {"value": {"minLength": 1}}},
            "else": {"properties": {"value": {"type": ["array", "object", "integer"]}}},
            "patternProperties": {"^b": {"type": ["boolean", "object"]}},
            "unevaluatedProperties": {"type": ["object", "array", "null"]},
        }));
        let unique = Arc::new(json!({"type": "array", "uniqueItems": true,
                                     "items": {"oneOf": [{"type": "number"}, {"minimum": 3}]}}));
        vec![kitchen_sink, names, unique]
    }

    /// JSON whose names come from a small set, so that schemas' properties are hit.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::collection::{btree_map, vec};
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..12).prop_map(|n| json!(n)),
            any::<i64>().prop_map(|n| json!(n)),
            prop_oneof![Just(1.0), Just(2.5), Just(-0.5), Just(10.5), Just(1e20)]
                .prop_map(|n: f64| json!(n)),
            "[a-pé]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..4).prop_map(Value::Array),
                btree_map("value|a|b|c|k|cc|z", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        #[test]
        fn validity_on_the_tape_is_validity_on_the_value(
            inner in json_value(),
            enveloped in proptest::prelude::any::<bool>(),
        ) {
            let value = if enveloped { json!({"value": inner}) } else { inner };
            let text = value.to_string();
            let tape = Tape::parse(&text).unwrap();
            for schema in schemas() {
                proptest::prop_assert_eq!(
                    conforms_tape(&schema, &tape),
                    conforms(&schema, &value),
                    "{} against {}", text, schema
                );
            }
        }

        /// The single check never says yes where either of the two checks it stands for
        /// would say no.
        #[test]
        fn the_single_tape_check_implies_both_checks(inner in json_value()) {
            let value = json!({"value": inner});
            let text = value.to_string();
            let tape = Tape::parse(&text).unwrap();
            for full in schemas() {
                let target = target_of(full);
                if conforms_within_bounds_tape(&target, &tape) {
                    proptest::prop_assert!(conforms(&target.strict, &value), "{} strict", text);
                    proptest::prop_assert!(conforms(&target.full, &value), "{} full", text);
                }
            }
        }
    }
}
