//! The deterministic verifier: the ordered checks of a reply, each failure an actionable
//! [`ResultIssue`].
//!
//! The steps, each a function in `verify/steps.rs` named after what it checks:
//!
//! 1. refusal (`steps::refusal`): a provider issue; nothing else is checked;
//! 2. truncation (`steps::truncation`): a provider issue; the attempt fails, checks go on;
//! 3. empty after removing a surrounding code fence (`steps::unfenced_text`);
//! 4. a `String` target takes that text as its value (`verify_text`);
//! 5. JSON, with comments and trailing commas, else a bare primitive (`steps::read_json`);
//!    with [`AnswerRecovery::FromProse`] (opt-in, off by default), a reply that is
//!    neither is searched for the one JSON answer it wraps in prose: fenced blocks
//!    anywhere and balanced objects and arrays in the text are candidates, each read by
//!    steps 5 to 8; exactly one that reads as the target is the reply (recorded as
//!    [`Repair::JsonExtractedFromProse`]) and goes on to step 9; several are a failed
//!    attempt whose feedback asks for one answer alone (`verify/recovery.rs`). Text that
//!    is not JSON fails with an issue per place where it stops being JSON, saying in words
//!    what is there and what belongs there, with a short excerpt (`parse::diagnose`);
//! 6. the `{"value": ...}` envelope (`steps::unwrap_envelope`);
//! 7. deserialization into `T` after schema-guided repair (`steps::deserialize`); for a
//!    runtime shape, the same repairs against the caller's schema, then the whole schema.
//!    A value that fails is reported by every mismatch with the full schema at once, each
//!    with its path, what is expected there and what was found by type, never quoted
//!    (`verify/mismatch.rs`); serde's own message only when the schema sees none;
//! 8. null, accepted only by `Option` targets (`steps::null_value`);
//! 9. validators: the caller's (`steps::run_validators`) and the full schema's
//!    constraint keywords (`verify/schema_rules.rs`).
//!
//! A clean typed reply (strict JSON, a lone envelope, conforming to both schemas) takes a
//! fast path through steps 5 to 8 (`verify/fast_path/`, a closed folder: see its module
//! doc) that reaches the same result without building a `serde_json::Value`: the text is
//! read into a tape (`verify/fast_path/tape/scan.rs`), checked against the target's
//! closed schema by a checker compiled once per target (`verify/fast_path/tape_check.rs`,
//! `jsonschema` for the schemas it does not read), and `T` is read from the tape; any
//! other reply takes the steps above.

mod fast_path;
mod mismatch;
mod recovery;
pub(crate) mod schema_rules;
pub(crate) mod steps;
#[cfg(test)]
pub(crate) mod test_support;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::options::Validator;
use crate::parse::{self, schema_nav};
use crate::provider::ProviderReply;
use crate::result::{Repair, ResultIssue};
use crate::schema::{ENVELOPE_PROPERTY, TargetSchema};
use schema_rules::Scope;
use steps::EnvelopeRule;

pub use recovery::AnswerRecovery;
use recovery::Choice;

#[cfg(test)]
thread_local! {
    /// How many schema-guided repair walks this thread ran, so tests can tell when one
    /// was skipped.
    pub(crate) static REPAIR_WALKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// What the verifier found in one reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification<T> {
    /// The parsed value, when the reply could be read as the target.
    pub value: Option<T>,
    /// Every issue found, in step order.
    pub issues: Vec<ResultIssue>,
    /// Every repair made before reading the reply.
    pub repairs: Vec<Repair>,
    /// Whether the reply was truncated (such an attempt always fails).
    pub truncated: bool,
}

impl<T> Verification<T> {
    /// Whether the attempt passed: a value, no issue other than provider issues, and no
    /// truncation.
    pub fn passed(&self) -> bool {
        self.value.is_some()
            && !self.truncated
            && self
                .issues
                .iter()
                .all(|i| i.source == crate::result::IssueSource::Provider)
    }

    fn new(reply: &ProviderReply) -> Self {
        Self {
            value: None,
            issues: Vec::new(),
            repairs: Vec::new(),
            truncated: reply.truncated,
        }
    }

    /// Steps 1 to 3, shared by every target: the unfenced reply text, or `None` when
    /// checking stops (a refusal, or nothing left to read).
    fn read_text<'r>(&mut self, reply: &'r ProviderReply, attempt: u32) -> Option<&'r str> {
        if let Some(refused) = steps::refusal(reply, attempt) {
            self.issues.push(refused);
            return None;
        }
        self.issues.extend(steps::truncation(reply, attempt));
        let text = steps::unfenced_text(reply, attempt, &mut self.repairs);
        self.keep(text)
    }

    /// The step's result, or `None` with its issue recorded.
    fn keep<V>(&mut self, step: Result<V, ResultIssue>) -> Option<V> {
        step.map_err(|issue| self.issues.push(issue)).ok()
    }

    /// Step 9's caller validators, then the value kept.
    fn accept(&mut self, value: T, validators: &[Validator<T>], attempt: u32) {
        self.issues
            .extend(steps::run_validators(&value, validators, attempt));
        self.value = Some(value);
    }
}

