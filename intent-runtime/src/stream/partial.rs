//! Typed partial values: what a caller renders while a reply is still being written,
//! without touching JSON.
//!
//! [`Partial`] maps a target type to its partial form and reads that form from a
//! [`PartialNode`]. A struct's partial form has every field optional, recursively
//! (`#[derive(Partial)]` generates it); a list's is the items written so far; a string,
//! number, enum or any other type that has no parts appears once it is complete. So a
//! field, once shown, never changes: a partial value only grows.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet, LinkedList, VecDeque};
use std::fmt;
use std::num::{
    NonZeroI8, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI128, NonZeroIsize, NonZeroU8,
    NonZeroU16, NonZeroU32, NonZeroU64, NonZeroU128, NonZeroUsize,
};
use std::rc::Rc;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use super::partial_json::PartialNode;

/// A type whose value can be shown while the model is still writing it.
///
/// Derive it (`#[derive(Partial)]`) for your structs and enums; it is implemented for the
/// standard types a target can hold. `<T as Partial>::Partial` is what a stream's partial
/// events carry (see [`StreamEvent`](crate::stream::StreamEvent)).
#[cfg_attr(
    feature = "chrono",
    diagnostic::on_unimplemented(
        message = "`{Self}` cannot be streamed as partial values",
        label = "`{Self}` does not implement `Partial`",
        note = "add `#[derive(intent_rs::Partial)]` to `{Self}` (next to `StrictCompatible`), or implement `Partial` by hand"
    )
)]
// Without the feature, chrono's dates and times are not `Partial` either: say so.
#[cfg_attr(
    not(feature = "chrono"),
    diagnostic::on_unimplemented(
        message = "`{Self}` cannot be streamed as partial values",
        label = "`{Self}` does not implement `Partial`",
        note = "add `#[derive(intent_rs::Partial)]` to `{Self}` (next to `StrictCompatible`), or implement `Partial` by hand",
        note = "chrono's dates and times are `Partial` once intent-rs is built with its `chrono` feature"
    )
)]
pub trait Partial {
    /// The value as far as it is written: for a struct, every field optional.
    type Partial: Clone + fmt::Debug + PartialEq + Send + Sync + 'static;

    /// Reads the partial value from what is certain of the reply so far; `None` when
    /// nothing of it can be shown yet (or it does not have this type's shape).
    fn read_partial(node: PartialNode<'_>) -> Option<Self::Partial>;
}

/// The partial form of `T`: `PartialOf<Invoice>` is `InvoicePartial`.
pub type PartialOf<T> = <T as Partial>::Partial;

/// Reads a type that has no parts: shown once its value is complete, through serde.
/// What `#[derive(Partial)]` uses for enums.
pub fn read_whole<T: DeserializeOwned>(node: PartialNode<'_>) -> Option<T> {
    node.read()
}

macro_rules! whole {
    ($($ty:ty),* $(,)?) => {
        $(impl Partial for $ty {
            type Partial = $ty;
            fn read_partial(node: PartialNode<'_>) -> Option<Self::Partial> {
                read_whole(node)
            }
        })*
    };
}

whole!(
    bool,
    char,
    String,
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
    Value,
);

#[cfg(feature = "chrono")]
whole!(
    chrono::NaiveDate,
    chrono::NaiveTime,
    chrono::NaiveDateTime,
    chrono::DateTime<chrono::Utc>,
    chrono::DateTime<chrono::FixedOffset>,
);

#[cfg(feature = "uuid")]
whole!(uuid::Uuid);

/// `null` is shown as nothing: a field that is `None` and a field not written yet look
/// the same, which is what a renderer needs.
impl<T: Partial> Partial for Option<T> {
    type Partial = T::Partial;

    fn read_partial(node: PartialNode<'_>) -> Option<Self::Partial> {
        if node.is_null() {
            return None;
        }
        T::read_partial(node)
    }
}

/// The items written so far (the last one perhaps partial).
fn read_items<T: Partial>(node: PartialNode<'_>) -> Option<Vec<T::Partial>> {
    node.is_array()
        .then(|| node.items().filter_map(T::read_partial).collect())
}

macro_rules! sequence {
    ($($wrapper:ident),* $(,)?) => {
        $(impl<T: Partial> Partial for $wrapper<T> {
            type Partial = Vec<T::Partial>;
            fn read_partial(node: PartialNode<'_>) -> Option<Self::Partial> {
                read_items::<T>(node)
            }
        })*
    };
}

sequence!(Vec, VecDeque, LinkedList, BTreeSet, HashSet);

impl<T: Partial, const N: usize> Partial for [T; N] {
    type Partial = Vec<T::Partial>;

    fn read_partial(node: PartialNode<'_>) -> Option<Self::Partial> {
        read_items::<T>(node)
    }
}

macro_rules! pointer {
    ($($pointer:ident),* $(,)?) => {
        $(impl<T: Partial + ?Sized> Partial for $pointer<T> {
            type Partial = T::Partial;
            fn read_partial(node: PartialNode<'_>) -> Option<Self::Partial> {
                T::read_partial(node)
            }
        })*
    };
}

pointer!(Box, Arc, Rc);

impl<T: Partial + ToOwned + ?Sized> Partial for Cow<'_, T> {
    type Partial = T::Partial;

    fn read_partial(node: PartialNode<'_>) -> Option<Self::Partial> {
        T::read_partial(node)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::stream::partial_json::PartialJson;

    fn reader(text: &str) -> PartialJson {
        let mut reader = PartialJson::new();
        reader.push(text);
        reader
    }

    #[test]
    fn scalars_show_once_complete_and_lists_grow() {
        let reader = reader(r#"[1, 2, 3"#);
        let root = reader.root().unwrap();
        assert_eq!(Vec::<u8>::read_partial(root), Some(vec![1, 2]));
        let reader = self::reader(r#"[["a", "b"], ["c""#);
        let root = reader.root().unwrap();
        assert_eq!(
            Vec::<Vec<String>>::read_partial(root),
            Some(vec![vec!["a".into(), "b".into()], vec!["c".into()]])
        );
    }

    #[test]
    fn null_is_nothing_and_a_wrong_shape_is_not_shown() {
        let value = json!(null);
        assert_eq!(Option::<u8>::read_partial(PartialNode::whole(&value)), None);
        let value = json!("x");
        assert_eq!(u8::read_partial(PartialNode::whole(&value)), None);
        assert_eq!(Vec::<u8>::read_partial(PartialNode::whole(&value)), None);
    }
}
