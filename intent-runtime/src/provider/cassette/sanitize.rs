//! The sanitizer: what is taken out of an exchange before it is written to a cassette
//! (API keys, bearer tokens, credential fields, and the fields and values the user names).

use std::fmt;

/// What a redacted value is replaced with.
pub(crate) const REDACTED: &str = "[redacted]";

/// The environment variables whose values are API keys: each one set is redacted from
/// every exchange by default.
const KEY_VARIABLES: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "OPENAI_COMPATIBLE_API_KEY",
    "TYPESAFE_API_KEY",
];

/// Field names whose values are credentials wherever they appear in a JSON text.
const CREDENTIAL_FIELDS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "api-key",
    "api_key",
    "apikey",
    "x-api-key",
    "x-goog-api-key",
];

/// The prefixes of API keys as the major providers issue them; a token that starts with
/// one and goes on for at least [`KEY_MIN_TAIL`] key characters is taken for a key.
const KEY_PREFIXES: &[&str] = &["sk-", "sk_", "AIza", "apikey_", "xai-", "gsk_"];
const KEY_MIN_TAIL: usize = 16;

/// Removes secrets from the exchanges a [`CassetteProvider`](super::CassetteProvider)
/// records, before anything is written.
///
/// An exchange is recorded above the HTTP layer, so request headers (where keys travel)
/// never reach a cassette. What could still carry a secret is text: a prompt built from
/// user data, a reply, an error message. By default the sanitizer replaces with
/// `[redacted]`:
///
/// - the values of the API-key environment variables that are set (`OPENAI_API_KEY`,
///   `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `GOOGLE_API_KEY`, `AZURE_OPENAI_API_KEY`,
///   `OPENAI_COMPATIBLE_API_KEY`, `TYPESAFE_API_KEY`);
/// - `Bearer` tokens, and tokens shaped like provider keys (`sk-…`, `AIza…`);
/// - the values of JSON fields named like credentials (`authorization`, `api_key`,
///   `x-api-key`, …) anywhere in a text.
///
/// Add your own secrets with [`secret`](Self::secret) and the JSON fields to blank with
/// [`field`](Self::field). A blanked field of a reply is replayed blanked: name only
/// fields the code under test does not read, or that accept a string.
///
/// ```
/// use intent_rs::provider::Sanitizer;
///
/// let sanitizer = Sanitizer::new().secret("hunter2-long-password").field("email");
/// # let _ = sanitizer;
/// ```
#[derive(Clone)]
pub struct Sanitizer {
    secrets: Vec<String>,
    fields: Vec<String>,
}

impl Default for Sanitizer {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Sanitizer {
    // The secrets themselves are never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sanitizer")
            .field("secrets", &self.secrets.len())
            .field("fields", &self.fields)
            .finish()
    }
}

