//! Reading a Rust type straight from a tape node, as `T::deserialize(&Value)` reads it
//! from the equivalent `serde_json::Value`.
//!
//! The verifier's fast path has already parsed a clean reply into a tape for the schema
//! checks; reading the value from the tape spares a second parse of the text. Every
//! answer here is the one `serde_json`'s `&Value` deserializer gives for the same JSON
//! (the verifier's ordinary step 7 reads from a `Value`), so the fast path and the
//! ordinary steps read the same value; the tests compare the two on arbitrary JSON.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, Error as _, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};

use super::{Elements, Entry, Members, TapeNode};
use jsonschema::json::{Array as _, Node as _, Object as _};

/// Why a node could not be read as the type asked for.
pub(crate) type TapeError = serde_json::Error;

impl<'a> TapeNode<'a> {
    /// What the node is, in the words serde's messages use.
    fn unexpected(&self) -> Unexpected<'a> {
        match self.entry() {
            None | Some(Entry::Null) => Unexpected::Unit,
            Some(Entry::Bool(value)) => Unexpected::Bool(*value),
            Some(Entry::Number(_)) => Unexpected::Other("number"),
            Some(Entry::String(text) | Entry::Key(text)) => Unexpected::Str(text.as_ref()),
            Some(Entry::Array { .. }) => Unexpected::Seq,
            Some(Entry::Object { .. }) => Unexpected::Map,
        }
    }

    fn invalid_type(&self, expected: &dyn de::Expected) -> TapeError {
        TapeError::invalid_type(self.unexpected(), expected)
    }

    fn visit_array<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        let Some(array) = self.as_array() else {
            return Err(self.invalid_type(&visitor));
        };
        let len = array.len();
        let mut elements = SeqReader {
            elements: array.elements(),
            remaining: len,
        };
        let value = visitor.visit_seq(&mut elements)?;
        if elements.remaining == 0 {
            Ok(value)
        } else {
            Err(TapeError::invalid_length(len, &"fewer elements in array"))
        }
    }

    fn visit_object<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        let Some(object) = self.as_object() else {
            return Err(self.invalid_type(&visitor));
        };
        let len = object.len();
        let mut members = MapReader {
            members: object.members(),
            value: None,
            remaining: len,
        };
        let value = visitor.visit_map(&mut members)?;
        if members.remaining == 0 {
            Ok(value)
        } else {
            Err(TapeError::invalid_length(len, &"fewer elements in map"))
        }
    }

    fn visit_number<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        match self.entry() {
            Some(Entry::Number(number)) => number.deserialize_any(visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn visit_text<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        match self.entry() {
            Some(Entry::String(text) | Entry::Key(text)) => visitor.visit_borrowed_str(text),
            _ => Err(self.invalid_type(&visitor)),
        }
    }
}

