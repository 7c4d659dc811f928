use super::*;
use crate::provider::{MediaPart, Message, ProviderRequest};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01";
const JPEG: &[u8] = b"\xFF\xD8\xFF\xE0\0\x10JFIF\0";
const GIF: &[u8] = b"GIF89a\x01\0\x01\0";
const WEBP: &[u8] = b"RIFF\x24\0\0\0WEBPVP8 ";
const PDF: &[u8] = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >> endobj\n\
3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n4 0 obj <</Type/Page/Parent 2 0 R>> endobj\n%%EOF";

#[test]
fn each_signature_is_recognised_and_nothing_else() {
    assert_eq!(MediaType::sniff(PNG), Some(MediaType::Png));
    assert_eq!(MediaType::sniff(JPEG), Some(MediaType::Jpeg));
    assert_eq!(MediaType::sniff(GIF), Some(MediaType::Gif));
    assert_eq!(MediaType::sniff(b"GIF87a.."), Some(MediaType::Gif));
    assert_eq!(MediaType::sniff(WEBP), Some(MediaType::Webp));
    assert_eq!(MediaType::sniff(PDF), Some(MediaType::Pdf));
    // A PDF header after leading junk, within the first 1024 bytes, and not past them.
    let mut late = vec![b' '; 1000];
    late.extend_from_slice(b"%PDF-1.7");
    assert_eq!(MediaType::sniff(&late), Some(MediaType::Pdf));
    let mut too_late = vec![b' '; 1024];
    too_late.extend_from_slice(b"%PDF-1.7");
    assert_eq!(MediaType::sniff(&too_late), None);
    // Half signatures are not enough: four bytes of PNG, RIFF without WEBP, a WAV file.
    assert_eq!(MediaType::sniff(b"\x89PNG\0\0\0\0"), None);
    assert_eq!(MediaType::sniff(b"RIFF\x24\0\0\0WAVEfmt "), None);
    assert_eq!(MediaType::sniff(b"WEBP"), None);
    assert_eq!(MediaType::sniff(b""), None);
    assert_eq!(MediaType::sniff(b"hello"), None);
}

#[test]
fn a_declared_type_the_bytes_contradict_is_refused() {
    let error = Image::from_bytes_as(JPEG.to_vec(), MediaType::Png).unwrap_err();
    assert_eq!(
        error,
        MediaError::Mismatch {
            declared: MediaType::Png,
            found: MediaType::Jpeg
        }
    );
    assert!(
        error
            .to_string()
            .contains("declared as image/png but are image/jpeg")
    );
    let image = Image::from_bytes_as(PNG.to_vec(), MediaType::Png).unwrap();
    assert_eq!(image.media().media_type(), Some(MediaType::Png));
    assert_eq!(
        Image::from_bytes(b"not an image".to_vec()).unwrap_err(),
        MediaError::Unrecognised
    );
}

#[test]
fn images_and_documents_do_not_take_each_others_bytes() {
    let error = Image::from_bytes(PDF.to_vec()).unwrap_err();
    assert!(error.to_string().contains("use `Document`"), "{error}");
    let error = Document::from_bytes(PNG.to_vec()).unwrap_err();
    assert!(error.to_string().contains("use `Image`"), "{error}");
    assert!(Document::from_bytes(PDF.to_vec()).is_ok());
}

