//! The failing-reply suite: replies of every class that fail verification, each answered
//! on the retry by the literal model (`literal.rs`), which acts on the feedback alone.
//! A reply is recovered when the call succeeds within two attempts.
//!
//! Shared by the `feedback_recovery` test (which holds the rate to its target) and the
//! `feedback_recovery` bench of this package (which prints the table for BENCHMARKS.md).
#![allow(dead_code)]

pub mod literal;

use intent_rs::{IntentClient, IntentOptions};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// The input every call sends: feedback must never quote it.
pub const INPUT: &str = "INPUT-7731: Ann Lopez, 41, called Annie; order 7 of two A-1 parts.";

/// A person, with an optional field.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Person {
    /// Full name.
    pub name: String,
    /// Age in years.
    pub age: u32,
    /// What friends call the person, when stated.
    pub nickname: Option<String>,
}

/// The sentiment of a text.
#[derive(Debug, Deserialize, JsonSchema)]
pub enum Sentiment {
    /// Favourable.
    Positive,
    /// Neither.
    Neutral,
    /// Unfavourable.
    Negative,
}

/// A review with bounded fields.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Review {
    /// Stars given.
    #[schemars(range(min = 1, max = 5))]
    pub rating: u8,
    /// The review's sentiment.
    pub sentiment: Sentiment,
    /// One line.
    #[schemars(length(max = 40))]
    pub summary: String,
}

/// An order line.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Line {
    /// Part number.
    pub sku: String,
    /// How many.
    #[schemars(range(min = 1))]
    pub qty: u32,
}

/// An order.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Order {
    /// Order number.
    pub id: String,
    /// Its lines.
    pub lines: Vec<Line>,
    /// The total, in cents.
    #[schemars(range(min = 0))]
    pub total_cents: i64,
}

/// A measurement that may be missing.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Reading {
    /// The score, when there is one.
    pub score: Option<f64>,
    /// One to three tags.
    #[schemars(length(min = 1, max = 3))]
    pub tags: Vec<String>,
}

/// A code with a pattern.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Coded {
    /// Three capitals, a dash and digits.
    #[schemars(regex(pattern = r"^[A-Z]{3}-[0-9]+$"))]
    pub code: String,
}

/// The target a case asks for.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    Person,
    Sentiment,
    Review,
    Line,
    Lines,
    Order,
    Reading,
    Integers,
    Floats,
    Strings,
    Flag,
    Count,
    Code,
}

/// One failing reply of the suite.
#[derive(Debug, Clone)]
pub struct Case {
    /// What is wrong with it.
    pub class: &'static str,
    /// What it should have been.
    pub target: Target,
    /// The reply.
    pub reply: String,
}

/// What became of one case.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub class: &'static str,
    /// The failing reply.
    pub reply: String,
    /// Whether the call succeeded within two attempts.
    pub recovered: bool,
    /// The first feedback turn (the user turn after the failing reply).
    pub feedback: String,
    /// The first attempt failed (every case must, or it is no case).
    pub first_failed: bool,
}

fn case(class: &'static str, target: Target, reply: impl Into<String>) -> Case {
    Case {
        class,
        target,
        reply: reply.into(),
    }
}

