//! The bounds of one schema node: read from its constraint keywords when it still has
//! them (a hand-written schema), otherwise from the `Allowed: ...` sentence the strict
//! walk writes into its `description` when it removes them
//! ([`bounds_text`](crate::schema::bounds_text)), which is all a provider is sent.

use serde_json::{Map, Value};

/// What a node allows beyond its type: numeric range, lengths, pattern, item counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Bounds {
    /// The lower limit and whether it is exclusive.
    pub(crate) low: Option<(f64, bool)>,
    /// The upper limit and whether it is exclusive.
    pub(crate) high: Option<(f64, bool)>,
    pub(crate) multiple_of: Option<f64>,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
    pub(crate) pattern: Option<String>,
    pub(crate) min_items: Option<u64>,
    pub(crate) max_items: Option<u64>,
    pub(crate) unique_items: bool,
}

/// The sentence the strict walk appends to a node's description.
const ALLOWED: &str = "Allowed: ";

/// Whether `text` is only item-count phrases (`1 to 3 items`, `no repeated items`): what
/// may follow a pattern in the stated bounds.
fn only_item_phrases(text: &str) -> bool {
    text.split(", ").all(|phrase| {
        phrase == "no repeated items" || phrase.ends_with(" item") || phrase.ends_with(" items")
    })
}

impl Bounds {
    /// The bounds of `map`: its keywords where present, otherwise its stated bounds.
    pub(crate) fn of(map: &Map<String, Value>) -> Self {
        let keywords = Self::from_keywords(map);
        if keywords != Self::default() {
            return keywords;
        }
        map.get("description")
            .and_then(Value::as_str)
            .and_then(|text| text.rfind(ALLOWED).map(|at| &text[at + ALLOWED.len()..]))
            .map(|stated| Self::from_text(stated.strip_suffix('.').unwrap_or(stated)))
            .unwrap_or_default()
    }

    /// The bounds the constraint keywords of `map` set.
    pub(crate) fn from_keywords(map: &Map<String, Value>) -> Self {
        let number = |key: &str| map.get(key).and_then(Value::as_f64);
        let count = |key: &str| map.get(key).and_then(Value::as_u64);
        Self {
            low: number("minimum")
                .map(|n| (n, false))
                .or_else(|| number("exclusiveMinimum").map(|n| (n, true))),
            high: number("maximum")
                .map(|n| (n, false))
                .or_else(|| number("exclusiveMaximum").map(|n| (n, true))),
            multiple_of: number("multipleOf").filter(|step| *step > 0.0),
            min_length: count("minLength"),
            max_length: count("maxLength"),
            pattern: map
                .get("pattern")
                .and_then(Value::as_str)
                .map(str::to_owned),
            min_items: count("minItems"),
            max_items: count("maxItems"),
            unique_items: map.get("uniqueItems") == Some(&Value::Bool(true)),
        }
    }