#[test]
fn files_are_read_and_named_and_a_missing_file_says_which() {
    let dir = std::env::temp_dir().join(format!("intent-media-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("contract.pdf");
    std::fs::write(&path, PDF).unwrap();
    let document = Document::from_path(&path).unwrap();
    assert_eq!(document.media().filename(), "contract.pdf");
    assert_eq!(document.media().len(), PDF.len());
    let missing = Image::from_path(dir.join("missing.png")).unwrap_err();
    assert!(matches!(&missing, MediaError::Read { path, .. } if path.ends_with("missing.png")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn urls_must_be_http() {
    let image = Image::from_url("https://example.com/scan.png").unwrap();
    assert_eq!(
        image.media().url_str(),
        Some("https://example.com/scan.png")
    );
    assert_eq!(image.media().media_type(), None);
    assert!(image.media().base64().is_none());
    assert!(Image::from_url("HTTP://example.com/a.png").is_ok());
    let error = Document::from_url("file:///etc/passwd").unwrap_err();
    assert!(matches!(error, MediaError::NotHttpUrl { .. }));
    assert_eq!(
        Document::from_url("https://example.com/a.pdf")
            .unwrap()
            .media()
            .media_type(),
        Some(MediaType::Pdf)
    );
}

#[test]
fn the_base64_text_is_written_once_and_shared_by_every_clone() {
    let image = Image::from_bytes(PNG.to_vec()).unwrap();
    let copy = image.clone();
    let first = image.media().base64().unwrap();
    let again = copy.media().base64().unwrap();
    assert_eq!(first, "iVBORw0KGgoAAAANSUhEUgAAAAE=");
    // The same allocation: the second call encoded nothing.
    assert!(std::ptr::eq(first, again));
    assert_eq!(image.media().wire_len(), first.len());
}

#[test]
fn the_digest_is_sha256_of_the_bytes() {
    let image = Image::from_bytes(PNG.to_vec()).unwrap();
    // `printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01' | sha256sum`
    assert_eq!(
        image.media().sha256_hex(),
        "d51696591e6a664adeecee08d772d017975c6d8d466d015246afd911ca06d7e8"
    );
}

#[test]
fn equal_bytes_are_equal_media_and_others_are_not() {
    use std::collections::hash_map::DefaultHasher;
    let hash = |media: &Media| {
        let mut hasher = DefaultHasher::new();
        media.hash(&mut hasher);
        hasher.finish()
    };
    let a = Image::from_bytes(PNG.to_vec()).unwrap();
    let b = Image::from_bytes(PNG.to_vec()).unwrap();
    let mut other = PNG.to_vec();
    other.push(0);
    let c = Image::from_bytes(other).unwrap();
    assert_eq!(a.media(), b.media());
    assert_eq!(hash(a.media()), hash(b.media()));
    assert_ne!(a.media(), c.media());
    assert_ne!(hash(a.media()), hash(c.media()));
}

#[test]
fn pdf_pages_are_counted_from_page_objects() {
    let document = Document::from_bytes(PDF.to_vec()).unwrap();
    assert_eq!(document.media().pages(), Some(2));
    // Compressed object streams hide the pages: no count, no guess.
    let hidden = Document::from_bytes(b"%PDF-1.5\n<< /Type /ObjStm >> stream".to_vec()).unwrap();
    assert_eq!(hidden.media().pages(), None);
    assert_eq!(
        Image::from_bytes(PNG.to_vec()).unwrap().media().pages(),
        None
    );
}

#[test]
fn debug_and_summary_never_show_the_bytes() {
    let image = Image::from_bytes(PNG.to_vec()).unwrap();
    let encoded = image.media().base64().unwrap().to_owned();
    let debug = format!("{image:?}");
    assert!(
        debug.contains("image/png") || debug.contains("Png"),
        "{debug}"
    );
    assert!(!debug.contains(&encoded), "{debug}");
    let summary = image.media().summary();
    assert_eq!(summary["type"], "blob");
    assert_eq!(summary["mime_type"], "image/png");
    assert_eq!(summary["size"], PNG.len());
    assert_eq!(summary["sha256"], image.media().sha256_hex());
    assert!(summary.get("content").is_none());
    let url = Image::from_url("https://example.com/a.png").unwrap();
    assert_eq!(url.media().summary()["uri"], "https://example.com/a.png");
    // A pre-signed URL's query is its credential: the recorded URI stops before it.
    let signed = Image::from_url("https://example.com/b.png?X-Amz-Signature=SECRET#x").unwrap();
    assert_eq!(signed.media().summary()["uri"], "https://example.com/b.png");
}

fn request_with(media: &[&Media]) -> ProviderRequest {
    let mut request = ProviderRequest::text("", "look");
    request.messages = vec![Message::user_with_media(
        "look",
        media
            .iter()
            .map(|media| MediaPart {
                at: 4,
                media: (*media).clone(),
            })
            .collect(),
    )];
    request
}

#[test]
fn limits_refuse_what_the_provider_does_not_take_and_name_it() {
    let pdf = Document::from_bytes(PDF.to_vec()).unwrap();
    let png = Image::from_bytes(PNG.to_vec()).unwrap();
    let refusal = MediaLimits::COMPATIBLE
        .check("openai-compatible", [pdf.media()], 4)
        .unwrap_err();
    assert!(matches!(
        refusal,
        MediaRefusal::UnsupportedType {
            media_type: MediaType::Pdf,
            ..
        }
    ));
    assert!(
        refusal
            .to_string()
            .starts_with("openai-compatible does not take application/pdf")
    );
    assert!(
        MediaLimits::COMPATIBLE
            .with_documents(true)
            .check("x", [pdf.media()], 4)
            .is_ok()
    );

    let url_pdf = Document::from_url("https://example.com/a.pdf").unwrap();
    assert!(matches!(
        MediaLimits::OPENAI.check("openai", [url_pdf.media()], 4),
        Err(MediaRefusal::DocumentUrl { .. })
    ));
    assert!(
        MediaLimits::ANTHROPIC
            .check("anthropic", [url_pdf.media()], 4)
            .is_ok()
    );

    let small = MediaLimits::OPENAI.with_max_image_bytes(PNG.len() - 1);
    let refusal = small.check("openai", [png.media()], 4).unwrap_err();
    assert_eq!(
        refusal.to_string(),
        format!(
            "the image/png input is {} bytes, over openai's limit of {} bytes; send a smaller file",
            PNG.len(),
            PNG.len() - 1
        )
    );

    let pages = MediaLimits::ANTHROPIC.with_max_document(1 << 20, 3);
    assert!(pages.check("anthropic", [pdf.media()], 4).is_ok());
    assert!(matches!(
        pages.check("anthropic", [pdf.media(), pdf.media()], 4),
        Err(MediaRefusal::TooManyPages {
            pages: 4,
            max: 3,
            ..
        })
    ));

    // Each image fits; together, as base64 with the prompt, they do not.
    let total = png.media().wire_len() * 2 + "look".len();
    let tight = MediaLimits::OPENAI.with_max_request_bytes(total - 1);
    assert!(matches!(
        tight.check("openai", [png.media(), png.media()], 4),
        Err(MediaRefusal::RequestTooLarge { bytes, .. }) if bytes == total
    ));
    assert!(
        MediaLimits::OPENAI
            .with_max_request_bytes(total)
            .check("openai", [png.media(), png.media()], 4)
            .is_ok()
    );
    // A request counts its prompt with the media, and its refusal is an error the
    // attempt loop does not retry, with nothing sent.
    let request = request_with(&[png.media(), png.media()]);
    let error = request.check_media("openai", &tight).unwrap_err();
    assert!(!error.is_transient());
    assert!(!error.request_sent());
    assert_eq!(error.provider(), "openai");
    assert_eq!(error.kind(), ProviderErrorKind::InvalidRequest);
    assert!(request.check_media("openai", &MediaLimits::OPENAI).is_ok());
    assert!(
        ProviderRequest::text("", "no media")
            .check_media("openai", &tight.with_max_request_bytes(0))
            .is_ok()
    );
}

#[test]
fn the_images_of_a_request_are_counted_against_each_providers_limit() {
    let png = Image::from_bytes(PNG.to_vec()).unwrap();
    let url = Image::from_url("https://example.com/a.png").unwrap();
    let cases = [
        ("openai", MediaLimits::OPENAI, 500),
        ("anthropic", MediaLimits::ANTHROPIC, 600),
        (
            "gemini",
            crate::provider::gemini::GEMINI_MEDIA_LIMITS,
            3_600,
        ),
    ];
    for (provider, limits, max) in cases {
        assert_eq!(limits.max_images, max, "{provider}");
        // Images by URL count as images too: the provider fetches and reads each.
        let at_limit = (0..max).map(|i| if i % 2 == 0 { png.media() } else { url.media() });
        assert!(limits.check(provider, at_limit, 4).is_ok(), "{provider}");
        let over = std::iter::repeat_n(png.media(), max + 1);
        let refusal = limits.check(provider, over, 4).unwrap_err();
        assert_eq!(
            refusal,
            MediaRefusal::TooManyImages {
                provider: provider.to_owned(),
                images: max + 1,
                max,
            }
        );
        assert_eq!(
            refusal.to_string(),
            format!(
                "the request has {} images, over {provider}'s limit of {max} images per \
                 request; send fewer images, or split the request",
                max + 1
            )
        );
    }
    // Documents are not images.
    let pdf = Document::from_bytes(PDF.to_vec()).unwrap();
    let limits = MediaLimits::OPENAI.with_max_images(1, usize::MAX);
    assert!(
        limits
            .check("openai", [png.media(), pdf.media()], 4)
            .is_ok()
    );
}

#[test]
fn openais_fifty_megabytes_count_image_bytes_not_the_base64_body() {
    const MIB: usize = 1024 * 1024;
    let mut big = PNG.to_vec();
    big.resize(15 * MIB, 0);
    let image = Image::from_bytes(big).unwrap();
    let mut pdf = PDF.to_vec();
    pdf.resize(30 * MIB, b' ');
    let pdf = Document::from_bytes(pdf).unwrap();
    // 45 MiB of images (60 MiB as base64), a 30 MiB PDF and a 1 MiB prompt: OpenAI
    // takes it, since only the images' bytes count against its 50 MB.
    let three = [image.media(), image.media(), image.media(), pdf.media()];
    assert!(MediaLimits::OPENAI.check("openai", three, MIB).is_ok());
    assert!(
        MediaLimits::OPENAI_RESPONSES
            .check("openai", three, MIB)
            .is_ok()
    );
    // 60 MiB of images is over it, whatever else the request holds.
    let four = [image.media(), image.media(), image.media(), image.media()];
    let refusal = MediaLimits::OPENAI.check("openai", four, 0).unwrap_err();
    assert_eq!(
        refusal,
        MediaRefusal::ImagesTooLarge {
            provider: "openai".to_owned(),
            bytes: 60 * MIB,
            max: 50 * MIB,
        }
    );
    assert_eq!(
        refusal.to_string(),
        format!(
            "the request's images are {} bytes together, over openai's limit of 52428800 \
             bytes (50 MiB) of images per request; send fewer or smaller images, or images \
             by URL",
            60 * MIB
        )
    );
    // Anthropic's 32 MB is the whole body, base64 included, so the same images are over it.
    let anthropic = MediaLimits::ANTHROPIC.with_max_image_bytes(usize::MAX);
    let refusal = anthropic
        .check("anthropic", [image.media(), image.media()], 0)
        .unwrap_err();
    assert!(
        refusal
            .to_string()
            .contains("over anthropic's limit of 33554432 bytes (32 MiB)"),
        "{refusal}"
    );
    // Each limit states its unit: 3.75 MiB per Anthropic image.
    let small = Image::from_bytes({
        let mut bytes = PNG.to_vec();
        bytes.resize(4 * MIB, 0);
        bytes
    })
    .unwrap();
    assert!(
        MediaLimits::ANTHROPIC
            .check("anthropic", [small.media()], 0)
            .unwrap_err()
            .to_string()
            .contains("limit of 3932160 bytes (3.75 MiB)")
    );
}

#[test]
fn a_turns_parts_split_its_text_at_each_media_place() {
    let png = Image::from_bytes(PNG.to_vec()).unwrap();
    let pdf = Document::from_bytes(PDF.to_vec()).unwrap();
    let message = Message::user_with_media(
        "ab\ncd",
        vec![
            MediaPart {
                at: 0,
                media: png.media().clone(),
            },
            MediaPart {
                at: 3,
                media: pdf.media().clone(),
            },
            MediaPart {
                at: 99,
                media: png.media().clone(),
            },
        ],
    );
    let parts: Vec<Part<'_>> = message.parts().collect();
    assert_eq!(
        parts,
        [
            Part::Media(png.media()),
            Part::Text("ab\n"),
            Part::Media(pdf.media()),
            Part::Text("cd"),
            Part::Media(png.media()),
        ]
    );
    // A place inside a character is moved back to the character's start.
    let message = Message::user_with_media(
        "é!",
        vec![MediaPart {
            at: 1,
            media: png.media().clone(),
        }],
    );
    let parts: Vec<Part<'_>> = message.parts().collect();
    assert_eq!(parts, [Part::Media(png.media()), Part::Text("é!")]);
}

use crate::provider::{Part, ProviderErrorKind};

#[test]
fn a_detail_level_is_kept_on_a_clone_and_makes_another_value_of_the_same_bytes() {
    use std::collections::hash_map::DefaultHasher;
    let hash = |media: &Media| {
        let mut hasher = DefaultHasher::new();
        media.hash(&mut hasher);
        hasher.finish()
    };
    let plain = Image::from_bytes(PNG.to_vec()).unwrap();
    let low = plain.clone().with_detail(ImageDetail::Low);
    assert_eq!(plain.media().detail(), None);
    assert_eq!(low.clone().media().detail(), Some(ImageDetail::Low));
    // The same bytes, shared: no copy, no second encoding.
    assert_eq!(low.media().sha256(), plain.media().sha256());
    assert_eq!(
        low.media().base64().unwrap().as_ptr(),
        plain.media().base64().unwrap().as_ptr()
    );
    assert_ne!(low, plain);
    assert_ne!(hash(low.media()), hash(plain.media()));
    assert_eq!(low, plain.clone().with_detail(ImageDetail::Low));
    assert_ne!(low, plain.with_detail(ImageDetail::High));
    assert!(format!("{low:?}").contains("Low"));
    assert_eq!(
        [ImageDetail::Low, ImageDetail::High, ImageDetail::Auto].map(ImageDetail::as_str),
        ["low", "high", "auto"]
    );
}

#[test]
fn metadata_has_the_kind_type_size_and_digest_and_never_the_bytes_or_the_url() {
    let image = Image::from_bytes(PNG.to_vec())
        .unwrap()
        .with_detail(ImageDetail::High);
    assert_eq!(
        image.media().metadata(),
        serde_json::json!({"modality": "image", "mime_type": "image/png", "size": PNG.len(),
            "sha256": image.media().sha256_hex(), "source": "bytes", "detail": "high"})
    );
    let url = "https://example.com/a.pdf?signature=SECRET";
    let document = Document::from_url(url).unwrap();
    let metadata = document.media().metadata();
    assert_eq!(
        metadata,
        serde_json::json!({"modality": "document", "mime_type": "application/pdf", "size": null,
            "sha256": document.media().sha256_hex(), "source": "url"})
    );
    assert!(!metadata.to_string().contains("example.com"));
    assert!(
        !image
            .media()
            .metadata()
            .to_string()
            .contains(&image.media().base64().unwrap()[..16])
    );
}
