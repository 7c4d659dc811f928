//! Integers beyond 64 bits, read into the target exactly as `serde_json` reads them from
//! text.
//!
//! A `serde_json::Value` holds such an integer as an `f64`, so a `u128` or `i128` field
//! read from the (repaired) value fails with "invalid type: floating point", though the
//! same reply read from text succeeds. When that happens, the integer literals of the
//! reply are found again in its text, the value is written back out with each one in
//! place of the float it became, and the target is read from that text.

use std::cell::Cell;
use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::lexical::{comment_end, string_end};

/// The smallest magnitude of a float that may stand for an integer beyond `i64`/`u64`:
/// `serde_json` reads such an integer as a float in a `Value` (so a `u128` target fails)
/// but exactly from text (so it passes).
pub(crate) const WIDE_INTEGER_MAGNITUDE: f64 = 9_223_372_036_854_775_808.0;

/// An integer literal that fits neither `i64` nor `u64`, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wide {
    Unsigned(u128),
    Signed(i128),
}

/// The float each wide literal of `text` became, mapped back to the literal; `None`
/// where two different literals became the same float (no way to tell them apart).
type Literals = HashMap<u64, Option<Wide>>;

/// `T` read from `value` with every wide integer literal of `text` restored, or `None`
/// when `text` holds no such literal that `value` still holds (nothing to restore).
pub(crate) fn read_with_wide_integers<T: DeserializeOwned>(value: &Value, text: &str) -> Option<T> {
    let literals = wide_literals(text);
    if literals.values().all(Option::is_none) {
        return None;
    }
    let restored = Cell::new(0usize);
    let exact = serde_json::to_string(&Exact {
        value,
        literals: &literals,
        restored: &restored,
    })
    .ok()?;
    if restored.get() == 0 {
        return None;
    }
    serde_json::from_str(&exact).ok()
}

/// The number literals of `text` (outside strings and comments) that a `Value` holds as
/// floats although they were written as integers.
fn wide_literals(text: &str) -> Literals {
    let bytes = text.as_bytes();
    let mut literals = Literals::new();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if byte == b'"' {
            at = string_end(bytes, at);
            continue;
        }
        if let Some(end) = comment_end(bytes, at) {
            at = end;
            continue;
        }
        if !(byte == b'-' || byte.is_ascii_digit()) {
            at += 1;
            continue;
        }
        let end = bytes[at..]
            .iter()
            .position(|b| !(b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')))
            .map_or(bytes.len(), |offset| at + offset);
        // The run is ASCII, so these are character boundaries.
        if let Some(token) = text.get(at..end) {
            note_literal(&mut literals, token);
        }
        at = end;
    }
    literals
}

fn note_literal(literals: &mut Literals, token: &str) {
    let Ok(float) = token.parse::<f64>() else {
        return;
    };
    let integer_form = token
        .strip_prefix('-')
        .unwrap_or(token)
        .bytes()
        .all(|b| b.is_ascii_digit());
    let wide = if !integer_form || token.parse::<i64>().is_ok() || token.parse::<u64>().is_ok() {
        None
    } else if let Ok(unsigned) = token.parse::<u128>() {
        Some(Wide::Unsigned(unsigned))
    } else if let Ok(signed) = token.parse::<i128>() {
        Some(Wide::Signed(signed))
    } else {
        None
    };
    // Below this magnitude a `Value` holds the literal exactly (as `i64` or `u64`).
    if float.abs() < WIDE_INTEGER_MAGNITUDE {
        return;
    }
    let key = float.to_bits();
    match literals.get(&key) {
        None => {
            literals.insert(key, wide);
        }
        Some(seen) if *seen == wide => {}
        // Two different literals became one float (or a float literal was written
        // there): restoring an integer would be a guess.
        Some(_) => {
            literals.insert(key, None);
        }
    }
}

/// A value written out with the wide literals restored.
struct Exact<'a> {
    value: &'a Value,
    literals: &'a Literals,
    restored: &'a Cell<usize>,
}

impl Exact<'_> {
    fn of<'b>(&'b self, value: &'b Value) -> Exact<'b> {
        Exact {
            value,
            literals: self.literals,
            restored: self.restored,
        }
    }
}

impl Serialize for Exact<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Number(number) if number.is_f64() => {
                let literal = number
                    .as_f64()
                    .and_then(|float| self.literals.get(&float.to_bits()).copied().flatten());
                match literal {
                    Some(wide) => {
                        self.restored.set(self.restored.get() + 1);
                        match wide {
                            Wide::Unsigned(n) => serializer.serialize_u128(n),
                            Wide::Signed(n) => serializer.serialize_i128(n),
                        }
                    }
                    None => number.serialize(serializer),
                }
            }
            // Values read from replies are at most as deep as `serde_json` nests them.
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&self.of(item))?;
                }
                seq.end()
            }
            Value::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for (name, member) in members {
                    map.serialize_entry(name, &self.of(member))?;
                }
                map.end()
            }
            other => other.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Deserialize)]
    struct Wides {
        big: u128,
        low: i128,
        small: u128,
        float: f64,
    }

    #[test]
    fn wide_integers_are_read_exactly() {
        let text = r#"{"big": 340282366920938463463374607431768211455,
            "low": -170141183460469231731687303715884105728, "small": 7, "float": 1.5e300}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert!(Wides::deserialize(&value).is_err());
        assert_eq!(
            read_with_wide_integers::<Wides>(&value, text),
            Some(Wides {
                big: u128::MAX,
                low: i128::MIN,
                small: 7,
                float: 1.5e300,
            })
        );
    }

    #[test]
    fn literals_in_strings_and_comments_are_not_read() {
        let text = r#"{"n": "18446744073709551616" /* 18446744073709551617 */}"#;
        assert!(wide_literals(text).is_empty());
    }

    #[test]
    fn literals_that_became_the_same_float_are_not_guessed_between() {
        let literals = wide_literals("[18446744073709551616, 18446744073709551617]");
        assert_eq!(literals.values().collect::<Vec<_>>(), vec![&None]);
        for floats_too in [
            "[18446744073709551616, 1.8446744073709552e19]",
            "[1.8446744073709552e19, 18446744073709551616]",
        ] {
            let literals = wide_literals(floats_too);
            assert_eq!(literals.values().collect::<Vec<_>>(), vec![&None]);
        }
        let value: Value =
            serde_json::from_str("[18446744073709551616, 18446744073709551617]").unwrap();
        assert_eq!(
            read_with_wide_integers::<Vec<u128>>(
                &value,
                "[18446744073709551616, 18446744073709551617]"
            ),
            None
        );
    }

    #[test]
    fn a_float_written_as_a_float_stays_one() {
        let text = "[1e20]";
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(read_with_wide_integers::<Vec<u128>>(&value, text), None);
    }
}
