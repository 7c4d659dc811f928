//! Images and PDF documents as inputs of intent methods.
//!
//! An [`Image`] or a [`Document`] is made from bytes, a file or a URL. The media type is
//! recognised from the bytes' signature (PNG, JPEG, GIF, WebP, PDF), never from a file
//! name; a declared type that the bytes contradict is refused when the value is made, so
//! nothing mislabelled reaches a provider.
//!
//! Both are cheap to clone: the bytes, their SHA-256 digest and the base64 text sit behind
//! one `Arc`. The base64 text is written the first time a request needs it and kept, so
//! the attempts of a call (and later calls with the same value) send the same text without
//! encoding the bytes again. The digest is what the response cache key and telemetry see:
//! no record holds the bytes.
//!
//! Each provider states what it takes in [`MediaLimits`]; a request that breaks one is
//! refused before anything is sent ([`MediaRefusal`]).
//!
//! An image may say how closely the model should look at it ([`ImageDetail`], with
//! [`Image::with_detail`]), sent where the provider has such a setting.

mod detail;
mod limits;
mod sniff;
mod url;

use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use bytes::Bytes;
use sha2::{Digest, Sha256};

pub use detail::ImageDetail;
pub use limits::{MediaLimits, MediaRefusal};
pub use sniff::MediaType;
pub(crate) use url::MediaUrl;

crate::failure::debug_as_message!(MediaError);

/// Why an image or a document could not be made.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MediaError {
    /// The file could not be read.
    #[error("could not read {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// What the operating system said.
        reason: String,
    },
    /// The bytes start with no signature this library knows.
    #[error(
        "the bytes are not a PNG, JPEG, GIF, WebP or PDF file (no known signature in the first bytes); convert the file to one of these"
    )]
    Unrecognised,
    /// The bytes are of another type than the one declared.
    #[error(
        "the bytes were declared as {declared} but are {found}; declare {found}, or leave the type to be recognised"
    )]
    Mismatch {
        /// The declared type.
        declared: MediaType,
        /// The type the bytes' signature shows.
        found: MediaType,
    },
    /// An image was made from a document's bytes, or a document from an image's.
    #[error("{found} is not {expected}; use `{hint}` for it")]
    WrongKind {
        /// The type the bytes are.
        found: MediaType,
        /// What was being made (`an image`, `a PDF document`).
        expected: &'static str,
        /// The type to make instead.
        hint: &'static str,
    },
    /// A URL that is not `http(s)://`.
    #[error(
        "`{url}` is not an http(s) URL; providers fetch media only from http(s) URLs (pass the bytes for anything else)"
    )]
    NotHttpUrl {
        /// The URL, cut at 200 characters.
        url: String,
    },
}

/// An image or a document: its bytes (or URL), media type, digest and, once a request
/// needed it, its base64 text. What [`Image`] and [`Document`] hold; providers read it.
#[derive(Clone)]
pub struct Media {
    inner: Arc<Inner>,
    /// Outside the shared part: an image at another level is the same bytes, not a copy.
    detail: Option<ImageDetail>,
}

struct Inner {
    /// `None` only for an image given by URL, whose type the provider finds out.
    media_type: Option<MediaType>,
    data: Data,
    /// Sent with a PDF where the API asks for one (OpenAI's `file.filename`).
    filename: Option<String>,
}

enum Data {
    Inline {
        bytes: Bytes,
        sha256: [u8; 32],
        /// Written on first use, then shared by every request that sends these bytes.
        encoded: OnceLock<Box<str>>,
        /// A PDF's pages, when they could be counted (see [`Media::pages`]).
        pages: Option<usize>,
    },
    Url {
        url: String,
        sha256: [u8; 32],
    },
}

impl Media {
    fn inline(
        bytes: Bytes,
        declared: Option<MediaType>,
        filename: Option<String>,
    ) -> Result<Self, MediaError> {
        let found = MediaType::sniff(&bytes).ok_or(MediaError::Unrecognised)?;
        if let Some(declared) = declared.filter(|declared| *declared != found) {
            return Err(MediaError::Mismatch { declared, found });
        }
        let pages = (found == MediaType::Pdf)
            .then(|| sniff::pdf_pages(&bytes))
            .flatten();
        Ok(Self {
            inner: Arc::new(Inner {
                media_type: Some(found),
                data: Data::Inline {
                    sha256: Sha256::digest(&bytes).into(),
                    bytes,
                    encoded: OnceLock::new(),
                    pages,
                },
                filename,
            }),
            detail: None,
        })
    }

