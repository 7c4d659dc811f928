use std::collections::BTreeMap;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::*;
use crate::schema::{runtime_target_schema, target_schema};

#[derive(Serialize, JsonSchema)]
struct Line {
    sku: String,
    qty: u32,
}

#[derive(Serialize, JsonSchema)]
struct Invoice {
    number: String,
    lines: Vec<Line>,
    due: Option<String>,
}

#[allow(dead_code)] // built only to be described
#[derive(Serialize, JsonSchema)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

#[allow(dead_code)] // built only to be described
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Shape {
    Empty,
    Circle { r: f64 },
    Square(f32),
}

#[allow(dead_code)] // built only to be described
#[derive(Serialize, JsonSchema)]
#[serde(tag = "kind")]
enum Tagged {
    A { x: i32 },
    B,
}

#[derive(Serialize, JsonSchema)]
struct Node {
    name: String,
    children: Vec<Node>,
}

#[derive(Serialize, JsonSchema)]
struct Name(String);

#[derive(Serialize, JsonSchema)]
struct Meeting {
    #[schemars(extend("format" = "date"))]
    day: String,
}

#[test]
fn a_string_passes_through_unchanged() {
    let text = "Line 1 \"quoted\"\n\tnot JSON: {\u{e9}}";
    let prepared = prepare_input(text).unwrap();
    assert_eq!(prepared.text, text);
    assert_eq!(prepared.label, "String");
    assert_eq!(prepare_input(&text.to_owned()).unwrap().text, text);
}

