//! A JSON value valid for a schema, drawn from a seeded random source: the strict
//! schemas this crate sends (objects with every property required, `$defs` and
//! `$ref`s, `anyOf` for `Option` and enums with data, `enum` and `const`, arrays and
//! tuples, the accepted string formats) and the constraint keywords of hand-written
//! schemas, or the bounds the strict walk states in words in their place.

use fastrand::Rng;
use serde_json::{Map, Number, Value};

use super::bounds::Bounds;
use super::pattern;

/// How deep `$ref`s and nesting may go before the generator writes the least value it
/// can (`null`, an empty array or object): a recursive schema has no strict form, and
/// this keeps a runtime one from recursing without end.
const MAX_DEPTH: usize = 24;

/// How many items an array gets when no bound says: one to three.
const DEFAULT_ITEMS: (u64, u64) = (1, 3);

/// The range numbers are drawn from when no bound says: every integer type holds it, as
/// the strict schema does not keep the range an integer `format` implies (`uint8`).
const DEFAULT_RANGE: (f64, f64) = (0.0, 100.0);

/// Words plain strings are made of.
const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa",
];

/// Generates values for the schemas under one root, whose `#/...` references it resolves.
pub(crate) struct Generator<'a> {
    root: &'a Value,
    rng: &'a mut Rng,
}

impl<'a> Generator<'a> {
    /// A generator for the schemas under `root`, drawing from `rng`.
    pub(crate) fn new(root: &'a Value, rng: &'a mut Rng) -> Self {
        Self { root, rng }
    }

    /// A value valid for `schema`.
    pub(crate) fn value(&mut self, schema: &Value) -> Value {
        self.at_depth(schema, 0)
    }

    fn at_depth(&mut self, schema: &Value, depth: usize) -> Value {
        let Value::Object(map) = schema else {
            // `true` or `{}`-like: any value is valid.
            return Value::String(self.words(1, 2));
        };
        if depth > MAX_DEPTH {
            return least_value(map);
        }
        if let Some(Value::String(reference)) = map.get("$ref") {
            return match self.resolve(reference) {
                Some(target) => self.at_depth(target, depth + 1),
                None => Value::Null,
            };
        }
        if let Some(constant) = map.get("const") {
            return constant.clone();
        }
        if let Some(Value::Array(choices)) = map.get("enum")
            && !choices.is_empty()
        {
            return choices[self.rng.usize(..choices.len())].clone();
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(keyword)
                && !branches.is_empty()
            {
                let branch = self.branch(branches);
                return self.at_depth(branch, depth + 1);
            }
        }
        if let Some(Value::Array(parts)) = map.get("allOf")
            && !parts.is_empty()
        {
            return self.all_of(parts, depth);
        }
        match self.kind(map) {
            "object" => self.object(map, depth),
            "array" => self.array(map, depth),
            "string" => self.string(map),
            "integer" => self.number(map, true),
            "number" => self.number(map, false),
            "boolean" => Value::Bool(self.rng.bool()),
            "null" => Value::Null,
            _ => Value::String(self.words(1, 2)),
        }
    }