    fn url(url: String, media_type: Option<MediaType>) -> Result<Self, MediaError> {
        let lower = url.get(..8).unwrap_or(&url).to_ascii_lowercase();
        if !(lower.starts_with("https://") || lower.starts_with("http://")) {
            return Err(MediaError::NotHttpUrl {
                url: url.chars().take(200).collect(),
            });
        }
        Ok(Self {
            inner: Arc::new(Inner {
                media_type,
                data: Data::Url {
                    sha256: Sha256::digest(url.as_bytes()).into(),
                    url,
                },
                filename: None,
            }),
            detail: None,
        })
    }

    /// The media type: recognised from the bytes, or the one given with a URL (`None` for
    /// an image URL, whose type only the server that fetches it sees).
    pub fn media_type(&self) -> Option<MediaType> {
        self.inner.media_type
    }

    /// Whether this is an image (a document otherwise).
    pub fn is_image(&self) -> bool {
        self.inner.media_type.is_none_or(MediaType::is_image)
    }

    /// The URL the provider fetches the media from, when it was given by URL.
    pub fn url_str(&self) -> Option<&str> {
        match &self.inner.data {
            Data::Url { url, .. } => Some(url),
            Data::Inline { .. } => None,
        }
    }

    /// The bytes, when they were given (not for a URL).
    pub fn bytes(&self) -> Option<&Bytes> {
        match &self.inner.data {
            Data::Inline { bytes, .. } => Some(bytes),
            Data::Url { .. } => None,
        }
    }

    /// The number of bytes given (0 for a URL).
    pub fn len(&self) -> usize {
        self.bytes().map_or(0, Bytes::len)
    }

    /// Whether no bytes were given (always so for a URL).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The SHA-256 digest of the bytes (of the URL's text for a URL).
    pub fn sha256(&self) -> &[u8; 32] {
        match &self.inner.data {
            Data::Inline { sha256, .. } | Data::Url { sha256, .. } => sha256,
        }
    }

    /// [`Media::sha256`] as 64 lowercase hex digits.
    pub fn sha256_hex(&self) -> String {
        self.sha256()
            .iter()
            .fold(String::with_capacity(64), |mut hex, byte| {
                use std::fmt::Write as _;
                let _ = write!(hex, "{byte:02x}");
                hex
            })
    }

    /// The bytes in standard, padded base64 (no `data:` prefix); `None` for a URL.
    ///
    /// Encoded on the first call and kept: every later request with this value (a retry,
    /// another call, a batch line) sends the same text.
    pub fn base64(&self) -> Option<&str> {
        match &self.inner.data {
            Data::Inline { bytes, encoded, .. } => Some(encoded.get_or_init(|| {
                base64::engine::general_purpose::STANDARD
                    .encode(bytes)
                    .into_boxed_str()
            })),
            Data::Url { .. } => None,
        }
    }

    /// How many bytes the media adds to a request body: its base64 length (computed, not
    /// encoded), or the URL's length.
    pub fn wire_len(&self) -> usize {
        match &self.inner.data {
            Data::Inline { bytes, .. } => bytes.len().div_ceil(3) * 4,
            Data::Url { url, .. } => url.len(),
        }
    }

    /// A PDF's page count, read from its page objects; `None` for images, URLs, and PDFs
    /// whose page objects are compressed (those are counted by the provider only).
    pub fn pages(&self) -> Option<usize> {
        match &self.inner.data {
            Data::Inline { pages, .. } => *pages,
            Data::Url { .. } => None,
        }
    }

    /// The detail level asked for the image ([`Image::with_detail`]); `None` leaves it to
    /// the provider.
    pub fn detail(&self) -> Option<ImageDetail> {
        self.detail
    }

    /// The file name sent with a document where the API asks for one.
    pub fn filename(&self) -> &str {
        self.inner
            .filename
            .as_deref()
            .unwrap_or(match self.inner.media_type {
                Some(MediaType::Pdf) | None => "document.pdf",
                Some(other) => other.default_filename(),
            })
    }

