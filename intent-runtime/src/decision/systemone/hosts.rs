//! The hosts that serve decision models, what each does differently (base URL, path
//! prefix, model ids, error envelopes) and the limits each puts on one request.

use std::borrow::Cow;

/// Which request body an endpoint expects. A URL does not say: OpenAI's, Fireworks' and
/// LiteLLM's `/v1/decisions` take the OpenAI shape, while other hosts serve the System One
/// body under a path of the same name, so the format is always chosen explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum WireFormat {
    /// `POST {base}/v1/systemone`: a `state`, questions keyed by id (`noul`, `choice`,
    /// `score`), answers keyed by id.
    #[default]
    SystemOne,
    /// `POST {base}/v1/decisions` in OpenAI's shape: an `input`, a list of `predicate`,
    /// `choice` and `score` questions, a list of answers (a `refusal` among them).
    OpenAiDecisions,
}

impl WireFormat {
    /// The format named `name` (`systemone` or `openai-decisions`, case and `_`/`-`
    /// ignored), as the `TYPESAFE_WIRE_FORMAT` variable names it.
    pub fn from_name(name: &str) -> Option<Self> {
        match normalized(name).as_str() {
            "systemone" | "system-one" => Some(WireFormat::SystemOne),
            "openai-decisions" | "decisions" | "openai" => Some(WireFormat::OpenAiDecisions),
            _ => None,
        }
    }

    /// The path appended to the base URL (after the host's prefix).
    pub(crate) fn path(self) -> &'static str {
        match self {
            WireFormat::SystemOne => "/v1/systemone",
            WireFormat::OpenAiDecisions => "/v1/decisions",
        }
    }

    /// The most questions the format takes in one request, whatever the host.
    fn max_questions(self) -> Option<usize> {
        match self {
            WireFormat::SystemOne => None,
            // OpenAI's documented range is 1 to 400.
            WireFormat::OpenAiDecisions => Some(400),
        }
    }
}

/// The most a host takes in one request, checked before anything is sent so that an
/// oversized question costs no request. `None` is "no published limit".
///
/// Token limits are not checked here: only the host knows its tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecisionLimits {
    /// The most choices one choice question may offer.
    pub max_choices: usize,
    /// The most levels one score question may have.
    pub max_levels: usize,
    /// The most questions one request may carry.
    pub max_questions: Option<usize>,
}

impl DecisionLimits {
    /// TypeSafe's published caps (255 choices, 10 levels; no published cap on questions),
    /// the portable ceiling the System One API was designed with.
    pub const TYPESAFE: DecisionLimits = DecisionLimits {
        max_choices: 255,
        max_levels: 10,
        max_questions: None,
    };

