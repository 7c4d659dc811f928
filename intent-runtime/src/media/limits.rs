//! What each provider accepts of media, checked on a request before it is sent.

use super::{Media, MediaType};

const MIB: usize = 1024 * 1024;

/// The image types every provider here takes.
const ALL_IMAGE_TYPES: &[MediaType] = &[
    MediaType::Png,
    MediaType::Jpeg,
    MediaType::Gif,
    MediaType::Webp,
];

/// What a provider takes of images and documents. Sizes are of the bytes given (before
/// base64), except [`max_request_bytes`](Self::max_request_bytes).
///
/// The defaults are the providers' published limits where they publish them; where a
/// limit depends on the model or the account, set your own with the provider's
/// `with_media_limits`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MediaLimits {
    /// The image types the provider takes.
    pub image_types: &'static [MediaType],
    /// Whether it takes PDF documents at all.
    pub documents: bool,
    /// Whether it fetches a PDF from a URL (OpenAI's Chat Completions does not).
    pub document_urls: bool,
    /// The largest image.
    pub max_image_bytes: usize,
    /// The largest PDF.
    pub max_document_bytes: usize,
    /// The most pages in one request's PDFs (when the pages can be counted).
    pub max_document_pages: usize,
    /// The largest request: prompts, schema and every media part as sent (base64 text).
    pub max_request_bytes: usize,
}

impl MediaLimits {
    /// OpenAI Chat Completions: images of up to 20 MB, 50 MB of images per request; PDFs
    /// as `file` parts (by bytes only), up to 32 MB and 100 pages.
    pub const OPENAI: MediaLimits = MediaLimits {
        image_types: ALL_IMAGE_TYPES,
        documents: true,
        document_urls: false,
        max_image_bytes: 20 * MIB,
        max_document_bytes: 32 * MIB,
        max_document_pages: 100,
        max_request_bytes: 50 * MIB,
    };

    /// Anthropic Messages: 5 MB per image as base64 (3.75 MB of bytes), 32 MB per request
    /// including the base64 text, 100 PDF pages (600 on the largest-context models).
    pub const ANTHROPIC: MediaLimits = MediaLimits {
        image_types: ALL_IMAGE_TYPES,
        documents: true,
        document_urls: true,
        max_image_bytes: 5 * MIB / 4 * 3,
        max_document_bytes: 32 * MIB / 4 * 3,
        max_document_pages: 100,
        max_request_bytes: 32 * MIB,
    };

    /// An OpenAI-compatible server: image parts as OpenAI's, no documents (most servers
    /// have no PDF reader; turn them on with `OpenAiCompatible::with_media_limits` for one
    /// that does).
    pub const COMPATIBLE: MediaLimits = MediaLimits {
        documents: false,
        ..MediaLimits::OPENAI
    };

    /// These limits with documents accepted or refused.
    pub const fn with_documents(mut self, accepted: bool) -> Self {
        self.documents = accepted;
        self
    }

    /// These limits with another largest request.
    pub const fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// These limits with another largest image.
    pub const fn with_max_image_bytes(mut self, bytes: usize) -> Self {
        self.max_image_bytes = bytes;
        self
    }

    /// These limits with another largest PDF and most pages.
    pub const fn with_max_document(mut self, bytes: usize, pages: usize) -> Self {
        self.max_document_bytes = bytes;
        self.max_document_pages = pages;
        self
    }

    /// Checks `media` (every image and document of one request) against these limits;
    /// `other_bytes` is the rest of the request (prompts, schema). `Ok` when all fit;
    /// otherwise the first limit broken, naming `provider`.
    pub fn check<'a>(
        &self,
        provider: &str,
        media: impl IntoIterator<Item = &'a Media>,
        other_bytes: usize,
    ) -> Result<(), MediaRefusal> {
        let mut media_count = 0;
        let mut wire = 0;
        let mut pages = 0;
        for media in media {
            media_count += 1;
            wire += media.wire_len();
            pages += media.pages().unwrap_or(0);
            self.check_one(provider, media)?;
        }
        if media_count == 0 {
            return Ok(());
        }
        if pages > self.max_document_pages {
            return Err(MediaRefusal::TooManyPages {
                provider: provider.to_owned(),
                pages,
                max: self.max_document_pages,
            });
        }
        let total = wire + other_bytes;
        if total > self.max_request_bytes {
            return Err(MediaRefusal::RequestTooLarge {
                provider: provider.to_owned(),
                bytes: total,
                max: self.max_request_bytes,
            });
        }
        Ok(())
    }

    fn check_one(&self, provider: &str, media: &Media) -> Result<(), MediaRefusal> {
        let refuse_type = |media_type: MediaType| MediaRefusal::UnsupportedType {
            provider: provider.to_owned(),
            media_type,
        };
        match media.media_type() {
            Some(MediaType::Pdf) => {
                if !self.documents {
                    return Err(refuse_type(MediaType::Pdf));
                }
                if media.url_str().is_some() && !self.document_urls {
                    return Err(MediaRefusal::DocumentUrl {
                        provider: provider.to_owned(),
                    });
                }
                over("PDF", provider, media.len(), self.max_document_bytes)
            }
            Some(image) => {
                if !self.image_types.contains(&image) {
                    return Err(refuse_type(image));
                }
                over(image.as_str(), provider, media.len(), self.max_image_bytes)
            }
            // An image by URL: only the server that fetches it knows its type and size.
            None => Ok(()),
        }
    }
}

fn over(what: &str, provider: &str, bytes: usize, max: usize) -> Result<(), MediaRefusal> {
    if bytes > max {
        return Err(MediaRefusal::TooLarge {
            provider: provider.to_owned(),
            what: what.to_owned(),
            bytes,
            max,
        });
    }
    Ok(())
}

/// Why a request with media was refused before it was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MediaRefusal {
    /// The provider does not take this media type.
    #[error(
        "{provider} does not take {media_type} inputs; convert the file to a type it takes, or use another provider"
    )]
    UnsupportedType {
        /// The provider.
        provider: String,
        /// The refused type.
        media_type: MediaType,
    },
    /// The provider takes PDFs only as bytes.
    #[error("{provider} does not fetch PDFs from a URL; make the `Document` from the file's bytes")]
    DocumentUrl {
        /// The provider.
        provider: String,
    },
    /// One file is over the provider's limit.
    #[error(
        "the {what} input is {bytes} bytes, over {provider}'s limit of {max} bytes; send a smaller file"
    )]
    TooLarge {
        /// The provider.
        provider: String,
        /// The file's type.
        what: String,
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The request's PDFs have more pages than the provider reads.
    #[error(
        "the request's PDFs have {pages} pages, over {provider}'s limit of {max}; split the document"
    )]
    TooManyPages {
        /// The provider.
        provider: String,
        /// Pages counted.
        pages: usize,
        /// The limit.
        max: usize,
    },
    /// The whole request, media as base64, is over the provider's limit.
    #[error(
        "the request is {bytes} bytes with its media as base64, over {provider}'s limit of {max} bytes; send fewer or smaller files, or files by URL"
    )]
    RequestTooLarge {
        /// The provider.
        provider: String,
        /// The request's size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
}

impl MediaRefusal {
    /// The provider that would have refused the request.
    pub fn provider(&self) -> &str {
        match self {
            MediaRefusal::UnsupportedType { provider, .. }
            | MediaRefusal::DocumentUrl { provider }
            | MediaRefusal::TooLarge { provider, .. }
            | MediaRefusal::TooManyPages { provider, .. }
            | MediaRefusal::RequestTooLarge { provider, .. } => provider,
        }
    }
}