/// Every case, grouped by class.
pub fn cases() -> Vec<Case> {
    use Target::*;
    let ann = r#"{"name": "Ann", "age": 41, "nickname": null}"#;
    let mut all = vec![
        // Prose or a code fence around the JSON.
        case(
            "prose or fence",
            Person,
            format!("Here is the result:\n{{\"value\": {ann}}}\nLet me know if you need more."),
        ),
        case(
            "prose or fence",
            Review,
            "Sure! ```json\n{\"value\": {\"rating\": 4, \"sentiment\": \"Positive\", \"summary\": \"Good battery\"}}\n```",
        ),
        case(
            "prose or fence",
            Sentiment,
            "The sentiment is {\"value\": \"Negative\"}.",
        ),
        case(
            "prose or fence",
            Order,
            "```json\n{\"value\": {\"id\": \"7\", \"lines\": [{\"sku\": \"A-1\", \"qty\": 2}], \"total_cents\": 500}}\n```\nThe total is the sum of the lines.",
        ),
        case("prose or fence", Integers, "Numbers: [1, 2, 3]"),
        case(
            "prose or fence",
            Person,
            "Based on the input, the person is:\n\n{\"name\": \"Ann\", \"age\": 41, \"nickname\": \"Annie\"}",
        ),
        case(
            "prose or fence",
            Lines,
            "Lines found (2):\n[{\"sku\": \"A-1\", \"qty\": 2}, {\"sku\": \"B-2\", \"qty\": 1}]\nDone.",
        ),
        // Single quotes.
        case(
            "quotes",
            Person,
            "{'value': {'name': 'Ann', 'age': 41, 'nickname': null}}",
        ),
        case(
            "quotes",
            Person,
            "{\"value\": {\"name\": 'Ann', \"age\": 41, \"nickname\": 'Annie'}}",
        ),
        case("quotes", Sentiment, "{'value': 'Positive'}"),
        case("quotes", Strings, "{'value': ['a', 'b']}"),
        case(
            "quotes",
            Review,
            "{\"value\": {'rating': 3, 'sentiment': 'Neutral', 'summary': 'It\\'s fine'}}",
        ),
        case(
            "quotes",
            Order,
            "{'value': {'id': '7', 'lines': [{'sku': 'A-1', 'qty': 2}], 'total_cents': 500}}",
        ),
        // Keys (and text) without quotes.
        case(
            "unquoted keys",
            Person,
            "{value: {name: \"Ann\", age: 41, nickname: null}}",
        ),
        case("unquoted keys", Sentiment, "{value: \"Positive\"}"),
        case(
            "unquoted keys",
            Review,
            "{\"value\": {rating: 5, sentiment: \"Positive\", summary: \"Great\"}}",
        ),
        case("unquoted keys", Lines, "{value: [{sku: \"A-1\", qty: 2}]}"),
        case(
            "unquoted keys",
            Person,
            "{value: {name: Ann Lopez, age: 41, nickname: null}}",
        ),
        case("unquoted keys", Sentiment, "{\"value\": Neutral}"),
        // Numbers and literals JSON does not have.
        case(
            "numbers and literals",
            Reading,
            "{\"value\": {\"score\": NaN, \"tags\": [\"x\"]}}",
        ),
        case(
            "numbers and literals",
            Order,
            "{\"value\": {\"id\": \"7\", \"lines\": [], \"total_cents\": 0x2A}}",
        ),
        case(
            "numbers and literals",
            Person,
            "{\"value\": {\"name\": \"Ann\", \"age\": 41, \"nickname\": None}}",
        ),
        case(
            "numbers and literals",
            Person,
            "{\"value\": {\"name\": \"Ann\", \"age\": +41, \"nickname\": null}}",
        ),
        case(
            "numbers and literals",
            Floats,
            "{\"value\": [1.5, 2, Infinity]}",
        ),
        case(
            "numbers and literals",
            Reading,
            "{\"value\": {\"score\": .5, \"tags\": [\"a\"]}}",
        ),
        case(
            "numbers and literals",
            Review,
            "{\"value\": {\"rating\": 04, \"sentiment\": \"Positive\", \"summary\": \"ok\"}}",
        ),
        case("numbers and literals", Flag, "{\"value\": True}"),
        case(
            "numbers and literals",
            Person,
            "{\"value\": {\"name\": \"Ann\", \"age\": 41, \"nickname\": undefined}}",
        ),
        case("numbers and literals", Count, "{\"value\": 1_000}"),
        // Comments JSON does not have.
        case(
            "comments",
            Person,
            format!("{{\n  # the person\n  \"value\": {ann}\n}}"),
        ),
        case(
            "comments",
            Integers,
            "{\"value\": [1, 2, 3] # three numbers\n}",
        ),
        case(
            "comments",
            Order,
            "{\"value\": {\"id\": \"7\", # the order number\n \"lines\": [], \"total_cents\": 0}}",
        ),
        case("comments", Sentiment, "# result\n{\"value\": \"Neutral\"}"),
        // Extra or missing commas (and colons).
        case("commas", Integers, "{\"value\": [1, 2 3]}"),
        case(
            "commas",
            Person,
            "{\"value\": {\"name\": \"Ann\" \"age\": 41, \"nickname\": null}}",
        ),
        case("commas", Integers, "{\"value\": [1,, 2]}"),
        case(
            "commas",
            Person,
            "{\"value\": {,\"name\": \"Ann\", \"age\": 41, \"nickname\": null}}",
        ),
        case(
            "commas",
            Lines,
            "{\"value\": [{\"sku\": \"A\", \"qty\": 1} {\"sku\": \"B\", \"qty\": 2}]}",
        ),
        case(
            "commas",
            Review,
            "{\"value\": {\"rating\": 2,, \"sentiment\": \"Negative\", \"summary\": \"Meh\"}}",
        ),
        case("commas", Line, "{\"value\": {\"sku\" \"A-1\", \"qty\": 2}}"),
        // Unfinished JSON.
        case("truncated", Person, format!("{{\"value\": {ann}")),
        case("truncated", Integers, "{\"value\": [1, 2, 3"),
        case(
            "truncated",
            Person,
            "{\"value\": {\"name\": \"Ann\", \"age\": 41, \"nickname\": \"An",
        ),
        case(
            "truncated",
            Lines,
            "{\"value\": [{\"sku\": \"A\", \"qty\": 1}, {\"sku\": \"B\", \"qty\": 2}",
        ),
        case(
            "truncated",
            Person,
            "{\"value\": {\"name\": \"Ann\", \"age\": ",
        ),
        // The target's fields beside `value`, or other keys there.
        case(
            "envelope",
            Person,
            "{\"name\": \"Ann\", \"age\": 41, \"nickname\": null, \"value\": \"Ann\"}",
        ),
        case(
            "envelope",
            Review,
            "{\"rating\": 4, \"sentiment\": \"Positive\", \"summary\": \"Nice\", \"value\": 4}",
        ),
        case(
            "envelope",
            Count,
            "{\"value\": 3, \"reason\": \"three items\"}",
        ),
        case(
            "envelope",
            Order,
            "{\"value\": {\"id\": \"1\", \"lines\": [], \"total_cents\": 0}, \"note\": \"empty\"}",
        ),
        // Several type mismatches at once, missing fields, values that are no member.
        case(
            "types",
            Person,
            "{\"value\": {\"name\": 42, \"age\": \"forty\", \"nickname\": null}}",
        ),
        case(
            "types",
            Person,
            "{\"value\": {\"name\": [\"Ann\"], \"age\": 41}}",
        ),
        case(
            "types",
            Order,
            "{\"value\": {\"id\": 7, \"lines\": {\"sku\": \"A\", \"qty\": 1}, \"total_cents\": \"100\"}}",
        ),
        case(
            "types",
            Review,
            "{\"value\": {\"rating\": \"five\", \"sentiment\": \"Happy\", \"summary\": null}}",
        ),
        case("types", Review, "{\"value\": {\"rating\": 4}}"),
        case("types", Sentiment, "{\"value\": \"Mixed\"}"),
        case(
            "types",
            Lines,
            "{\"value\": [{\"sku\": \"A\"}, {\"qty\": 2}]}",
        ),
        case(
            "types",
            Order,
            "{\"value\": {\"id\": \"7\", \"lines\": [{\"sku\": \"A\", \"qty\": \"two\"}], \"total_cents\": null}}",
        ),
        case("types", Sentiment, "{\"value\": \"Neutral, Negative\"}"),
        // Bounds the schema sets.
        case(
            "bounds",
            Review,
            "{\"value\": {\"rating\": 0, \"sentiment\": \"Negative\", \"summary\": \"Bad\"}}",
        ),
        case(
            "bounds",
            Review,
            "{\"value\": {\"rating\": 7, \"sentiment\": \"Positive\", \"summary\": \"Superb\"}}",
        ),
        case(
            "bounds",
            Review,
            "{\"value\": {\"rating\": 3, \"sentiment\": \"Neutral\", \"summary\": \"The battery lasts two days but the case scratches easily\"}}",
        ),
        case(
            "bounds",
            Reading,
            "{\"value\": {\"score\": 0.5, \"tags\": []}}",
        ),
        case(
            "bounds",
            Reading,
            "{\"value\": {\"score\": 0.5, \"tags\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}}",
        ),
        case(
            "bounds",
            Lines,
            "{\"value\": [{\"sku\": \"A\", \"qty\": 0}, {\"sku\": \"B\", \"qty\": 0}]}",
        ),
        case(
            "bounds",
            Order,
            "{\"value\": {\"id\": \"7\", \"lines\": [], \"total_cents\": -5}}",
        ),
        case("bounds", Code, "{\"value\": {\"code\": \"ab-12\"}}"),
        // Two answers in prose: nothing says which one is meant.
        case(
            "prose or fence",
            Sentiment,
            "Either {\"value\": \"Positive\"} or {\"value\": \"Neutral\"}.",
        ),
    ];
    // Long replies, shown cut on the retry, with the problem past the cut.
    let lines: Vec<String> = (0..300)
        .map(|i| format!("{{\"sku\": \"PART-{i:04}\", \"qty\": {}}}", i % 7 + 1))
        .collect();
    let mut missing_comma = lines.clone();
    missing_comma[298] = format!("{} ", missing_comma[298]);
    let joined = format!("{} {}", missing_comma[..299].join(", "), missing_comma[299]);
    all.push(case(
        "long reply",
        Lines,
        format!("{{\"value\": [{joined}]}}"),
    ));
    let numbers: Vec<String> = (0..1500).map(|i| format!("{i}.5")).collect();
    all.push(case(
        "long reply",
        Floats,
        format!("{{\"value\": [{}, NaN]}}", numbers.join(", ")),
    ));
    let mut zero = lines.clone();
    zero[299] = "{\"sku\": \"PART-0299\", \"qty\": 0}".to_owned();
    all.push(case(
        "long reply",
        Lines,
        format!("{{\"value\": [{}]}}", zero.join(", ")),
    ));
    all.push(case(
        "long reply",
        Lines,
        format!("{{\"value\": [{}", lines.join(", ")),
    ));
    all
}

