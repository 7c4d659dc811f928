//! Shared set-up for the examples: a real provider when its environment variables are
//! set, otherwise the scripted model each example brings, so every example runs offline.

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
