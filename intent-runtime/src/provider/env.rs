//! Choosing a provider from the environment: the variables each HTTP provider reads, and
//! [`from_env`], which picks the first one configured.

use std::sync::Arc;

use super::http::{ProviderConfigError, set_variable};
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