    /// The schema a local reference (`#/$defs/Line`) points at.
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        let decoded = pointer.replace("%25", "%");
        self.root.pointer(&decoded)
    }

    /// One branch of an `anyOf`: a `null` branch (an `Option` left empty) one time in
    /// four, so most values show their data.
    fn branch<'s>(&mut self, branches: &'s [Value]) -> &'s Value {
        let is_null = |branch: &Value| branch.get("type").and_then(Value::as_str) == Some("null");
        let data: Vec<&Value> = branches.iter().filter(|b| !is_null(b)).collect();
        if data.is_empty() || (data.len() < branches.len() && self.rng.u8(..4) == 0) {
            return &branches[self.rng.usize(..branches.len())];
        }
        data[self.rng.usize(..data.len())]
    }

    /// The JSON type to write: the node's `type`, one of its types (`null` one time in
    /// four when others are allowed), or what its keywords imply.
    fn kind<'m>(&mut self, map: &'m Map<String, Value>) -> &'m str {
        match map.get("type") {
            Some(Value::String(kind)) => kind,
            Some(Value::Array(kinds)) => {
                let kinds: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
                let data: Vec<&str> = kinds.iter().copied().filter(|k| *k != "null").collect();
                if data.is_empty() || (data.len() < kinds.len() && self.rng.u8(..4) == 0) {
                    "null"
                } else {
                    data[self.rng.usize(..data.len())]
                }
            }
            _ if map.contains_key("properties") => "object",
            _ if map.contains_key("items") || map.contains_key("prefixItems") => "array",
            _ => "any",
        }
    }

    /// The parts of an `allOf` merged: their objects' properties together, or the first
    /// part's value when they are not all objects.
    fn all_of(&mut self, parts: &[Value], depth: usize) -> Value {
        let mut merged = Map::new();
        for part in parts {
            match self.at_depth(part, depth + 1) {
                Value::Object(object) => merged.extend(object),
                other if merged.is_empty() => return other,
                _ => {}
            }
        }
        Value::Object(merged)
    }

    fn object(&mut self, map: &Map<String, Value>, depth: usize) -> Value {
        let mut object = Map::new();
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (name, schema) in properties {
                let value = self.at_depth(schema, depth + 1);
                object.insert(name.clone(), value);
            }
        }
        // A map's entries (not strict, but a hand-written schema may ask for them).
        if let Some(entries @ Value::Object(_)) = map.get("additionalProperties")
            && object.is_empty()
        {
            for index in 1..=self.rng.u64(1..=2) {
                let value = self.at_depth(entries, depth + 1);
                object.insert(format!("key{index}"), value);
            }
        }
        Value::Object(object)
    }

    fn array(&mut self, map: &Map<String, Value>, depth: usize) -> Value {
        let bounds = Bounds::of(map);
        let mut items: Vec<Value> = Vec::new();
        if let Some(Value::Array(positions)) = map.get("prefixItems") {
            for schema in positions {
                items.push(self.at_depth(schema, depth + 1));
            }
            return Value::Array(items);
        }
        let min = bounds.min_items.unwrap_or(
            DEFAULT_ITEMS
                .0
                .min(bounds.max_items.unwrap_or(DEFAULT_ITEMS.0)),
        );
        let max = bounds
            .max_items
            .unwrap_or(DEFAULT_ITEMS.1.max(min))
            .max(min);
        let preferred = DEFAULT_ITEMS.1.clamp(min, max);
        let count = self.rng.u64(min..=preferred);
        let Some(item) = map.get("items") else {
            return Value::Array(Vec::new());
        };
        // Unique items: a few draws per item, so a small enum can still fill the array.
        let mut draws = 0;
        while (items.len() as u64) < count && draws < count * 16 {
            draws += 1;
            let value = self.at_depth(item, depth + 1);
            if bounds.unique_items && items.contains(&value) {
                continue;
            }
            items.push(value);
        }
        Value::Array(items)
    }

    fn string(&mut self, map: &Map<String, Value>) -> Value {
        if let Some(formatted) = map
            .get("format")
            .and_then(Value::as_str)
            .and_then(|format| self.formatted(format))
        {
            return Value::String(formatted);
        }
        let bounds = Bounds::of(map);
        if let Some(pattern) = &bounds.pattern
            && let Ok(node) = pattern::parse(pattern)
        {
            let mut text = String::new();
            pattern::generate(&node, self.rng, &mut text);
            return Value::String(text);
        }
        let min = bounds.min_length.unwrap_or(0) as usize;
        let max = bounds.max_length.map(|max| max as usize);
        let mut text = self.words(1, 3);
        while text.chars().count() < min {
            text.push(' ');
            text.push_str(&self.words(1, 1));
        }
        if let Some(max) = max
            && text.chars().count() > max
        {
            text = text.chars().take(max).collect();
            // A cut that ends on a space would leave trailing whitespace; a letter reads
            // better and keeps the length.
            if text.ends_with(' ') {
                text.pop();
                text.push('a');
            }
        }
        Value::String(text)
    }

    /// A string in `format`, or `None` for a format this generator does not know.
    fn formatted(&mut self, format: &str) -> Option<String> {
        let rng = &mut *self.rng;
        let date = |rng: &mut Rng| {
            format!(
                "{:04}-{:02}-{:02}",
                rng.u32(2000..=2030),
                rng.u32(1..=12),
                rng.u32(1..=28)
            )
        };
        let time = |rng: &mut Rng| {
            format!(
                "{:02}:{:02}:{:02}",
                rng.u32(0..24),
                rng.u32(0..60),
                rng.u32(0..60)
            )
        };
        Some(match format {
            "date" => date(rng),
            "date-time" => format!("{}T{}Z", date(rng), time(rng)),
            "time" => format!("{}Z", time(rng)),
            "duration" => format!("P{}DT{}H", rng.u32(0..30), rng.u32(0..24)),
            "email" => format!("{}@example.com", WORDS[rng.usize(..WORDS.len())]),
            "hostname" => format!("{}.example.com", WORDS[rng.usize(..WORDS.len())]),
            "ipv4" => format!("192.0.2.{}", rng.u8(1..=254)),
            "ipv6" => format!("2001:db8::{:x}", rng.u16(1..)),
            "uuid" => {
                // Version 4, variant 1.
                let bits = rng.u128(..);
                let bits = (bits & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
                let hex = format!("{bits:032x}");
                format!(
                    "{}-{}-{}-{}-{}",
                    &hex[..8],
                    &hex[8..12],
                    &hex[12..16],
                    &hex[16..20],
                    &hex[20..]
                )
            }
            _ => return None,
        })
    }

    /// A number within the node's bounds: drawn from their overlap with
    /// [`DEFAULT_RANGE`], or the bound nearest it when they do not overlap.
    fn number(&mut self, map: &Map<String, Value>, integer: bool) -> Value {
        let bounds = Bounds::of(map);
        // A step too small to matter for an integer is one.
        let step = bounds
            .multiple_of
            .map(|step| if integer { step.max(1.0) } else { step });
        let (mut low, mut high) = (f64::NEG_INFINITY, f64::INFINITY);
        let nudge = if integer { 1.0 } else { 0.01 };
        if let Some((limit, exclusive)) = bounds.low {
            low = if exclusive { limit + nudge } else { limit };
        }
        if let Some((limit, exclusive)) = bounds.high {
            high = if exclusive { limit - nudge } else { limit };
        }
        if integer {
            (low, high) = (low.ceil(), high.floor());
        }
        let from = low.max(DEFAULT_RANGE.0).min(high.max(low));
        let to = high.min(DEFAULT_RANGE.1).max(from);
        let drawn = if let Some(step) = step {
            let first = (from / step).ceil() as i64;
            let last = ((to / step).floor() as i64).max(first);
            self.rng.i64(first..=last) as f64 * step
        } else if integer {
            self.rng.i64(from as i64..=to as i64) as f64
        } else {
            let x = from + self.rng.f64() * (to - from);
            // Two decimals read like data; rounding must not leave the range.
            let rounded = (x * 100.0).round() / 100.0;
            if rounded >= from && rounded <= to {
                rounded
            } else {
                x
            }
        };
        if integer {
            Value::Number(Number::from(drawn as i64))
        } else {
            Number::from_f64(drawn).map_or(Value::Null, Value::Number)
        }
    }

    /// `min` to `max` words, space-separated.
    fn words(&mut self, min: usize, max: usize) -> String {
        let count = self.rng.usize(min..=max);
        let mut text = String::new();
        for index in 0..count {
            if index > 0 {
                text.push(' ');
            }
            text.push_str(WORDS[self.rng.usize(..WORDS.len())]);
        }
        text
    }
}