/// Verifies a reply for a plain-text (`String`) target.
pub fn verify_text(
    reply: &ProviderReply,
    validators: &[Validator<String>],
    attempt: u32,
) -> Verification<String> {
    let mut check = Verification::new(reply);
    if let Some(text) = check.read_text(reply, attempt) {
        // Step 4: no JSON checks; the text is the value.
        check.accept(text.to_owned(), validators, attempt);
    }
    check
}

/// Verifies a reply for a typed target described by `target`, reading it as the
/// reference documents specify ([`AnswerRecovery::Off`]).
pub fn verify_typed<T: DeserializeOwned>(
    reply: &ProviderReply,
    target: &TargetSchema,
    validators: &[Validator<T>],
    attempt: u32,
) -> Verification<T> {
    verify_typed_with(reply, target, validators, attempt, AnswerRecovery::Off)
}

/// [`verify_typed`], with answer recovery as `recovery` says.
pub fn verify_typed_with<T: DeserializeOwned>(
    reply: &ProviderReply,
    target: &TargetSchema,
    validators: &[Validator<T>],
    attempt: u32,
    recovery: AnswerRecovery,
) -> Verification<T> {
    let mut check = Verification::new(reply);
    let Some(text) = check.read_text(reply, attempt) else {
        return check;
    };
    if let Some(value) = fast_path::clean_typed_reply::<T>(text, target) {
        check.accept(value, validators, attempt);
        return check;
    }
    let recover_from = recovery.is_on().then_some(reply.text.as_str());
    read_typed(check, text, target, validators, attempt, recover_from)
}

/// What steps 6 to 8 made of a typed reply: the value, and the JSON it was read from
/// for step 9's schema check (`None` for a null, which has no bounds to meet).
type TypedRead<T> = Result<(T, Option<Value>), Vec<ResultIssue>>;

/// Steps 5 to 9 for a typed target, on the unfenced reply text. With `recover_from` (the
/// whole reply, when answer recovery is on), a reply that is not JSON is searched for
/// its one answer.
fn read_typed<T: DeserializeOwned>(
    mut check: Verification<T>,
    text: &str,
    target: &TargetSchema,
    validators: &[Validator<T>],
    attempt: u32,
    recover_from: Option<&str>,
) -> Verification<T> {
    let json = steps::read_json(
        text,
        &steps::bare_enum_members(&target.full),
        attempt,
        &mut check.repairs,
    );
    let json = match (json, recover_from) {
        (Ok(json), _) => json,
        (Err(not_json), Some(reply)) => {
            return recover_typed(check, not_json, reply, target, validators, attempt);
        }
        (Err(not_json), None) => {
            check.issues.extend(not_json);
            return check;
        }
    };
    let read = read_as_typed::<T>(json, text, target, attempt, &mut check.repairs);
    check.finish_typed(read, target, validators, attempt);
    check
}

/// Steps 6 to 8 for a typed target: the envelope, null, and deserialization after the
/// schema-guided repair; every repair is added to `repairs`.
fn read_as_typed<T: DeserializeOwned>(
    json: Value,
    text: &str,
    target: &TargetSchema,
    attempt: u32,
    repairs: &mut Vec<Repair>,
) -> TypedRead<T> {
    let full: &Value = &target.full;
    let inner = schema_nav::inner_schema(full);
    let rule = if schema_nav::bare_form_may_hold_value_key(full, inner) {
        EnvelopeRule::BareMayHoldValue
    } else {
        EnvelopeRule::Strict
    };
    let value = steps::unwrap_envelope(json, rule, Some(target), attempt, repairs)
        .map_err(|issue| vec![issue])?;
    // A value that, in its envelope, conforms to the strict schema (declared keys only,
    // exact types and enum members) has nothing to repair and no finding to explain: the
    // schema-guided walk, most of the cost of reading such a reply, is skipped. Asked of
    // the unwrapped value, so a reply that only forgot its envelope is spared the walk.
    let (mut value, conforms) = if target.strict_compatible {
        schema_rules::conforms_in_envelope(&target.strict, value)
    } else {
        (value, false)
    };
    // Step 8 is asked before step 7 for a null: serde would only say "invalid type: null".
    if value.is_null() {
        return steps::null_value::<T>(&target.type_name, attempt)
            .map(|parsed| (parsed, None))
            .map_err(|issue| vec![issue]);
    }
    let walked = if conforms {
        parse::SchemaRepair::default()
    } else {
        #[cfg(test)]
        REPAIR_WALKS.with(|walks| walks.set(walks.get() + 1));
        parse::repair_against_schema(
            &mut value,
            full,
            inner,
            &format!("/{ENVELOPE_PROPERTY}"),
            Some(&target.type_name),
        )
    };
    repairs.extend(walked.repairs.iter().cloned());
    match steps::deserialize::<T>(&value, text, &walked, &target.type_name, attempt) {
        Ok(parsed) => Ok((parsed, Some(value))),
        // Every mismatch the schema sees, each with its path; serde's first error (and
        // the walk's findings) only when the schema sees none.
        Err(first) => {
            let every = schema_rules::mismatches(&target.full, value, attempt);
            Err(if every.is_empty() { first } else { every })
        }
    }
}