    /// How the media is named in the prompt: `PNG image`, `PDF document`, `image`.
    pub fn label(&self) -> &'static str {
        match self.inner.media_type {
            Some(media_type) => media_type.label(),
            None => "image",
        }
    }

    /// What telemetry records in place of the media, as an OpenTelemetry GenAI message
    /// part: a `blob` part with its type, size and SHA-256 digest but no `content`, or a
    /// `uri` part with the URL cut at its query (a pre-signed URL's signature is a
    /// credential). Never the bytes.
    pub fn summary(&self) -> serde_json::Value {
        let modality = if self.is_image() { "image" } else { "document" };
        let mime_type = self.media_type().map(MediaType::as_str);
        match &self.inner.data {
            Data::Inline { bytes, .. } => serde_json::json!({
                "type": "blob",
                "modality": modality,
                "mime_type": mime_type,
                "size": bytes.len(),
                "sha256": self.sha256_hex(),
            }),
            Data::Url { url, .. } => serde_json::json!({
                "type": "uri",
                "modality": modality,
                "mime_type": mime_type,
                "uri": url.split(['?', '#']).next().unwrap_or_default(),
            }),
        }
    }

    /// What telemetry records of the media when no content is recorded: its kind
    /// (`image` or `document`), MIME type (`null` for an image URL, whose type only the
    /// fetching server sees), size in bytes (`null` for a URL), SHA-256 digest (of the
    /// URL's text for a URL), where it comes from (`bytes` or `url`) and the image detail
    /// asked for. None of it is content: never the bytes, the base64 text or the URL,
    /// whose query may hold a signature.
    pub fn metadata(&self) -> serde_json::Value {
        let (source, size) = match &self.inner.data {
            Data::Inline { bytes, .. } => ("bytes", Some(bytes.len())),
            Data::Url { .. } => ("url", None),
        };
        let mut metadata = serde_json::json!({
            "modality": if self.is_image() { "image" } else { "document" },
            "mime_type": self.media_type().map(MediaType::as_str),
            "size": size,
            "sha256": self.sha256_hex(),
            "source": source,
        });
        if let Some(detail) = self.detail {
            metadata["detail"] = detail.as_str().into();
        }
        metadata
    }
}

impl fmt::Debug for Media {
    // The bytes are never printed: a log line or a panic message must not carry them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Media");
        out.field("media_type", &self.media_type());
        if let Some(detail) = self.detail {
            out.field("detail", &detail);
        }
        match &self.inner.data {
            Data::Inline { bytes, .. } => out
                .field("size", &bytes.len())
                .field("sha256", &self.sha256_hex()),
            Data::Url { url, .. } => out.field("url", url),
        };
        out.finish()
    }
}

// Two values are the same media when their type, origin and digest agree: what the
// response cache key and request comparisons need, without comparing megabytes.
impl PartialEq for Media {
    fn eq(&self, other: &Self) -> bool {
        (Arc::ptr_eq(&self.inner, &other.inner)
            || (self.media_type() == other.media_type()
                && self.url_str().is_some() == other.url_str().is_some()
                && self.sha256() == other.sha256()
                && self.inner.filename == other.inner.filename))
            && self.detail == other.detail
    }
}

impl Eq for Media {}

impl Hash for Media {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.media_type().hash(state);
        self.url_str().is_some().hash(state);
        self.sha256().hash(state);
        self.inner.filename.hash(state);
        self.detail.hash(state);
    }
}

/// An image input: PNG, JPEG, GIF or WebP, from bytes, a file or a URL.
///
/// ```
/// use intent_rs::media::{Image, MediaType};
/// // The first bytes of a PNG file: the type is recognised from them.
/// let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
/// let image = Image::from_bytes(png.clone())?;
/// assert_eq!(image.media().media_type(), Some(MediaType::Png));
/// // A declared type that the bytes contradict is refused.
/// assert!(Image::from_bytes_as(png, MediaType::Jpeg).is_err());
/// # Ok::<(), intent_rs::media::MediaError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Image(Media);

/// A PDF document input, from bytes, a file or a URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Document(Media);