#[test]
fn a_newtype_string_is_text_but_a_struct_is_json() {
    assert_eq!(prepare_input(&Name("Ada".into())).unwrap().text, "Ada");
    let prepared = prepare_input(&Line {
        sku: "\"A\"".into(),
        qty: 2,
    })
    .unwrap();
    assert_eq!(prepared.text, r#"{"sku":"\"A\"","qty":2}"#);
    assert_eq!(prepared.label, "Line where Line { sku: String, qty: u32 }");
}

#[test]
fn each_type_keeps_its_own_label_when_prepared_again_and_again() {
    let line = Line {
        sku: "A".into(),
        qty: 1,
    };
    for _ in 0..3 {
        assert_eq!(prepare_input("text").unwrap().label, "String");
        assert_eq!(
            prepare_input(&line).unwrap().label,
            "Line where Line { sku: String, qty: u32 }"
        );
        assert_eq!(prepare_input(&vec![1u8]).unwrap().label, "Vec<u8>");
        assert_eq!(prepare_input(&vec!["a"]).unwrap().label, "Vec<String>");
        assert_eq!(prepare_input(&json!(1)).unwrap().label, "JSON");
    }
}

#[test]
fn json_values_are_written_as_their_json_text() {
    let prepared = prepare_input(&json!("quoted")).unwrap();
    assert_eq!(prepared.text, r#""quoted""#);
    assert_eq!(prepared.label, "JSON");
    let prepared = prepare_input(&json!({"a": [1, null]})).unwrap();
    assert_eq!(prepared.text, r#"{"a":[1,null]}"#);
}

#[test]
fn everything_else_is_compact_json_as_serde_writes_it() {
    assert_eq!(prepare_input(&42i64).unwrap().text, "42");
    assert_eq!(prepare_input(&Sentiment::Neutral).unwrap().text, "Neutral");
    assert_eq!(
        prepare_input(&Shape::Circle { r: 1.5 }).unwrap().text,
        r#"{"circle":{"r":1.5}}"#
    );
    assert_eq!(prepare_input(&vec![1, 2]).unwrap().text, "[1,2]");
    let map: BTreeMap<&str, u8> = [("b", 2), ("a", 1)].into();
    assert_eq!(prepare_input(&map).unwrap().text, r#"{"a":1,"b":2}"#);
    assert_eq!(prepare_input(&None::<String>).unwrap().text, "null");
}

#[test]
fn a_value_serde_cannot_write_is_a_serialize_error() {
    let map: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
    assert!(matches!(
        prepare_input(&map),
        Err(InputError::Serialize(cause)) if cause.to_string().contains("key must be")
    ));
}

#[cfg(feature = "chrono")]
#[test]
fn chrono_dates_and_times_pass_through_in_iso_8601_losing_nothing() {
    use chrono::{NaiveDate, NaiveTime, TimeZone, Utc};
    let instant = Utc
        .with_ymd_and_hms(2026, 10, 11, 14, 5, 6)
        .unwrap()
        .checked_add_signed(chrono::Duration::nanoseconds(789_000_000))
        .unwrap();
    let prepared = prepare_input(&instant).unwrap();
    assert_eq!(prepared.text, "2026-10-11T14:05:06.789Z");
    assert_eq!(prepared.label, "DateTime (ISO 8601)");

    let day = NaiveDate::from_ymd_opt(2026, 3, 4).unwrap();
    let prepared = prepare_input(&day).unwrap();
    assert_eq!(
        (prepared.text.as_str(), prepared.label.as_str()),
        ("2026-03-04", "Date (YYYY-MM-DD)")
    );

    let time = NaiveTime::from_hms_milli_opt(9, 15, 30, 250).unwrap();
    let prepared = prepare_input(&time).unwrap();
    assert_eq!(
        (prepared.text.as_str(), prepared.label.as_str()),
        ("09:15:30.250", "Time (HH:MM:SS)")
    );

    let stamp = day.and_time(time);
    let prepared = prepare_input(&stamp).unwrap();
    assert_eq!(prepared.text, "2026-03-04T09:15:30.250");
    assert_eq!(prepared.label, "DateTime (ISO 8601, no offset)");
}

#[test]
fn the_size_limit_counts_characters_not_bytes() {
    let input = prepare_input("\u{e9}\u{e9}\u{e9}").unwrap();
    assert_eq!(input.text.len(), 6);
    assert_eq!(check_input_size(&input, Some(3)), Ok(()));
    assert_eq!(
        check_input_size(&input, Some(2)),
        Err(InputError::TooLarge { actual: 3, max: 2 })
    );
    assert_eq!(check_input_size(&input, None), Ok(()));
    assert_eq!(
        InputError::TooLarge { actual: 3, max: 2 }.to_string(),
        "the input is 3 characters long, over the limit of 2; send a shorter input or raise the client's `max_input_chars` (nothing is truncated)"
    );
}

#[test]
fn named_inputs_are_one_json_object_in_parameter_order() {
    let prepared = NamedInputs::new()
        .with("review", "Great \"value\"")
        .unwrap()
        .with("mood", &Sentiment::Positive)
        .unwrap()
        .with("extra", &json!({"k": 1}))
        .unwrap()
        .finish();
    assert_eq!(
        prepared.text,
        r#"{"review":"Great \"value\"","mood":"Positive","extra":{"k":1}}"#
    );
    assert_eq!(
        prepared.label,
        "JSON object with keys review (String), mood (Sentiment (one of: Positive, Neutral, Negative)), extra (JSON)"
    );
    assert_eq!(NamedInputs::new().finish().label, "JSON object");
}

#[test]
fn describes_structs_with_their_named_definitions() {
    assert_eq!(
        describe_type::<Invoice>(),
        "Invoice where Invoice { number: String, lines: Vec<Line>, due: Option<String> } Line { sku: String, qty: u32 }"
    );
}

#[test]
fn describes_enums_with_their_members() {
    assert_eq!(
        describe_type::<Sentiment>(),
        "Sentiment (one of: Positive, Neutral, Negative)"
    );
    assert_eq!(
        describe_type::<Option<Sentiment>>(),
        "Option<Sentiment (one of: Positive, Neutral, Negative)>"
    );
    assert_eq!(
        describe_type::<Shape>(),
        "Shape (one of: empty, { circle: { r: f64 } }, { square: f32 })"
    );
    assert_eq!(
        describe_type::<Tagged>(),
        r#"Tagged (one of: { kind: "A", x: i32 }, { kind: "B" })"#
    );
}

#[test]
fn describes_primitives_and_containers() {
    assert_eq!(describe_type::<String>(), "String");
    assert_eq!(describe_type::<str>(), "String");
    assert_eq!(describe_type::<u8>(), "u8");
    assert_eq!(describe_type::<i64>(), "i64");
    assert_eq!(describe_type::<f32>(), "f32");
    assert_eq!(describe_type::<bool>(), "bool");
    assert_eq!(describe_type::<()>(), "null");
    assert_eq!(describe_type::<Option<String>>(), "Option<String>");
    assert_eq!(
        describe_type::<Vec<Line>>(),
        "Vec<Line> where Line { sku: String, qty: u32 }"
    );
    assert_eq!(describe_type::<(u8, String)>(), "(u8, String)");
    assert_eq!(
        describe_type::<BTreeMap<String, Line>>(),
        "Map<String, Line> where Line { sku: String, qty: u32 }"
    );
    assert_eq!(describe_type::<serde_json::Value>(), "any JSON value");
}

#[test]
fn a_recursive_type_is_defined_once() {
    assert_eq!(
        describe_type::<Node>(),
        "Node where Node { name: String, children: Vec<Node> }"
    );
}

#[test]
fn an_untitled_recursive_root_refers_to_itself_as_self() {
    assert_eq!(
        describe_schema(&json!({
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}
        })),
        "{ kids: Vec<Self> }"
    );
}

#[test]
fn a_pointer_into_a_schema_is_described_by_its_shape() {
    assert_eq!(
        describe_schema(&json!({
            "type": "object",
            "properties": {
                "total": {"type": "number"},
                "same": {"$ref": "#/properties/total"}
            }
        })),
        "{ total: f64, same: f64 }"
    );
}

#[test]
fn a_string_marked_as_a_date_carries_its_format() {
    assert_eq!(
        describe_type::<Meeting>(),
        "Meeting where Meeting { day: Date (YYYY-MM-DD) }"
    );
}

#[test]
fn describes_hand_written_schemas() {
    assert_eq!(
        describe_schema(&json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "format": "uuid"},
                "at": {"type": ["string", "null"], "format": "date-time"},
                "level": {"enum": ["low", "high", null]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "any": {},
                "either": {"type": ["string", "integer"]},
                "item": {"$ref": "#/definitions/Item"},
                "ext": {"$ref": "https://x.test/s.json"}
            },
            "definitions": {"Item": {"properties": {"n": {"type": "number"}}}}
        })),
        "{ id: String (uuid), at: Option<DateTime (ISO 8601)>, level: Option<(one of: low, high)>, tags: Vec<String>, any: any JSON value, either: (String | i64), item: Item, ext: https://x.test/s.json } where Item { n: f64 }"
    );
}

