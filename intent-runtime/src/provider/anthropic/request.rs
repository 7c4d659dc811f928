//! Messages request bodies, written straight from a [`ProviderRequest`]: the system
//! prompt and turns with their media blocks, `cache_control` breakpoints on the stable
//! prefixes, the output schema as `output_config.format`, the output limit and
//! temperature.

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::cache_breakpoints::Breakpoints;
use crate::media::Media;
use crate::provider::http::{self};
use crate::provider::{Message, Part, ProviderRequest};

/// The body of one Messages request, serialized straight from the request: the prompts
/// and the schema are borrowed, never deep-copied into a `Value` tree.
#[derive(Serialize)]
pub(crate) struct MessagesBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Content<'a>>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    /// Asks for the reply as server-sent events.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stream: bool,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Content<'a>,
}

/// A turn's or the system prompt's content: a plain string, one text block when it
/// carries a cache breakpoint (only a block can), or blocks when the turn has media.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Cached([CachedText<'a>; 1]),
    Blocks(Blocks<'a>),
}

impl<'a> Content<'a> {
    fn of_turn(message: &'a Message, cached: bool) -> Self {
        if message.media.is_empty() {
            Content::new(&message.content, cached)
        } else {
            Content::Blocks(Blocks { message, cached })
        }
    }

    fn new(text: &'a str, cached: bool) -> Self {
        if cached {
            Content::Cached([CachedText {
                kind: "text",
                text,
                cache_control: CacheControl { kind: "ephemeral" },
            }])
        } else {
            Content::Text(text)
        }
    }

    fn len(&self) -> usize {
        match self {
            Content::Text(text) => text.len(),
            Content::Cached([block]) => block.text.len() + 48,
            Content::Blocks(blocks) => {
                blocks.message.content.len()
                    + blocks
                        .message
                        .media
                        .iter()
                        .map(|part| part.media.wire_len() + 128)
                        .sum::<usize>()
            }
        }
    }
}

/// A turn with media as Messages content blocks: `text`, `image` and `document` (a PDF),
/// each source `base64` with the media type, or `url`. A cache breakpoint goes on the
/// turn's last block, so the cached prefix holds every image and document of the turn.
/// An image's [`ImageDetail`](crate::media::ImageDetail) is not sent: the Messages API
/// has no such field (it scales a large image down itself).
struct Blocks<'a> {
    message: &'a Message,
    cached: bool,
}

impl Serialize for Blocks<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let parts: Vec<Part<'_>> = self.message.parts().collect();
        let mut blocks = serializer.serialize_seq(Some(parts.len()))?;
        for (index, part) in parts.iter().enumerate() {
            let cache_control = (self.cached && index + 1 == parts.len())
                .then_some(CacheControl { kind: "ephemeral" });
            match part {
                Part::Text(text) => blocks.serialize_element(&Block {
                    kind: "text",
                    text: Some(text),
                    source: None,
                    cache_control,
                })?,
                Part::Media(media) => blocks.serialize_element(&Block {
                    kind: if media.is_image() {
                        "image"
                    } else {
                        "document"
                    },
                    text: None,
                    source: Some(Source::of(media)),
                    cache_control,
                })?,
            }
        }
        blocks.end()
    }
}

#[derive(Serialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<Source<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Source<'a> {
    /// The media's shared base64 text, borrowed: nothing is encoded or copied per request.
    Base64 {
        media_type: &'static str,
        data: &'a str,
    },
    Url {
        url: &'a str,
    },
}

impl<'a> Source<'a> {
    fn of(media: &'a Media) -> Self {
        match media.url_str() {
            Some(url) => Source::Url { url },
            None => Source::Base64 {
                media_type: media.media_type().map_or("application/pdf", |t| t.as_str()),
                data: media.base64().unwrap_or_default(),
            },
        }
    }
}

/// What a turn's media weigh in the breakpoint estimate, as prompt bytes: Anthropic bills
/// an image at up to about 1,600 tokens and a PDF page at up to about 3,000 (its text and
/// its picture), and the estimate counts three bytes a token. Generous on purpose: a
/// breakpoint that turns out too early costs nothing.
fn media_prompt_bytes(message: &Message) -> usize {
    message
        .media
        .iter()
        .map(|part| {
            let tokens = if part.media.is_image() {
                1_600
            } else {
                3_000 * part.media.pages().unwrap_or(1)
            };
            tokens * 3
        })
        .sum()
}

#[derive(Serialize)]
struct CachedText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

#[derive(Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct OutputConfig<'a> {
    format: SchemaFormat<'a>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "json_schema")]
struct SchemaFormat<'a> {
    schema: &'a RawValue,
}

impl MessagesBody<'_> {
    /// About how long the JSON will be: the prompts, the schema and room for escapes and
    /// the other fields.
    pub(crate) fn size_hint(&self) -> usize {
        let prompts = self.system.as_ref().map_or(0, Content::len)
            + self
                .messages
                .iter()
                .map(|turn| turn.content.len() + 32)
                .sum::<usize>();
        let schema = self
            .output_config
            .as_ref()
            .map_or(0, |config| config.format.schema.get().len());
        prompts + prompts / 16 + schema + 256
    }
}

/// The body of one request; `schema` is what [`output_schema`] gave for it, and
/// `cache_minimum` the model's minimum cacheable prompt in tokens (`None`: no breakpoints).
pub(crate) fn request_body<'a>(
    request: &'a ProviderRequest,
    model: &'a str,
    default_max_tokens: u32,
    schema: Option<&'a RawValue>,
    cache_minimum: Option<u64>,
) -> MessagesBody<'a> {
    let marks = cache_minimum.map_or_else(Breakpoints::default, |minimum| {
        let turns: Vec<usize> = request
            .messages
            .iter()
            .map(|m| m.content.len() + media_prompt_bytes(m))
            .collect();
        Breakpoints::place(request.system.len(), &turns, minimum)
    });
    let count = request.messages.len();
    MessagesBody {
        model,
        max_tokens: request.max_output_tokens.unwrap_or(default_max_tokens),
        system: Some(request.system.as_str())
            .filter(|system| !system.is_empty())
            .map(|system| Content::new(system, marks.system)),
        messages: request
            .messages
            .iter()
            .enumerate()
            .map(|(index, message)| Turn {
                role: message.role.as_str(),
                content: Content::of_turn(message, marks.marks_turn(index, count)),
            })
            .collect(),
        temperature: request.temperature.and_then(http::temperature_value),
        output_config: schema.map(|schema| OutputConfig {
            format: SchemaFormat { schema },
        }),
        stream: false,
    }
}
