//! The partial JSON reader against any valid reply cut anywhere: it never panics, and
//! what it shows (raw or typed) never contradicts the complete reply.

use intent_rs::stream::{PartialJson, PartialNode};
use intent_rs::{Partial, PartialOf};
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Value};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(Value::from),
        "[a-z \"\\\\é😀\\n\\t/]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Whether everything `shown` says agrees with `full`.
fn agrees(shown: PartialNode<'_>, full: &Value) -> bool {
    if let Some(value) = shown.complete() {
        return &value == full;
    }
    if shown.is_array() {
        let Value::Array(items) = full else {
            return false;
        };
        let shown_items: Vec<_> = shown.items().collect();
        return shown_items.len() <= items.len()
            && shown_items
                .iter()
                .zip(items)
                .all(|(shown, full)| agrees(*shown, full));
    }
    let Value::Object(fields) = full else {
        return false;
    };
    fields
        .iter()
        .all(|(key, value)| shown.field(key).is_none_or(|shown| agrees(shown, value)))
}

/// Reads `text` in pieces cut at `cuts` (byte offsets, moved to character boundaries).
fn read_in_pieces(text: &str, cuts: &[usize]) -> PartialJson {
    let mut reader = PartialJson::new();
    let mut start = 0;
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|&cut| {
            let mut cut = cut.min(text.len());
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            cut
        })
        .collect();
    points.sort_unstable();
    points.push(text.len());
    for end in points {
        if end > start {
            reader.push(&text[start..end]);
            start = end;
        }
    }
    reader
}

#[derive(Debug, Deserialize, intent_rs::Partial)]
struct Line {
    item: String,
    cents: i64,
}

#[derive(Debug, Deserialize, intent_rs::Partial)]
#[serde(rename_all = "camelCase")]
struct Invoice {
    invoice_number: String,
    lines: Vec<Line>,
    due_date: Option<String>,
}

fn invoice_text() -> impl Strategy<Value = String> {
    let line = ("[a-z \"é]{0,10}", any::<i64>())
        .prop_map(|(item, cents)| serde_json::json!({"item": item, "cents": cents}));
    (
        "[A-Z0-9-]{1,8}",
        prop::collection::vec(line, 0..6),
        prop::option::of("[0-9-]{10}"),
        any::<bool>(),
    )
        .prop_map(|(number, lines, due, pretty)| {
            let value = serde_json::json!({"value": {"invoiceNumber": number, "lines": lines, "dueDate": due}});
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                value.to_string()
            };
            format!("```json\n{text}\n```")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_reply_cut_anywhere_shows_nothing_the_full_reply_contradicts(
        value in json_value(),
        pretty in any::<bool>(),
        cut in any::<prop::sample::Index>(),
        more_cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let text = if pretty { serde_json::to_string_pretty(&value).unwrap() } else { value.to_string() };
        let cut = cut.index(text.len() + 1);
        let cuts: Vec<usize> = more_cuts.iter().map(|c| c.index(cut + 1)).collect();
        let mut reader = read_in_pieces(&text[..text.floor_char_boundary_compat(cut)], &cuts);
        if let Some(root) = reader.root() {
            prop_assert!(agrees(root, &value), "{text} cut at {cut}");
        }
        let _ = reader.take_progress();
        // The whole text, in the same pieces, is the value.
        let whole = read_in_pieces(&text, &cuts);
        if matches!(value, Value::Object(_) | Value::Array(_)) {
            prop_assert_eq!(whole.root().and_then(PartialNode::complete), Some(value.clone()));
        }
    }

    #[test]
    fn typed_partials_of_a_cut_reply_agree_with_the_full_value(
        text in invoice_text(),
        cut in any::<prop::sample::Index>(),
    ) {
        let full: Value = serde_json::from_str(text.trim_start_matches("```json\n").trim_end_matches("\n```")).unwrap();
        let full: Invoice = serde_json::from_value(full["value"].clone()).unwrap();
        let cut = text.floor_char_boundary_compat(cut.index(text.len() + 1));
        let reader = read_in_pieces(&text[..cut], &[cut / 3, cut / 2]);
        let shown: Option<PartialOf<Invoice>> = reader
            .root()
            .and_then(|root| root.field("value"))
            .and_then(Invoice::read_partial);
        if let Some(shown) = shown {
            prop_assert!(shown.invoice_number.as_ref().is_none_or(|n| n == &full.invoice_number));
            prop_assert!(shown.due_date.is_none() || shown.due_date == full.due_date);
            let lines = shown.lines.unwrap_or_default();
            prop_assert!(lines.len() <= full.lines.len());
            for (line, whole) in lines.iter().zip(&full.lines) {
                prop_assert!(line.item.as_ref().is_none_or(|item| item == &whole.item));
                prop_assert!(line.cents.is_none_or(|cents| cents == whole.cents));
            }
        }
    }
}

/// `str::floor_char_boundary` for the project's minimum Rust version.
trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, index: usize) -> usize;
}

impl FloorCharBoundary for str {
    fn floor_char_boundary_compat(&self, index: usize) -> usize {
        let mut index = index.min(self.len());
        while !self.is_char_boundary(index) {
            index -= 1;
        }
        index
    }
}
