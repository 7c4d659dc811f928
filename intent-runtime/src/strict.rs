//! Compile-time strictness: the [`StrictCompatible`] marker trait for types whose schema
//! can be sent to a provider's strict mode, implemented for the std types that qualify and
//! derived for user types with `#[derive(StrictCompatible)]`.
//!
//! A strict schema must list every property of every object, so a type qualifies when its
//! shape is fixed: maps (keys not known in advance), `serde_json::Value` (no shape at all),
//! trait objects and `()` do not. Such types can still be targets: return
//! `serde_json::Value` with a runtime schema, or opt in to JSON-object mode with
//! `#[intent("...", json_mode)]`.
//!
//! Behind features: chrono's date and time types (`chrono`) and `uuid::Uuid` (`uuid`),
//! which have string formats. Not the `time` crate's types: `schemars` has no
//! `JsonSchema` for them, so they cannot be targets at all; use chrono, or a `String`
//! field (`#[schemars(with = "String")]` on a field of another type is checked as a
//! `String`).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet, LinkedList, VecDeque};
use std::num::{
    NonZeroI8, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI128, NonZeroIsize, NonZeroU8,
    NonZeroU16, NonZeroU32, NonZeroU64, NonZeroU128, NonZeroUsize,
};
use std::rc::Rc;
use std::sync::Arc;

/// A type whose JSON schema can be sent to a provider in strict mode.
///
/// Derive it for your structs and enums with `#[derive(StrictCompatible)]`; the derive
/// checks that every field is strict-compatible and that the type does not contain
/// itself. The `#[intents]` macro requires it of every target type other than `String`
/// and `serde_json::Value`, unless the method opts in to `json_mode`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no strict schema, so it cannot be an intent target or a field of one",
    label = "`{Self}` is not `StrictCompatible`",
    note = "a strict schema fixes every property: maps have no fixed keys, `serde_json::Value` and trait objects have no shape, `()` has no value, and a recursive type cannot be spelled out",
    note = "derive `StrictCompatible` for your own structs and enums, use a struct instead of a map, return `serde_json::Value` with `#[intent(\"...\", schema = \"file.json\")]`, or add `json_mode` to the `#[intent]` attribute"
)]
pub trait StrictCompatible {}

/// A struct with named fields whose strict schema is a plain object, so that it can be
/// `#[serde(flatten)]`ed into another strict struct. `#[derive(StrictCompatible)]`
/// implements it for such structs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be flattened into a strict schema",
    label = "`#[serde(flatten)]` of `{Self}`",
    note = "only a struct with named fields that derives `StrictCompatible` can be flattened into a strict object; enums, maps and `Option`s cannot",
    note = "remove `#[serde(flatten)]` to nest the value under its field name instead"
)]
pub trait StrictObject: StrictCompatible {}

macro_rules! strict_leaf {
    ($($ty:ty),* $(,)?) => {
        $(impl StrictCompatible for $ty {})*
    };
}

strict_leaf!(
    bool,
    char,
    String,
    str,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    NonZeroU8,
    NonZeroU16,
    NonZeroU32,
    NonZeroU64,
    NonZeroU128,
    NonZeroUsize,
    NonZeroI8,
    NonZeroI16,
    NonZeroI32,
    NonZeroI64,
    NonZeroI128,
    NonZeroIsize,
);

macro_rules! strict_wrapper {
    ($($wrapper:ident),* $(,)?) => {
        $(impl<T: StrictCompatible> StrictCompatible for $wrapper<T> {})*
    };
}

strict_wrapper!(Vec, VecDeque, LinkedList, Option, BTreeSet, HashSet);

impl<T: StrictCompatible + ?Sized> StrictCompatible for Box<T> {}
impl<T: StrictCompatible + ?Sized> StrictCompatible for Arc<T> {}
impl<T: StrictCompatible + ?Sized> StrictCompatible for Rc<T> {}
impl<T: StrictCompatible + ToOwned + ?Sized> StrictCompatible for Cow<'_, T> {}
impl<T: StrictCompatible + ?Sized> StrictCompatible for &T {}
impl<T: StrictCompatible> StrictCompatible for [T] {}
impl<T: StrictCompatible, const N: usize> StrictCompatible for [T; N] {}

// Tuples are arrays with `prefixItems` in schemars' output; providers' strict modes accept
// arrays of one item schema only, so a tuple has no strict form and is deliberately
// absent. A struct with named fields says the same thing and gives the model names.

#[cfg(feature = "chrono")]
mod chrono_impls {
    use super::StrictCompatible;

    // Each of these has a string format (ISO 8601) in schemars, which strict modes accept.
    impl StrictCompatible for chrono::NaiveDate {}
    impl StrictCompatible for chrono::NaiveTime {}
    impl StrictCompatible for chrono::NaiveDateTime {}
    impl<Tz: chrono::TimeZone> StrictCompatible for chrono::DateTime<Tz> {}
}

// A UUID is a string with the `uuid` format in schemars.
#[cfg(feature = "uuid")]
impl StrictCompatible for uuid::Uuid {}

/// `StrictCompatible`, asked of a type that names chrono's dates or times: without the
/// `chrono` feature they are not strict-compatible, and the error says to enable it
/// instead of speaking of maps. `#[derive(StrictCompatible)]` and `#[intents]` ask it of
/// such types (with the feature, they ask `StrictCompatible` itself).
#[cfg(not(feature = "chrono"))]
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no strict schema without the `chrono` feature of intent-rs",
    label = "chrono's dates and times need intent-rs's `chrono` feature",
    note = "chrono's `NaiveDate`, `NaiveTime`, `NaiveDateTime` and `DateTime` are strict-compatible (ISO 8601 strings) once intent-rs is built with its `chrono` feature: `intent-rs = {{ version = \"0.1\", features = [\"chrono\"] }}` in Cargo.toml",
    note = "a type of your own with one of these names: derive `StrictCompatible` for it"
)]
pub trait ChronoStrict {}

#[cfg(not(feature = "chrono"))]
#[diagnostic::do_not_recommend]
impl<T: StrictCompatible + ?Sized> ChronoStrict for T {}

/// `StrictCompatible`, asked of a type that names `Uuid`, as [`ChronoStrict`] is of
/// chrono's types: without the `uuid` feature the error says to enable it.
#[cfg(not(feature = "uuid"))]
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no strict schema without the `uuid` feature of intent-rs",
    label = "`uuid::Uuid` needs intent-rs's `uuid` feature",
    note = "`uuid::Uuid` is strict-compatible (a string with the `uuid` format) once intent-rs is built with its `uuid` feature: `intent-rs = {{ version = \"0.1\", features = [\"uuid\"] }}` in Cargo.toml",
    note = "a type of your own named `Uuid`: derive `StrictCompatible` for it"
)]
pub trait UuidStrict {}

#[cfg(not(feature = "uuid"))]
#[diagnostic::do_not_recommend]
impl<T: StrictCompatible + ?Sized> UuidStrict for T {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::__private::assert_strict;

    // Compiles only while these impls exist; the types that must not be strict are the
    // ui-tests' compile-fail cases.
    #[test]
    fn std_types_with_a_fixed_shape_are_strict() {
        assert_strict::<Vec<Option<Box<[u8; 4]>>>>();
        assert_strict::<VecDeque<BTreeSet<String>>>();
        assert_strict::<&'static str>();
        assert_strict::<Cow<'static, str>>();
        assert_strict::<Rc<NonZeroU8>>();
    }
}
