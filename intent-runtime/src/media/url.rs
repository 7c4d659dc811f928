//! A medium as the URL field of a request body: its own URL, or its bytes as a `data:`
//! URL. OpenAI's Chat Completions and Responses bodies both carry media this way.

use std::fmt;

use serde::Serialize;

use super::Media;

/// The media's URL, or its bytes as a `data:` URL. Written straight into the body from
/// the media's shared base64 text: the `data:` URL is never built as a string of its own.
pub(crate) struct MediaUrl<'a>(pub(crate) &'a Media);

impl Serialize for MediaUrl<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.url_str() {
            Some(url) => serializer.serialize_str(url),
            None => serializer.collect_str(&DataUrl(self.0)),
        }
    }
}

/// `data:<type>;base64,<bytes>`.
struct DataUrl<'a>(&'a Media);

impl fmt::Display for DataUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let media_type = self
            .0
            .media_type()
            .map_or("application/octet-stream", |t| t.as_str());
        f.write_str("data:")?;
        f.write_str(media_type)?;
        f.write_str(";base64,")?;
        f.write_str(self.0.base64().unwrap_or_default())
    }
}
