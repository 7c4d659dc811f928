//! Reading a provider's settings from environment variables: blank counts as unset,
//! values are trimmed, a key or a URL that cannot be one is refused naming its variable,
//! and another SDK's variable for the same setting, or a misspelt one of ours, is named in
//! a warning rather than ignored in silence.

use super::config_error::ProviderConfigError;

/// The variables a keyed provider reads: its key (required), base URL and model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProviderVariables {
    /// The provider as the missing-key error names it (`"OpenAI"`).
    pub(crate) provider: &'static str,
    /// The key's variable (`OPENAI_API_KEY`).
    pub(crate) key: &'static str,
    /// The base URL's variable (`OPENAI_BASE_URL`).
    pub(crate) base_url: &'static str,
    /// The model's variable (`OPENAI_MODEL`).
    pub(crate) model: &'static str,
}

/// What a provider's variables hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProviderSettings {
    /// The key.
    pub(crate) key: String,
    /// The base URL, when set.
    pub(crate) base_url: Option<String>,
    /// The model, when set.
    pub(crate) model: Option<String>,
}

impl ProviderVariables {
    /// Reads the variables from `lookup`; a missing key, or a key or base URL that cannot
    /// be one, is an error naming its variable.
    pub(crate) fn read(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ProviderSettings, ProviderConfigError> {
        let key = checked_variable(lookup, self.key, Holds::Key)?.ok_or(
            ProviderConfigError::MissingApiKey {
                variable: self.key,
                provider: self.provider,
            },
        )?;
        let base_url = base_url_variable(lookup, self.base_url);
        if let Some(url) = &base_url {
            check(self.base_url, url, Holds::Url).map_err(malformed)?;
        }
        Ok(ProviderSettings {
            key,
            base_url,
            model: set_variable(lookup, self.model),
        })
    }
}

/// The value of `name` trimmed, unless it is unset or blank: a key pasted with a line
/// break or a space around it is the key.
pub(crate) fn set_variable(lookup: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    lookup(name)
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// What a variable holds, for the check made when it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// A key or token sent in a header: one run of characters, nothing inside it that a
    /// header cannot carry or that a key never holds.
    Key,
    /// A server's URL: absolute, `http` or `https`.
    Url,
}

/// A variable whose value cannot be what it is for: the variable and what is wrong (never
/// the value of a key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MalformedVariable {
    /// The variable read.
    pub(crate) variable: &'static str,
    /// What is wrong and what to set, worded to follow "the environment variable X".
    pub(crate) problem: String,
}

/// The value of `name` (see [`set_variable`]), refused when it cannot be what it
/// `holds`: refused here, when the client is built, the mistake is named with its
/// variable; at the first call it would be a bare "authentication failed" or a failed
/// request.
pub(crate) fn checked_variable(
    lookup: &dyn Fn(&str) -> Option<String>,
    name: &'static str,
    holds: Holds,
) -> Result<Option<String>, ProviderConfigError> {
    read_checked(lookup, name, holds).map_err(malformed)
}

/// [`checked_variable`], for a client with an error type of its own.
pub(crate) fn read_checked(
    lookup: &dyn Fn(&str) -> Option<String>,
    name: &'static str,
    holds: Holds,
) -> Result<Option<String>, MalformedVariable> {
    let Some(value) = set_variable(lookup, name) else {
        return Ok(None);
    };
    check(name, &value, holds)?;
    Ok(Some(value))
}

fn malformed(malformed: MalformedVariable) -> ProviderConfigError {
    ProviderConfigError::MalformedVariable {
        variable: malformed.variable,
        problem: malformed.problem,
    }
}

fn check(name: &'static str, value: &str, holds: Holds) -> Result<(), MalformedVariable> {
    let problem = match holds {
        Holds::Key => key_problem(value),
        Holds::Url => url_problem(value),
    };
    match problem {
        Some(problem) => Err(MalformedVariable {
            variable: name,
            problem,
        }),
        None => Ok(()),
    }
}