impl<'a> Deserializer<'a> for TapeNode<'a> {
    type Error = TapeError;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        match self.entry() {
            None | Some(Entry::Null) => visitor.visit_unit(),
            Some(Entry::Bool(value)) => visitor.visit_bool(*value),
            Some(Entry::Number(number)) => number.deserialize_any(visitor),
            Some(Entry::String(text) | Entry::Key(text)) => visitor.visit_borrowed_str(text),
            Some(Entry::Array { .. }) => self.visit_array(visitor),
            Some(Entry::Object { .. }) => self.visit_object(visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        match self.entry() {
            Some(Entry::Bool(value)) => visitor.visit_bool(*value),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_i8<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_i16<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_i32<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_i64<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_i128<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_u8<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_u16<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_u32<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_u64<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_u128<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_f32<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_f64<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_number(visitor)
    }

    fn deserialize_char<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_text(visitor)
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_text(visitor)
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_text(visitor)
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        match self.entry() {
            Some(Entry::String(text) | Entry::Key(text)) => visitor.visit_borrowed_str(text),
            Some(Entry::Array { .. }) => self.visit_array(visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        if self.is_null() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        if self.is_null() {
            visitor.visit_unit()
        } else {
            Err(self.invalid_type(&visitor))
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TapeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TapeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_array(visitor)
    }

    fn deserialize_tuple<V: Visitor<'a>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, TapeError> {
        self.visit_array(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, TapeError> {
        self.visit_array(visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_object(visitor)
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TapeError> {
        match self.entry() {
            Some(Entry::Array { .. }) => self.visit_array(visitor),
            Some(Entry::Object { .. }) => self.visit_object(visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TapeError> {
        match self.entry() {
            Some(Entry::String(text) | Entry::Key(text)) => visitor.visit_enum(VariantReader {
                variant: text,
                value: None,
            }),
            Some(Entry::Object { .. }) => {
                let mut members = self.as_object().into_iter().flat_map(|o| o.members());
                match (members.next(), members.next()) {
                    (Some((variant, value)), None) => visitor.visit_enum(VariantReader {
                        variant,
                        value: Some(value),
                    }),
                    _ => Err(TapeError::invalid_value(
                        Unexpected::Map,
                        &"map with a single key",
                    )),
                }
            }
            _ => Err(TapeError::invalid_type(self.unexpected(), &"string or map")),
        }
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        self.visit_text(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, TapeError> {
        visitor.visit_unit()
    }
}

/// The elements of an array, handed to a visitor one by one.
struct SeqReader<'a> {
    elements: Elements<'a>,
    remaining: usize,
}

impl<'a> SeqAccess<'a> for SeqReader<'a> {
    type Error = TapeError;

    fn next_element_seed<S: DeserializeSeed<'a>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, TapeError> {
        match self.elements.next() {
            Some(element) => {
                self.remaining = self.remaining.saturating_sub(1);
                seed.deserialize(element).map(Some)
            }
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.remaining)
    }
}

/// The members of an object, handed to a visitor name by name.
struct MapReader<'a> {
    members: Members<'a>,
    value: Option<TapeNode<'a>>,
    remaining: usize,
}

impl<'a> MapAccess<'a> for MapReader<'a> {
    type Error = TapeError;

    fn next_key_seed<S: DeserializeSeed<'a>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, TapeError> {
        match self.members.next() {
            Some((name, value)) => {
                self.remaining = self.remaining.saturating_sub(1);
                self.value = Some(value);
                seed.deserialize(name_deserializer(name)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'a>>(&mut self, seed: S) -> Result<S::Value, TapeError> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(TapeError::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.remaining)
    }
}

/// A member name or an enum's variant name. `serde_json` also reads numbers and booleans
/// from a name (the keys of an integer-keyed map); no target the fast path reads has
/// such keys (maps are not strict-compatible), so a name is only ever text here.
fn name_deserializer(name: &str) -> BorrowedStrDeserializer<'_, TapeError> {
    BorrowedStrDeserializer::new(name)
}

/// An enum's variant, named by a string or by the single member of an object.
struct VariantReader<'a> {
    variant: &'a str,
    value: Option<TapeNode<'a>>,
}

impl<'a> EnumAccess<'a> for VariantReader<'a> {
    type Error = TapeError;
    type Variant = VariantValue<'a>;

    fn variant_seed<S: DeserializeSeed<'a>>(
        self,
        seed: S,
    ) -> Result<(S::Value, VariantValue<'a>), TapeError> {
        let variant = seed.deserialize(name_deserializer(self.variant))?;
        Ok((variant, VariantValue { value: self.value }))
    }
}

/// What follows a variant's name: nothing for a unit variant, else the member's value.
struct VariantValue<'a> {
    value: Option<TapeNode<'a>>,
}

impl<'a> VariantAccess<'a> for VariantValue<'a> {
    type Error = TapeError;

    fn unit_variant(self) -> Result<(), TapeError> {
        match self.value {
            None => Ok(()),
            Some(value) => de::Deserialize::deserialize(value),
        }
    }

    fn newtype_variant_seed<S: DeserializeSeed<'a>>(self, seed: S) -> Result<S::Value, TapeError> {
        match self.value {
            Some(value) => seed.deserialize(value),
            None => Err(TapeError::invalid_type(
                Unexpected::UnitVariant,
                &"newtype variant",
            )),
        }
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Result<V::Value, TapeError> {
        match self.value {
            // As `serde_json` does, an empty array stands for a tuple variant without fields.
            Some(value) if value.as_array().is_some_and(|array| array.len() == 0) => {
                visitor.visit_unit()
            }
            Some(value) if value.as_array().is_some() => value.visit_array(visitor),
            Some(value) => Err(value.invalid_type(&visitor)),
            None => Err(TapeError::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }

    fn struct_variant<V: Visitor<'a>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TapeError> {
        match self.value {
            Some(value) if value.as_object().is_some() => value.visit_object(visitor),
            Some(value) => Err(value.invalid_type(&visitor)),
            None => Err(TapeError::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::collection::{btree_map, vec};
    use proptest::prelude::*;
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};

    use super::super::Tape;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Shape {
        Dot,
        Circle(f64),
        Pair(i8, i8),
        Box { w: u8, h: u8 },
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "kind")]
    enum Tagged {
        A { n: u32 },
        B,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(untagged)]
    enum Loose {
        Number(i64),
        Text(String),
        List(Vec<bool>),
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Meters(f32);

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Unit;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Record {
        name: String,
        code: char,
        count: u16,
        delta: i32,
        ratio: f64,
        flag: bool,
        note: Option<String>,
        shapes: Vec<Shape>,
        tagged: Tagged,
        loose: Loose,
        length: Meters,
        pair: (u8, String),
        #[serde(default)]
        nothing: Option<Unit>,
    }

    /// What `T` reads from the tape of `value`'s text, and what it reads from `value`.
    fn both<T: DeserializeOwned>(value: &Value) -> (Option<T>, Option<T>) {
        let text = value.to_string();
        let tape = Tape::parse(&text).unwrap();
        (T::deserialize(tape.root()).ok(), T::deserialize(value).ok())
    }

    fn agree<T: DeserializeOwned + PartialEq + std::fmt::Debug>(value: &Value) {
        let (from_tape, from_value) = both::<T>(value);
        assert_eq!(from_tape, from_value, "{value}");
    }

    fn record() -> Value {
        json!({
            "name": "caf\u{e9} \"quoted\"", "code": "x", "count": 7, "delta": -3, "ratio": 0.5,
            "flag": true, "note": null,
            "shapes": ["Dot", {"Circle": 1.5}, {"Pair": [1, -2]}, {"Box": {"w": 2, "h": 3}}],
            "tagged": {"kind": "A", "n": 4}, "loose": [true, false], "length": 2.5,
            "pair": [1, "one"], "nothing": null
        })
    }

    #[test]
    fn a_record_reads_the_same_from_the_tape_and_from_a_value() {
        let value = record();
        let (from_tape, from_value) = both::<Record>(&value);
        assert!(from_tape.is_some());
        assert_eq!(from_tape, from_value);
    }

    #[test]
    fn what_a_value_refuses_the_tape_refuses() {
        let mut cases = Vec::new();
        for (field, wrong) in [
            ("count", json!(70_000)),
            ("count", json!(-1)),
            ("count", json!(1.0)),
            ("code", json!("xy")),
            ("name", json!(1)),
            ("flag", json!("true")),
            ("shapes", json!(["Square"])),
            ("shapes", json!([{"Dot": 1, "Circle": 2.0}])),
            ("shapes", json!([{"Pair": [1]}])),
            ("shapes", json!([{"Pair": [1, 2, 3]}])),
            ("tagged", json!({"n": 4})),
            ("loose", json!({"a": 1})),
            ("pair", json!([1])),
            ("extra", json!(1)),
        ] {
            let mut value = record();
            value[field] = wrong;
            cases.push(value);
        }
        let mut missing = record();
        missing.as_object_mut().unwrap().remove("name");
        cases.push(missing);
        for value in &cases {
            let (from_tape, from_value) = both::<Record>(value);
            assert!(from_value.is_none(), "{value}");
            assert!(from_tape.is_none(), "{value}");
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-300i64..300).prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            prop_oneof![Just(0.5), Just(-1.0), Just(1e300)].prop_map(|n: f64| json!(n)),
            "Dot|Circle|Pair|Box|A|B|x|[a-z\"é]{0,3}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..4).prop_map(Value::Array),
                btree_map("Dot|Circle|Pair|Box|kind|n|w|h|[a-z]{1,2}", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_json_reads_the_same_from_the_tape_and_from_a_value(value in json_value()) {
            agree::<Shape>(&value);
            agree::<Tagged>(&value);
            agree::<Loose>(&value);
            agree::<Vec<Option<Shape>>>(&value);
            agree::<(u8, Option<String>)>(&value);
            agree::<Meters>(&value);
            agree::<Unit>(&value);
            agree::<char>(&value);
            agree::<std::collections::BTreeMap<String, Loose>>(&value);
        }

        /// A record with one member replaced by arbitrary JSON.
        #[test]
        fn a_record_with_any_member_replaced_reads_the_same(
            field in "name|code|count|delta|ratio|flag|note|shapes|tagged|loose|length|pair|nothing",
            replacement in json_value(),
        ) {
            let mut value = record();
            value[field.as_str()] = replacement;
            agree::<Record>(&value);
        }
    }
}
