//! Shared set-up for the examples: a real provider when its environment variables are
//! set, otherwise the scripted model each example brings, so every example runs offline.

use std::sync::Arc;

use intent_runtime::provider::{Anthropic, OpenAi, OpenAiCompatible, Provider, ScriptedProvider};

/// The provider an example uses, and whether it is the offline scripted model.
pub struct ChosenProvider {
    /// The provider to build the client with.
    pub provider: Arc<dyn Provider>,
    /// Whether it is the scripted model (then the example can show its scripted retries).
    pub offline: bool,
}

/// Picks a provider from the environment, in this order:
///
/// - `OPENAI_API_KEY` (with optional `OPENAI_BASE_URL`, `OPENAI_MODEL`): OpenAI;
/// - `ANTHROPIC_API_KEY` (with optional `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL`): Anthropic;
/// - `OPENAI_COMPATIBLE_BASE_URL` (with `OPENAI_COMPATIBLE_MODEL`, default `llama3.2`, and
///   optional `OPENAI_COMPATIBLE_API_KEY`): any Chat Completions server, such as Ollama
///   at `http://localhost:11434/v1`;
/// - otherwise `scripted`, and says so.
pub fn choose_provider(scripted: ScriptedProvider) -> ChosenProvider {
    let set = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if set("OPENAI_API_KEY").is_some() {
        match OpenAi::from_env() {
            Ok(provider) => return real(Arc::new(provider), "OpenAI"),
            Err(error) => eprintln!("OpenAI is not usable ({error}); trying the next provider"),
        }
    }
    if set("ANTHROPIC_API_KEY").is_some() {
        match Anthropic::from_env() {
            Ok(provider) => return real(Arc::new(provider), "Anthropic"),
            Err(error) => eprintln!("Anthropic is not usable ({error}); trying the next provider"),
        }
    }
    if let Some(base_url) = set("OPENAI_COMPATIBLE_BASE_URL") {
        let model = set("OPENAI_COMPATIBLE_MODEL").unwrap_or_else(|| "llama3.2".to_owned());
        let mut provider = OpenAiCompatible::new(base_url.clone(), model);
        if let Some(key) = set("OPENAI_COMPATIBLE_API_KEY") {
            provider = provider.with_api_key(key);
        }
        return real(
            Arc::new(provider),
            &format!("the OpenAI-compatible server at {base_url}"),
        );
    }
    println!(
        "(offline: no OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENAI_COMPATIBLE_BASE_URL is set, so a scripted model answers)\n"
    );
    ChosenProvider {
        provider: Arc::new(scripted),
        offline: true,
    }
}

fn real(provider: Arc<dyn Provider>, name: &str) -> ChosenProvider {
    println!("(using {name})\n");
    ChosenProvider {
        provider,
        offline: false,
    }
}

/// Prints what happened during a call: each attempt's raw output, repairs and issues.
pub fn print_attempts<T>(result: &intent_runtime::AIResult<T>) {
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
