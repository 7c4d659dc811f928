//! Shared set-up for the examples: a real provider when its environment variables are
//! set, otherwise the scripted model each example brings, so every example runs offline.

use std::path::PathBuf;
use std::sync::Arc;

use intent_rs::provider::{self, Provider, ProviderConfigError, ScriptedProvider};

/// The provider an example uses, and whether it is the offline scripted model.
pub struct ChosenProvider {
    /// The provider to build the client with.
    pub provider: Arc<dyn Provider>,
    /// Whether it is the scripted model (then the example can show its scripted retries).
    pub offline: bool,
}

/// The provider the environment configures ([`provider::from_env`]: `OPENAI_API_KEY`,
/// then `ANTHROPIC_API_KEY`, then `OPENAI_COMPATIBLE_BASE_URL`, each with its optional
/// base URL and model variables), or else `scripted`, and says which.
pub fn choose_provider(scripted: ScriptedProvider) -> ChosenProvider {
    match provider::from_env() {
        Ok(provider) => {
            println!(
                "(using {}, model {})\n",
                provider.name(),
                provider.default_model()
            );
            ChosenProvider {
                provider,
                offline: false,
            }
        }
        Err(reason) => {
            if reason != ProviderConfigError::NoProvider {
                eprintln!("the configured provider is not usable: {reason}");
            }
            println!("(offline: {reason}; a scripted model answers)\n");
            ChosenProvider {
                provider: Arc::new(scripted),
                offline: true,
            }
        }
    }
}

/// Prints what happened during a call: each attempt's raw output, repairs and issues.
pub fn print_attempts<T>(result: &intent_rs::AIResult<T>) {
    for attempt in &result.attempts {
        println!(
            "  attempt {}: {:?}{}",
            attempt.number,
            attempt.raw_output,
            if attempt.cached { " (from cache)" } else { "" }
        );
        for repair in &attempt.repairs {
            println!("    repaired: {repair:?}");
        }
        for issue in &attempt.issues {
            println!("    {} issue: {}", issue.source, issue.message);
        }
        if let Some(gate) = &attempt.gate {
            println!(
                "    decision gate: {:?}, p(yes) = {}, threshold {:.2}",
                gate.outcome,
                gate.probability
                    .map_or("none".to_owned(), |p| format!("{p:.2}")),
                gate.threshold
            );
        }
        if let Some(judge) = &attempt.judge {
            println!("    judge: {judge:?}");
        }
    }
    for issue in result
        .issues
        .iter()
        .filter(|i| i.attempt as usize > result.attempts.len())
    {
        println!("  stopped: {}", issue.message);
    }
}

/// Where the batch example keeps its job: `BATCH_DIR` when it is set, else
/// [`default_batch_dir`] for the provider named `provider_name`.
pub fn batch_dir(provider_name: &str) -> PathBuf {
    std::env::var_os("BATCH_DIR").map_or_else(|| default_batch_dir(provider_name), PathBuf::from)
}

/// `intent-batch-example-<provider>` in the temporary directory. A directory holds one
/// job, and a job belongs to one provider: with the provider in the name, the scripted
/// job an offline run leaves is never the one a run with a real provider finds (which
/// would refuse it as another job). Characters other than letters, digits, `-` and `_`
/// in the name become `-`, so a provider's name cannot reach another directory.
pub fn default_batch_dir(provider_name: &str) -> PathBuf {
    let name: String = provider_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    std::env::temp_dir().join(format!("intent-batch-example-{name}"))
}

/// The offline answer of the ticket examples (`collection`, `collection_sqlite`) to a
/// decision request about a support ticket, by keywords of the ticket, with
/// log-probabilities: the team among three options (billing, support, sales), or yes/no
/// to "is it urgent", surer as more urgent words appear.
pub fn scripted_ticket_decision(user: &str) -> intent_rs::provider::ScriptedReply {
    use intent_rs::provider::ScriptedReply;
    let user = user.to_lowercase();
    // The ticket only (the state's JSON, from its subject on): the question and the
    // options' descriptions have words of their own.
    let ticket = user
        .split_once("\"subject\"")
        .map_or("", |(_, rest)| rest.lines().next().unwrap_or_default());
    if user.contains("one of: a, b, c") {
        let billing = [
            "charged", "invoice", "refund", "payment", "billing", "credit",
        ];
        let sales = [
            "pricing",
            "trial",
            "discount",
            "on-premise",
            "compare",
            "volume",
        ];
        let (a, b, c) = if billing.iter().any(|word| ticket.contains(word)) {
            (-0.08, -3.0, -3.5)
        } else if sales.iter().any(|word| ticket.contains(word)) {
            (-3.2, -2.9, -0.12)
        } else {
            (-3.1, -0.07, -3.9)
        };
        return ScriptedReply::logprobs([("A", a), ("B", b), ("C", c)]);
    }
    let urgent = ["urgent", "critical", "blocking", "today", "tomorrow"];
    let hits = urgent.iter().filter(|word| ticket.contains(*word)).count();
    // More signals, surer: a ranking orders by this probability.
    let yes: f64 = [0.06, 0.86, 0.95, 0.98][hits.min(3)];
    ScriptedReply::logprobs([("yes", yes.ln()), ("no", (1.0 - yes).ln())])
}

#[cfg(test)]
mod tests {
    use intent_rs::provider::{Anthropic, OpenAi, OpenAiCompatible, ScriptedReply};

    use super::*;

    #[test]
    fn each_provider_of_the_batch_example_has_its_own_default_directory() {
        // The providers the example can run with: offline first, then each real one.
        let providers: Vec<Box<dyn Provider>> = vec![
            Box::new(ScriptedProvider::new(Vec::<ScriptedReply>::new())),
            Box::new(OpenAi::new("sk-test")),
            Box::new(Anthropic::new("sk-ant-test")),
            Box::new(OpenAiCompatible::new("http://127.0.0.1:1/v1", "local")),
        ];
        let dirs: Vec<PathBuf> = providers
            .iter()
            .map(|provider| default_batch_dir(provider.name()))
            .collect();
        for (index, dir) in dirs.iter().enumerate() {
            assert_eq!(dir.parent(), Some(std::env::temp_dir().as_path()));
            for (other, other_dir) in dirs.iter().enumerate().skip(index + 1) {
                assert_ne!(
                    dir,
                    other_dir,
                    "{} and {} share a default job directory",
                    providers[index].name(),
                    providers[other].name()
                );
            }
        }
    }

    #[test]
    fn a_provider_name_cannot_leave_the_temporary_directory() {
        let dir = default_batch_dir("../../etc");
        assert_eq!(dir.parent(), Some(std::env::temp_dir().as_path()));
        assert_eq!(
            dir.file_name().and_then(|name| name.to_str()),
            Some("intent-batch-example-------etc")
        );
    }
}
