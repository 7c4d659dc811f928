//! Every public error type of the three crates prints one sentence from `main`.
//!
//! `fn main() -> Result<(), Box<dyn Error>>` prints a returned error with `Debug`, as do
//! `unwrap()`, `expect()` and `tracing`'s `?error`: a derived `Debug` would print a struct
//! dump there (`Error: DecisionError { kind: InvalidResponse, status: None, … }`). The
//! public error types are read from the checked-in surface lists (`docs/public-api/`,
//! kept true by `public_surface.rs`): any type that implements `std::error::Error` or
//! derives `thiserror::Error`. The test fails when one derives `Debug`, and when one has no
//! instance below, so a new error type cannot skip the check.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use intent_rs::batch::BatchError;
use intent_rs::cache::CacheUnavailable;
use intent_rs::collection::{CollectionError, ItemError};
use intent_rs::decision::{DecisionError, SystemOneConfigError};
use intent_rs::fleet::RedisError;
use intent_rs::input::InputError;
use intent_rs::limits::{QuotaUnavailable, RateLimitError};
use intent_rs::media::{MediaError, MediaRefusal};
use intent_rs::provider::CassetteError;
use intent_rs::provider::{ProviderConfigError, ProviderError, ProviderErrorKind};
use intent_rs::result::Cause;
use intent_rs::schema::SchemaError;
use intent_rs::{AIResult, BuildError, IssueSource, ResultIssue, Usage};
use intent_rs::{Cost, CostTally, PriceTable, UnknownProvider};
use intent_rs_eval::EvalError;

/// What a provider wrote in its error body: it may quote the request, so no error shows it.
const PROVIDER_WORDS: &str = "SECRET-STATE-from-the-provider";

