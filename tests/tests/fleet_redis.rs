//! A fleet sharing one quota and one response cache through a real `redis-server` (started
//! here on a loopback port, stopped at the end): four processes against one loopback
//! provider that counts arrivals; Redis stopped mid-run and started again.
//!
//! The server is `redis-server` from the PATH, or one the tests install themselves (see
//! `test_servers::provision`); where neither can be had, each test prints one line saying
//! it skipped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod test_servers;

use intent_rs::fleet::{OnRedisFailure, Redis, RedisCache, RedisQuota};
use intent_rs::limits::RateLimiter;
use intent_rs::provider::OpenAiCompatible;
use intent_rs::result::{AIResult, CacheUse, IssueSource, LimiterUse};
use intent_rs::{IntentClient, IntentError, IntentOptions, intents};
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use test_servers::redis::RedisServer;

#[intents]
trait Counter {
    #[intent("Count the words")]
    async fn words(&self, text: &str) -> Result<u32, IntentError>;
}

/// A Chat Completions server answering `{"value": 3}` with the given usage, counting
/// what arrives.
async fn provider_server(prompt_tokens: u64, completion_tokens: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "fleet-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"value\": 3}"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
        })))
        .mount(&server)
        .await;
    server
}

// ---------------------------------------------------------------------------------------
// Worker processes: this test binary run again with the worker's settings in its
// environment.

const WORKER: &str = "INTENT_FLEET_WORKER";

/// One worker process's job, run by [`fleet_worker`].
fn spawn_worker(mode: &str, redis: &str, provider: &str, calls: u32) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "fleet_worker",
            "--include-ignored",
            "--nocapture",
        ])
        .env(WORKER, mode)
        .env("INTENT_FLEET_REDIS", redis)
        .env("INTENT_FLEET_PROVIDER", provider)
        .env("INTENT_FLEET_CALLS", calls.to_string())
        .stdout(Stdio::null())
        .spawn()
        .expect("a worker process")
}

fn wait_all(workers: Vec<Child>) {
    for mut worker in workers {
        let status = worker.wait().expect("the worker's status");
        assert!(status.success(), "a worker failed: {status}");
    }
}

/// Runs four `mode` workers of `calls` calls each against `provider` at once; returns
/// how many requests reached the provider, and how long the workers took.
async fn four_workers(
    redis: &RedisServer,
    provider: &MockServer,
    mode: &str,
    calls: u32,
) -> (usize, Duration) {
    let started = Instant::now();
    let workers = (0..4)
        .map(|_| spawn_worker(mode, &redis.url(), &provider.uri(), calls))
        .collect();
    tokio::task::spawn_blocking(move || wait_all(workers))
        .await
        .expect("workers joined");
    let elapsed = started.elapsed();
    let arrived = provider.received_requests().await.unwrap_or_default().len();
    (arrived, elapsed)
}

/// The body of a worker process; ignored in an ordinary run.
#[tokio::test]
#[ignore = "run by the fleet tests as a worker process"]
async fn fleet_worker() {
    let Ok(mode) = std::env::var(WORKER) else {
        return;
    };
    let var = |name: &str| std::env::var(name).expect(name);
    let calls: u32 = var("INTENT_FLEET_CALLS").parse().expect("a count");
    let redis = Redis::new(&var("INTENT_FLEET_REDIS")).expect("a Redis URL");
    let provider = OpenAiCompatible::new(var("INTENT_FLEET_PROVIDER"), "fleet-model");
    let builder = IntentClient::builder().provider(provider).max_attempts(1);
    let builder = match mode.as_str() {
        // Each process alone stays within 20 a minute (15 calls); four together would not.
        "requests" => builder
            .rate_limiter(
                RateLimiter::per_minute(20)
                    .with_shared_quota(RedisQuota::new(&redis, "requests-quota")),
            )
            .time_budget(Duration::from_secs(3)),
        "tokens" => builder
            .rate_limiter(
                RateLimiter::per_minute(10_000)
                    .with_tokens_per_minute(4_000)
                    .with_shared_quota(RedisQuota::new(&redis, "tokens-quota")),
            )
            .time_budget(Duration::from_secs(3)),
        "cache" => builder.cache(RedisCache::new(&redis)),
        other => panic!("unknown worker mode {other}"),
    };
    let counter = CounterClient::new(builder.build().expect("a client"));
    if mode == "tokens" {
        // One call at a time per process: a booking is settled before the next is made.
        for _ in 0..calls {
            let _ = counter.words("one two three").await;
        }
    } else {
        let calls = (0..calls).map(|_| counter.words("one two three"));
        futures_util::future::join_all(calls).await;
    }
}

// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn four_processes_share_one_request_quota() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let provider = provider_server(10, 2).await;
    let (arrived, elapsed) = four_workers(&redis, &provider, "requests", 15).await;
    // A quota of 20 a minute: a burst of 20, then one every 3 s. The workers' calls give up
    // after 3 s, so at most 20 + elapsed / 3 s arrive; each process alone (15 calls) would
    // have sent all of its own, 60 in all.
    let allowed = 20 + (elapsed.as_secs_f64() / 3.0).ceil() as usize;
    assert!(
        arrived <= allowed,
        "{arrived} requests arrived in {elapsed:?}; the shared quota allows {allowed}"
    );
    assert!(arrived >= 20, "the burst of 20 was not used: {arrived}");
}

#[tokio::test(flavor = "multi_thread")]
async fn four_processes_share_one_token_quota_settled_from_usage() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    // Each reply reports 500 tokens, far above the request's estimate: the bookings are
    // corrected from the usage, or the quota would let about 4,000 / 20 requests through.
    let provider = provider_server(400, 100).await;
    let (arrived, elapsed) = four_workers(&redis, &provider, "tokens", 6).await;
    let used = arrived as f64 * 500.0;
    // 4,000 tokens a minute: the burst, the refill over the run, and the documented
    // tolerance: each of the four processes may have one request in flight whose booking
    // is still the estimate.
    let allowed = 4_000.0 + elapsed.as_secs_f64() * 4_000.0 / 60.0 + 4.0 * 500.0;
    assert!(
        used <= allowed,
        "{arrived} requests ({used} tokens) in {elapsed:?}; the quota allows {allowed}"
    );
    assert!(arrived >= 8, "the quota was not used: {arrived}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_paid_by_one_process_is_served_to_the_others() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let provider = provider_server(10, 2).await;
    let first = spawn_worker("cache", &redis.url(), &provider.uri(), 1);
    tokio::task::spawn_blocking(move || wait_all(vec![first]))
        .await
        .expect("worker joined");
    let others = (0..3)
        .map(|_| spawn_worker("cache", &redis.url(), &provider.uri(), 1))
        .collect();
    tokio::task::spawn_blocking(move || wait_all(others))
        .await
        .expect("workers joined");
    let arrived = provider.received_requests().await.unwrap_or_default().len();
    assert_eq!(
        arrived, 1,
        "one model call for four processes' identical calls"
    );
}

fn fleet_intent_client(redis: &Redis, provider: &MockServer) -> IntentClient {
    IntentClient::builder()
        .provider(OpenAiCompatible::new(provider.uri(), "fleet-model"))
        .max_attempts(1)
        .rate_limiter(
            RateLimiter::per_minute(1_000).with_shared_quota(RedisQuota::new(redis, "outage")),
        )
        .cache(RedisCache::new(redis))
        .build()
        .expect("a client")
}

fn fleet_client(redis: &Redis, provider: &MockServer) -> CounterClient {
    CounterClient::new(fleet_intent_client(redis, provider))
}

