//! What sharing through Redis costs a call: the rate limiter's admission and settlement
//! and the response cache's read and write, in this process and through a `redis-server`
//! on loopback (started by the bench on a free port, stopped at the end), in µs per call;
//! and a whole `transform` through a scripted model with each.
//!
//! Then calls per second of four processes sharing one quota, against the quota itself:
//! this binary run four times more as workers (as `tests/tests/fleet_redis.rs` runs its
//! test binary), each making calls through a scripted model as fast as its limiter lets
//! it, from eight tasks, with a request quota shared through the Redis server, and then
//! with the same quota in each process alone. Calls are counted after the first
//! `FLEET_WARMUP` seconds (the quota's burst is spent by then) for `FLEET_WINDOW` seconds.
//!
//! `cargo bench -p intent-rs --features redis --bench fleet` (5,000 operations per row;
//! quotas of 1,200 and 60,000 a minute, 3 s of warm-up, a 20 s window); `-- --test` runs
//! 50 per row once, and the four processes at 1,200 a minute for 1 s after 1 s, for CI.
//! Needs `redis-server` on the PATH, or the one the integration tests install under the
//! target folder (`target/test-servers/bin/redis-server`; `cargo test -p intent-tests
//! --test fleet_redis` installs it where the PATH has none).

use std::hint::black_box;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use intent_rs::cache::{CacheKey, InMemoryCache, ResponseCache};
use intent_rs::fleet::{Redis, RedisCache, RedisQuota};
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

/// `redis-server` from the PATH when it runs there, else the integration tests' own.
fn redis_executable() -> PathBuf {
    let on_path = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent();
    match target.map(|target| target.join("test-servers/bin/redis-server")) {
        Some(installed) if !on_path && installed.is_file() => installed,
        _ => PathBuf::from("redis-server"),
    }
}

fn start_redis() -> (Server, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port");
    let child = Command::new(redis_executable())
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect(
            "redis-server on the PATH, or installed by the integration tests \
             (cargo test -p intent-tests --test fleet_redis)",
        );
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
    if let Ok(mode) = std::env::var(WORKER) {
        worker(&mode);
        return;
    }
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
        let shared = quota().with_shared_quota(RedisQuota::new(&redis, "bench"));
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
        let shared_client = call(quota().with_shared_quota(RedisQuota::new(&redis, "bench-calls")), true);
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
    four_processes(&url, quick);
}

/// The variable that makes this binary a worker process: `shared` or `local`.
const WORKER: &str = "FLEET_BENCH_WORKER";

/// The request quotas of the four-process rows, per minute: 20 and 1,000 a second.
const QUOTAS_PER_MINUTE: [u32; 2] = [1_200, 60_000];

/// Four workers sharing one quota through Redis, then four with the quota each, and
/// their calls per second against the quota.
fn four_processes(url: &str, quick: bool) {
    let seconds = |name: &str, default: f64| {
        std::env::var(name)
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    let warmup = seconds("FLEET_WARMUP", if quick { 1.0 } else { 3.0 });
    let window = seconds("FLEET_WINDOW", if quick { 1.0 } else { 20.0 });
    println!();
    println!("four processes, eight tasks each, calls counted for {window} s after {warmup} s");
    println!("| quota | limiter | calls/s, four processes together | against the quota |");
    println!("| --- | --- | --- | --- |");
    let quotas = if quick {
        &QUOTAS_PER_MINUTE[..1]
    } else {
        &QUOTAS_PER_MINUTE[..]
    };
    for &per_minute in quotas {
        for mode in ["shared", "local"] {
            four_workers(url, per_minute, mode, warmup, window);
        }
    }
}

/// One row: four `mode` workers under a quota of `per_minute`.
fn four_workers(url: &str, per_minute: u32, mode: &str, warmup: f64, window: f64) {
    let quota = f64::from(per_minute) / 60.0;
    let exe = std::env::current_exe().expect("this binary");
    let start_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
        + 500;
    let workers: Vec<Child> = (0..4)
        .map(|_| {
            Command::new(&exe)
                .env(WORKER, mode)
                .env("FLEET_REDIS", url)
                .env("FLEET_NAME", format!("four-{start_ms}"))
                .env("FLEET_START_MS", start_ms.to_string())
                .env("FLEET_WARMUP", warmup.to_string())
                .env("FLEET_WINDOW", window.to_string())
                .env("FLEET_QUOTA", per_minute.to_string())
                .stdout(Stdio::piped())
                .spawn()
                .expect("a worker process")
        })
        .collect();
    let mut calls = 0u64;
    for worker in workers {
        let output = worker.wait_with_output().expect("the worker's output");
        assert!(output.status.success(), "a worker failed");
        let counted: u64 = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("the worker's count");
        calls += counted;
    }
    let rate = calls as f64 / window;
    let label = match mode {
        "shared" => "shared through Redis",
        _ => "each process its own",
    };
    println!(
        "| {per_minute}/min ({quota:.0}/s) | {label} | {rate:.1} | {:.3}x |",
        rate / quota
    );
}

/// A worker: calls as fast as its limiter allows from eight tasks, from the start time
/// to the end of the window; prints how many calls ended within the window.
fn worker(mode: &str) {
    let var = |name: &str| std::env::var(name).expect(name);
    let number = |name: &str| -> f64 { var(name).parse().expect(name) };
    let start = UNIX_EPOCH + Duration::from_millis(number("FLEET_START_MS") as u64);
    let from = start + Duration::from_secs_f64(number("FLEET_WARMUP"));
    let to = from + Duration::from_secs_f64(number("FLEET_WINDOW"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let counted = runtime.block_on(async {
        let limiter = RateLimiter::per_minute(number("FLEET_QUOTA") as u32);
        let limiter = match mode {
            "shared" => {
                let redis = Redis::new(&var("FLEET_REDIS")).expect("a Redis URL");
                limiter.with_shared_quota(RedisQuota::new(&redis, &var("FLEET_NAME")))
            }
            _ => limiter,
        };
        let client = IntentClient::builder()
            .provider(ScriptedProvider::from_fn(|_, _| {
                intent_rs::provider::ScriptedReply::text(r#"{"value": 3}"#)
            }))
            .rate_limiter(limiter)
            .time_budget(Duration::from_secs(600))
            .build()
            .expect("a client");
        if let Ok(wait) = start.duration_since(SystemTime::now()) {
            tokio::time::sleep(wait).await;
        }
        let tasks = (0..8).map(|task| {
            let client = client.clone();
            async move {
                let mut counted = 0u64;
                let mut i = 0u32;
                while SystemTime::now() < to {
                    i += 1;
                    let options = IntentOptions::<u32>::new();
                    let text = format!("t{task}-{i}");
                    let call = client.transform(&text, "Count", options);
                    let left = to.duration_since(SystemTime::now()).unwrap_or_default();
                    // A call still waiting for the limiter at the end is not counted.
                    if tokio::time::timeout(left, call).await.is_err() {
                        break;
                    }
                    let now = SystemTime::now();
                    if now >= from && now < to {
                        counted += 1;
                    }
                }
                counted
            }
        });
        futures_util::future::join_all(tasks)
            .await
            .into_iter()
            .sum::<u64>()
    });
    println!("{counted}");
}