#[test]
fn bounds_the_verifier_checks_are_described_with_their_type() {
    assert_eq!(
        describe_schema(&json!({
            "type": "object",
            "properties": {
                "stars": {"type": "integer", "format": "uint8", "minimum": 1, "maximum": 5},
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "note": {"type": ["string", "null"], "maxLength": 80},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}
            }
        })),
        "{ stars: u8 (1 to 5), count: u32, code: String (matching the regex ^[A-Z]{3}$), \
         note: Option<String (at most 80 characters)>, tags: Vec<String> (at least 1 item) }"
    );
}

#[test]
fn describes_a_target_from_its_envelope() {
    let target = target_schema::<Invoice>().unwrap();
    assert_eq!(describe_target(&target), describe_type::<Invoice>());
    let target = target_schema::<Node>().unwrap();
    assert_eq!(
        describe_target(&target),
        "Node where Node { name: String, children: Vec<Node> }"
    );
    let runtime = runtime_target_schema(&json!({
        "type": "object", "properties": {"total": {"type": "integer"}}
    }))
    .unwrap();
    assert_eq!(describe_target(&runtime), "{ total: i64 }");
}

#[test]
fn odd_schemas_read_as_any_value_and_deep_ones_are_cut() {
    assert_eq!(describe_schema(&json!(3)), "any JSON value");
    assert_eq!(describe_schema(&json!(false)), "nothing");
    assert_eq!(
        describe_schema(&json!({"type": 7, "enum": "x"})),
        "any JSON value"
    );
    let mut deep = json!({"type": "string"});
    for _ in 0..40 {
        deep = json!({"type": "array", "items": deep});
    }
    assert!(describe_schema(&deep).contains('…'));
}

#[derive(Serialize, JsonSchema)]
struct Renamed {
    #[serde(rename(serialize = "sent", deserialize = "read"))]
    field: u8,
}

