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

/// What a provider takes of images and documents, counted as the provider counts it.
///
/// Sizes are in bytes. Those of single files and
/// [`max_image_bytes_per_request`](Self::max_image_bytes_per_request) count the bytes given
/// (before base64);
/// [`max_request_bytes`](Self::max_request_bytes) counts the request body as sent, media as
/// base64 text. Providers write their limits in MB without saying whether a megabyte is
/// 10^6 or 2^20 bytes; Anthropic's own refusal (`5242880 bytes`) shows 2^20, and where a
/// provider does not show it the larger reading (MiB, 2^20 bytes) is taken, so that nothing
/// the provider takes is refused here. `usize::MAX` is "no limit of this kind".
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
    /// The largest image, in bytes.
    pub max_image_bytes: usize,
    /// The most images in one request, given by bytes or by URL.
    pub max_images: usize,
    /// The most image bytes in one request (every image given by bytes, before base64):
    /// what OpenAI limits instead of the request body.
    pub max_image_bytes_per_request: usize,
    /// The largest PDF, in bytes.
    pub max_document_bytes: usize,
    /// The most pages in one request's PDFs (when the pages can be counted).
    pub max_document_pages: usize,
    /// The largest request body in bytes: prompts, schema and every media part as sent
    /// (base64 text).
    pub max_request_bytes: usize,
}

impl MediaLimits {
    /// OpenAI Chat Completions, as its images guide words it: images of up to 20 MB, up to
    /// 500 images and 50 MB of image bytes per request (OpenAI writes MB; read here as MiB,
    /// so 20 × 2^20 and 50 × 2^20 bytes). The prompt, the schema and PDFs do not count
    /// against the 50 MB, and OpenAI publishes no limit on the whole body, so none is
    /// applied. PDFs as `file` parts (by bytes only), up to 32 MB and 100 pages.
    pub const OPENAI: MediaLimits = MediaLimits {
        image_types: ALL_IMAGE_TYPES,
        documents: true,
        document_urls: false,
        max_image_bytes: 20 * MIB,
        max_images: 500,
        max_image_bytes_per_request: 50 * MIB,
        max_document_bytes: 32 * MIB,
        max_document_pages: 100,
        max_request_bytes: usize::MAX,
    };

    /// Anthropic Messages: 5 MB per image as base64 (Anthropic's MB is 2^20 bytes, as its
    /// refusal `5242880 bytes` shows; so 3.75 × 2^20 bytes given), 32 MB per request
    /// including the base64 text (32 × 2^20 bytes), up to 600 images and 100 PDF pages per
    /// request. Anthropic allows 600 images on its largest-context models and 100 on
    /// models with a 200k-token context window, and 600 PDF pages on the former: on a
    /// 200k-context model a request of 101 to 600 images is refused by Anthropic, not here
    /// (set `max_images: 100` with the provider's `with_media_limits` to refuse it here).
    pub const ANTHROPIC: MediaLimits = MediaLimits {
        image_types: ALL_IMAGE_TYPES,
        documents: true,
        document_urls: true,
        max_image_bytes: 5 * MIB / 4 * 3,
        max_images: 600,
        max_image_bytes_per_request: usize::MAX,
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

    /// These limits with another most images per request and most image bytes per
    /// request (`usize::MAX` for none).
    pub const fn with_max_images(mut self, images: usize, bytes_per_request: usize) -> Self {
        self.max_images = images;
        self.max_image_bytes_per_request = bytes_per_request;
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
        let mut images = 0;
        let mut image_bytes = 0;
        for media in media {
            media_count += 1;
            wire += media.wire_len();
            pages += media.pages().unwrap_or(0);
            if media.is_image() {
                images += 1;
                image_bytes += media.len();
            }
            self.check_one(provider, media)?;
        }
        if media_count == 0 {
            return Ok(());
        }
        if images > self.max_images {
            return Err(MediaRefusal::TooManyImages {
                provider: provider.to_owned(),
                images,
                max: self.max_images,
            });
        }
        if image_bytes > self.max_image_bytes_per_request {
            return Err(MediaRefusal::ImagesTooLarge {
                provider: provider.to_owned(),
                bytes: image_bytes,
                max: self.max_image_bytes_per_request,
            });
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

/// A limit of a mebibyte or more in MiB, as ` (50 MiB)`: the unit the limit was set in, so
/// a reader can compare it with the provider's documentation.
fn mib(bytes: usize) -> String {
    if bytes < MIB {
        return String::new();
    }
    let mib = format!("{:.2}", bytes as f64 / MIB as f64);
    format!(" ({} MiB)", mib.trim_end_matches('0').trim_end_matches('.'))
}

crate::failure::debug_as_message!(MediaRefusal);

/// Why a request with media was refused before it was sent.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
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
        "the {what} input is {bytes} bytes, over {provider}'s limit of {max} bytes{}; send a smaller file",
        mib(*.max)
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
    /// The request has more images than the provider takes.
    #[error(
        "the request has {images} images, over {provider}'s limit of {max} images per request; send fewer images, or split the request"
    )]
    TooManyImages {
        /// The provider.
        provider: String,
        /// Images counted (given by bytes or by URL).
        images: usize,
        /// The limit.
        max: usize,
    },
    /// The request's images together are over the provider's limit of image bytes per
    /// request (the bytes given, before base64).
    #[error(
        "the request's images are {bytes} bytes together, over {provider}'s limit of {max} bytes{} of images per request; send fewer or smaller images, or images by URL",
        mib(*.max)
    )]
    ImagesTooLarge {
        /// The provider.
        provider: String,
        /// The images' bytes.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The whole request, media as base64, is over the provider's limit.
    #[error(
        "the request is {bytes} bytes with its media as base64, over {provider}'s limit of {max} bytes{}; send fewer or smaller files, or files by URL",
        mib(*.max)
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
            | MediaRefusal::TooManyImages { provider, .. }
            | MediaRefusal::ImagesTooLarge { provider, .. }
            | MediaRefusal::RequestTooLarge { provider, .. } => provider,
        }
    }
}
