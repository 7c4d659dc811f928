//! Choosing a provider from the environment: the variables each HTTP provider reads, and
//! [`from_env`], which picks the first one configured.

use std::sync::Arc;

use super::http::{PROVIDER_PREFIXES, ProviderConfigError, set_variable, warn_unknown_variables};
use super::{Anthropic, AzureOpenAi, Gemini, OpenAi, OpenAiCompatible, OpenAiResponses, Provider};

/// The provider the environment configures, tried in this order:
///
/// | variable | provider | also read |
/// | --- | --- | --- |
/// | `OPENAI_API_KEY` | [`OpenAi::from_env`], or [`OpenAiResponses::from_env`] when `OPENAI_API` is `responses` | `OPENAI_BASE_URL`, `OPENAI_MODEL`, `OPENAI_API` |
/// | `ANTHROPIC_API_KEY` | [`Anthropic::from_env`] | `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL` |
/// | `GEMINI_API_KEY` or `GOOGLE_API_KEY` | [`Gemini::from_env`] | `GEMINI_BASE_URL`, `GEMINI_MODEL` |
/// | `AZURE_OPENAI_ENDPOINT` | [`AzureOpenAi::from_env`] | `AZURE_OPENAI_DEPLOYMENT`, `AZURE_OPENAI_API_KEY` or `AZURE_OPENAI_AD_TOKEN`, `AZURE_OPENAI_API_VERSION` |
/// | `OPENAI_COMPATIBLE_BASE_URL` | [`OpenAiCompatible::from_env`] | `OPENAI_COMPATIBLE_MODEL`, `OPENAI_COMPATIBLE_API_KEY` |
///
/// The choice is logged at `info` (the provider and the variable that chose it); when
/// more than one provider is configured, a warning names the variables that were passed
/// over. Variables under these providers' prefixes that the library does not read (a
/// misspelt `OPENAI_MODLE`) are named in a warning, once each, with the nearest one it
/// reads. Values are trimmed; a key with a line break or a space inside, or a base URL
/// that is not an absolute http(s) URL, is refused here, naming its variable.
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
    warn_unknown_variables(PROVIDER_PREFIXES);
    from_lookup(&|name| std::env::var(name).ok())
}

/// The variable that configures each provider, in the order they are tried; Gemini's
/// key may be in either of two.
const CHOOSING_VARIABLES: [(&str, &[&str]); 5] = [
    ("OpenAI", &["OPENAI_API_KEY"]),
    ("Anthropic", &["ANTHROPIC_API_KEY"]),
    ("Gemini", &["GEMINI_API_KEY", "GOOGLE_API_KEY"]),
    ("Azure OpenAI", &["AZURE_OPENAI_ENDPOINT"]),
    (
        "an OpenAI-compatible server",
        &["OPENAI_COMPATIBLE_BASE_URL"],
    ),
];

