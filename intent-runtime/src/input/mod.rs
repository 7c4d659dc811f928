//! Input serialization for the prompt, and readable descriptions of Rust types.
//!
//! An input reaches the model as text under `## Input (<label>)`:
//!
//! - a value that serde writes as a JSON string (`&str`, `String`, `char`, a unit enum
//!   variant, a chrono date or time) is sent as the bare string, unchanged: no quotes, no
//!   escapes. chrono's serde forms are ISO 8601 with every fraction of a second kept, so
//!   dates lose nothing;
//! - a `serde_json::Value` (or any input whose schema admits any JSON) is sent as its
//!   compact JSON text, so a JSON string input keeps its quotes and reads as JSON;
//! - everything else is compact JSON exactly as serde writes it (field and variant names
//!   as the type's serde attributes say).
//!
//! The label is [`describe_type`] of the input's type (`JSON` for any-JSON inputs).
//! Several inputs of one method are sent as one JSON object keyed by parameter name,
//! built with [`NamedInputs`].
//!
//! Images and documents ([`crate::media`]) are not text: each is its own content part
//! after the text input, under `## Input <name> (<type>)`, in the order the method
//! declares them ([`PreparedInput::media`]). A parameter holding several (`Vec<Image>`,
//! `&[Document]`) sends each as its own part, numbered: `## Input photos, 2 of 3 (JPEG
//! image)`; an empty list, or an `Option` that is `None`, sends none.

mod describe;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde_json::{Map, Value};

pub use describe::{MAX_DEPTH, MAX_NOTE_CHARS, MAX_SUBSCHEMAS};

use crate::media::{AsMedia, Document, Image, Media};
use crate::result::{Cause, IssueDetail, IssueSource, NotSent, ResultIssue};
use crate::schema::TargetSchema;
use crate::schema::derived::DerivedCache;

/// The label of an input whose schema admits any JSON value (`serde_json::Value`).
pub const ANY_JSON_LABEL: &str = "JSON";

crate::failure::debug_as_message!(InputError);

/// Why an input could not be prepared.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The serialized input is longer than the client allows.
    #[error(
        "the input is {actual} characters long, over the limit of {max}; send a shorter input or raise the client's `max_input_chars` (nothing is truncated)"
    )]
    TooLarge {
        /// Characters in the serialized input.
        actual: usize,
        /// The limit.
        max: usize,
    },
    /// serde could not serialize the input (the source is `serde_json`'s error).
    #[error("the input could not be serialized: {0}")]
    Serialize(#[source] Cause),
}

impl InputError {
    /// The issue this error raises before any model call: nothing was sent.
    pub(crate) fn issue(&self) -> ResultIssue {
        let reason = match self {
            InputError::TooLarge { actual, max } => NotSent::InputTooLarge {
                chars: *actual,
                max: *max,
            },
            _ => NotSent::InvalidInput,
        };
        ResultIssue::new(IssueSource::Input, self.to_string(), 1)
            .with_detail(IssueDetail::NotSent(reason))
            .with_cause(Cause::new(self.clone()))
    }
}

impl From<serde_json::Error> for InputError {
    fn from(error: serde_json::Error) -> Self {
        InputError::Serialize(Cause::new(error))
    }
}

/// An input ready for the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedInput {
    /// The serialized input (empty, with an empty label, when the inputs are all media).
    pub text: String,
    /// The label of the `## Input (...)` section.
    pub label: String,
    /// Images and documents, each sent as its own content part after the text input, in
    /// the order they were added.
    pub media: Vec<MediaInput>,
}

/// An image or a document input, and the parameter name it is labelled with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaInput {
    /// The parameter's name; `None` for the one input of a call (labelled by its type
    /// alone, as a single text input is).
    pub name: Option<String>,
    /// Where it sits in a parameter holding several (`Vec<Image>`, `&[Document]`);
    /// `None` for a parameter of one.
    pub position: Option<MediaPosition>,
    /// The media.
    pub media: Media,
}

/// Where a medium sits in a parameter holding several: the second of three photos.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MediaPosition {
    /// Its place, from 1.
    pub number: usize,
    /// How many the parameter holds.
    pub of: usize,
}

impl PreparedInput {
    /// No input yet: media are added with [`PreparedInput::with_media`].
    pub fn media_only() -> Self {
        Self {
            text: String::new(),
            label: String::new(),
            media: Vec::new(),
        }
    }

    /// Whether there is a text input (not only media).
    pub fn has_text(&self) -> bool {
        !(self.text.is_empty() && self.label.is_empty())
    }

    /// Adds an image or a document, labelled with `name` (`None` for the call's only
    /// input), after those already added.
    pub fn with_media(mut self, name: Option<&str>, media: &(impl AsMedia + ?Sized)) -> Self {
        self.media.push(MediaInput {
            name: name.map(str::to_owned),
            position: None,
            media: media.as_media().clone(),
        });
        self
    }

