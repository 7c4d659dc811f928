//! Choosing a provider from the environment: the variables each HTTP provider reads, and
//! [`from_env`], which picks the first one configured.

use std::sync::Arc;

use super::http::ProviderConfigError;
use super::{Anthropic, OpenAi, OpenAiCompatible, Provider};

/// The provider the environment configures, tried in this order:
///
/// | variable | provider | also read |
/// | --- | --- | --- |
/// | `OPENAI_API_KEY` | [`OpenAi::from_env`] | `OPENAI_BASE_URL`, `OPENAI_MODEL` |
/// | `ANTHROPIC_API_KEY` | [`Anthropic::from_env`] | `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL` |
/// | `OPENAI_COMPATIBLE_BASE_URL` | [`OpenAiCompatible::from_env`] | `OPENAI_COMPATIBLE_MODEL`, `OPENAI_COMPATIBLE_API_KEY` |
///
/// A variable set to blanks counts as unset. When none is set, the error names every
/// variable ([`ProviderConfigError::NoProvider`]), so a test or an example can fall back
/// to a [`ScriptedProvider`](super::ScriptedProvider) on exactly that error.
///
/// ```
/// use intent_rs::IntentClient;
/// use intent_rs::provider::{self, ProviderConfigError, ScriptedProvider};
///
/// let provider = match provider::from_env() {
///     Ok(provider) => provider,
///     Err(ProviderConfigError::NoProvider) => {
///         std::sync::Arc::new(ScriptedProvider::new([r#"{"value": 3}"#]))
///     }
///     Err(other) => panic!("{other}"),
/// };
/// let client = IntentClient::builder().shared_provider(provider).build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn from_env() -> Result<Arc<dyn Provider>, ProviderConfigError> {
    from_lookup(&|name| std::env::var(name).ok())
}

/// [`from_env`] over any source of variables (tests give a map).
pub(crate) fn from_lookup(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ProviderConfigError> {
    let set = |name: &str| set_variable(lookup, name).is_some();
    if set("OPENAI_API_KEY") {
        return Ok(Arc::new(OpenAi::from_lookup(lookup)?));
    }
    if set("ANTHROPIC_API_KEY") {
        return Ok(Arc::new(Anthropic::from_lookup(lookup)?));
    }
    if set("OPENAI_COMPATIBLE_BASE_URL") {
        return Ok(Arc::new(OpenAiCompatible::from_lookup(lookup)?));
    }
    Err(ProviderConfigError::NoProvider)
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
    use crate::provider::compatible::OPENAI_COMPATIBLE_DEFAULT_MODEL;

    /// A lookup over `pairs`, as the environment would answer.
    pub(crate) fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn chosen(pairs: &[(&str, &str)]) -> Result<(String, String), ProviderConfigError> {
        from_lookup(&lookup(pairs)).map(|provider| {
            (
                provider.name().to_owned(),
                provider.default_model().to_owned(),
            )
        })
    }

    #[test]
    fn nothing_set_names_every_variable() {
        let err = chosen(&[("OPENAI_API_KEY", " "), ("OTHER", "x")]).unwrap_err();
        assert_eq!(err, ProviderConfigError::NoProvider);
        let message = err.to_string();
        for variable in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENAI_COMPATIBLE_BASE_URL",
        ] {
            assert!(message.contains(variable), "{message}");
        }
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

    #[test]
    fn providers_are_tried_in_order() {
        let all = [
            ("OPENAI_API_KEY", "sk-1"),
            ("OPENAI_MODEL", "gpt-x"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("ANTHROPIC_MODEL", "claude-x"),
            ("OPENAI_COMPATIBLE_BASE_URL", "http://localhost:11434/v1"),
            ("OPENAI_COMPATIBLE_MODEL", "qwen3"),
        ];
        assert_eq!(chosen(&all).unwrap(), ("openai".into(), "gpt-x".into()));
        assert_eq!(
            chosen(&all[2..]).unwrap(),
            ("anthropic".into(), "claude-x".into())
        );
        assert_eq!(
            chosen(&all[4..]).unwrap(),
            ("openai-compatible".into(), "qwen3".into())
        );
        assert_eq!(
            chosen(&all[4..5]).unwrap().1,
            OPENAI_COMPATIBLE_DEFAULT_MODEL
        );
    }
}