/// What is wrong with `key` (trimmed), if anything; the key itself is never quoted.
fn key_problem(key: &str) -> Option<String> {
    let inside = key.chars().find(|c| c.is_whitespace() || c.is_control())?;
    let what = match inside {
        '\n' | '\r' => "a line break",
        '\t' => "a tab",
        c if c.is_whitespace() => "a space",
        _ => "a control character",
    };
    Some(format!(
        "holds {what} inside the key; set it to the key alone (spaces and line breaks \
         around it are ignored)"
    ))
}

/// What is wrong with `url` as a server's URL, if anything.
fn url_problem(url: &str) -> Option<String> {
    // A URL with credentials in it is not quoted back.
    let shown = if url.contains('@') {
        "a URL with credentials".to_owned()
    } else {
        format!("`{url}`")
    };
    let wrong = match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
            return None;
        }
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => "has no host".to_owned(),
        Ok(parsed) => format!(
            "has the scheme `{}`, where http or https is needed",
            parsed.scheme()
        ),
        Err(error) => format!("is not a URL ({error})"),
    };
    Some(format!(
        "is {shown}, which {wrong}; set it to an absolute http(s) URL, such as \
         http://127.0.0.1:8787"
    ))
}

/// Base URL variables that other SDKs read and this library does not, each with ours.
///
/// A user who set one of them expects their proxy or gateway to be used; without a word
/// the call would go to the public API instead.
const OTHER_SDKS_BASE_URLS: &[(&str, &str)] = &[
    // openai-python before 1.0, LangChain and many tutorials.
    ("OPENAI_API_BASE", "OPENAI_BASE_URL"),
    ("ANTHROPIC_API_URL", "ANTHROPIC_BASE_URL"),
];

/// The base URL variable `ours`, unless unset or blank; when it is unset and another SDK's
/// variable for the same setting is set, a `tracing` warning (once per process) names the
/// variable to use.
pub(crate) fn base_url_variable(
    lookup: &dyn Fn(&str) -> Option<String>,
    ours: &'static str,
) -> Option<String> {
    let value = set_variable(lookup, ours);
    if value.is_none()
        && let Some(theirs) = ignored_variable(lookup, ours)
        && first_warning_about(theirs)
    {
        tracing::warn!(
            "{theirs} is set but intent-rs does not read it; the request goes to the \
             default API. Set {ours} instead (or unset {theirs} to silence this)"
        );
    }
    value
}

/// Another SDK's variable for `ours` that is set (and so ignored), when `ours` is not.
fn ignored_variable(lookup: &dyn Fn(&str) -> Option<String>, ours: &str) -> Option<&'static str> {
    OTHER_SDKS_BASE_URLS
        .iter()
        .filter(|(_, target)| *target == ours)
        .map(|(theirs, _)| *theirs)
        .find(|theirs| set_variable(lookup, theirs).is_some())
}

/// True the first time it is asked about `variable` in this process.
fn first_warning_about(variable: &str) -> bool {
    static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    // A poisoned list only means another thread panicked mid-push; warning again is harmless.
    let mut warned = WARNED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if warned.iter().any(|known| known == variable) {
        return false;
    }
    warned.push(variable.to_owned());
    true
}

/// Every environment variable the library reads. A variable under one of its prefixes
/// that is not here is a misspelling or another tool's, and is named in a warning.
pub(crate) const KNOWN_VARIABLES: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "OPENAI_API",
    "OPENAI_API_VERSION",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
    "GEMINI_MODEL",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_DEPLOYMENT",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "AZURE_OPENAI_API_VERSION",
    "OPENAI_COMPATIBLE_BASE_URL",
    "OPENAI_COMPATIBLE_MODEL",
    "OPENAI_COMPATIBLE_API_KEY",
    "TYPESAFE_API_KEY",
    "TYPESAFE_BASE_URL",
    "TYPESAFE_HOST",
    "TYPESAFE_DEFAULT_MODEL",
    "TYPESAFE_WIRE_FORMAT",
];

/// The prefixes of the model providers' variables ([`from_env`](crate::provider::from_env)).
/// `GOOGLE_` is left out: most of Google's variables are for other tools.
pub(crate) const PROVIDER_PREFIXES: &[&str] =
    &["OPENAI_", "ANTHROPIC_", "GEMINI_", "AZURE_OPENAI_"];