/// The public error types of one surface list, by their last path segment, with the
/// derives each declares.
fn error_types(list: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(format!(
        "{}/../docs/public-api/{list}.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("the surface list");
    let mut derives: BTreeMap<String, String> = BTreeMap::new();
    let mut errors: BTreeSet<String> = BTreeSet::new();
    for line in text.lines() {
        let mut columns = line.split("  ");
        let (Some(path), Some(what)) = (columns.next(), columns.next()) else {
            continue;
        };
        let name = path.rsplit("::").next().unwrap_or(path).to_owned();
        if what == "struct" || what == "enum" {
            let attributes = columns.next().unwrap_or_default().to_owned();
            if attributes.contains("thiserror::Error") {
                errors.insert(name.clone());
            }
            derives.insert(name, attributes);
        } else if what.starts_with("impl std::error::Error for ") {
            errors.insert(name);
        }
    }
    errors
        .into_iter()
        .map(|name| {
            let attributes = derives.get(&name).cloned().unwrap_or_default();
            (name, attributes)
        })
        .collect()
}

/// One instance of every public error type, by name.
fn instances() -> Vec<(&'static str, Box<dyn std::error::Error>)> {
    let provider_error = ProviderError::new(
        ProviderErrorKind::InvalidRequest,
        "openai",
        format!("Invalid value in the request: {PROVIDER_WORDS}"),
    )
    .from_provider_words()
    .with_status(400)
    .with_request_id("req-7");
    let intent_error = AIResult::<u8> {
        value: None,
        issues: vec![ResultIssue::new(
            IssueSource::Verification,
            "the reply was empty",
            1,
        )],
        attempts: Vec::new(),
        usage: Usage::default(),
        elapsed: Duration::ZERO,
    }
    .into_result()
    .expect_err("a failed call");
    vec![
        ("BuildError", Box::new(BuildError::MissingProvider)),
        ("IntentError", Box::new(intent_error)),
        ("ProviderError", Box::new(provider_error.clone())),
        (
            "ProviderConfigError",
            Box::new(ProviderConfigError::NoProvider),
        ),
        (
            "DecisionError",
            Box::new(DecisionError::from_provider(&provider_error)),
        ),
        (
            "SystemOneConfigError",
            Box::new(SystemOneConfigError::NotConfigured),
        ),
        (
            "InputError",
            Box::new(InputError::TooLarge { actual: 10, max: 5 }),
        ),
        ("BatchError", Box::new(BatchError::TooManyItems { max: 1 })),
        (
            "CacheUnavailable",
            Box::new(CacheUnavailable {
                reason: "Redis did not answer".to_owned(),
            }),
        ),
        (
            "RateLimitError",
            Box::new(RateLimitError::SharedQuotaUnavailable {
                reason: "Redis did not answer".to_owned(),
            }),
        ),
        (
            "QuotaUnavailable",
            Box::new(QuotaUnavailable {
                reason: "Redis did not answer".to_owned(),
            }),
        ),
        (
            "RedisError",
            Box::new(RedisError::Timeout(Duration::from_millis(250))),
        ),
        ("MediaError", Box::new(MediaError::Unrecognised)),
        (
            "MediaRefusal",
            Box::new(MediaRefusal::DocumentUrl {
                provider: "openai".to_owned(),
            }),
        ),
        (
            "SchemaError",
            Box::new(SchemaError::NotAnObject { found: "a number" }),
        ),
        (
            "Cause",
            Box::new(Cause::new(std::io::Error::other("the disk is full"))),
        ),
        (
            "EvalError",
            Box::new(EvalError::JudgeNotFound("tone".into())),
        ),
        (
            "CostParseError",
            Box::new("a lot".parse::<Cost>().expect_err("not an amount")),
        ),
        (
            "UnpricedModels",
            Box::new(
                CostTally {
                    priced: Cost::from_cents(3),
                    unpriced_models: vec!["house-model".to_owned()],
                }
                .total()
                .expect_err("an unpriced model"),
            ),
        ),
        (
            "PriceTableError",
            Box::new(PriceTable::from_litellm_json("not json").expect_err("not a table")),
        ),
        (
            "UnknownProvider",
            Box::new(UnknownProvider {
                client: "SupportClient".to_owned(),
                name: "cheap".to_owned(),
                known: vec!["strong".to_owned()],
            }),
        ),
        (
            "CassetteError",
            Box::new(CassetteError::Missing {
                path: "tests/cassettes/missing.jsonl".into(),
            }),
        ),
        (
            "CollectionError",
            Box::new(CollectionError::Setting {
                setting: "concurrency",
                problem: "is 0, so no item would ever be asked; give 1 or more".to_owned(),
            }),
        ),
        (
            "CollectionError",
            Box::new(CollectionError::Batch(BatchError::NoBatchApi {
                provider: "compatible".to_owned(),
            })),
        ),
        (
            "ItemError",
            Box::new(ItemError::from(DecisionError::invalid_response(
                "the response has no answer of the right kind to `filter`",
            ))),
        ),
    ]
}

#[test]
fn no_public_error_type_derives_debug() {
    for list in ["intent-rs", "intent-rs-eval", "intent-rs-macros"] {
        for (name, attributes) in error_types(list) {
            assert!(
                !attributes.contains("Debug"),
                "{list}: {name} derives Debug ({attributes}); implement Debug as its sentence \
                 (`debug_as_message!`), so that `main` prints what to do"
            );
        }
    }
}

#[test]
fn every_public_error_type_has_an_instance_here() {
    let listed: BTreeSet<String> = ["intent-rs", "intent-rs-eval", "intent-rs-macros"]
        .into_iter()
        .flat_map(|list| error_types(list).into_keys())
        .collect();
    let here: BTreeSet<String> = instances()
        .into_iter()
        .map(|(name, _)| name.to_owned())
        .collect();
    assert_eq!(
        listed, here,
        "the public error types and the instances of this test differ: add the new type's \
         instance to `instances()`"
    );
}

#[test]
fn every_public_error_prints_its_sentence_from_main() {
    for (name, error) in instances() {
        let shown = format!("{error:?}");
        let sentence = error.to_string();
        assert!(
            shown.starts_with(&sentence),
            "{name}: Debug is not the sentence: {shown}"
        );
        // The sentence, then at most the kind and a request id: never a struct dump.
        let rest = &shown[sentence.len()..];
        assert!(
            !rest.contains('{') && !rest.contains(": "),
            "{name}: Debug adds more than the kind: {shown}"
        );
        assert!(sentence.contains(' '), "{name}: not a sentence: {sentence}");
        for printed in [&shown, &sentence, &format!("{error:#?}")] {
            assert!(
                !printed.contains(PROVIDER_WORDS),
                "{name} shows the provider's words: {printed}"
            );
        }
    }
}

#[test]
fn errors_with_a_kind_print_it_after_the_sentence() {
    let shown: BTreeMap<&str, String> = instances()
        .into_iter()
        .map(|(name, error)| (name, format!("{error:?}")))
        .collect();
    assert!(shown["IntentError"].ends_with("[verification_exhausted]"));
    assert!(shown["ProviderError"].ends_with("[invalid_request]"));
    assert!(shown["DecisionError"].contains("[invalid_request, request id req-7"));
}
