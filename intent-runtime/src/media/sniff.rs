//! Media types, recognised from the bytes' signatures, and a PDF's page count.

use std::fmt;

use memchr::memmem;

/// A media type this library sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MediaType {
    /// `image/png`
    Png,
    /// `image/jpeg`
    Jpeg,
    /// `image/gif`
    Gif,
    /// `image/webp`
    Webp,
    /// `application/pdf`
    Pdf,
}

/// How far into a file a PDF header may start: PDF readers accept leading junk up to
/// 1024 bytes (PDF Reference 1.4, H.3.4.1), and so do the providers' readers.
const PDF_HEADER_WINDOW: usize = 1024;

impl MediaType {
    /// The type whose full signature `bytes` start with (a PDF's `%PDF-` may sit anywhere
    /// in the first 1024 bytes); `None` for anything else.
    pub fn sniff(bytes: &[u8]) -> Option<MediaType> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(MediaType::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(MediaType::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(MediaType::Gif)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(MediaType::Webp)
        } else if memmem::find(&bytes[..bytes.len().min(PDF_HEADER_WINDOW)], b"%PDF-").is_some() {
            Some(MediaType::Pdf)
        } else {
            None
        }
    }

    /// The type's name on the wire (`image/png`).
    pub fn as_str(self) -> &'static str {
        match self {
            MediaType::Png => "image/png",
            MediaType::Jpeg => "image/jpeg",
            MediaType::Gif => "image/gif",
            MediaType::Webp => "image/webp",
            MediaType::Pdf => "application/pdf",
        }
    }

    /// Whether the type is an image.
    pub fn is_image(self) -> bool {
        self != MediaType::Pdf
    }

    /// The name the prompt gives media of this type.
    pub(crate) fn label(self) -> &'static str {
        match self {
            MediaType::Png => "PNG image",
            MediaType::Jpeg => "JPEG image",
            MediaType::Gif => "GIF image",
            MediaType::Webp => "WebP image",
            MediaType::Pdf => "PDF document",
        }
    }

    pub(crate) fn default_filename(self) -> &'static str {
        match self {
            MediaType::Png => "image.png",
            MediaType::Jpeg => "image.jpg",
            MediaType::Gif => "image.gif",
            MediaType::Webp => "image.webp",
            MediaType::Pdf => "document.pdf",
        }
    }
}

impl fmt::Display for MediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The pages of a PDF, counted as its `/Type /Page` objects (not `/Pages`, the tree's
/// inner nodes). `None` when none is found: PDF 1.5 files may keep their objects in
/// compressed streams, whose pages only the provider can count, so no limit is checked
/// on a guess.
pub(crate) fn pdf_pages(bytes: &[u8]) -> Option<usize> {
    let finder = memmem::Finder::new(b"/Type");
    let mut pages = 0;
    for at in finder.find_iter(bytes) {
        let rest = &bytes[at + 5..];
        let skipped = rest
            .iter()
            .take_while(|byte| byte.is_ascii_whitespace())
            .count();
        let rest = &rest[skipped..];
        // `/Page` followed by a delimiter, not by a name character (`/Pages`, `/PageLabel`).
        if rest.starts_with(b"/Page")
            && rest.get(5).is_none_or(|next| !next.is_ascii_alphanumeric())
        {
            pages += 1;
        }
    }
    (pages > 0).then_some(pages)
}
