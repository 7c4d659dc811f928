//! What sharing through Redis costs a call: the rate limiter's admission and settlement
//! and the response cache's read and write, in this process and through a `redis-server`
//! on loopback (started by the bench on a free port, stopped at the end), in µs per call;
//! and a whole `transform` through a scripted model with each.
//!
//! `cargo bench -p intent-rs --features redis --bench fleet` (5,000 operations per row);
//! `-- --test` runs 50 per row once, for CI. Needs `redis-server` on the PATH.

use std::hint::black_box;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use intent_rs::cache::{CacheKey, InMemoryCache, ResponseCache};
use intent_rs::fleet::{Redis, RedisCache};
use intent_rs::limits::RateLimiter;
use intent_rs::provider::{ProviderReply, ProviderRequest, ScriptedProvider};
use intent_rs::{IntentClient, IntentOptions};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_redis() -> (Server, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port");
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server on the PATH (apt-get install redis-server)");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "redis-server did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (Server(child), format!("redis://127.0.0.1:{port}/"))
}

/// Mean µs per operation over `n` runs of `operation`.
async fn per_call<F, Fut>(n: u32, mut operation: F) -> f64
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    for i in 0..n {
        operation(i).await;
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(n)
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--test" || arg == "--quick");
    let n: u32 = if quick { 50 } else { 5_000 };
    let (_server, url) = start_redis();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let redis = Redis::new(&url).expect("a Redis URL");
        // A quota no row reaches: every admission is immediate, so the rows measure cost.
        let quota = || RateLimiter::per_minute(1_000_000_000).with_tokens_per_minute(u32::MAX);
        let local = quota();
        let shared = quota().shared(&redis, "bench");
        shared.acquire(1).await.expect("Redis answers");

        println!("fleet bench: {n} operations per row, Redis on loopback");
        println!("| operation | in this process (µs) | through Redis (µs) |");
        println!("| --- | --- | --- |");
        let admit_local = per_call(n, |_| async {
            black_box(local.acquire(100).await.ok());
            local.settle(100, 120).await;
        })
        .await;
        let admit_shared = per_call(n, |_| async {
            black_box(shared.acquire(100).await.ok());
            shared.settle(100, 120).await;
        })
        .await;
        println!("| limiter: admit and settle | {admit_local:.2} | {admit_shared:.1} |");

        let memory = InMemoryCache::new(10_000);
        let redis_cache = RedisCache::new(&redis);
        let reply = ProviderReply::text(r#"{"value": {"number": "9", "total_cents": 250}}"#);
        let key = |i: u32| CacheKey::of(&ProviderRequest::text("s", format!("u{i}")), "m");
        let memory_put = per_call(n, |i| memory.put(key(i), reply.clone())).await;
        let redis_put = per_call(n, |i| redis_cache.put(key(i), reply.clone())).await;
        println!("| cache: store a reply | {memory_put:.2} | {redis_put:.1} |");
        let (memory, redis_cache) = (&memory, &redis_cache);
        let memory_get = per_call(n, |i| async move {
            black_box(memory.get(&key(i)).await);
        })
        .await;
        let redis_get = per_call(n, |i| async move {
            assert!(redis_cache.get(&key(i)).await.is_some());
        })
        .await;
        println!("| cache: serve a reply | {memory_get:.2} | {redis_get:.1} |");

        // A whole call on a scripted model, through each limiter and cache.
        let call = |limiter: RateLimiter, cache: bool| {
            let builder = IntentClient::builder()
                .provider(ScriptedProvider::from_fn(|_, _| {
                    intent_rs::provider::ScriptedReply::text(r#"{"value": 3}"#)
                }))
                .rate_limiter(limiter);
            let builder = match (cache, &redis) {
                (true, redis) => builder.cache(RedisCache::new(redis)),
                (false, _) => builder.cache(InMemoryCache::new(10_000)),
            };
            builder.build().expect("a client")
        };
        let local_client = call(quota(), false);
        let shared_client = call(quota().shared(&redis, "bench-calls"), true);
        let local_call = per_call(n, |i| {
            let client = &local_client;
            async move {
                let options = IntentOptions::<u32>::new();
                black_box(client.transform(&format!("t{i}"), "Count", options).await);
            }
        })
        .await;
        let shared_call = per_call(n, |i| {
            let client = &shared_client;
            async move {
                let options = IntentOptions::<u32>::new();
                black_box(client.transform(&format!("t{i}"), "Count", options).await);
            }
        })
        .await;
        println!("| a `transform` call (cache miss), limiter and cache | {local_call:.1} | {shared_call:.1} |");
    });
}
