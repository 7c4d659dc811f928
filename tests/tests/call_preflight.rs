//! What is refused before any request is sent: an empty intent, an empty model name, and a
//! runtime schema that is not a valid JSON Schema or is nested too deep to walk.

use intent_rs::provider::{OpenAiCompatible, ScriptedProvider};
use intent_rs::schema::MAX_RUNTIME_SCHEMA_DEPTH;
use intent_rs::{AIResult, IntentClient, IntentOptions, IssueSource};
use serde_json::{Map, Value, json};

fn client_with(provider: ScriptedProvider) -> IntentClient {
    IntentClient::builder().provider(provider).build().unwrap()
}

/// The call failed with one input issue containing `words`, and sent nothing.
fn assert_refused<T: std::fmt::Debug>(
    result: &AIResult<T>,
    provider: &ScriptedProvider,
    words: &str,
) {
    assert!(!result.is_success(), "{result:?}");
    assert!(result.attempts.is_empty(), "{:?}", result.attempts);
    assert_eq!(result.issues.len(), 1, "{:?}", result.issues);
    assert_eq!(result.issues[0].source, IssueSource::Input);
    assert!(
        result.issues[0].message.contains(words),
        "{}",
        result.issues[0].message
    );
    assert!(provider.requests().is_empty(), "a request was sent");
}

#[tokio::test]
async fn an_empty_intent_is_refused_before_sending() {
    for intent in ["", "   \n"] {
        let provider = ScriptedProvider::new([r#"{"value": 3}"#]);
        let result = client_with(provider.clone())
            .transform("one two three", intent, IntentOptions::<u32>::new())
            .await;
        assert_refused(&result, &provider, "The intent is empty");
        let text = client_with(provider.clone())
            .transform("one two three", intent, IntentOptions::<String>::new())
            .await;
        assert_refused(&text, &provider, "The intent is empty");
    }
}

#[tokio::test]
async fn an_empty_model_name_is_refused_before_sending() {
    let provider = ScriptedProvider::new([r#"{"value": 3}"#]);
    let from_options = client_with(provider.clone())
        .transform(
            "one two three",
            "Count the words",
            IntentOptions::<u32>::new().model(""),
        )
        .await;
    assert_refused(&from_options, &provider, "The model name is empty");

    let from_builder = IntentClient::builder()
        .provider(provider.clone())
        .model(" ")
        .build()
        .unwrap()
        .transform(
            "one two three",
            "Count the words",
            IntentOptions::<u32>::new(),
        )
        .await;
    assert_refused(&from_builder, &provider, "The model name is empty");

    // A provider whose default model is empty, and a call that names none: refused before
    // the provider is reached (nothing listens at this address).
    let no_default = IntentClient::builder()
        .provider(OpenAiCompatible::new("http://127.0.0.1:9/v1", ""))
        .build()
        .unwrap();
    let result = no_default
        .transform(
            "one two three",
            "Count the words",
            IntentOptions::<u32>::new(),
        )
        .await;
    assert!(result.attempts.is_empty());
    assert!(
        result.issues[0]
            .message
            .contains("`openai-compatible` provider's default"),
        "{}",
        result.issues[0].message
    );
    assert_eq!(no_default.total_model_calls(), 0);
}

#[tokio::test]
async fn a_runtime_schema_that_is_not_a_valid_json_schema_is_refused_before_sending() {
    let cases = [
        (json!({"type": "strnig"}), "strnig"),
        (
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}),
            "Missing",
        ),
        (
            json!({"type": "string", "pattern": "(unclosed"}),
            "(unclosed",
        ),
        (
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": "five"}}}),
            "five",
        ),
    ];
    for (schema, named) in cases {
        let provider = ScriptedProvider::new([r#"{"value": "x"}"#]);
        let result = client_with(provider.clone())
            .transform_value(&"x", "Answer", Some(&schema), IntentOptions::new())
            .await;
        assert_refused(&result, &provider, "not a valid JSON Schema");
        assert!(
            result.issues[0].message.contains(named),
            "{schema}: {}",
            result.issues[0].message
        );
    }
    // A valid schema still goes through.
    let provider = ScriptedProvider::new([r#"{"value": "x"}"#]);
    let result = client_with(provider.clone())
        .transform_value(
            &"x",
            "Answer",
            Some(&json!({"type": "string", "pattern": "^x$"})),
            IntentOptions::new(),
        )
        .await;
    assert_eq!(result.value, Some(json!("x")));
}

/// `levels` nested array schemas, built without recursion (`json!` would serialize the
/// interpolated value recursively).
fn nested_arrays(levels: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..levels {
        let mut level = Map::new();
        level.insert("type".to_owned(), json!("array"));
        level.insert("items".to_owned(), schema);
        schema = Value::Object(level);
    }
    schema
}

/// Drops a deeply nested value one level at a time: the default drop recurses.
fn dismantle(mut value: Value) {
    while let Some(inner) = value
        .as_object_mut()
        .and_then(|map| map.get_mut("items"))
        .map(Value::take)
    {
        value = inner;
    }
}

#[test]
fn a_runtime_schema_ten_thousand_levels_deep_is_refused_with_a_clear_error() {
    // The whole call on a 2 MiB stack (a spawned thread's default): nothing may walk the
    // schema recursively before refusing it.
    let outcome = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let provider = ScriptedProvider::new([r#"{"value": "x"}"#]);
            let deep = nested_arrays(10_000);
            let result = runtime.block_on(client_with(provider.clone()).transform_value(
                &"x",
                "Answer",
                Some(&deep),
                IntentOptions::new(),
            ));
            dismantle(deep);
            (result, provider)
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    let (result, provider) = outcome;
    assert_refused(
        &result,
        &provider,
        &format!("more than {MAX_RUNTIME_SCHEMA_DEPTH} levels deep"),
    );
}
