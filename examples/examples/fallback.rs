//! Fallback and routing: a chain of providers that survives an outage, and named
//! providers chosen per method and per call.
//!
//! `cargo run --example fallback` runs offline: a scripted primary that is overloaded,
//! then a scripted backup that answers; the route of each call says who answered and why
//! the primary was passed over, and after three failures the primary cools down. Set
//! `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` or `OPENAI_COMPATIBLE_BASE_URL` to put a real
//! model behind a primary that is unreachable (nothing listens on its port).

use std::sync::Arc;
use std::time::Duration;

use intent_examples::choose_provider;
use intent_rs::provider::fallback::breaker::CooldownPolicy;
use intent_rs::provider::fallback::{FallbackProvider, Member};
use intent_rs::provider::{
    OpenAiCompatible, ProviderError, ProviderErrorKind, ScriptedProvider, ScriptedReply,
};
use intent_rs::{AIResult, IntentClient, IntentError, Overrides, intents};

#[intents]
trait Words {
    /// Any provider will do: the client's default (the chain).
    #[intent("Count the words of the text")]
    async fn count(&self, text: &str) -> AIResult<u32>;

    /// A cheap question for a cheap model.
    #[intent(
        "Say whether the text is a question; answer true or false",
        provider = "cheap"
    )]
    async fn is_question(&self, text: &str) -> Result<bool, IntentError>;
}

/// An offline primary that is overloaded on every request.
fn overloaded_primary() -> ScriptedProvider {
    ScriptedProvider::from_fn(|_, _| {
        ScriptedReply::error(ProviderError::new(
            ProviderErrorKind::Overloaded,
            "primary",
            "overloaded, try again later",
        ))
    })
    .with_model("primary-model")
}

/// An offline backup that answers every question.
fn scripted_backup() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| {
        if request.user().contains("is a question") {
            ScriptedReply::text(r#"{"value": true}"#)
        } else {
            ScriptedReply::text(r#"{"value": 4}"#)
        }
    })
    .with_model("backup-model")
}

fn print_route<T: std::fmt::Debug>(call: usize, result: &AIResult<T>) {
    let Some(route) = result.attempts.first().and_then(|a| a.route.as_ref()) else {
        println!("call {call}: {:?} (no route)", result.value);
        return;
    };
    println!(
        "call {call}: {:?} from {} ({}, member {})",
        result.value, route.provider, route.model, route.position
    );
    for skip in &route.skipped {
        println!("    passed over {}: {}", skip.provider, skip.reason);
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_backup());
    // Offline the primary is a scripted outage; online it is a server that is not there
    // (a refused connection: a transport failure), in front of the real provider.
    let primary = if chosen.offline {
        Member::new(overloaded_primary()).named("primary")
    } else {
        Member::new(OpenAiCompatible::new("http://127.0.0.1:9/v1", "absent")).named("primary")
    };
    let backup_name = if chosen.offline {
        "backup".to_owned()
    } else {
        chosen.provider.name().to_owned()
    };
    let chain = FallbackProvider::new(primary)
        .then(Member::shared(Arc::clone(&chosen.provider)).named(backup_name))
        .cooldown(CooldownPolicy {
            failures: 3,
            cooldown: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(10),
        });
    let client = IntentClient::builder()
        .provider(chain)
        .shared_provider_named("cheap", Arc::clone(&chosen.provider))
        .shared_provider_named("strong", Arc::clone(&chosen.provider))
        .build()?;
    // Made here, not at the first call: a method naming a provider the client lacks
    // fails now, with the names it has.
    let words = WordsClient::try_new(client.clone())?;

    println!("the chain, five calls:");
    for call in 1..=5 {
        let result = words.count("one two three four").await;
        print_route(call, &result);
        if chosen.offline {
            assert_eq!(result.value, Some(4));
        }
    }

    println!("\nrouted by the method's `provider = \"cheap\"`:");
    println!(
        "  is a question: {}",
        words.is_question("Is it raining?").await?
    );

    println!("\nrouted per call, with `Overrides::provider(\"strong\")`:");
    let strong = words.with_options(Overrides::new().provider("strong"));
    let result = strong.count("a b").await;
    println!(
        "  {:?} (no chain on this route, so no route record)",
        result.value
    );

    println!("\nmodel calls: {}", client.total_model_calls());
    Ok(())
}
