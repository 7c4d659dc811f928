//! Reading a provider's settings from environment variables: blank counts as unset, and
//! another SDK's variable for the same setting is named in a warning rather than ignored
//! in silence.

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
    /// Reads the variables from `lookup`; a missing key is an error naming its variable.
    pub(crate) fn read(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ProviderSettings, ProviderConfigError> {
        let key = set_variable(lookup, self.key).ok_or(ProviderConfigError::MissingApiKey {
            variable: self.key,
            provider: self.provider,
        })?;
        Ok(ProviderSettings {
            key,
            base_url: base_url_variable(lookup, self.base_url),
            model: set_variable(lookup, self.model),
        })
    }
}

/// The value of `name`, unless it is unset or blank.
pub(crate) fn set_variable(lookup: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    lookup(name).filter(|value| !value.trim().is_empty())
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
fn first_warning_about(variable: &'static str) -> bool {
    static WARNED: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    // A poisoned list only means another thread panicked mid-push; warning again is harmless.
    let mut warned = WARNED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if warned.contains(&variable) {
        return false;
    }
    warned.push(variable);
    true
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
    fn each_ignored_variable_is_warned_about_once() {
        // A name no other test uses, so the process-wide list starts without it.
        assert!(first_warning_about("TEST_ONLY_BASE"));
        assert!(!first_warning_about("TEST_ONLY_BASE"));
    }
}