    /// The bounds stated in words, as [`bounds_text`](crate::schema::bounds_text) writes
    /// them; a phrase it does not know is skipped.
    pub(crate) fn from_text(stated: &str) -> Self {
        let mut bounds = Self::default();
        let (before, pattern_and_after) = match stated.find("matching the regex ") {
            Some(at) => (
                &stated[..at],
                Some(&stated[at + "matching the regex ".len()..]),
            ),
            None => (stated, None),
        };
        let mut phrases: Vec<&str> = before.split(", ").collect();
        if let Some(rest) = pattern_and_after {
            // A pattern may itself hold `, `: it runs up to the first `, ` after which
            // only item phrases follow.
            let end = rest
                .match_indices(", ")
                .map(|(at, _)| at)
                .find(|&at| only_item_phrases(&rest[at + 2..]))
                .unwrap_or(rest.len());
            bounds.pattern = Some(rest[..end].to_owned());
            phrases.extend(rest[end..].split(", "));
        }
        for phrase in phrases.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
            bounds.read_phrase(phrase);
        }
        bounds
    }

    fn read_phrase(&mut self, phrase: &str) {
        if phrase == "no repeated items" {
            self.unique_items = true;
            return;
        }
        let words: Vec<&str> = phrase.split(' ').collect();
        let number = |word: &str| word.parse::<f64>().ok();
        let count = |word: &str| word.parse::<u64>().ok();
        // The unit of a count phrase: characters, items, or none for a numeric range.
        let unit = words.last().map(|w| w.trim_end_matches('s'));
        let (min, max) = match unit {
            Some("character") => (&mut self.min_length, &mut self.max_length),
            Some("item") => (&mut self.min_items, &mut self.max_items),
            _ => {
                match words.as_slice() {
                    [low, "to", high] => {
                        self.low = number(low).map(|n| (n, false));
                        self.high = number(high).map(|n| (n, false));
                    }
                    ["at", "least", n] => self.low = number(n).map(|n| (n, false)),
                    ["more", "than", n] => self.low = number(n).map(|n| (n, true)),
                    ["at", "most", n] => self.high = number(n).map(|n| (n, false)),
                    ["less", "than", n] => self.high = number(n).map(|n| (n, true)),
                    ["a", "multiple", "of", n] => {
                        self.multiple_of = number(n).filter(|step| *step > 0.0);
                    }
                    _ => {}
                }
                return;
            }
        };
        match words.as_slice() {
            [low, "to", high, _] => (*min, *max) = (count(low), count(high)),
            ["exactly", n, _] => (*min, *max) = (count(n), count(n)),
            ["at", "least", n, _] => *min = count(n),
            ["at", "most", n, _] => *max = count(n),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::bounds_text;

    /// Every bound the strict walk states in words reads back as the keywords set it: the
    /// test model sees only the words, and would break a bound if their wording changed.
    #[test]
    fn stated_bounds_read_back_as_their_keywords() {
        let cases = [
            json!({"minimum": 1, "maximum": 5}),
            json!({"minimum": -2.5}),
            json!({"exclusiveMinimum": 0, "maximum": 1}),
            json!({"exclusiveMaximum": 10, "multipleOf": 5}),
            json!({"minimum": 0, "exclusiveMaximum": 1.5}),
            json!({"minLength": 1, "maxLength": 80, "pattern": "^[A-Z]+$"}),
            json!({"minLength": 3}),
            json!({"maxLength": 1}),
            json!({"minLength": 4, "maxLength": 4}),
            json!({"pattern": "^a, b{1,2}$"}),
            json!({"minItems": 1, "uniqueItems": true}),
            json!({"maxItems": 3}),
            json!({"minItems": 2, "maxItems": 2}),
            json!({"minItems": 2, "maxItems": 6}),
            json!({"pattern": "x, at", "minItems": 1, "maxItems": 3}),
        ];
        for case in cases {
            let map = case.as_object().unwrap();
            let stated = bounds_text(map).unwrap();
            let mut expected = Bounds::from_keywords(map);
            // `minLength: 0` and the like say nothing, and are not stated.
            if expected.min_length == Some(0) {
                expected.min_length = None;
            }
            assert_eq!(Bounds::from_text(&stated), expected, "{stated}");
        }
    }

    #[test]
    fn bounds_are_read_from_the_last_allowed_sentence_of_a_description() {
        let mut schema = json!({
            "type": "integer",
            "description": "Allowed: not this one. The age. Allowed: 18 to 130.",
        });
        let bounds = Bounds::of(schema.as_object().unwrap());
        assert_eq!(bounds.low, Some((18.0, false)));
        assert_eq!(bounds.high, Some((130.0, false)));
        schema["minimum"] = json!(3);
        assert_eq!(
            Bounds::of(schema.as_object().unwrap()).low,
            Some((3.0, false)),
            "keywords win"
        );
    }
}