#[test]
fn inputs_are_described_as_serde_writes_them() {
    assert_eq!(
        describe_type::<Renamed>(),
        "Renamed where Renamed { sent: u8 }"
    );
    assert_eq!(
        prepare_input(&Renamed { field: 1 }).unwrap().text,
        r#"{"sent":1}"#
    );
}

/// Prints the cost of preparing a struct input; run with `--ignored --nocapture`.
#[test]
#[ignore = "measurement, not a check"]
fn measure_prepare_input() {
    let invoice = Invoice {
        number: "7".into(),
        lines: vec![Line {
            sku: "A-1".into(),
            qty: 2,
        }],
        due: None,
    };
    let rounds = 10_000u32;
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(prepare_input(&invoice).unwrap());
    }
    println!(
        "prepare_input(Invoice): {:?} each",
        start.elapsed() / rounds
    );
}

#[test]
fn branching_unions_are_cut_instead_of_growing_exponentially() {
    // U0 is a union of two references to U1, U1 of two to U2, ...: written in place,
    // the description would double at every level.
    let mut defs = serde_json::Map::new();
    for level in 0..30 {
        let next = format!("#/$defs/U{}", level + 1);
        defs.insert(
            format!("U{level}"),
            json!({"anyOf": [{"$ref": next}, {"type": "array", "items": {"$ref": next}}]}),
        );
    }
    defs.insert("U30".to_owned(), json!({"type": "string"}));
    let described = describe_schema(&json!({"$ref": "#/$defs/U0", "$defs": defs}));
    assert!(described.len() < 200_000, "{} chars", described.len());
    assert!(described.contains('…'));
}

proptest! {
    #[test]
    fn describing_never_panics(schema in crate::schema::strict::tests::schema_like()) {
        let _ = describe_schema(&schema);
    }
}

#[allow(dead_code)] // built only to be described
#[derive(Serialize, JsonSchema)]
enum Mood {
    /// Happy with it.
    Positive,
    Neutral,
    /// Tells why.
    Other {
        why: String,
    },
}

#[allow(dead_code)] // built only to be described
#[derive(Serialize, JsonSchema)]
struct Documented {
    /// The invoice number,   as printed.
    ///
    /// A second paragraph the model does not need.
    number: String,
    /// How the customer felt.
    mood: Mood,
    plain: u8,
}

#[test]
fn doc_comments_of_fields_and_variants_are_described() {
    assert_eq!(
        describe_type::<Documented>(),
        "Documented where Documented { number: String /* The invoice number, as printed. */, \
         mood: Mood (one of: Neutral, Positive /* Happy with it. */, { Other: { why: String } } /* Tells why. */) /* How the customer felt. */, \
         plain: u8 }"
    );
    let target = target_schema::<Documented>().unwrap();
    assert!(
        describe_target(&target).contains("number: String /* The invoice number, as printed. */")
    );
}

#[test]
fn a_long_doc_comment_is_cut_and_cannot_close_its_note() {
    let long = format!("Ends */ early. {}", "word ".repeat(100));
    let described = describe_schema(&json!({
        "type": "object",
        "properties": {"a": {"type": "string", "description": long}}
    }));
    assert!(
        described.starts_with("{ a: String /* Ends * / early. word"),
        "{described}"
    );
    assert!(described.ends_with("… */ }"), "{described}");
    assert!(
        described.chars().count() < MAX_NOTE_CHARS + 40,
        "{described}"
    );
}

#[test]
fn a_media_list_adds_each_medium_numbered_and_an_option_adds_one_or_none() {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    let image = Image::from_bytes(png).unwrap();
    let none: Option<&Image> = None;
    let prepared = PreparedInput::media_only()
        .with_media_list(Some("photos"), &[image.clone(), image.clone()])
        .with_media_list::<Image>(Some("empty"), &[])
        .with_optional_media(Some("cover"), Some(&image))
        .with_optional_media(Some("back"), none);
    let placed: Vec<(Option<&str>, Option<MediaPosition>)> = prepared
        .media
        .iter()
        .map(|input| (input.name.as_deref(), input.position))
        .collect();
    assert_eq!(
        placed,
        [
            (Some("photos"), Some(MediaPosition { number: 1, of: 2 })),
            (Some("photos"), Some(MediaPosition { number: 2, of: 2 })),
            (Some("cover"), None),
        ]
    );
}