    /// Adds every image or document of `list`, in order, each numbered (`2 of 3`) under
    /// `name`; an empty list adds nothing. What a `Vec<Image>` or `&[Document]` parameter
    /// sends.
    pub fn with_media_list<M: AsMedia>(mut self, name: Option<&str>, list: &[M]) -> Self {
        let of = list.len();
        self.media
            .extend(list.iter().enumerate().map(|(index, media)| MediaInput {
                name: name.map(str::to_owned),
                position: Some(MediaPosition {
                    number: index + 1,
                    of,
                }),
                media: media.as_media().clone(),
            }));
        self
    }

    /// Adds the image or document when there is one: what an `Option<Image>` parameter
    /// sends (nothing for `None`).
    pub fn with_optional_media<M: AsMedia>(self, name: Option<&str>, media: Option<&M>) -> Self {
        match media {
            Some(media) => self.with_media(name, media),
            None => self,
        }
    }
}

impl From<Image> for PreparedInput {
    /// An image as a call's only input (`IntentClient::transform_prepared(image.into(), ..)`).
    fn from(image: Image) -> Self {
        PreparedInput::media_only().with_media(None, &image)
    }
}

impl From<Document> for PreparedInput {
    /// A document as a call's only input.
    fn from(document: Document) -> Self {
        PreparedInput::media_only().with_media(None, &document)
    }
}

/// Serializes `input` and describes its type.
///
/// See the [module documentation](self) for how each kind of input is written.
pub fn prepare_input<I: Serialize + JsonSchema + ?Sized>(
    input: &I,
) -> Result<PreparedInput, InputError> {
    let shape = input_shape::<I>();
    if shape.admits_any_json {
        return Ok(PreparedInput {
            text: serde_json::to_string(input)?,
            label: ANY_JSON_LABEL.to_owned(),
            media: Vec::new(),
        });
    }
    let text = if shape.is_string {
        // The string itself, without writing and then decoding its escaped JSON form.
        match serde_json::to_value(input)? {
            Value::String(text) => text,
            other => other.to_string(),
        }
    } else {
        let json = serde_json::to_string(input)?;
        // Only a JSON string starts with a quote, so structs, maps and numbers are never
        // taken for text; a string is decoded back to its exact characters.
        if json.starts_with('"') {
            serde_json::from_str::<String>(&json)?
        } else {
            json
        }
    };
    Ok(PreparedInput {
        text,
        label: shape.label.as_ref().to_owned(),
        media: Vec::new(),
    })
}

/// What preparing an input needs to know of its type, worked out once per type: the
/// schema was generated and described on every call, which cost more than serializing a
/// short input.
#[derive(Debug, Clone)]
struct InputShape {
    /// The schema admits any JSON value (`serde_json::Value`).
    admits_any_json: bool,
    /// The schema is a plain string (`&str`, `String`, chrono dates).
    is_string: bool,
    /// The label of the input section.
    label: Arc<str>,
}

/// The shape of `I`, from a cache keyed by `JsonSchema::schema_id`, which schemars
/// documents as unique to the schema a type produces.
fn input_shape<I: JsonSchema + ?Sized>() -> InputShape {
    static SHAPES: LazyLock<RwLock<HashMap<Cow<'static, str>, InputShape>>> =
        LazyLock::new(Default::default);
    let id = I::schema_id();
    let known = SHAPES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
        .cloned();
    if let Some(shape) = known {
        return shape;
    }
    let schema = input_schema::<I>();
    let shape = InputShape {
        admits_any_json: admits_any_json(&schema),
        is_string: schema.get("type").and_then(Value::as_str) == Some("string"),
        label: describe_schema(schema.as_value()).into(),
    };
    SHAPES
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, shape.clone());
    shape
}

/// Fails when `input` is longer than `max_chars` characters (Unicode scalar values, not
/// bytes); `None` means no limit. The label does not count, and nothing is truncated.
pub fn check_input_size(input: &PreparedInput, max_chars: Option<usize>) -> Result<(), InputError> {
    let Some(max) = max_chars else {
        return Ok(());
    };
    // A text of at most `max` bytes has at most `max` characters: the count is only
    // needed for inputs that may be over.
    if input.text.len() <= max {
        return Ok(());
    }
    let actual = input.text.chars().count();
    if actual > max {
        Err(InputError::TooLarge { actual, max })
    } else {
        Ok(())
    }
}

/// Several inputs sent as one JSON object keyed by parameter name, for methods with more
/// than one input parameter.
///
/// ```
/// # use intent_rs::input::NamedInputs;
/// let prepared = NamedInputs::new()
///     .with("review", "Loved it")?
///     .with("stars", &5u8)?
///     .finish();
/// assert_eq!(prepared.text, r#"{"review":"Loved it","stars":5}"#);
/// assert_eq!(prepared.label, "JSON object with keys review (String), stars (u8)");
/// # Ok::<(), intent_rs::input::InputError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamedInputs {
    object: Map<String, Value>,
    described: Vec<String>,
}

