//! How closely a provider looks at an image, where its API has such a setting.

use std::fmt;

/// How much detail the model sees of an image (OpenAI's `detail`): a low-resolution
/// version for a fixed, small price, or the full image tiled at a higher price.
///
/// Set with [`Image::with_detail`](super::Image::with_detail). Where it is sent:
///
/// | provider | field |
/// | --- | --- |
/// | OpenAI Chat Completions, Azure OpenAI, OpenAI-compatible servers | `image_url.detail` |
/// | OpenAI Responses | `input_image.detail` (`auto` when none is set, as the API requires the field) |
/// | Anthropic Messages | not sent: the API has no such setting (it scales large images down itself) |
/// | Gemini | not sent: its resolution setting (`generationConfig.mediaResolution`) is per request, not per image |
///
/// An image without a detail level sends none, and the provider's default (`auto`)
/// applies. The level is part of the image's identity: the response cache tells an image
/// sent at `Low` from the same bytes sent at `High`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ImageDetail {
    /// A low-resolution version (OpenAI: 512×512, a flat number of tokens).
    Low,
    /// The full image, read in tiles (more tokens).
    High,
    /// The provider chooses from the image's size.
    Auto,
}

impl ImageDetail {
    /// The value on the wire: `low`, `high`, `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageDetail::Low => "low",
            ImageDetail::High => "high",
            ImageDetail::Auto => "auto",
        }
    }
}

impl fmt::Display for ImageDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
