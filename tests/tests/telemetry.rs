//! Telemetry: the spans, attributes and events of a call as a subscriber sees them, for a
//! success, a retried call, provider errors (scripted and over HTTP) and a judged call;
//! content only when asked, and never an API key. A `fmt` subscriber's lines name the
//! method and the model.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use intent_rs::decision::{DecisionEvaluator, FailureKind, LogprobDecisionClient, SystemOneClient};
use intent_rs::limits::RetryPolicy;
use intent_rs::media::{Document, Image, ImageDetail};
use intent_rs::pricing::{ModelPrice, TokenRates};
use intent_rs::provider::{
    Anthropic, OpenAi, ProviderError, ProviderErrorKind, ProviderReply, ScriptedProvider,
    ScriptedReply,
};
use intent_rs::{
    AIResult, Binary, Cost, DecisionError, IntentClient, IntentError, IntentOptions, IntentStream,
    Partial, PriceTable, StrictCompatible, Usage, intents,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

// ---------------------------------------------------------------------------------------
// A capturing layer: every span with its fields and parent, every event with its span.

#[derive(Debug, Clone)]
struct SpanData {
    id: u64,
    parent: Option<u64>,
    name: &'static str,
    fields: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
struct EventData {
    span: Option<u64>,
    level: tracing::Level,
    target: String,
    fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Captured {
    spans: Vec<SpanData>,
    events: Vec<EventData>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Captured>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = ctx
            .span(id)
            .and_then(|span| span.parent())
            .map(|parent| parent.id().into_u64());
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .spans
            .push(SpanData {
                id: id.into_u64(),
                parent,
                name: attrs.metadata().name(),
                fields,
            });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut captured = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Ids are reused once a span closes; the latest span with the id is this one.
        if let Some(span) = captured
            .spans
            .iter_mut()
            .rev()
            .find(|span| span.id == id.into_u64())
        {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let span = ctx.event_span(event).map(|span| span.id().into_u64());
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .events
            .push(EventData {
                span,
                level: *event.metadata().level(),
                target: event.metadata().target().to_owned(),
                fields,
            });
    }
}

/// The `fmt` subscriber's output, as a newcomer sees it in a terminal.
#[derive(Clone, Default)]
struct Terminal(Arc<Mutex<Vec<u8>>>);

impl io::Write for Terminal {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The process-wide capture and terminal. Global rather than per test: `tracing` caches
/// whether a call site is enabled, and per-thread subscribers race with parallel tests.
/// Each test finds its own call by a method name no other test uses.
fn capture() -> &'static (Capture, Terminal) {
    static CAPTURE: OnceLock<(Capture, Terminal)> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        let terminal = Terminal::default();
        let fmt = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer({
                let terminal = terminal.clone();
                move || terminal.clone()
            });
        let subscriber = Registry::default().with(capture.clone()).with(fmt);
        tracing::subscriber::set_global_default(subscriber).unwrap();
        (capture, terminal)
    })
}

/// One call as captured: its span, the spans under it and the events in any of them.
#[derive(Debug)]
struct Call {
    span: SpanData,
    requests: Vec<SpanData>,
    events: Vec<EventData>,
}

impl Call {
    /// The call whose `intent.method` is `method`.
    fn named(method: &str) -> Call {
        let captured = capture().0.0.lock().unwrap_or_else(PoisonError::into_inner);
        let calls: Vec<&SpanData> = captured
            .spans
            .iter()
            .filter(|s| s.name == "intent" && field(s, "intent.method") == Some(method))
            .collect();
        assert_eq!(calls.len(), 1, "calls named {method}: {calls:#?}");
        let span = calls[0].clone();
        let requests: Vec<SpanData> = captured
            .spans
            .iter()
            .filter(|s| s.parent == Some(span.id))
            .cloned()
            .collect();
        let ids: Vec<u64> = requests.iter().map(|s| s.id).chain([span.id]).collect();
        let events = captured
            .events
            .iter()
            .filter(|e| e.span.is_some_and(|id| ids.contains(&id)))
            .cloned()
            .collect();
        Call {
            span,
            requests,
            events,
        }
    }

    fn events(&self, message: &str) -> Vec<&EventData> {
        self.events
            .iter()
            .filter(|e| e.fields.get("message").map(String::as_str) == Some(message))
            .collect()
    }

    /// Every field value recorded anywhere in the call, joined.
    fn all_text(&self) -> String {
        let spans = std::iter::once(&self.span).chain(&self.requests);
        let span_values = spans.flat_map(|s| s.fields.values());
        let event_values = self.events.iter().flat_map(|e| e.fields.values());
        span_values
            .chain(event_values)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn field<'a>(span: &'a SpanData, name: &str) -> Option<&'a str> {
    span.fields.get(name).map(String::as_str)
}

fn event_field<'a>(event: &'a EventData, name: &str) -> Option<&'a str> {
    event.fields.get(name).map(String::as_str)
}

const CONTENT_FIELDS: [&str; 3] = [
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
];

// ---------------------------------------------------------------------------------------
// The client under test

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
pub enum Mood {
    Happy,
    Sad,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible)]
pub struct Person {
    pub name: String,
    pub age: u32,
}

fn adult(person: &Person) -> Result<(), String> {
    if person.age >= 18 {
        Ok(())
    } else {
        Err("age must be at least 18".to_owned())
    }
}

#[intents]
pub trait Telemetered {
    #[intent("Classify the mood", temperature = 0.25)]
    async fn classify(&self, text: &str) -> AIResult<Mood>;

    #[intent("Extract the adult")]
    #[validate(adult)]
    async fn adult_person(&self, text: &str) -> AIResult<Person>;

