//! A fleet's shared rate limit and response cache through Redis.
//!
//! `cargo run --example fleet` runs offline on a scripted model. With `REDIS_URL` set
//! (`redis://127.0.0.1:6379/`, e.g. `redis-server` from Debian's package), the quota and
//! the cache live in that Redis: run the example twice, or in several terminals at once,
//! and the second run is served from the cache and every run draws from one quota.
//! Without it, the example points at a Redis that is not there, to show the failure
//! behaviour: the calls go on through the local limiter, with no cache, and say so in
//! `tracing` warnings. The provider is chosen by environment like the other examples.

use std::time::{Duration, Instant};

use intent_examples::choose_provider;
use intent_rs::fleet::{OnRedisFailure, Redis, RedisCache, RedisQuota};
use intent_rs::limits::RateLimiter;
use intent_rs::provider::ScriptedProvider;
use intent_rs::{IntentClient, IntentError, intents};

#[intents]
trait Tickets {
    #[intent("Summarize the ticket in five words or fewer")]
    async fn summary(&self, ticket: &str) -> Result<String, IntentError>;
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("intent_rs=warn")),
        )
        .init();
    let (url, shared) = match std::env::var("REDIS_URL") {
        Ok(url) => (url, true),
        // Port 1 on loopback: nothing listens there.
        Err(_) => ("redis://127.0.0.1:1/".to_owned(), false),
    };
    println!(
        "{}",
        if shared {
            format!("(sharing the quota and the cache through {url})\n")
        } else {
            "(no REDIS_URL: a Redis that is not there, failing open to this process's limiter)\n"
                .to_owned()
        }
    );
    let redis = Redis::new(&url)?
        .with_timeout(Duration::from_millis(200))
        .with_on_failure(OnRedisFailure::FailOpen);
    let chosen = choose_provider(ScriptedProvider::new([
        "Printer jams on page two",
        "Refund for a double charge",
    ]));
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        // 60 requests a minute for every process sharing this name.
        .rate_limiter(
            RateLimiter::per_minute(60).with_shared_quota(RedisQuota::new(&redis, "fleet-example")),
        )
        .cache(RedisCache::new(&redis).with_ttl(Duration::from_secs(600)))
        .build()?;
    let tickets = TicketsClient::new(client.clone());
    for ticket in [
        "The printer on floor 3 jams every time it reaches the second page.",
        "I was charged twice for my March invoice and would like one refunded.",
    ] {
        let started = Instant::now();
        let summary = tickets.summary(ticket).await?;
        println!("{summary:?} ({} ms)", started.elapsed().as_millis());
    }
    println!(
        "\nmodel calls made by this process: {}",
        client.total_model_calls()
    );
    Ok(())
}