/// The variables among `names` under one of `prefixes` that the library does not read,
/// each with the known variable nearest to it (under the same prefix). Another SDK's
/// base URL variable is left out: reading the base URL names it with its own advice.
pub(crate) fn unknown_variables<'a>(
    names: impl IntoIterator<Item = &'a str>,
    prefixes: &[&str],
) -> Vec<(&'a str, &'static str)> {
    names
        .into_iter()
        .filter(|name| !KNOWN_VARIABLES.contains(name))
        .filter(|name| {
            !OTHER_SDKS_BASE_URLS
                .iter()
                .any(|(theirs, _)| theirs == name)
        })
        .filter_map(|name| {
            let prefix = prefixes
                .iter()
                .filter(|prefix| name.starts_with(**prefix))
                .max_by_key(|prefix| prefix.len())?;
            nearest_known(name, prefix).map(|known| (name, known))
        })
        .collect()
}

/// The known variable under `prefix` nearest to `name`: the most words shared (a word
/// misspelt by one letter counts), then the fewest edits. `TYPESAFE_URL` is nearest to
/// `TYPESAFE_BASE_URL` (a shared word), not to `TYPESAFE_HOST` (fewer edits).
fn nearest_known(name: &str, prefix: &str) -> Option<&'static str> {
    let words = |name: &'_ str| -> Vec<String> {
        name[prefix.len().min(name.len())..]
            .split('_')
            .filter(|word| !word.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let theirs = words(name);
    let alike =
        |a: &str, b: &str| a == b || (a.len() >= 3 && strsim::damerau_levenshtein(a, b) <= 1);
    KNOWN_VARIABLES
        .iter()
        .filter(|known| known.starts_with(prefix))
        .map(|known| {
            let shared = words(known)
                .iter()
                .filter(|word| theirs.iter().any(|their| alike(their, word)))
                .count();
            let edits = strsim::damerau_levenshtein(&name[prefix.len()..], &known[prefix.len()..]);
            (*known, shared, edits)
        })
        .max_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)))
        .map(|(known, _, _)| known)
}