    /// These limits tightened by `other`'s (the lower of each).
    fn min(self, other: DecisionLimits) -> DecisionLimits {
        DecisionLimits {
            max_choices: self.max_choices.min(other.max_choices),
            max_levels: self.max_levels.min(other.max_levels),
            max_questions: match (self.max_questions, other.max_questions) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

impl Default for DecisionLimits {
    fn default() -> Self {
        Self::TYPESAFE
    }
}

/// A host serving decision models, whose quirks the client follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecisionHost {
    /// TypeSafe's own API (`https://api.typesafe.ai`): a key is required, a missing
    /// `Authorization` header is answered 403.
    TypeSafe,
    /// OpenRouter's relay (`https://openrouter.ai/api`): bare model ids are mapped to
    /// OpenRouter's (`jev-1.13` to `typesafe/jev-1.13`, `jev-latest` to
    /// `~typesafe/jev-latest`), errors come as `{"error": {"code", "message"}}`.
    OpenRouter,
    /// A LiteLLM proxy (`http://localhost:4000` unless set): the model is an alias of the
    /// proxy's `model_list`, it validates requests itself (400, not 422), caps a request at
    /// 128 questions and answers errors as `{"error": {"message", "type", "code"}}`
    /// (`throttling_error` for a rate limit).
    LiteLlm,
    /// Fireworks (`https://api.fireworks.ai`): every path is under `/inference`, models are
    /// `accounts/<account>/models/<model>`, and the Decisions shape takes at most 208
    /// choices.
    Fireworks,
    /// Ollama and runtimes following its contract (`http://localhost:11434`): no key,
    /// 2 to 26 choices or levels, at most 64 questions, errors as `{"error": "text"}`.
    Ollama,
    /// Any other server of the API at a base URL, with TypeSafe's limits.
    Compatible,
}

impl DecisionHost {
    /// The host named `name` (`typesafe`, `openrouter`, `litellm`, `fireworks`, `ollama`,
    /// `compatible`; case ignored), as the `TYPESAFE_HOST` variable names it.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match normalized(name).as_str() {
            "typesafe" => DecisionHost::TypeSafe,
            "openrouter" => DecisionHost::OpenRouter,
            "litellm" => DecisionHost::LiteLlm,
            "fireworks" => DecisionHost::Fireworks,
            "ollama" => DecisionHost::Ollama,
            "compatible" => DecisionHost::Compatible,
            _ => return None,
        })
    }

    /// The host's name in errors, logs and spans (`gen_ai.provider.name`).
    pub fn name(self) -> &'static str {
        match self {
            DecisionHost::TypeSafe => "typesafe",
            DecisionHost::OpenRouter => "openrouter",
            DecisionHost::LiteLlm => "litellm",
            DecisionHost::Fireworks => "fireworks",
            DecisionHost::Ollama => "ollama",
            DecisionHost::Compatible => "systemone-compatible",
        }
    }

    /// The base URL requests go to unless another is set.
    pub fn default_base_url(self) -> &'static str {
        match self {
            DecisionHost::TypeSafe | DecisionHost::Compatible => "https://api.typesafe.ai",
            DecisionHost::OpenRouter => "https://openrouter.ai/api",
            DecisionHost::LiteLlm => "http://localhost:4000",
            DecisionHost::Fireworks => "https://api.fireworks.ai",
            DecisionHost::Ollama => "http://localhost:11434",
        }
    }

    /// What the host puts between the base URL and `/v1/...`.
    pub(crate) fn path_prefix(self) -> &'static str {
        match self {
            DecisionHost::Fireworks => "/inference",
            _ => "",
        }
    }

    /// The URL of `format`'s endpoint under `base_url` (trimmed of trailing slashes); a
    /// base URL that already ends in `/v1` (as OpenAI's base URL variable must), or in the
    /// host's prefix, does not get it twice.
    pub(crate) fn endpoint(self, base_url: &str, format: WireFormat) -> String {
        let base_url = base_url.strip_suffix("/v1").unwrap_or(base_url);
        let prefix = self.path_prefix();
        let prefix = if base_url.ends_with(prefix) {
            ""
        } else {
            prefix
        };
        format!("{base_url}{prefix}{}", format.path())
    }

    /// The limits of one request in `format`.
    pub fn limits(self, format: WireFormat) -> DecisionLimits {
        let host = match (self, format) {
            (DecisionHost::LiteLlm, _) => DecisionLimits {
                max_questions: Some(128),
                ..DecisionLimits::TYPESAFE
            },
            (DecisionHost::Fireworks, WireFormat::OpenAiDecisions) => DecisionLimits {
                max_choices: 208,
                ..DecisionLimits::TYPESAFE
            },
            (DecisionHost::Ollama, _) => DecisionLimits {
                max_choices: 26,
                max_levels: 26,
                max_questions: Some(64),
            },
            _ => DecisionLimits::TYPESAFE,
        };
        host.min(DecisionLimits {
            max_questions: format.max_questions(),
            ..host
        })
    }

    /// The model id as the host expects it on the wire.
    pub(crate) fn wire_model(self, model: &str) -> Cow<'_, str> {
        match self {
            // OpenRouter names models `author/slug`; a bare TypeSafe id is mapped the
            // way its relay documents, with `~` for the moving `-latest` alias.
            DecisionHost::OpenRouter if !model.contains('/') => {
                let tilde = if model.ends_with("-latest") { "~" } else { "" };
                Cow::Owned(format!("{tilde}typesafe/{model}"))
            }
            _ => Cow::Borrowed(model),
        }
    }

    /// Whether a request without a key is an error of the caller's configuration (hosted
    /// APIs) rather than normal (local runtimes, proxies holding the key).
    pub(crate) fn needs_key(self) -> bool {
        matches!(
            self,
            DecisionHost::TypeSafe | DecisionHost::OpenRouter | DecisionHost::Fireworks
        )
    }
}