/// Runs one case: the failing reply, then the literal model's fixes, two attempts at most.
pub async fn run(case: &Case) -> Outcome {
    use Target::*;
    match case.target {
        Person => run_as::<self::Person>(case).await,
        Sentiment => run_as::<self::Sentiment>(case).await,
        Review => run_as::<self::Review>(case).await,
        Line => run_as::<self::Line>(case).await,
        Lines => run_as::<Vec<self::Line>>(case).await,
        Order => run_as::<self::Order>(case).await,
        Reading => run_as::<self::Reading>(case).await,
        Integers => run_as::<Vec<i64>>(case).await,
        Floats => run_as::<Vec<f64>>(case).await,
        Strings => run_as::<Vec<String>>(case).await,
        Flag => run_as::<bool>(case).await,
        Count => run_as::<u32>(case).await,
        Code => run_as::<Coded>(case).await,
    }
}

async fn run_as<T>(case: &Case) -> Outcome
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    let provider = literal::literal_model(&case.reply);
    let client = IntentClient::builder()
        .provider(provider.clone())
        .build()
        .expect("client");
    let result = client
        .transform::<_, T>(
            &INPUT,
            "Read the input",
            IntentOptions::new().max_attempts(2),
        )
        .await;
    let requests = provider.requests();
    let feedback = requests
        .get(1)
        .and_then(|request| request.messages.last())
        .map(|message| message.content.clone())
        .unwrap_or_default();
    Outcome {
        class: case.class,
        reply: case.reply.clone(),
        recovered: result.is_success() && result.attempts.len() <= 2,
        first_failed: !result.attempts.is_empty() && !result.attempts[0].issues.is_empty(),
        feedback,
    }
}