impl<T> Verification<T> {
    /// Step 9 for a typed read: the full schema's constraints, then the validators.
    fn finish_typed(
        &mut self,
        read: TypedRead<T>,
        target: &TargetSchema,
        validators: &[Validator<T>],
        attempt: u32,
    ) {
        match read {
            Ok((parsed, Some(value))) => {
                let (_, bounds) = schema_rules::check_against_full_schema(
                    &target.full,
                    value,
                    Scope::ConstraintsOnly,
                    attempt,
                );
                self.issues.extend(bounds);
                self.accept(parsed, validators, attempt);
            }
            Ok((parsed, None)) => self.accept(parsed, validators, attempt),
            Err(issues) => self.issues.extend(issues),
        }
    }

    /// Records the candidate taken out of the prose: the recovery, then the repairs its
    /// reading made.
    fn extracted(&mut self, repairs: Vec<Repair>) {
        self.repairs.push(Repair::JsonExtractedFromProse);
        self.repairs.extend(repairs);
    }
}

/// Step 5 with answer recovery, for a typed target: the one candidate of `reply` that
/// reads as `T` is the reply.
fn recover_typed<T: DeserializeOwned>(
    mut check: Verification<T>,
    not_json: Vec<ResultIssue>,
    reply: &str,
    target: &TargetSchema,
    validators: &[Validator<T>],
    attempt: u32,
) -> Verification<T> {
    let candidates = parse::json_candidates(reply);
    let (mut hits, mut misses) = (Vec::new(), Vec::new());
    for candidate in candidates.found {
        let mut repairs = candidate.repairs;
        match read_as_typed::<T>(
            candidate.json,
            candidate.text,
            target,
            attempt,
            &mut repairs,
        ) {
            Ok(read) => hits.push((read, repairs)),
            Err(issues) => misses.push((issues, repairs)),
        }
    }
    // Two candidates that repair to the same value are one answer written twice.
    let same = |a: &((T, Option<Value>), Vec<Repair>), b: &((T, Option<Value>), Vec<Repair>)| {
        a.0.1 == b.0.1
    };
    match recovery::choose(hits, misses, candidates.too_many, same) {
        Choice::One((read, repairs)) => {
            check.extracted(repairs);
            check.finish_typed(Ok(read), target, validators, attempt);
        }
        Choice::OnlyMiss((issues, repairs)) => {
            check.extracted(repairs);
            check.issues.extend(issues);
        }
        Choice::Several(count) => {
            check
                .issues
                .push(recovery::several_answers(count, &target.type_name, attempt))
        }
        Choice::NoneFits(found) => {
            check
                .issues
                .push(recovery::no_answer_fits(found, &target.type_name, attempt))
        }
        Choice::NoCandidate => check.issues.extend(not_json),
    }
    check
}

/// Verifies a reply for a runtime shape, with the caller's schema when one was given,
/// reading it as the reference documents specify ([`AnswerRecovery::Off`]).
///
/// Steps 1 to 5 and 9 as for any target; the envelope rule has no exception (a runtime
/// shape has no members of its own), null never passes, and with a schema the value is
/// repaired against it as a typed value is against its type's (step 7's repairs, all
/// recorded), then checked against all of it, not just its bounds, since no serde type
/// judges its shape.
pub fn verify_value(
    reply: &ProviderReply,
    target: Option<&TargetSchema>,
    validators: &[Validator<Value>],
    attempt: u32,
) -> Verification<Value> {
    verify_value_with(reply, target, validators, attempt, AnswerRecovery::Off)
}