    #[intent("Classify the mood again")]
    async fn classify_failing(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood, judged")]
    #[guardrail(require_judge)]
    async fn classify_judged(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood, judged behind a decision gate")]
    #[guardrail(require_judge)]
    async fn classify_gated(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood, gated by a decision model")]
    #[guardrail(require_judge)]
    async fn classify_gated_by_decision_model(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood, gated by a broken decision model")]
    #[guardrail(require_judge)]
    async fn classify_gated_by_broken_decision_model(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood, quietly")]
    async fn classify_quietly(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood at a price")]
    async fn classify_priced(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood, with content")]
    async fn classify_with_content(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood, with content, twice")]
    async fn classify_again_with_content(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood over HTTP")]
    async fn classify_over_http(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood for the log")]
    async fn classify_logged(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood for the terminal")]
    async fn classify_in_terminal(&self, text: &str) -> Result<Mood, IntentError>;

    #[intent("Classify the mood, streamed", temperature = 0.25)]
    fn classify_streamed(&self, text: &str) -> IntentStream<Mood>;

    #[intent("Classify the mood with OpenAI")]
    async fn classify_ids_openai(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood with OpenAI, streamed")]
    fn classify_ids_openai_streamed(&self, text: &str) -> IntentStream<Mood>;

    #[intent("Classify the mood with Anthropic")]
    async fn classify_ids_anthropic(&self, text: &str) -> AIResult<Mood>;

    #[intent("Classify the mood with Anthropic, streamed")]
    fn classify_ids_anthropic_streamed(&self, text: &str) -> IntentStream<Mood>;

    #[intent("Is the customer happy?")]
    async fn is_happy(&self, text: &str) -> Result<Binary, DecisionError>;

    #[intent("Is the customer angry?")]
    async fn is_angry(&self, text: &str) -> Result<Binary, DecisionError>;

    #[intent("Classify the mood of the photos")]
    async fn classify_photos(
        &self,
        note: &str,
        photos: Vec<Image>,
        contract: Option<Document>,
    ) -> AIResult<Mood>;

    #[intent("Classify the mood of no photos")]
    async fn classify_no_photos(&self, note: &str, photos: Vec<Image>) -> AIResult<Mood>;
}

fn client_for(provider: ScriptedProvider) -> TelemeteredClient {
    capture();
    TelemeteredClient::new(IntentClient::builder().provider(provider).build().unwrap())
}

fn reply(text: &str) -> ScriptedReply {
    ScriptedReply::Reply(ProviderReply {
        text: text.to_owned(),
        stop_reason: Some("stop".to_owned()),
        usage: Usage {
            input_tokens: 120,
            output_tokens: 7,
            cached_input_tokens: 100,
            cache_write_input_tokens: 12,
            reasoning_tokens: 5,
        },
        model: "mood-model-2026-01-01".to_owned(),
        request_id: Some("req-42".to_owned()),
        response_id: Some("chatcmpl-42".to_owned()),
        ..ProviderReply::default()
    })
}

// ---------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn a_successful_call_is_one_call_span_with_one_chat_span() {
    let provider = ScriptedProvider::new([reply(r#"{"value": "Happy"}"#)]).with_model("mood-model");
    let result = client_for(provider).classify("What a day!").await;
    assert!(result.is_success(), "{result:?}");

    let call = Call::named("classify");
    let span = &call.span;
    assert_eq!(field(span, "otel.name"), Some("intent classify"));
    assert!(
        field(span, "intent.target.type").is_some_and(|t| t.ends_with("Mood")),
        "{span:?}"
    );
    assert_eq!(field(span, "gen_ai.provider.name"), Some("scripted"));
    assert_eq!(field(span, "gen_ai.request.model"), Some("mood-model"));
    assert_eq!(field(span, "intent.outcome"), Some("success"));
    assert_eq!(field(span, "intent.attempts"), Some("1"));
    assert_eq!(field(span, "intent.model_calls"), Some("1"));
    assert_eq!(field(span, "error.type"), None);
    // The model has no price in the shipped table: no cost, and the span says why.
    assert_eq!(field(span, "intent.cost.usd"), None);
    assert_eq!(
        field(span, "intent.cost.unpriced_models"),
        Some("mood-model-2026-01-01")
    );

    assert_eq!(call.requests.len(), 1, "{call:#?}");
    let chat = &call.requests[0];
    assert_eq!(chat.name, "chat");
    let expected = [
        ("otel.name", "chat mood-model"),
        ("otel.kind", "client"),
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "scripted"),
        ("gen_ai.request.model", "mood-model"),
        ("gen_ai.request.temperature", "0.25"),
        ("gen_ai.output.type", "json"),
        ("gen_ai.response.model", "mood-model-2026-01-01"),
        ("gen_ai.response.id", "chatcmpl-42"),
        ("intent.request.id", "req-42"),
        ("gen_ai.response.finish_reasons", r#"["stop"]"#),
        ("gen_ai.usage.input_tokens", "120"),
        ("gen_ai.usage.output_tokens", "7"),
        ("gen_ai.usage.cache_read.input_tokens", "100"),
        ("gen_ai.usage.cache_creation.input_tokens", "12"),
        ("gen_ai.usage.reasoning.output_tokens", "5"),
        ("intent.request.kind", "answer"),
        ("intent.attempt", "1"),
    ];
    for (name, value) in expected {
        assert_eq!(field(chat, name), Some(value), "{name} in {chat:#?}");
    }
    // A scripted model is not reached over the network; nothing failed.
    for absent in [
        "server.address",
        "server.port",
        "error.type",
        "gen_ai.request.max_tokens",
    ] {
        assert_eq!(field(chat, absent), None, "{absent} in {chat:#?}");
    }

    let verified = call.events("reply verified");
    assert_eq!(verified.len(), 1, "{call:#?}");
    assert_eq!(event_field(verified[0], "intent.passed"), Some("true"));
    assert_eq!(
        event_field(verified[0], "intent.verify.step"),
        Some("passed")
    );
    assert_eq!(call.events("attempt finished").len(), 1);
}

#[tokio::test]
async fn the_call_span_records_what_the_call_cost() {
    capture();
    let provider = ScriptedProvider::new([reply(r#"{"value": "Happy"}"#)]);
    // The reply's model, undated: $1 per million tokens in, $4 out, cached and
    // cache-write tokens at the input rate.
    let per_million = |dollars: u64| Cost::from_pico_usd(dollars * 1_000_000);
    let mut prices = PriceTable::empty();
    prices.insert(
        "mood-model",
        ModelPrice::new(TokenRates::new(per_million(1), per_million(4))),
    );
    let client = IntentClient::builder()
        .provider(provider)
        .price_table(prices)
        .build()
        .unwrap();
    let result = TelemeteredClient::new(client)
        .classify_priced("What a day!")
        .await;
    // 120 × $1/M + 7 × $4/M.
    assert_eq!(result.cost(), Ok("0.000148".parse().unwrap()));
    let call = Call::named("classify_priced");
    assert_eq!(field(&call.span, "intent.cost.usd"), Some("0.000148"));
    assert_eq!(field(&call.span, "intent.cost.unpriced_models"), None);
}

#[tokio::test]
async fn a_streamed_call_has_the_same_call_span_and_chat_span() {
    let provider = ScriptedProvider::new([reply(r#"{"value": "Happy"}"#)])
        .with_model("mood-model")
        .with_stream_chunks(3, None);
    let result = client_for(provider)
        .classify_streamed("What a day!")
        .finish()
        .await;
    assert!(result.is_success(), "{result:?}");

    let call = Call::named("classify_streamed");
    assert_eq!(
        field(&call.span, "otel.name"),
        Some("intent classify_streamed")
    );
    assert_eq!(field(&call.span, "intent.outcome"), Some("success"));
    assert_eq!(field(&call.span, "intent.model_calls"), Some("1"));
    assert_eq!(call.requests.len(), 1, "{call:#?}");
    let chat = &call.requests[0];
    let expected = [
        ("otel.name", "chat mood-model"),
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.request.temperature", "0.25"),
        ("gen_ai.response.model", "mood-model-2026-01-01"),
        ("gen_ai.response.id", "chatcmpl-42"),
        ("gen_ai.response.finish_reasons", r#"["stop"]"#),
        ("gen_ai.usage.input_tokens", "120"),
        ("gen_ai.usage.output_tokens", "7"),
        ("intent.request.kind", "answer"),
        ("intent.attempt", "1"),
    ];
    for (name, value) in expected {
        assert_eq!(field(chat, name), Some(value), "{name} in {chat:#?}");
    }
    assert_eq!(call.events("reply verified").len(), 1, "{call:#?}");
}

#[tokio::test]
async fn no_content_is_recorded_unless_asked() {
    let provider = ScriptedProvider::new([reply(r#"{"value": "Sad"}"#)]);
    client_for(provider)
        .classify_quietly("A SECRET-INPUT-7 day")
        .await;
    let call = Call::named("classify_quietly");
    for span in &call.requests {
        for name in CONTENT_FIELDS {
            assert_eq!(field(span, name), None, "{name} in {span:#?}");
        }
    }
    let text = call.all_text();
    assert!(!text.contains("SECRET-INPUT-7"), "{text}");
    assert!(!text.contains("Sad"), "{text}");
}

#[tokio::test]
async fn a_retried_call_has_a_chat_span_per_attempt_and_events_for_each_step() {
    let transient = ProviderError::new(ProviderErrorKind::RateLimited, "scripted", "slow down");
    let provider = ScriptedProvider::new([
        ScriptedReply::Error(transient),
        reply(r#"{"value": {"Name": "Ann", "age": 12}}"#),
        reply(r#"{"value": {"name": "Ann", "age": 41}}"#),
    ]);
    capture();
    let client = IntentClient::builder()
        .provider(provider)
        .retry_policy(RetryPolicy {
            max_retries: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        })
        .build()
        .unwrap();
    let result = TelemeteredClient::new(client).adult_person("Ann, 41").await;
    assert!(result.is_success(), "{result:?}");

    let call = Call::named("adult_person");
    assert_eq!(field(&call.span, "intent.attempts"), Some("2"));
    assert_eq!(field(&call.span, "intent.model_calls"), Some("3"));
    assert_eq!(field(&call.span, "intent.outcome"), Some("success"));

    // One span per model request, retries inside it: the first covers the rate-limited
    // try and its retry.
    let attempts: Vec<Option<&str>> = call
        .requests
        .iter()
        .map(|s| field(s, "intent.attempt"))
        .collect();
    assert_eq!(attempts, [Some("1"), Some("2")], "{call:#?}");
    let retries = call.events("transient provider failure; retrying");
    assert_eq!(retries.len(), 1, "{call:#?}");
    let retry = retries[0];
    assert_eq!(retry.span, Some(call.requests[0].id));
    assert_eq!(event_field(retry, "error.type"), Some("rate_limited"));
    assert_eq!(event_field(retry, "intent.retry"), Some("1"));
    assert!(
        event_field(retry, "intent.backoff_ms").is_some(),
        "{retry:?}"
    );
    // The retried request succeeded, so its span records no error.
    assert_eq!(field(&call.requests[0], "error.type"), None);

    let verified = call.events("reply verified");
    assert_eq!(verified.len(), 2, "{call:#?}");
    let first = verified[0];
    assert_eq!(first.span, Some(call.span.id));
    assert_eq!(event_field(first, "intent.attempt"), Some("1"));
    assert_eq!(event_field(first, "intent.passed"), Some("false"));
    assert_eq!(event_field(first, "intent.verify.step"), Some("validator"));
    assert_eq!(event_field(first, "intent.issues.validator"), Some("1"));
    assert_eq!(
        event_field(first, "intent.repairs"),
        Some("key_case_changed")
    );
    assert_eq!(event_field(verified[1], "intent.passed"), Some("true"));
    assert_eq!(event_field(verified[1], "intent.repairs"), Some(""));

    let finished = call.events("attempt finished");
    let passed: Vec<Option<&str>> = finished
        .iter()
        .map(|e| event_field(e, "intent.passed"))
        .collect();
    assert_eq!(passed, [Some("false"), Some("true")]);
}

#[tokio::test]
async fn a_provider_error_ends_the_request_span_and_the_call_span_in_error() {
    let error = ProviderError::new(ProviderErrorKind::Authentication, "scripted", "bad key");
    let provider = ScriptedProvider::new([ScriptedReply::Error(error)]);
    let result = client_for(provider).classify_failing("x").await;
    assert!(!result.is_success());
    let _ = result;

    let call = Call::named("classify_failing");
    assert_eq!(call.requests.len(), 1);
    let chat = &call.requests[0];
    assert_eq!(field(chat, "error.type"), Some("authentication"));
    assert_eq!(field(chat, "otel.status_code"), Some("error"));
    assert_eq!(field(chat, "gen_ai.response.model"), None);
    assert_eq!(field(&call.span, "intent.outcome"), Some("failure"));
    assert_eq!(field(&call.span, "error.type"), Some("authentication"));
    assert_eq!(field(&call.span, "otel.status_code"), Some("error"));
}

const SECRET_KEY: &str = "sk-telemetry-secret-0123456789";

#[tokio::test]
async fn over_http_the_server_is_named_and_the_api_key_is_never_recorded() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                      "code": "invalid_api_key"}
        })))
        .mount(&server)
        .await;
    capture();
    let provider = OpenAi::new(SECRET_KEY).with_base_url(format!("{}/v1", server.uri()));
    let client = IntentClient::builder()
        .provider(provider)
        .model("gpt-4o-mini")
        .record_content(true)
        .build()
        .unwrap();
    let result = TelemeteredClient::new(client)
        .classify_over_http("hello")
        .await;
    assert!(!result.is_success());

    let call = Call::named("classify_over_http");
    let chat = &call.requests[0];
    let address = server.address();
    assert_eq!(field(chat, "gen_ai.provider.name"), Some("openai"));
    assert_eq!(field(chat, "gen_ai.request.model"), Some("gpt-4o-mini"));
    assert_eq!(field(chat, "otel.name"), Some("chat gpt-4o-mini"));
    assert_eq!(
        field(chat, "server.address"),
        Some(address.ip().to_string().as_str())
    );
    assert_eq!(
        field(chat, "server.port"),
        Some(address.port().to_string().as_str())
    );
    assert_eq!(field(chat, "error.type"), Some("authentication"));
    // Content was asked for: the prompt is there, the key is not, anywhere.
    assert!(field(chat, "gen_ai.input.messages").is_some(), "{chat:#?}");
    let text = call.all_text();
    assert!(!text.contains(SECRET_KEY), "{text}");
    assert!(!text.contains("sk-telemetry"), "{text}");
}

#[tokio::test]
async fn content_is_recorded_in_the_conventions_json_when_asked() {
    capture();
    let provider = ScriptedProvider::new([reply(r#"{"value": "Happy"}"#)]);
    let client = IntentClient::builder()
        .provider(provider)
        .record_content(true)
        .build()
        .unwrap();
    TelemeteredClient::new(client)
        .classify_with_content("A sunny INPUT-99 day")
        .await;
    let call = Call::named("classify_with_content");
    let chat = &call.requests[0];
    let parse = |name| -> Value { serde_json::from_str(field(chat, name).unwrap()).unwrap() };

    let system = parse("gen_ai.system_instructions");
    assert_eq!(system[0]["type"], "text");
    assert!(
        system[0]["content"].as_str().unwrap().len() > 10,
        "{system}"
    );
    let input = parse("gen_ai.input.messages");
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["parts"][0]["type"], "text");
    assert!(
        input[0]["parts"][0]["content"]
            .as_str()
            .unwrap()
            .contains("A sunny INPUT-99 day"),
        "{input}"
    );
    let output = parse("gen_ai.output.messages");
    assert_eq!(
        output,
        json!([{
            "role": "assistant",
            "parts": [{"type": "text", "content": r#"{"value": "Happy"}"#}],
            "finish_reason": "stop"
        }])
    );
}

#[tokio::test]
async fn a_retry_records_every_turn_of_the_conversation() {
    capture();
    let first = r#"{"value": "Furious"}"#;
    let provider = ScriptedProvider::new([reply(first), reply(r#"{"value": "Happy"}"#)]);
    let client = IntentClient::builder()
        .provider(provider)
        .record_content(true)
        .build()
        .unwrap();
    TelemeteredClient::new(client)
        .classify_again_with_content("A sunny INPUT-77 day")
        .await;
    let call = Call::named("classify_again_with_content");
    assert_eq!(call.requests.len(), 2, "{call:#?}");
    let retry = &call.requests[1];
    let input: Value =
        serde_json::from_str(field(retry, "gen_ai.input.messages").unwrap()).unwrap();
    let roles: Vec<&str> = input
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| turn["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"], "{input}");
    assert_eq!(input[1]["parts"][0]["content"], first, "{input}");
    assert!(
        input[2]["parts"][0]["content"]
            .as_str()
            .unwrap()
            .contains("expected one of"),
        "the problems list the members: {input}"
    );
}

#[tokio::test]
async fn a_decision_gate_request_is_a_decision_span_of_the_call() {
    capture();
    let model = ScriptedProvider::new([reply(r#"{"value": "Happy"}"#)]);
    let gate_model =
        ScriptedProvider::new([ScriptedReply::logprobs([("yes", -0.01), ("no", -5.0)])])
            .with_max_top_logprobs(Some(20))
            .with_model("gate-model");
    let judge = ScriptedProvider::new([r#"{"passes": true, "problems": []}"#]);
    let client = IntentClient::builder()
        .provider(model)
        .judge_provider(judge)
        .decision_gate(DecisionEvaluator::new(LogprobDecisionClient::new(
            gate_model,
        )))
        .build()
        .unwrap();
    let result = TelemeteredClient::new(client)
        .classify_gated("What a day!")
        .await;
    assert_eq!(result.value, Some(Mood::Happy), "{result:?}");

    let call = Call::named("classify_gated");
    let kinds: Vec<Option<&str>> = call
        .requests
        .iter()
        .map(|s| field(s, "intent.request.kind"))
        .collect();
    assert_eq!(
        kinds,
        [Some("answer"), Some("decision"), Some("judge")],
        "{call:#?}"
    );
    let decision = &call.requests[1];
    assert_eq!(field(decision, "otel.name"), Some("chat gate-model"));
    assert_eq!(field(decision, "gen_ai.provider.name"), Some("scripted"));
    assert_eq!(field(decision, "gen_ai.request.max_tokens"), Some("1"));
    assert_eq!(field(decision, "gen_ai.output.type"), Some("text"));
    assert!(
        field(decision, "gen_ai.usage.input_tokens").is_some(),
        "{decision:#?}"
    );
    // A decision is not an attempt of its own.
    assert_eq!(field(decision, "intent.attempt"), None, "{decision:#?}");
}

/// A client gated by a System One server answering `is_yes` with `noul`.
async fn gated_by_decision_model(noul: f64) -> (TelemeteredClient, MockServer) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-typesafe-request-id", "req_7")
                .set_body_json(json!({
                    "model": "jev-1.14.0",
                    "answers": {"satisfies_intent": {"type": "noul", "noul": noul}},
                    "usage": {"input_tokens": 365, "output_tokens": 1}
                })),
        )
        .mount(&server)
        .await;
    let gate = SystemOneClient::compatible(server.uri()).with_api_key("sk-gate-SECRET-9");
    let client = IntentClient::builder()
        .provider(ScriptedProvider::new([reply(r#"{"value": "Happy"}"#)]))
        .judge_provider(ScriptedProvider::new([
            r#"{"passes": true, "problems": []}"#,
        ]))
        .decision_gate(DecisionEvaluator::new(gate))
        .build()
        .unwrap();
    (TelemeteredClient::new(client), server)
}

#[tokio::test]
async fn a_decision_models_request_is_a_decision_span_of_the_call() {
    capture();
    let (client, _server) = gated_by_decision_model(0.97).await;
    let result = client.classify_gated_by_decision_model("What a day!").await;
    assert_eq!(result.value, Some(Mood::Happy), "{result:?}");

    let call = Call::named("classify_gated_by_decision_model");
    let decision = call
        .requests
        .iter()
        .find(|s| field(s, "intent.request.kind") == Some("decision"))
        .expect("a decision span under the call span");
    assert_eq!(field(decision, "otel.name"), Some("chat jev-latest"));
    assert_eq!(
        field(decision, "gen_ai.provider.name"),
        Some("systemone-compatible")
    );
    assert_eq!(field(decision, "gen_ai.request.model"), Some("jev-latest"));
    assert_eq!(field(decision, "gen_ai.response.model"), Some("jev-1.14.0"));
    // A System One reply has no id of its own: the host's request id is kept apart.
    assert_eq!(field(decision, "intent.request.id"), Some("req_7"));
    assert_eq!(field(decision, "gen_ai.response.id"), None);
    assert_eq!(field(decision, "gen_ai.usage.input_tokens"), Some("365"));
    assert_eq!(field(decision, "gen_ai.usage.output_tokens"), Some("1"));
    assert_eq!(field(decision, "server.address"), Some("127.0.0.1"));
    assert_eq!(field(decision, "error.type"), None);
}

#[tokio::test]
async fn a_decision_models_refused_reply_records_its_error_type_and_no_key() {
    capture();
    let (client, _server) = gated_by_decision_model(1.5).await;
    let result = client
        .classify_gated_by_broken_decision_model("What a day!")
        .await;
    assert!(!result.is_success());

    let call = Call::named("classify_gated_by_broken_decision_model");
    let decision = call
        .requests
        .iter()
        .find(|s| field(s, "intent.request.kind") == Some("decision"))
        .expect("a decision span under the call span");
    assert_eq!(field(decision, "error.type"), Some("invalid_response"));
    assert_eq!(field(decision, "otel.status_code"), Some("error"));
    assert!(!call.all_text().contains("sk-gate-SECRET-9"));
}

#[tokio::test]
async fn a_judged_call_has_a_judge_span_and_a_verdict_event() {
    capture();
    let model =
        ScriptedProvider::new([reply(r#"{"value": "Sad"}"#), reply(r#"{"value": "Happy"}"#)]);
    let judge = ScriptedProvider::new([
        r#"{"passes": false, "problems": ["The text is cheerful."]}"#,
        r#"{"passes": true, "problems": []}"#,
    ])
    .with_model("judge-model");
    let client = IntentClient::builder()
        .provider(model)
        .judge_provider(judge)
        .build()
        .unwrap();
    let result = TelemeteredClient::new(client)
        .classify_judged("What a day!")
        .await;
    assert_eq!(result.value, Some(Mood::Happy), "{result:?}");

    let call = Call::named("classify_judged");
    let kinds: Vec<Option<&str>> = call
        .requests
        .iter()
        .map(|s| field(s, "intent.request.kind"))
        .collect();
    assert_eq!(
        kinds,
        [Some("answer"), Some("judge"), Some("answer"), Some("judge")],
        "{call:#?}"
    );
    let judge_span = &call.requests[1];
    assert_eq!(field(judge_span, "otel.name"), Some("chat judge-model"));
    assert_eq!(
        field(judge_span, "gen_ai.request.model"),
        Some("judge-model")
    );
    assert_eq!(field(judge_span, "gen_ai.provider.name"), Some("scripted"));
    assert_eq!(field(judge_span, "gen_ai.request.temperature"), Some("0.0"));
    assert!(field(judge_span, "gen_ai.request.max_tokens").is_some());
    assert_eq!(field(judge_span, "gen_ai.output.type"), Some("json"));
    assert_eq!(
        field(judge_span, "gen_ai.response.model"),
        Some("judge-model")
    );
    assert_eq!(field(judge_span, "intent.attempt"), Some("1"));

    let verdicts: Vec<Option<&str>> = call
        .events("judge verdict")
        .iter()
        .map(|e| event_field(e, "intent.judge.verdict"))
        .collect();
    assert_eq!(verdicts, [Some("fail"), Some("pass")]);
    assert_eq!(field(&call.span, "intent.model_calls"), Some("4"));
}

#[tokio::test]
async fn a_transform_call_is_named_transform() {
    capture();
    let provider = ScriptedProvider::new([r#"{"value": 3}"#, r#"{"value": 4}"#]);
    let client = IntentClient::builder().provider(provider).build().unwrap();
    let options = IntentOptions::<u32>::new().method("count_words_telemetry");
    client
        .transform("one two three", "Count the words", options)
        .await;
    let named = Call::named("count_words_telemetry");
    assert_eq!(
        field(&named.span, "otel.name"),
        Some("intent count_words_telemetry")
    );

    // A plain `transform` carries no method: its exported name says so.
    let before = capture()
        .0
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .spans
        .len();
    client
        .transform("four", "Count the words", IntentOptions::<u32>::new())
        .await;
    let captured = capture().0.0.lock().unwrap_or_else(PoisonError::into_inner);
    let transform = captured.spans[before..]
        .iter()
        .find(|s| s.name == "intent" && field(s, "otel.name") == Some("transform"));
    assert!(transform.is_some(), "{:#?}", &captured.spans[before..]);
    assert_eq!(field(transform.unwrap(), "intent.method"), None);
}

#[tokio::test]
async fn a_fmt_subscriber_prints_attempts_inside_a_span_naming_the_method_and_model() {
    let provider = ScriptedProvider::new([r#"{"value": "Happy"}"#]).with_model("terminal-model");
    client_for(provider)
        .classify_in_terminal("What a day!")
        .await
        .unwrap();
    let terminal = String::from_utf8(
        capture()
            .1
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone(),
    )
    .unwrap();
    let line = terminal
        .lines()
        .find(|line| line.contains("classify_in_terminal") && line.contains("attempt finished"))
        .unwrap_or_else(|| panic!("no attempt line for the method:\n{terminal}"));
    assert!(
        line.contains(r#"intent.method="classify_in_terminal""#),
        "{line}"
    );
    assert!(
        line.contains(r#"gen_ai.request.model="terminal-model""#),
        "{line}"
    );
    assert!(line.contains("intent.attempt=1"), "{line}");
    // Token usage is on the line a person reads, not only on spans recorded after they open.
    let tokens = |name: &str| {
        line.split_whitespace()
            .find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    assert!(tokens("gen_ai.usage.input_tokens") > 0, "{line}");
    assert!(tokens("gen_ai.usage.output_tokens") > 0, "{line}");
}

#[tokio::test]
async fn at_info_and_debug_an_attempt_is_one_line_and_its_steps_are_at_trace() {
    let server = MockServer::start().await;
    let completion = |content: &str| {
        json!({
            "id": "chatcmpl-log", "object": "chat.completion", "model": "gpt-x",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5}
        })
    };
    // A rate limit retried inside attempt 1, whose reply then fails verification; attempt
    // 2 answers.
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({
            "error": {"message": "slow down", "type": "rate_limit_exceeded"}
        })))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(r#"{"value": "Angry"}"#)))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(r#"{"value": "Happy"}"#)))
        .mount(&server)
        .await;
    capture();
    // The model has a price, so that no warning of a missing one (said once per process,
    // so by whichever test meets the model first) joins the lines.
    let mut prices = PriceTable::empty();
    prices.insert(
        "gpt-x",
        ModelPrice::new(TokenRates::new(Cost::ZERO, Cost::ZERO)),
    );
    let client = IntentClient::builder()
        .provider(OpenAi::new("sk-log").with_base_url(format!("{}/v1", server.uri())))
        .price_table(prices)
        .retry_policy(RetryPolicy {
            max_retries: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        })
        .build()
        .unwrap();
    let result = TelemeteredClient::new(client)
        .classify_logged("What a day!")
        .await;
    assert!(result.is_success(), "{result:?}");

    let call = Call::named("classify_logged");
    // What `RUST_LOG=intent_rs=debug` prints (the HTTP client's own events aside).
    let shown: Vec<&EventData> = call
        .events
        .iter()
        .filter(|e| e.target.starts_with("intent_rs") && e.level <= tracing::Level::DEBUG)
        .collect();
    let messages: Vec<&str> = shown.iter().map(|e| e.fields["message"].as_str()).collect();
    assert_eq!(
        messages,
        ["attempt finished", "attempt finished"],
        "{call:#?}"
    );
    assert!(shown.iter().all(|e| e.level == tracing::Level::INFO));
    let first = shown[0];
    assert_eq!(event_field(first, "intent.passed"), Some("false"));
    assert_eq!(
        event_field(first, "intent.verify.step"),
        Some("verification")
    );
    assert_eq!(event_field(first, "intent.provider_retries"), Some("1"));
    assert_eq!(event_field(shown[1], "intent.verify.step"), Some("passed"));
    assert_eq!(event_field(shown[1], "intent.provider_retries"), None);
    // The steps are still there, at TRACE: the retry, each verification, the HTTP
    // exchanges.
    let traced = |message: &str| {
        call.events
            .iter()
            .filter(|e| e.level == tracing::Level::TRACE)
            .filter(|e| {
                e.fields
                    .get("message")
                    .is_some_and(|m| m.starts_with(message))
            })
            .count()
    };
    assert_eq!(
        traced("transient provider failure; retrying"),
        1,
        "{call:#?}"
    );
    assert_eq!(traced("reply verified"), 2, "{call:#?}");
    assert_eq!(traced("sending a"), 3, "{call:#?}");
}

// ---------------------------------------------------------------------------------------
// The completion's id and the request's id, over loopback HTTP

/// A Chat Completions server whose reply has the body id `chatcmpl-body-7` and the
/// header `x-request-id: req-header-7`, streamed or not (it answers as asked).
async fn openai_server() -> MockServer {
    let server = MockServer::start().await;
    let content = r#"{"value": "Happy"}"#;
    let streamed = [
        json!({"id": "chatcmpl-body-7", "object": "chat.completion.chunk", "model": "gpt-x",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": content}, "finish_reason": null}]}),
        json!({"id": "chatcmpl-body-7", "object": "chat.completion.chunk", "model": "gpt-x",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"id": "chatcmpl-body-7", "object": "chat.completion.chunk", "model": "gpt-x",
               "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}}),
    ]
    .iter()
    .map(|chunk| format!("data: {chunk}\n\n"))
    .chain(["data: [DONE]\n\n".to_owned()])
    .collect::<String>();
    let whole = json!({
        "id": "chatcmpl-body-7", "object": "chat.completion", "model": "gpt-x",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5}
    });
    mount_replies(&server, "x-request-id", streamed, whole).await;
    server
}

/// A Messages server whose reply has the message id `msg_body_7` and the header
/// `request-id: req-header-7`, streamed or not.
async fn anthropic_server() -> MockServer {
    let server = MockServer::start().await;
    let content = r#"{"value": "Happy"}"#;
    let streamed = [
        (
            "message_start",
            json!({"type": "message_start", "message": {
            "id": "msg_body_7", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [], "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": content}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]
    .iter()
    .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
    .collect::<String>();
    let whole = json!({
        "id": "msg_body_7", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": content}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 5}
    });
    mount_replies(&server, "request-id", streamed, whole).await;
    server
}

/// Answers a streamed request with `streamed` (server-sent events) and any other with
/// `whole`, both with the request id `req-header-7` in the header `header`.
async fn mount_replies(server: &MockServer, header: &str, streamed: String, whole: Value) {
    Mock::given(method("POST"))
        .and(wiremock::matchers::body_partial_json(
            json!({"stream": true}),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header(header, "req-header-7")
                .set_body_raw(streamed, "text/event-stream"),
        )
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header(header, "req-header-7")
                .set_body_json(whole),
        )
        .mount(server)
        .await;
}

/// The one chat span of the call `method`: the completion's id from the body, the
/// request's id from the header, each in its own attribute.
fn assert_ids(method: &str, completion_id: &str) {
    let call = Call::named(method);
    assert_eq!(
        field(&call.span, "intent.outcome"),
        Some("success"),
        "{call:#?}"
    );
    assert_eq!(call.requests.len(), 1, "{call:#?}");
    let chat = &call.requests[0];
    assert_eq!(
        field(chat, "gen_ai.response.id"),
        Some(completion_id),
        "{chat:#?}"
    );
    assert_eq!(
        field(chat, "intent.request.id"),
        Some("req-header-7"),
        "{chat:#?}"
    );
}

#[tokio::test]
async fn the_response_id_is_the_completions_id_over_openai_streamed_or_not() {
    capture();
    let server = openai_server().await;
    let provider = OpenAi::new(SECRET_KEY).with_base_url(format!("{}/v1", server.uri()));
    let client =
        TelemeteredClient::new(IntentClient::builder().provider(provider).build().unwrap());
    let result = client.classify_ids_openai("What a day!").await;
    assert_eq!(result.value, Some(Mood::Happy), "{result:?}");
    let streamed = client
        .classify_ids_openai_streamed("What a day!")
        .finish()
        .await;
    assert_eq!(streamed.value, Some(Mood::Happy), "{streamed:?}");
    assert_ids("classify_ids_openai", "chatcmpl-body-7");
    assert_ids("classify_ids_openai_streamed", "chatcmpl-body-7");
}

#[tokio::test]
async fn the_response_id_is_the_messages_id_over_anthropic_streamed_or_not() {
    capture();
    let server = anthropic_server().await;
    let provider = Anthropic::new(SECRET_KEY).with_base_url(server.uri());
    let client =
        TelemeteredClient::new(IntentClient::builder().provider(provider).build().unwrap());
    let result = client.classify_ids_anthropic("What a day!").await;
    assert_eq!(result.value, Some(Mood::Happy), "{result:?}");
    let streamed = client
        .classify_ids_anthropic_streamed("What a day!")
        .finish()
        .await;
    assert_eq!(streamed.value, Some(Mood::Happy), "{streamed:?}");
    assert_ids("classify_ids_anthropic", "msg_body_7");
    assert_ids("classify_ids_anthropic_streamed", "msg_body_7");
}

// ---------------------------------------------------------------------------------------
// Decision methods

#[tokio::test]
async fn a_decision_method_runs_in_a_call_span_naming_it_with_its_chat_span_inside() {
    capture();
    let model = ScriptedProvider::new([ScriptedReply::logprobs([("yes", -0.1), ("no", -2.5)])])
        .with_max_top_logprobs(Some(20))
        .with_model("decision-model");
    let client = TelemeteredClient::new(IntentClient::builder().provider(model).build().unwrap());
    let happy = client.is_happy("Thanks, all good!").await.unwrap();
    assert!(happy.is_yes(0.5), "{happy:?}");

    let call = Call::named("is_happy");
    let span = &call.span;
    assert_eq!(
        field(span, "otel.name"),
        Some("intent is_happy"),
        "{span:#?}"
    );
    assert!(
        field(span, "intent.target.type").is_some_and(|t| t.ends_with("Binary")),
        "{span:#?}"
    );
    assert_eq!(field(span, "gen_ai.provider.name"), Some("scripted"));
    assert_eq!(field(span, "gen_ai.request.model"), Some("decision-model"));
    assert_eq!(field(span, "intent.outcome"), Some("success"));
    assert_eq!(field(span, "error.type"), None);
    assert_eq!(call.requests.len(), 1, "{call:#?}");
    let chat = &call.requests[0];
    assert_eq!(chat.name, "chat");
    assert_eq!(field(chat, "intent.request.kind"), Some("decision"));
    assert_eq!(field(chat, "otel.name"), Some("chat decision-model"));
}

#[tokio::test]
async fn a_failed_decision_method_ends_its_call_span_in_error() {
    capture();
    let model = ScriptedProvider::new([ScriptedReply::Error(ProviderError::new(
        ProviderErrorKind::RateLimited,
        "scripted",
        "slow down",
    ))])
    .with_max_top_logprobs(Some(20));
    let client = TelemeteredClient::new(IntentClient::builder().provider(model).build().unwrap());
    let error = client.is_angry("Where is my refund?").await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::RateLimited);

    let call = Call::named("is_angry");
    assert_eq!(field(&call.span, "intent.outcome"), Some("failure"));
    assert_eq!(field(&call.span, "error.type"), Some("rate_limited"));
    assert_eq!(field(&call.span, "otel.status_code"), Some("error"));
    assert_eq!(call.requests.len(), 1, "{call:#?}");
    assert_eq!(field(&call.requests[0], "error.type"), Some("rate_limited"));
}

#[tokio::test]
async fn each_medium_is_described_on_the_call_span_without_content_and_never_its_bytes_or_url() {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0".to_vec();
    let photo = Image::from_bytes(png.clone())
        .unwrap()
        .with_detail(ImageDetail::Low);
    let url = "https://files.example/photo.jpg?X-Amz-Signature=SIGNED-URL-77";
    let by_url = Image::from_url(url).unwrap();
    let contract = Document::from_bytes(b"%PDF-1.7\n1 0 obj\n".to_vec()).unwrap();
    let provider = ScriptedProvider::from_fn(|_, _| reply(r#"{"value": "Happy"}"#));
    // Content recording is off (the default): the description is recorded all the same.
    let client = client_for(provider);
    let result = client
        .classify_photos(
            "Two photos",
            vec![photo.clone(), by_url.clone()],
            Some(contract.clone()),
        )
        .await;
    assert!(result.is_success(), "{result:?}");

    let call = Call::named("classify_photos");
    assert_eq!(field(&call.span, "intent.input.media_count"), Some("3"));
    let media: Value =
        serde_json::from_str(field(&call.span, "intent.input.media").unwrap()).unwrap();
    assert_eq!(
        media,
        json!([
            {"modality": "image", "mime_type": "image/png", "size": png.len(),
             "sha256": photo.media().sha256_hex(), "source": "bytes", "detail": "low",
             "input": "photos", "number": 1, "of": 2},
            {"modality": "image", "mime_type": null, "size": null,
             "sha256": by_url.media().sha256_hex(), "source": "url",
             "input": "photos", "number": 2, "of": 2},
            {"modality": "document", "mime_type": "application/pdf", "size": contract.media().len(),
             "sha256": contract.media().sha256_hex(), "source": "bytes", "input": "contract"},
        ])
    );
    // No content: no prompt, no bytes, no URL (whose query holds a signature) anywhere.
    let text = call.all_text();
    assert!(!text.contains("Two photos"), "{text}");
    assert!(!text.contains("files.example"), "{text}");
    assert!(!text.contains("SIGNED-URL-77"), "{text}");
    assert!(
        !text.contains(&photo.media().base64().unwrap()[..16]),
        "{text}"
    );
    assert_eq!(field(&call.requests[0], "gen_ai.input.messages"), None);

    // A call whose list is empty sends no media, and says none.
    let provider = ScriptedProvider::from_fn(|_, _| reply(r#"{"value": "Happy"}"#));
    let result = client_for(provider)
        .classify_no_photos("No photos", Vec::new())
        .await;
    assert!(result.is_success(), "{result:?}");
    let call = Call::named("classify_no_photos");
    assert_eq!(field(&call.span, "intent.input.media_count"), None);
    assert_eq!(field(&call.span, "intent.input.media"), None);
}