impl NamedInputs {
    /// No inputs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the input `name`, serialized as JSON (a string stays a quoted JSON string
    /// here, since it sits inside an object). A repeated name replaces the earlier value.
    pub fn with<I: Serialize + JsonSchema + ?Sized>(
        mut self,
        name: &str,
        value: &I,
    ) -> Result<Self, InputError> {
        let schema = input_schema::<I>();
        let description = if admits_any_json(&schema) {
            ANY_JSON_LABEL.to_owned()
        } else {
            describe_schema(schema.as_value())
        };
        self.object
            .insert(name.to_owned(), serde_json::to_value(value)?);
        self.described.push(format!("{name} ({description})"));
        Ok(self)
    }

    /// The inputs as one compact JSON object, keys in the order they were added, with the
    /// label `JSON object with keys a (A), b (B)`.
    pub fn finish(self) -> PreparedInput {
        let label = if self.described.is_empty() {
            "JSON object".to_owned()
        } else {
            format!("JSON object with keys {}", self.described.join(", "))
        };
        PreparedInput {
            text: Value::Object(self.object).to_string(),
            label,
            media: Vec::new(),
        }
    }
}

/// A readable description of the type whose root schema is `schema` (a schema with its
/// definitions in its own `$defs` / `definitions`, as `schemars` writes a root schema).
///
/// For example `Invoice where Invoice { number: String, lines: Vec<Line>, due:
/// Option<String> } Line { sku: String, qty: u32 }`, or `Sentiment (one of: Positive,
/// Neutral, Negative)`. One style for every schema:
///
/// | schema | description |
/// | --- | --- |
/// | `string` | `String`; with a date format `DateTime (ISO 8601)`, `DateTime (ISO 8601, no offset)`, `Date (YYYY-MM-DD)`, `Time (HH:MM:SS)`, `Duration (ISO 8601)`; any other format `String (uuid)` |
/// | `integer` | the Rust type its `schemars` format names (`u32`, `i8`, `usize`), otherwise `i64` |
/// | `number` | `f32` for format `float`, otherwise `f64` |
/// | `boolean`, `null` | `bool`, `null` |
/// | `array` | `Vec<T>`; a tuple (`prefixItems`) `(A, B)` |
/// | nullable (`["T", "null"]`, or `anyOf` with `{"type": "null"}`) | `Option<T>` |
/// | object with properties | `{ a: A, b: B }`, or its name when it is a named struct |
/// | object with an `additionalProperties` schema | `Map<String, T>` |
/// | `enum`, or a union (`anyOf` / `oneOf`) | `Name (one of: A, B)`; string members bare, others as JSON |
/// | `const` | the constant as JSON (`"circle"`) |
/// | `true`, `{}` | `any JSON value` |
/// | a `description` (a field's or variant's doc comment) | after it, `/* first paragraph */` on one line, cut at [`MAX_NOTE_CHARS`] |
/// | `$ref` to a definition | the definition's name; to an untitled root, `Self`; elsewhere, the shape it points at |
///
/// Named structs (`$ref`s to definitions, and a root object with a `title`) are defined
/// once, after `where`; enums are written where they are used, so the members sit next
/// to the field. Never panics, whatever the JSON: unknown keywords are ignored, JSON that
/// is no schema reads as `any JSON value`, and nesting deeper than [`MAX_DEPTH`] or
/// past [`MAX_SUBSCHEMAS`] subschemas is cut with `…`.
pub fn describe_schema(schema: &Value) -> String {
    describe::describe_in(schema, "")
}

/// [`describe_schema`] of `T`'s `schemars` schema, as serde writes `T` (the input
/// label); a target's output contract uses [`describe_target`] instead.
pub fn describe_type<T: JsonSchema + ?Sized>() -> String {
    describe_schema(input_schema::<T>().as_value())
}

/// The description of a target's value, from its full envelope (where the definitions
/// sit): what the output contract shows.
pub fn describe_target(target: &TargetSchema) -> String {
    // Rendered on every attempt of every call: derived once per schema.
    static CACHE: LazyLock<DerivedCache<String>> = LazyLock::new(DerivedCache::new);
    CACHE.get_or_derive(&target.full, || {
        describe::describe_in(&target.full, "/properties/value")
    })
}

/// The schema of an input type as serde writes it (the serialize contract: a field
/// renamed or skipped only when serializing is described the way it is sent).
fn input_schema<T: JsonSchema + ?Sized>() -> Schema {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// Whether `schema` admits every JSON value: `true`, or an object with nothing but
/// annotations (`serde_json::Value`'s schema is `true`; as a root it gains a `title`).
fn admits_any_json(schema: &Schema) -> bool {
    match schema.as_value() {
        Value::Bool(admits) => *admits,
        Value::Object(map) => map.keys().all(|key| {
            matches!(
                key.as_str(),
                "$schema" | "title" | "description" | "$id" | "$comment"
            )
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
