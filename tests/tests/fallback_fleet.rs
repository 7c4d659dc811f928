//! Fallback cooldowns shared by a fleet through a real `redis-server` (started here on a
//! loopback port): four processes, each with its own chain over the same two loopback
//! providers, the first of them down. Once the fleet together has seen it fail as often
//! as the policy allows, no process asks it again; a half-open probe goes out once for
//! the whole fleet.
//!
//! The server is `redis-server` from the PATH, or one the tests install themselves (see
//! `test_servers::provision`); where neither can be had, each test prints one line saying
//! it skipped.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod test_servers;

use intent_rs::fleet::{Redis, RedisCooldowns};
use intent_rs::provider::OpenAiCompatible;
use intent_rs::provider::fallback::breaker::CooldownPolicy;
use intent_rs::provider::fallback::{FallbackProvider, Member};
use intent_rs::route::SkipReason;
use intent_rs::{AIResult, IntentClient, intents};
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use test_servers::redis::RedisServer;

#[intents]
trait Counter {
    #[intent("Count the words")]
    async fn words(&self, text: &str) -> AIResult<u32>;
}

/// The provider that is down: every request a 503.
async fn down_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(503)
                .set_body_json(json!({"error": {"message": "overloaded", "type": "server_error"}})),
        )
        .mount(&server)
        .await;
    server
}

/// The backup: answers `{"value": 3}`.
async fn up_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "backup-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"value\": 3}"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
        })))
        .mount(&server)
        .await;
    server
}

const WORKER: &str = "INTENT_COOLDOWN_WORKER";

/// One worker process: this test binary run again with the worker's settings.
fn spawn_worker(redis: &str, down: &str, up: &str, calls: u32, cooldown_ms: u64) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "cooldown_worker",
            "--include-ignored",
            "--nocapture",
        ])
        .env(WORKER, "1")
        .env("INTENT_COOLDOWN_REDIS", redis)
        .env("INTENT_COOLDOWN_DOWN", down)
        .env("INTENT_COOLDOWN_UP", up)
        .env("INTENT_COOLDOWN_CALLS", calls.to_string())
        .env("INTENT_COOLDOWN_MS", cooldown_ms.to_string())
        .stdout(Stdio::null())
        .spawn()
        .expect("a worker process")
}

async fn wait_all(workers: Vec<Child>) {
    tokio::task::spawn_blocking(move || {
        for mut worker in workers {
            let status = worker.wait().expect("the worker's status");
            assert!(status.success(), "a worker failed: {status}");
        }
    })
    .await
    .expect("workers joined");
}

/// The body of a worker process; ignored in an ordinary run. Every call must be
/// answered (by either member); the worker fails otherwise.
#[tokio::test]
#[ignore = "run by the cooldown tests as a worker process"]
async fn cooldown_worker() {
    if std::env::var(WORKER).is_err() {
        return;
    }
    let var = |name: &str| std::env::var(name).expect(name);
    let calls: u32 = var("INTENT_COOLDOWN_CALLS").parse().expect("a count");
    let cooldown = Duration::from_millis(var("INTENT_COOLDOWN_MS").parse().expect("ms"));
    let redis = Redis::new(&var("INTENT_COOLDOWN_REDIS")).expect("a Redis URL");
    let chain = FallbackProvider::new(
        Member::new(OpenAiCompatible::new(
            var("INTENT_COOLDOWN_DOWN"),
            "down-model",
        ))
        .named("down"),
    )
    .then(
        Member::new(OpenAiCompatible::new(
            var("INTENT_COOLDOWN_UP"),
            "backup-model",
        ))
        .named("up"),
    )
    .cooldown(CooldownPolicy {
        failures: 2,
        cooldown,
        probe_timeout: Duration::from_secs(10),
    })
    .cooldowns(RedisCooldowns::new(&redis));
    let client = IntentClient::builder()
        .provider(chain)
        .max_attempts(1)
        .build()
        .expect("a client");
    let counter = CounterClient::new(client);
    for _ in 0..calls {
        let result = counter.words("one two three").await;
        assert_eq!(result.value, Some(3), "{:?}", result.issues);
        let route = result.attempts[0].route.clone().expect("a route");
        assert_eq!(route.provider, "up");
        assert!(matches!(
            route.skipped[0].reason,
            SkipReason::Overloaded | SkipReason::CoolingDown
        ));
    }
}

async fn received(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}

#[tokio::test(flavor = "multi_thread")]
async fn four_processes_share_one_cooldown() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let (down, up) = (down_server().await, up_server().await);
    // One process meets the outage first: two failures open the breaker for everyone.
    let first = spawn_worker(&redis.url(), &down.uri(), &up.uri(), 3, 60_000);
    wait_all(vec![first]).await;
    assert_eq!(received(&down).await, 2);
    // Three more processes, at once: none of them asks the provider that is down.
    let others = (0..3)
        .map(|_| spawn_worker(&redis.url(), &down.uri(), &up.uri(), 5, 60_000))
        .collect();
    wait_all(others).await;
    assert_eq!(
        received(&down).await,
        2,
        "the cooldown is shared: no other process asked"
    );
    assert_eq!(received(&up).await, 3 + 3 * 5, "every call answered");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_the_cooldown_one_probe_goes_out_for_the_whole_fleet() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let (down, up) = (down_server().await, up_server().await);
    let first = spawn_worker(&redis.url(), &down.uri(), &up.uri(), 2, 1_500);
    wait_all(vec![first]).await;
    assert_eq!(received(&down).await, 2);
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    // Half-open: of the four processes' calls, one probes; it fails, and the breaker
    // opens again for all.
    let workers = (0..4)
        .map(|_| spawn_worker(&redis.url(), &down.uri(), &up.uri(), 3, 60_000))
        .collect();
    wait_all(workers).await;
    assert_eq!(received(&down).await, 3, "one probe for the fleet");
    assert_eq!(received(&up).await, 2 + 4 * 3);
}