/// The least value of a node when the depth limit is reached: `null` where allowed, an
/// empty array or object, or `null`.
fn least_value(map: &Map<String, Value>) -> Value {
    match map.get("type") {
        Some(Value::String(kind)) if kind == "array" => Value::Array(Vec::new()),
        Some(Value::String(kind)) if kind == "object" => Value::Object(Map::new()),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn valid(schema: &Value, value: &Value) -> bool {
        jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .unwrap()
            .is_valid(value)
    }

    /// A hand-written schema with every keyword the generator honours: each of many draws
    /// is valid, formats included.
    #[test]
    fn values_are_valid_for_their_schema_keywords_and_formats() {
        let schema = json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "format": "uuid"},
                "day": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "date-time"},
                "time": {"type": "string", "format": "time"},
                "mail": {"type": "string", "format": "email"},
                "host": {"type": "string", "format": "hostname"},
                "ip4": {"type": "string", "format": "ipv4"},
                "ip6": {"type": "string", "format": "ipv6"},
                "wait": {"type": "string", "format": "duration"},
                "code": {"type": "string", "pattern": "^[A-Z]{2}\\d{3}$"},
                "short": {"type": "string", "minLength": 2, "maxLength": 4},
                "long": {"type": "string", "minLength": 30},
                "age": {"type": "integer", "minimum": 18, "maximum": 21},
                "big": {"type": "integer", "minimum": 1000},
                "negative": {"type": "integer", "exclusiveMaximum": -5},
                "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.05},
                "step": {"type": "integer", "multipleOf": 7, "minimum": 10},
                "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 2, "maxItems": 3, "uniqueItems": true},
                "none": {"type": "array", "items": {"type": "integer"}, "maxItems": 0},
                "pair": {"type": "array", "prefixItems": [{"type": "boolean"}, {"const": 3}], "minItems": 2, "maxItems": 2},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]},
                "nullable": {"type": ["string", "null"]},
                "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
                "map": {"type": "object", "additionalProperties": {"type": "integer"}}
            },
            "required": ["id", "day", "at", "code", "short", "long", "age", "big", "negative", "ratio", "step", "tags", "none", "pair", "maybe", "nullable", "lines"],
            "additionalProperties": false,
            "$defs": {
                "Line": {
                    "type": "object",
                    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                    "required": ["sku", "qty"],
                    "additionalProperties": false
                }
            }
        });
        let mut rng = Rng::with_seed(1);
        for _ in 0..200 {
            let value = Generator::new(&schema, &mut rng).value(&schema);
            assert!(valid(&schema, &value), "{value:#}");
        }
    }

    /// The same schema after the strict walk, which removes the constraint keywords and
    /// states them in words: the values still meet the removed constraints.
    #[test]
    fn stated_bounds_are_met_after_the_strict_walk() {
        let full = json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "pattern": "^[a-z]{3}-\\d{2}$"},
                "name": {"type": "string", "description": "A name", "minLength": 12, "maxLength": 14},
                "age": {"type": "integer", "format": "uint8", "minimum": 150},
                "score": {"type": "number", "minimum": -3, "exclusiveMaximum": -2.5},
                "items": {"type": "array", "items": {"type": "boolean"}, "minItems": 5, "maxItems": 6}
            }
        });
        let mut strict = full.clone();
        crate::schema::make_strict(&mut strict);
        assert!(!strict.to_string().contains("minItems"), "{strict}");
        let mut rng = Rng::with_seed(2);
        for _ in 0..100 {
            let value = Generator::new(&strict, &mut rng).value(&strict);
            assert!(valid(&full, &value), "{value:#}");
            let age = value["age"].as_u64().unwrap();
            assert!(
                (150..=255).contains(&age),
                "an uint8 at its stated minimum: {age}"
            );
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_value() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "number"}, "c": {"type": "array", "items": {"type": "integer"}}
        }});
        let draw = |seed| Generator::new(&schema, &mut Rng::with_seed(seed)).value(&schema);
        assert_eq!(draw(9), draw(9));
        assert_ne!(draw(9), draw(10));
    }

    #[test]
    fn a_recursive_schema_ends() {
        let schema = json!({
            "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}, "minItems": 1}}}},
            "$ref": "#/$defs/Node"
        });
        let value = Generator::new(&schema, &mut Rng::with_seed(3)).value(&schema);
        assert!(value.is_object());
    }
}