/// The suite's figures: per class and overall, recovered of total, and the median
/// length of the first feedback turn in characters.
#[derive(Debug, Clone)]
pub struct Figures {
    pub classes: Vec<(&'static str, usize, usize)>,
    pub recovered: usize,
    pub total: usize,
    pub median_feedback_chars: usize,
    pub outcomes: Vec<Outcome>,
}

impl Figures {
    /// The share recovered, 0 to 1.
    pub fn rate(&self) -> f64 {
        self.recovered as f64 / self.total.max(1) as f64
    }

    /// The figures as Markdown table rows: class, recovered, total, rate.
    pub fn table(&self) -> String {
        let mut rows = vec![
            "| class | recovered within two attempts | cases | rate |".to_owned(),
            "| --- | --- | --- | --- |".to_owned(),
        ];
        for (class, recovered, total) in &self.classes {
            rows.push(format!(
                "| {class} | {recovered} | {total} | {:.0} % |",
                100.0 * *recovered as f64 / *total as f64
            ));
        }
        rows.push(format!(
            "| **all** | **{}** | **{}** | **{:.1} %** |",
            self.recovered,
            self.total,
            100.0 * self.rate()
        ));
        rows.join("\n")
    }
}

/// Runs every case.
pub async fn run_suite() -> Figures {
    let mut outcomes = Vec::new();
    for case in cases() {
        outcomes.push(run(&case).await);
    }
    let mut classes: Vec<(&'static str, usize, usize)> = Vec::new();
    for outcome in &outcomes {
        match classes
            .iter_mut()
            .find(|(class, _, _)| *class == outcome.class)
        {
            Some(entry) => {
                entry.1 += usize::from(outcome.recovered);
                entry.2 += 1;
            }
            None => classes.push((outcome.class, usize::from(outcome.recovered), 1)),
        }
    }
    let mut lengths: Vec<usize> = outcomes
        .iter()
        .map(|o| o.feedback.chars().count())
        .collect();
    lengths.sort_unstable();
    Figures {
        classes,
        recovered: outcomes.iter().filter(|o| o.recovered).count(),
        total: outcomes.len(),
        median_feedback_chars: lengths.get(lengths.len() / 2).copied().unwrap_or(0),
        outcomes,
    }
}