impl Image {
    /// An image from its bytes, its type recognised from them.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Result<Self, MediaError> {
        Self::checked(Media::inline(bytes.into(), None, None)?)
    }

    /// An image from its bytes, which must be of `media_type`.
    pub fn from_bytes_as(
        bytes: impl Into<Bytes>,
        media_type: MediaType,
    ) -> Result<Self, MediaError> {
        Self::checked(Media::inline(bytes.into(), Some(media_type), None)?)
    }

    /// An image read from a file (at once, in full), its type recognised from the bytes.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, MediaError> {
        let (bytes, _) = read(path.as_ref())?;
        Self::checked(Media::inline(bytes, None, None)?)
    }

    /// An image the provider fetches from `url` (`http(s)://`).
    pub fn from_url(url: impl Into<String>) -> Result<Self, MediaError> {
        Media::url(url.into(), None).map(Self)
    }

    /// The image with a detail level: how closely the model looks at it, where the
    /// provider has such a setting ([`ImageDetail`] lists where it is sent).
    ///
    /// ```
    /// use intent_rs::media::{Image, ImageDetail};
    /// let image = Image::from_url("https://files.example/receipt.jpg")?
    ///     .with_detail(ImageDetail::Low);
    /// assert_eq!(image.media().detail(), Some(ImageDetail::Low));
    /// # Ok::<(), intent_rs::media::MediaError>(())
    /// ```
    pub fn with_detail(mut self, detail: ImageDetail) -> Self {
        self.0.detail = Some(detail);
        self
    }

    /// What the image holds, as providers read it.
    pub fn media(&self) -> &Media {
        &self.0
    }

    fn checked(media: Media) -> Result<Self, MediaError> {
        match media.media_type() {
            Some(found) if !found.is_image() => Err(MediaError::WrongKind {
                found,
                expected: "an image",
                hint: "Document",
            }),
            _ => Ok(Self(media)),
        }
    }
}

impl Document {
    /// A PDF from its bytes, which must be a PDF.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Result<Self, MediaError> {
        Self::checked(Media::inline(bytes.into(), None, None)?)
    }

    /// A PDF from its bytes, sent with this file name where an API asks for one.
    pub fn from_bytes_named(
        bytes: impl Into<Bytes>,
        filename: impl Into<String>,
    ) -> Result<Self, MediaError> {
        Self::checked(Media::inline(bytes.into(), None, Some(filename.into()))?)
    }

    /// A PDF read from a file (at once, in full), sent with the file's name.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, MediaError> {
        let (bytes, name) = read(path.as_ref())?;
        Self::checked(Media::inline(bytes, None, name)?)
    }

    /// A PDF the provider fetches from `url` (`http(s)://`); not every API takes one
    /// (OpenAI's Chat Completions does not, and refuses it before sending).
    pub fn from_url(url: impl Into<String>) -> Result<Self, MediaError> {
        Media::url(url.into(), Some(MediaType::Pdf)).map(Self)
    }

    /// What the document holds, as providers read it.
    pub fn media(&self) -> &Media {
        &self.0
    }

    fn checked(media: Media) -> Result<Self, MediaError> {
        match media.media_type() {
            Some(found) if found.is_image() => Err(MediaError::WrongKind {
                found,
                expected: "a PDF document",
                hint: "Image",
            }),
            _ => Ok(Self(media)),
        }
    }
}

impl From<Image> for Media {
    fn from(image: Image) -> Self {
        image.0
    }
}

impl From<Document> for Media {
    fn from(document: Document) -> Self {
        document.0
    }
}

/// A media value the macro can pass by reference whatever the parameter's type (`Image`,
/// `&Image`, `Document`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an image or a document of intent-rs",
    label = "a parameter whose type is named `Image` or `Document` is sent as media",
    note = "use `intent_rs::media::Image` or `intent_rs::media::Document`, or rename the type so it is sent as text"
)]
pub trait AsMedia {
    /// The media to send.
    fn as_media(&self) -> &Media;
}

impl AsMedia for Image {
    fn as_media(&self) -> &Media {
        &self.0
    }
}

impl AsMedia for Document {
    fn as_media(&self) -> &Media {
        &self.0
    }
}

impl AsMedia for Media {
    fn as_media(&self) -> &Media {
        self
    }
}

impl<M: AsMedia + ?Sized> AsMedia for &M {
    fn as_media(&self) -> &Media {
        (**self).as_media()
    }
}

fn read(path: &Path) -> Result<(Bytes, Option<String>), MediaError> {
    let bytes = std::fs::read(path).map_err(|error| MediaError::Read {
        path: path.display().to_string(),
        reason: error.to_string(),
    })?;
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned);
    Ok((Bytes::from(bytes), name))
}

#[cfg(test)]
mod tests;