impl Sanitizer {
    /// The default sanitizer: the API keys set in the environment, bearer tokens, key-shaped
    /// tokens and credential fields.
    pub fn new() -> Self {
        let secrets = KEY_VARIABLES
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .filter(|value| !value.trim().is_empty())
            .collect();
        Self {
            secrets,
            fields: CREDENTIAL_FIELDS.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    /// Also redacts every occurrence of `value` (a key, a password, a customer's name).
    /// An empty value is ignored.
    pub fn secret(mut self, value: impl Into<String>) -> Self {
        let value = value.into();
        if !value.is_empty() {
            self.secrets.push(value);
        }
        self
    }

    /// Also blanks the value of every JSON field called `name` (compared without case) in
    /// the prompts, replies and errors recorded.
    pub fn field(mut self, name: impl Into<String>) -> Self {
        self.fields.push(name.into().to_ascii_lowercase());
        self
    }

    /// `text` with every secret, token and named field's value redacted.
    pub(crate) fn clean(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        // Each pass below copies the text only when it has something to redact; the
        // lowercase copy the searches read is made again only after a change.
        let mut lower = out.to_ascii_lowercase();
        if lower.contains("bearer ") {
            out = redact_bearer(&out);
            lower = out.to_ascii_lowercase();
        }
        if let Some(redacted) = redact_key_shapes(&out) {
            out = redacted;
            lower = out.to_ascii_lowercase();
        }
        for field in &self.fields {
            if contains_quoted(&lower, field) {
                out = redact_field(&out, field);
                lower = out.to_ascii_lowercase();
            }
        }
        out
    }
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.'
}

/// `Bearer <token>` → `Bearer [redacted]`, whatever the case of `bearer`.
fn redact_bearer(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    let mut search = 0;
    while let Some(found) = lower[search..].find("bearer ") {
        let start = search + found + "bearer ".len();
        let bytes = text.as_bytes();
        let mut end = start;
        while end < bytes.len()
            && (is_key_char(bytes[end]) || matches!(bytes[end], b'+' | b'/' | b'='))
        {
            end += 1;
        }
        if end > start && &text[start..end] != REDACTED {
            out.push_str(&text[from..start]);
            out.push_str(REDACTED);
            from = end;
        }
        search = end.max(start);
    }
    out.push_str(&text[from..]);
    out
}

/// Whether `"<field>"` occurs in `lower` (a lowercased text), without building the
/// quoted form.
fn contains_quoted(lower: &str, field: &str) -> bool {
    let bytes = lower.as_bytes();
    lower.match_indices(field).any(|(at, _)| {
        at > 0 && bytes[at - 1] == b'"' && bytes.get(at + field.len()) == Some(&b'"')
    })
}

/// Tokens shaped like provider keys → `[redacted]`; `None` when there is none.
fn redact_key_shapes(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut from = 0;
    let mut at = 0;
    while at < bytes.len() {
        let boundary = at == 0 || !is_key_char(bytes[at - 1]);
        let prefix = boundary
            .then(|| {
                KEY_PREFIXES
                    .iter()
                    .find(|p| bytes[at..].starts_with(p.as_bytes()))
            })
            .flatten();
        if let Some(prefix) = prefix {
            let mut end = at + prefix.len();
            while end < bytes.len() && is_key_char(bytes[end]) {
                end += 1;
            }
            if end - at - prefix.len() >= KEY_MIN_TAIL {
                out.push_str(&text[from..at]);
                out.push_str(REDACTED);
                from = end;
                at = end;
                continue;
            }
        }
        at += 1;
    }
    if from == 0 {
        return None;
    }
    out.push_str(&text[from..]);
    Some(out)
}

/// The value after every `"<field>":` (the field compared without case) → `"[redacted]"`:
/// a string, a number or literal, or a whole object or array.
fn redact_field(text: &str, field: &str) -> String {
    let quoted = format!("\"{field}\"");
    let lower = text.to_ascii_lowercase();
    if !lower.contains(&quoted) {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    let mut search = 0;
    while let Some(found) = lower[search..].find(&quoted) {
        let mut at = search + found + quoted.len();
        search = at;
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if bytes.get(at) != Some(&b':') {
            continue;
        }
        at += 1;
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        let end = value_end(bytes, at);
        if end > at && &text[at..end] != "\"[redacted]\"" {
            out.push_str(&text[from..at]);
            out.push('"');
            out.push_str(REDACTED);
            out.push('"');
            from = end;
        }
        search = end.max(search);
    }
    out.push_str(&text[from..]);
    out
}

/// Where the JSON value that starts at `start` ends (exclusive): a string to its closing
/// quote, an object or array to its matching bracket, anything else to the next `,`, `}`,
/// `]` or whitespace. An unterminated value runs to the end of the text.
fn value_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start;
    let mut depth = 0usize;
    let mut in_string = false;
    while at < bytes.len() {
        let c = bytes[at];
        if in_string {
            match c {
                b'\\' => at += 1,
                b'"' => {
                    in_string = false;
                    if depth == 0 {
                        return at + 1;
                    }
                }
                _ => {}
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => return at,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return at + 1;
                    }
                }
                b',' if depth == 0 => return at,
                c if depth == 0 && c.is_ascii_whitespace() => return at,
                _ => {}
            }
        }
        at += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bare() -> Sanitizer {
        Sanitizer {
            secrets: Vec::new(),
            fields: CREDENTIAL_FIELDS.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    #[test]
    fn named_secrets_bearer_tokens_and_key_shapes_are_redacted() {
        let sanitizer = bare().secret("hunter2-password");
        let text = "pw hunter2-password; Authorization: Bearer abc.DEF-123=; key sk-proj-0123456789abcdefXYZ and AIzaSyA-0123456789abcdefgh; sk-short";
        assert_eq!(
            sanitizer.clean(text),
            "pw [redacted]; Authorization: Bearer [redacted]; key [redacted] and [redacted]; sk-short"
        );
    }

    #[test]
    fn named_fields_are_blanked_whatever_their_value() {
        let sanitizer = bare().field("Email").field("card");
        let text =
            r#"{"EMAIL": "a@b.c", "card": {"n": [1, {"x": "}"}]}, "api_key":42, "name": "Ann"}"#;
        assert_eq!(
            sanitizer.clean(text),
            r#"{"EMAIL": "[redacted]", "card": "[redacted]", "api_key":"[redacted]", "name": "Ann"}"#
        );
        // Cleaning twice changes nothing more: stored exchanges are cleaned again on load.
        let once = sanitizer.clean(text);
        assert_eq!(sanitizer.clean(&once), once);
    }

    #[test]
    fn the_debug_print_shows_no_secret() {
        let printed = format!("{:?}", bare().secret("hunter2-password"));
        assert!(!printed.contains("hunter2"), "{printed}");
    }
}