async fn count(client: &IntentClient, text: &str) -> AIResult<u32> {
    client
        .transform(text, "Count the words", IntentOptions::<u32>::new())
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn with_redis_stopped_calls_fail_open_or_closed_as_configured_and_recover() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let provider = provider_server(10, 2).await;
    let timeout = Duration::from_millis(300);
    let open = Redis::new(&server.url()).unwrap().with_timeout(timeout);
    let closed = Redis::new(&server.url())
        .unwrap()
        .with_timeout(timeout)
        .with_on_failure(OnRedisFailure::FailClosed);
    let open_client = fleet_client(&open, &provider);
    let closed_client = fleet_client(&closed, &provider);
    assert_eq!(open_client.words("a b c").await.unwrap(), 3);
    assert_eq!(closed_client.words("d e f").await.unwrap(), 3);

    server.stop();
    // Fail open: the local limiter admits, the cache misses; no hang past the time limits.
    let started = Instant::now();
    assert_eq!(open_client.words("g h").await.unwrap(), 3);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // Fail closed: refused at once with a sentence that says what failed; nothing sent.
    let before = provider.received_requests().await.unwrap_or_default().len();
    let started = Instant::now();
    let refused = closed_client.words("i j").await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        refused
            .to_string()
            .contains("could not reach its quota's store"),
        "{refused}"
    );
    // Redis being down is not the user's configuration.
    assert!(!refused.to_string().contains("configuration"), "{refused}");
    assert_eq!(refused.issues()[0].source, IssueSource::Guardrail);
    assert_eq!(
        refused.kind(),
        intent_rs::FailureKind::SharedStateUnavailable
    );
    assert_eq!(
        provider.received_requests().await.unwrap_or_default().len(),
        before
    );
    // The result says that the call ran on this process's fallback, and why.
    let fallback = count(&fleet_intent_client(&open, &provider), "m n").await;
    assert_eq!(fallback.value, Some(3));
    assert!(fallback.used_local_fallback());
    let attempt = &fallback.attempts[0];
    assert!(
        matches!(&attempt.limiter, Some(LimiterUse::LocalFallback { reason }) if reason.contains("Redis")),
        "{:?}",
        attempt.limiter
    );
    assert!(
        matches!(attempt.cache, Some(CacheUse::Unavailable { .. })),
        "{:?}",
        attempt.cache
    );

    // Redis back on the same port: the connection is made again and the shared quota used.
    server.run();
    let mut recovered = false;
    for _ in 0..20 {
        if closed_client.words("k l").await.is_ok() {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        recovered,
        "the fail-closed limiter did not recover with Redis back"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cached_reply_is_served_only_to_the_request_it_answers() {
    use intent_rs::cache::{CacheKey, ResponseCache};
    use intent_rs::provider::{ProviderReply, ProviderRequest};

    let Some(server) = RedisServer::start() else {
        return;
    };
    let cache = RedisCache::new(&Redis::new(&server.url()).unwrap());
    let paid = CacheKey::of(&ProviderRequest::text("s", "the paid request"), "m");
    let other = CacheKey::of(&ProviderRequest::text("s", "another request"), "m");
    cache.put(paid, ProviderReply::text("answer")).await;
    assert_eq!(
        cache.get(&paid).await.map(|r| r.text).as_deref(),
        Some("answer")
    );
    // The paid entry copied under the other request's key (a collision, a stale writer):
    // it names the request it answers, so it is not handed to another one.
    let copied = server.command(&[
        "COPY",
        &format!("intent-rs:cache:{}", paid.to_hex()),
        &format!("intent-rs:cache:{}", other.to_hex()),
    ]);
    assert_eq!(copied, ":1");
    assert!(cache.get(&other).await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_connection_is_sent_again_not_counted_as_an_outage() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let provider = provider_server(10, 2).await;
    let timeout = Duration::from_millis(500);
    let open = Redis::new(&server.url()).unwrap().with_timeout(timeout);
    let closed = Redis::new(&server.url())
        .unwrap()
        .with_timeout(timeout)
        .with_on_failure(OnRedisFailure::FailClosed);
    let open_client = fleet_intent_client(&open, &provider);
    let closed_client = fleet_intent_client(&closed, &provider);
    for (round, text) in ["a", "b", "c"].into_iter().enumerate() {
        // Both clients connected, then every ordinary connection dropped by Redis.
        assert!(count(&open_client, text).await.is_success());
        assert!(count(&closed_client, text).await.is_success());
        let killed: u32 = server.command(&["CLIENT", "KILL", "TYPE", "normal"])[1..]
            .parse()
            .expect("a count of connections killed");
        assert!(killed >= 2, "round {round}: {killed} connections killed");
        for call in 0..5 {
            let text = format!("{text} {call}");
            let closed_result = count(&closed_client, &text).await;
            assert!(
                closed_result.is_success(),
                "round {round}, call {call}: {}",
                closed_result.failure_summary()
            );
            // Another text: a reply the other client cached would need no admission.
            let open_result = count(&open_client, &format!("{text} open")).await;
            assert!(
                !open_result.used_local_fallback(),
                "round {round}, call {call}: {:?}",
                open_result.attempts[0]
            );
            assert_eq!(open_result.attempts[0].limiter, Some(LimiterUse::Shared));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_redis_is_reported_with_the_time_limit_advice() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let provider = provider_server(10, 2).await;
    let redis = Redis::new(&server.url())
        .unwrap()
        .with_timeout(Duration::from_millis(300));
    let client = fleet_intent_client(&redis, &provider);
    assert_eq!(
        count(&client, "a b").await.attempts[0].limiter,
        Some(LimiterUse::Shared)
    );
    // Every client's commands held for 1.5 s: a Redis that is up and slow.
    assert_eq!(server.command(&["CLIENT", "PAUSE", "1500", "ALL"]), "+OK");
    let slow = count(&client, "c d").await;
    assert_eq!(slow.value, Some(3));
    let Some(LimiterUse::LocalFallback { reason }) = &slow.attempts[0].limiter else {
        panic!("{:?}", slow.attempts[0])
    };
    assert!(reason.contains("Redis::with_timeout"), "{reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shared_cached_reply_that_fails_verification_is_deleted() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let provider = provider_server(10, 2).await;
    let redis = Redis::new(&server.url()).unwrap();
    let client = fleet_intent_client(&redis, &provider);
    let options = || IntentOptions::<u32>::new();
    let words = |options| client.transform("a b c", "Count the words", options);
    assert_eq!(words(options()).await.value, Some(3));
    let cached = words(options()).await;
    assert_eq!(cached.attempts[0].cache, Some(CacheUse::Hit));
    // A check the cached reply fails (another version's rules, a stricter caller): the
    // call fails, and the entry is gone from Redis for every replica.
    let refused = words(options().require(|n| *n != 3, "not 3")).await;
    assert_eq!(refused.attempts[0].cache, Some(CacheUse::Hit));
    assert!(!refused.is_success());
    assert_eq!(server.command(&["KEYS", "intent-rs:cache:*"]), "*0");
    let asked = words(options()).await;
    assert_eq!(asked.attempts[0].cache, Some(CacheUse::Miss));
    assert_eq!(
        provider.received_requests().await.unwrap_or_default().len(),
        2
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_collections_decisions_are_shared_by_the_fleet_through_the_redis_cache() {
    use intent_rs::collection::Collection;
    use intent_rs::provider::{ProviderRequest, ScriptedProvider, ScriptedReply};

    let Some(server) = RedisServer::start() else {
        return;
    };
    // Two workers (two clients, each with its own connection and its own model) triage
    // the same tickets.
    let worker = || {
        let model = ScriptedProvider::from_fn(|_: &ProviderRequest, _| {
            ScriptedReply::logprobs([("yes", f64::ln(0.7)), ("no", f64::ln(0.3))])
        })
        .with_max_top_logprobs(Some(20));
        let client = IntentClient::builder()
            .provider(model.clone())
            .cache(RedisCache::new(&Redis::new(&server.url()).unwrap()))
            .build()
            .unwrap();
        (model, client)
    };
    let tickets: Vec<String> = (0..6).map(|n| format!("ticket {n}: sync stuck")).collect();
    let question = "Is the customer blocked from working?";

    let (first_model, first) = worker();
    let answered = Collection::new(&first)
        .filter(question, 0.5)
        .run(&tickets)
        .await
        .unwrap();
    assert_eq!(first_model.request_count(), 6);

    let (second_model, second) = worker();
    let served = Collection::new(&second)
        .filter(question, 0.5)
        .run(&tickets)
        .await
        .unwrap();
    assert_eq!(
        second_model.request_count(),
        0,
        "the first worker's answers"
    );
    assert_eq!(served.progress().cached, 6);
    for (answered, served) in answered.iter().zip(&served) {
        assert!(served.from_cache);
        assert_eq!(served.value(), answered.value());
    }
}