fn normalized(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('_', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openrouter_maps_bare_typesafe_ids_and_keeps_qualified_ones() {
        let host = DecisionHost::OpenRouter;
        assert_eq!(host.wire_model("jev-1.13"), "typesafe/jev-1.13");
        assert_eq!(host.wire_model("jev-latest"), "~typesafe/jev-latest");
        assert_eq!(
            host.wire_model("upstage/solar-decide"),
            "upstage/solar-decide"
        );
        assert_eq!(
            DecisionHost::TypeSafe.wire_model("jev-latest"),
            "jev-latest"
        );
    }

    #[test]
    fn fireworks_paths_carry_the_inference_prefix_once() {
        let host = DecisionHost::Fireworks;
        assert_eq!(
            host.endpoint("https://api.fireworks.ai", WireFormat::SystemOne),
            "https://api.fireworks.ai/inference/v1/systemone"
        );
        assert_eq!(
            host.endpoint(
                "https://api.fireworks.ai/inference",
                WireFormat::OpenAiDecisions
            ),
            "https://api.fireworks.ai/inference/v1/decisions"
        );
        assert_eq!(
            DecisionHost::TypeSafe.endpoint("http://127.0.0.1:9", WireFormat::SystemOne),
            "http://127.0.0.1:9/v1/systemone"
        );
    }

    #[test]
    fn a_base_url_ending_in_v1_does_not_get_it_twice() {
        assert_eq!(
            DecisionHost::Compatible.endpoint("http://127.0.0.1:8787/v1", WireFormat::SystemOne),
            "http://127.0.0.1:8787/v1/systemone"
        );
        assert_eq!(
            DecisionHost::Fireworks.endpoint(
                "https://api.fireworks.ai/inference/v1",
                WireFormat::OpenAiDecisions
            ),
            "https://api.fireworks.ai/inference/v1/decisions"
        );
    }

    #[test]
    fn limits_follow_the_host_and_the_format() {
        assert_eq!(
            DecisionHost::TypeSafe.limits(WireFormat::SystemOne),
            DecisionLimits::TYPESAFE
        );
        assert_eq!(
            DecisionHost::TypeSafe
                .limits(WireFormat::OpenAiDecisions)
                .max_questions,
            Some(400)
        );
        let ollama = DecisionHost::Ollama.limits(WireFormat::SystemOne);
        assert_eq!((ollama.max_choices, ollama.max_questions), (26, Some(64)));
        assert_eq!(
            DecisionHost::LiteLlm
                .limits(WireFormat::OpenAiDecisions)
                .max_questions,
            Some(128)
        );
        assert_eq!(
            DecisionHost::Fireworks
                .limits(WireFormat::OpenAiDecisions)
                .max_choices,
            208
        );
    }

    #[test]
    fn names_read_case_and_separators_loosely() {
        assert_eq!(
            DecisionHost::from_name(" LiteLLM "),
            Some(DecisionHost::LiteLlm)
        );
        assert_eq!(DecisionHost::from_name("vercel"), None);
        assert_eq!(
            WireFormat::from_name("OpenAI_Decisions"),
            Some(WireFormat::OpenAiDecisions)
        );
        assert_eq!(
            WireFormat::from_name("systemone"),
            Some(WireFormat::SystemOne)
        );
        assert_eq!(WireFormat::from_name("xml"), None);
    }
}