/// Warns, once per variable and process, about every variable in the process's
/// environment under one of `prefixes` that the library does not read, naming the nearest
/// one it does: a misspelt `TYPESAFE_URL` would otherwise send every call to the default
/// server in silence.
pub(crate) fn warn_unknown_variables(prefixes: &[&str]) {
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .collect();
    for (unknown, nearest) in unknown_variables(names.iter().map(String::as_str), prefixes) {
        if first_warning_about(unknown) {
            tracing::warn!(
                "{unknown} is set, but intent-rs reads no variable of that name; if it is \
                 meant for intent-rs, the nearest variable it reads is {nearest}"
            );
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A lookup over `pairs`, as the environment would answer.
    pub(crate) fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn another_sdks_base_url_is_named_when_ours_is_unset() {
        let theirs = lookup(&[
            ("OPENAI_API_BASE", "http://proxy/v1"),
            ("ANTHROPIC_API_URL", "x"),
        ]);
        assert_eq!(
            ignored_variable(&theirs, "OPENAI_BASE_URL"),
            Some("OPENAI_API_BASE")
        );
        assert_eq!(
            ignored_variable(&theirs, "ANTHROPIC_BASE_URL"),
            Some("ANTHROPIC_API_URL")
        );
        // Ours set: ours is used (and no warning is due).
        let both = lookup(&[
            ("OPENAI_API_BASE", "http://a/v1"),
            ("OPENAI_BASE_URL", "http://b/v1"),
        ]);
        assert_eq!(
            base_url_variable(&both, "OPENAI_BASE_URL").as_deref(),
            Some("http://b/v1")
        );
        assert_eq!(ignored_variable(&lookup(&[]), "OPENAI_BASE_URL"), None);
    }

    #[test]
    fn values_are_trimmed_and_a_malformed_key_or_url_is_refused_naming_its_variable() {
        let vars = lookup(&[
            ("PADDED", "  sk-1\n"),
            ("NEWLINE_KEY", "sk-1\nsk-2"),
            ("SPACED_KEY", "sk 1"),
            ("SPACED_URL", "127.0.0.1 port 8787"),
            ("NO_SCHEME", "localhost:8787"),
            ("GOOD_URL", " http://127.0.0.1:8787/v1 "),
            ("SECRET_URL", "ftp://user:pw@host"),
        ]);
        assert_eq!(set_variable(&vars, "PADDED").as_deref(), Some("sk-1"));
        assert_eq!(
            checked_variable(&vars, "PADDED", Holds::Key)
                .unwrap()
                .as_deref(),
            Some("sk-1")
        );
        for (name, holds, expected) in [
            ("NEWLINE_KEY", Holds::Key, "a line break inside the key"),
            ("SPACED_KEY", Holds::Key, "a space inside the key"),
            (
                "SPACED_URL",
                Holds::Url,
                "`127.0.0.1 port 8787`, which is not a URL",
            ),
            ("NO_SCHEME", Holds::Url, "the scheme `localhost`"),
            ("SECRET_URL", Holds::Url, "a URL with credentials"),
        ] {
            let error = checked_variable(&vars, name, holds).unwrap_err();
            let message = error.to_string();
            assert!(
                message.starts_with(&format!("the environment variable {name} ")),
                "{message}"
            );
            assert!(message.contains(expected), "{message}");
            assert!(
                !message.contains("sk-2") && !message.contains("pw"),
                "{message}"
            );
        }
        assert_eq!(
            checked_variable(&vars, "GOOD_URL", Holds::Url)
                .unwrap()
                .as_deref(),
            Some("http://127.0.0.1:8787/v1")
        );
        assert_eq!(checked_variable(&vars, "UNSET", Holds::Url), Ok(None));
    }

    #[test]
    fn an_unknown_variable_under_our_prefixes_is_named_with_the_nearest_known_one() {
        let names = [
            "TYPESAFE_URL",
            "TYPESAFE_MODEL",
            "TYPESAFE_APIKEY",
            "TYPESAFE_BASE_URL",
            "OPENAI_MODLE",
            "OPENAI_COMPATIBLE_URL",
            "AZURE_OPENAI_DEPLOYMENT_NAME",
            "OPENAI_API_BASE",
            "GOOGLE_CLOUD_PROJECT",
            "PATH",
        ];
        let mut prefixes = PROVIDER_PREFIXES.to_vec();
        prefixes.extend(["TYPESAFE_", "OPENAI_COMPATIBLE_"]);
        assert_eq!(
            unknown_variables(names, &prefixes),
            [
                ("TYPESAFE_URL", "TYPESAFE_BASE_URL"),
                ("TYPESAFE_MODEL", "TYPESAFE_DEFAULT_MODEL"),
                ("TYPESAFE_APIKEY", "TYPESAFE_API_KEY"),
                ("OPENAI_MODLE", "OPENAI_MODEL"),
                ("OPENAI_COMPATIBLE_URL", "OPENAI_COMPATIBLE_BASE_URL"),
                ("AZURE_OPENAI_DEPLOYMENT_NAME", "AZURE_OPENAI_DEPLOYMENT"),
            ]
        );
    }

    /// Every variable name the library's sources read is in the known list, so that no
    /// variable it reads is ever reported as unknown.
    #[test]
    fn every_variable_read_is_known() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = vec![root];
        let mut read = Vec::new();
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                // Every way a variable is read: through a lookup, a `set` or `checked`
                // closure over one, or the process's environment.
                let reads = ["lookup, \"", "set(\"", "checked(\"", "env::var(\""];
                for (start, _) in reads.iter().flat_map(|call| text.match_indices(call)) {
                    let rest = &text[start..];
                    let name = rest[rest.find('"').unwrap() + 1..]
                        .split('"')
                        .next()
                        .unwrap();
                    read.push((name.to_owned(), path.clone()));
                }
            }
        }
        assert!(read.len() > 10, "{read:?}");
        for (name, path) in read {
            if name.chars().all(|c| c.is_ascii_uppercase() || c == '_') && !name.starts_with("TEST")
            {
                assert!(
                    KNOWN_VARIABLES.contains(&name.as_str()),
                    "{name} read in {}",
                    path.display()
                );
            }
        }
    }

    #[test]
    fn each_ignored_variable_is_warned_about_once() {
        // A name no other test uses, so the process-wide list starts without it.
        assert!(first_warning_about("TEST_ONLY_BASE"));
        assert!(!first_warning_about("TEST_ONLY_BASE"));
    }
}