/// [`verify_value`], with answer recovery as `recovery` says. A candidate reads as the
/// runtime shape when it meets the whole schema (any JSON value does without one).
pub fn verify_value_with(
    reply: &ProviderReply,
    target: Option<&TargetSchema>,
    validators: &[Validator<Value>],
    attempt: u32,
    recovery: AnswerRecovery,
) -> Verification<Value> {
    let mut check = Verification::new(reply);
    let Some(text) = check.read_text(reply, attempt) else {
        return check;
    };
    let members = target.map_or_else(Vec::new, |t| steps::bare_enum_members(&t.full));
    let json = match steps::read_json(text, &members, attempt, &mut check.repairs) {
        Ok(json) => json,
        Err(not_json) if recovery.is_on() => {
            return recover_value(check, not_json, &reply.text, target, validators, attempt);
        }
        Err(not_json) => {
            check.issues.extend(not_json);
            return check;
        }
    };
    let read = read_as_value(json, target, attempt, &mut check.repairs);
    check.finish_value(read, validators, attempt);
    check
}

/// What steps 6 to 8 made of a runtime reply: the value and what the schema says of it.
type ValueRead = Result<(Value, Vec<ResultIssue>), Vec<ResultIssue>>;

/// Steps 6 to 8 for a runtime shape: the envelope, null, the schema-guided repairs and
/// the whole schema's check.
fn read_as_value(
    json: Value,
    target: Option<&TargetSchema>,
    attempt: u32,
    repairs: &mut Vec<Repair>,
) -> ValueRead {
    let value = steps::unwrap_envelope(json, EnvelopeRule::Strict, target, attempt, repairs)
        .map_err(|issue| vec![issue])?;
    if value.is_null() {
        return Err(vec![steps::null_runtime_value(attempt)]);
    }
    let Some(target) = target else {
        return Ok((value, Vec::new()));
    };
    let value = repair_runtime_value(value, target, repairs);
    Ok(schema_rules::check_against_full_schema(
        &target.full,
        value,
        Scope::Everything,
        attempt,
    ))
}

impl Verification<Value> {
    /// Step 9 for a runtime read: the schema's findings, then the validators.
    fn finish_value(&mut self, read: ValueRead, validators: &[Validator<Value>], attempt: u32) {
        match read {
            Ok((value, issues)) => {
                self.issues.extend(issues);
                self.accept(value, validators, attempt);
            }
            Err(issues) => self.issues.extend(issues),
        }
    }
}

/// Step 5 with answer recovery, for a runtime shape: the one candidate of `reply` that
/// meets the shape is the reply.
fn recover_value(
    mut check: Verification<Value>,
    not_json: Vec<ResultIssue>,
    reply: &str,
    target: Option<&TargetSchema>,
    validators: &[Validator<Value>],
    attempt: u32,
) -> Verification<Value> {
    let candidates = parse::json_candidates(reply);
    let (mut hits, mut misses) = (Vec::new(), Vec::new());
    for candidate in candidates.found {
        let mut repairs = candidate.repairs;
        match read_as_value(candidate.json, target, attempt, &mut repairs) {
            Ok((value, issues)) if issues.is_empty() => hits.push((value, repairs)),
            read => misses.push((read, repairs)),
        }
    }
    let same = |a: &(Value, Vec<Repair>), b: &(Value, Vec<Repair>)| a.0 == b.0;
    let type_name = target.map_or(crate::schema::RUNTIME_SCHEMA_NAME, |t| t.type_name.as_str());
    match recovery::choose(hits, misses, candidates.too_many, same) {
        Choice::One((value, repairs)) => {
            check.extracted(repairs);
            check.finish_value(Ok((value, Vec::new())), validators, attempt);
        }
        Choice::OnlyMiss((read, repairs)) => {
            check.extracted(repairs);
            check.finish_value(read, validators, attempt);
        }
        Choice::Several(count) => check
            .issues
            .push(recovery::several_answers(count, type_name, attempt)),
        Choice::NoneFits(found) => check
            .issues
            .push(recovery::no_answer_fits(found, type_name, attempt)),
        Choice::NoCandidate => check.issues.extend(not_json),
    }
    check
}

/// The schema-guided repairs of step 7 (key case, numbers in strings, enum-member
/// case) for a runtime shape, made against the caller's schema and recorded as for a
/// typed target, so the full-schema check that follows judges the repaired value.
///
/// What the walk finds but cannot repair is left to that check, which reports every
/// violation of the schema (the walk's findings would only say part of it again).
fn repair_runtime_value(value: Value, target: &TargetSchema, repairs: &mut Vec<Repair>) -> Value {
    let (mut value, conforms) = if target.strict_compatible {
        schema_rules::conforms_in_envelope(&target.strict, value)
    } else {
        (value, false)
    };
    if conforms {
        return value;
    }
    let full: &Value = &target.full;
    let walked = parse::repair_against_schema(
        &mut value,
        full,
        schema_nav::inner_schema(full),
        &format!("/{ENVELOPE_PROPERTY}"),
        Some(&target.type_name),
    );
    repairs.extend(walked.repairs);
    value
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