/// The providers `lookup` configures, in the order they are tried, each with the
/// variable that configures it.
pub(crate) fn configured_providers(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Vec<(&'static str, &'static str)> {
    CHOOSING_VARIABLES
        .iter()
        .filter_map(|(provider, variables)| {
            let variable = variables
                .iter()
                .find(|name| set_variable(lookup, name).is_some())?;
            Some((*provider, *variable))
        })
        .collect()
}

/// [`from_env`] reading the variables from `lookup` instead of the process environment:
/// a map in a test, a secrets store, a file. The same order and checks apply, and the
/// same log lines say which provider was chosen.
///
/// ```
/// use std::collections::HashMap;
///
/// let settings = HashMap::from([("ANTHROPIC_API_KEY", "sk-ant-test")]);
/// let provider = intent_rs::provider::from_lookup(&|name| settings.get(name).map(|v| v.to_string()))?;
/// assert_eq!(provider.name(), "anthropic");
/// # Ok::<(), intent_rs::provider::ProviderConfigError>(())
/// ```
pub fn from_lookup(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ProviderConfigError> {
    let configured = configured_providers(lookup);
    if let [(provider, variable), passed_over @ ..] = configured.as_slice() {
        tracing::info!(
            provider,
            variable,
            "model provider chosen from the environment: {provider}, because {variable} is set"
        );
        if !passed_over.is_empty() {
            let others: Vec<String> = passed_over
                .iter()
                .map(|(provider, variable)| format!("{variable} ({provider})"))
                .collect();
            tracing::warn!(
                "more than one model provider is configured: {variable} chose {provider}, \
                 and {} {} not used; unset what you do not mean to use, or build the \
                 provider you want with its own from_env",
                others.join(", "),
                if others.len() == 1 { "is" } else { "are" },
            );
        }
    }
    let set = |name: &str| set_variable(lookup, name).is_some();
    if set("OPENAI_API_KEY") {
        return match set_variable(lookup, "OPENAI_API").as_deref().map(str::trim) {
            Some(api) if api.eq_ignore_ascii_case("responses") => {
                Ok(Arc::new(OpenAiResponses::from_lookup(lookup)?))
            }
            Some(api) if !api.eq_ignore_ascii_case("chat") => {
                Err(ProviderConfigError::UnknownApi {
                    variable: "OPENAI_API",
                    value: api.to_owned(),
                    accepted: "`chat` (Chat Completions, the default) or `responses`",
                })
            }
            _ => Ok(Arc::new(OpenAi::from_lookup(lookup)?)),
        };
    }
    if set("ANTHROPIC_API_KEY") {
        return Ok(Arc::new(Anthropic::from_lookup(lookup)?));
    }
    if set("GEMINI_API_KEY") || set("GOOGLE_API_KEY") {
        return Ok(Arc::new(Gemini::from_lookup(lookup)?));
    }
    if set("AZURE_OPENAI_ENDPOINT") {
        return Ok(Arc::new(AzureOpenAi::from_lookup(lookup)?));
    }
    if set("OPENAI_COMPATIBLE_BASE_URL") {
        return Ok(Arc::new(OpenAiCompatible::from_lookup(lookup)?));
    }
    Err(ProviderConfigError::NoProvider)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What `run` logs, as a `fmt` subscriber writes it (levels included), at `info` and
    /// above.
    pub(crate) fn captured(run: impl FnOnce()) -> String {
        use std::sync::{Arc, Mutex};

        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, run);
        let bytes = buffer.0.lock().unwrap().clone();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    use crate::provider::compatible::OPENAI_COMPATIBLE_DEFAULT_MODEL;
    use crate::provider::http::variables::tests::lookup;

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
            "GEMINI_API_KEY",
            "AZURE_OPENAI_ENDPOINT",
            "OPENAI_COMPATIBLE_BASE_URL",
        ] {
            assert!(message.contains(variable), "{message}");
        }
    }

    #[test]
    fn providers_are_tried_in_order() {
        let all = [
            ("OPENAI_API_KEY", "sk-1"),
            ("OPENAI_MODEL", "gpt-x"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("ANTHROPIC_MODEL", "claude-x"),
            ("GEMINI_API_KEY", "g-key"),
            ("GEMINI_MODEL", "gemini-x"),
            ("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com"),
            ("AZURE_OPENAI_DEPLOYMENT", "prod-4o"),
            ("AZURE_OPENAI_API_KEY", "az-key"),
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
            ("gcp.gemini".into(), "gemini-x".into())
        );
        assert_eq!(
            chosen(&all[6..]).unwrap(),
            ("azure.ai.openai".into(), "prod-4o".into())
        );
        assert_eq!(
            chosen(&all[9..]).unwrap(),
            ("openai-compatible".into(), "qwen3".into())
        );
        assert_eq!(
            chosen(&all[9..10]).unwrap().1,
            OPENAI_COMPATIBLE_DEFAULT_MODEL
        );
    }

    #[test]
    fn every_configured_provider_is_listed_in_order_with_its_variable() {
        let both = lookup(&[
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("OPENAI_API_KEY", "sk-1"),
            ("GOOGLE_API_KEY", "g"),
            ("OPENAI_COMPATIBLE_BASE_URL", " "),
        ]);
        assert_eq!(
            configured_providers(&both),
            [
                ("OpenAI", "OPENAI_API_KEY"),
                ("Anthropic", "ANTHROPIC_API_KEY"),
                ("Gemini", "GOOGLE_API_KEY"),
            ]
        );
        assert!(configured_providers(&lookup(&[])).is_empty());
    }

    #[test]
    fn the_choice_is_logged_and_a_provider_passed_over_is_warned_about() {
        let logs = captured(|| {
            let both = [("OPENAI_API_KEY", "sk-1"), ("ANTHROPIC_API_KEY", "sk-ant")];
            assert_eq!(chosen(&both).unwrap().0, "openai");
        });
        assert!(
            logs.contains("INFO")
                && logs
                    .contains("chosen from the environment: OpenAI, because OPENAI_API_KEY is set"),
            "{logs}"
        );
        assert!(
            logs.contains("WARN") && logs.contains("ANTHROPIC_API_KEY (Anthropic) is not used"),
            "{logs}"
        );
        assert!(!logs.contains("sk-"), "{logs}");
    }

    #[test]
    fn a_malformed_key_or_base_url_is_refused_naming_its_variable() {
        for (pairs, variable) in [
            (&[("OPENAI_API_KEY", "sk-1\nsk-2")][..], "OPENAI_API_KEY"),
            (
                &[
                    ("OPENAI_API_KEY", "sk-1"),
                    ("OPENAI_BASE_URL", "127.0.0.1 port 8787"),
                ][..],
                "OPENAI_BASE_URL",
            ),
            (&[("ANTHROPIC_API_KEY", "sk ant")][..], "ANTHROPIC_API_KEY"),
            (&[("GEMINI_API_KEY", "g\r\nx")][..], "GEMINI_API_KEY"),
            (
                &[
                    ("GEMINI_API_KEY", "g"),
                    ("GEMINI_BASE_URL", "localhost:8080"),
                ][..],
                "GEMINI_BASE_URL",
            ),
            (
                &[("OPENAI_COMPATIBLE_BASE_URL", "127.0.0.1 port 8787")][..],
                "OPENAI_COMPATIBLE_BASE_URL",
            ),
            (
                &[
                    ("OPENAI_COMPATIBLE_BASE_URL", "http://h"),
                    ("OPENAI_COMPATIBLE_API_KEY", "a\nb"),
                ][..],
                "OPENAI_COMPATIBLE_API_KEY",
            ),
            (
                &[
                    ("AZURE_OPENAI_ENDPOINT", "res.openai.azure.com x"),
                    ("AZURE_OPENAI_DEPLOYMENT", "d"),
                    ("AZURE_OPENAI_API_KEY", "k"),
                ][..],
                "AZURE_OPENAI_ENDPOINT",
            ),
            (
                &[
                    ("AZURE_OPENAI_ENDPOINT", "https://r"),
                    ("AZURE_OPENAI_DEPLOYMENT", "d"),
                    ("AZURE_OPENAI_AD_TOKEN", "Bearer t"),
                ][..],
                "AZURE_OPENAI_AD_TOKEN",
            ),
        ] {
            let error = chosen(pairs).unwrap_err();
            assert!(
                matches!(&error, ProviderConfigError::MalformedVariable { variable: v, .. } if *v == variable),
                "{error}"
            );
            assert!(error.to_string().contains(variable), "{error}");
        }
    }

    #[test]
    fn keys_are_sent_without_the_spaces_and_line_break_around_them() {
        let padded = lookup(&[
            ("OPENAI_API_KEY", "  sk-1 \n"),
            ("OPENAI_MODEL", " gpt-x\n"),
        ]);
        let settings = super::super::openai::OPENAI_VARIABLES
            .read(&padded)
            .unwrap();
        assert_eq!(
            (settings.key.as_str(), settings.model.as_deref()),
            ("sk-1", Some("gpt-x"))
        );
        assert_eq!(
            chosen(&[("GEMINI_API_KEY", " g-key\n")]).unwrap().0,
            "gcp.gemini"
        );
    }

    #[test]
    fn openai_api_picks_chat_completions_or_responses_and_names_a_typo() {
        let key = ("OPENAI_API_KEY", "sk-1");
        assert_eq!(chosen(&[key]).unwrap().0, "openai");
        assert_eq!(chosen(&[key, ("OPENAI_API", "chat")]).unwrap().0, "openai");
        assert_eq!(
            chosen(&[key, ("OPENAI_API", " Responses ")]).unwrap().0,
            "openai-responses"
        );
        let err = chosen(&[key, ("OPENAI_API", "respones")]).unwrap_err();
        assert!(err.to_string().contains("respones"), "{err}");
        assert!(err.to_string().contains("`responses`"), "{err}");
    }

    #[test]
    fn azure_needs_its_deployment_and_a_key_or_a_token() {
        let endpoint = ("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com");
        let err = chosen(&[endpoint, ("AZURE_OPENAI_API_KEY", "k")]).unwrap_err();
        assert!(err.to_string().contains("AZURE_OPENAI_DEPLOYMENT"), "{err}");
        let err = chosen(&[endpoint, ("AZURE_OPENAI_DEPLOYMENT", "d")]).unwrap_err();
        assert!(err.to_string().contains("AZURE_OPENAI_API_KEY"), "{err}");
        assert!(err.to_string().contains("AZURE_OPENAI_AD_TOKEN"), "{err}");
        let with_token = [
            endpoint,
            ("AZURE_OPENAI_DEPLOYMENT", "d"),
            ("AZURE_OPENAI_AD_TOKEN", "t"),
        ];
        assert_eq!(chosen(&with_token).unwrap().1, "d");
    }
}
