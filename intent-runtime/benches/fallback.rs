//! What a fallback chain costs a call: the invoice `transform` through one provider that
//! replies at once, against the same through a chain whose first member answers (the
//! overhead every call pays), whose first member fails at once (the time to fall over,
//! in-process), and whose first member is cooling down (passed over without being asked).
//! Then over HTTP: one loopback Chat Completions server, against a chain whose first
//! member is a port where nothing listens (a refused connection, then the loopback).
//!
//! `cargo bench -p intent-rs --bench fallback`; quick check: `-- --test`.

mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use intent_rs::provider::fallback::breaker::CooldownPolicy;
use intent_rs::provider::fallback::{FallbackProvider, Member};
use intent_rs::provider::{
    OpenAi, Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest,
};
use intent_rs::{IntentClient, IntentOptions};
use support::loopback::{Loopback, chat_completion};
use support::{INVOICE_DOCUMENT, InstantProvider, Invoice, invoice_reply, totals_add_up};

/// A provider that is overloaded at once, on every request.
#[derive(Debug)]
struct Down;

#[async_trait::async_trait]
impl Provider for Down {
    fn name(&self) -> &str {
        "down"
    }

    fn default_model(&self) -> &str {
        "down-model"
    }

    async fn complete(&self, _request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        Err(ProviderError::new(
            ProviderErrorKind::Overloaded,
            "down",
            "overloaded",
        ))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A breaker that never opens: every call meets the failure and falls over.
const NEVER_COOLS: CooldownPolicy = CooldownPolicy {
    failures: u32::MAX,
    cooldown: Duration::from_secs(60),
    probe_timeout: Duration::from_secs(60),
};

/// A breaker that opens on the first failure and stays open for the run.
const COOLS_AT_ONCE: CooldownPolicy = CooldownPolicy {
    failures: 1,
    cooldown: Duration::from_secs(3600),
    probe_timeout: Duration::from_secs(60),
};

fn bench_calls(c: &mut Criterion, rt: &tokio::runtime::Runtime, name: &str, client: IntentClient) {
    c.bench_function(name, |b| {
        b.iter(|| {
            let result = rt.block_on(client.transform(
                INVOICE_DOCUMENT,
                "Extract the invoice",
                IntentOptions::<Invoice>::new().validate(totals_add_up),
            ));
            assert!(result.is_success(), "{:?}", result.issues);
            black_box(result)
        })
    });
}

fn client(provider: impl Provider + 'static) -> IntentClient {
    IntentClient::builder()
        .provider(provider)
        .build()
        .expect("client")
}

fn in_process(c: &mut Criterion) {
    let rt = runtime();
    bench_calls(
        c,
        &rt,
        "fallback/single_provider",
        client(InstantProvider::new(invoice_reply())),
    );
    let chain = FallbackProvider::new(InstantProvider::new(invoice_reply()))
        .then(InstantProvider::new(invoice_reply()));
    bench_calls(c, &rt, "fallback/chain_first_answers", client(chain));
    let chain = FallbackProvider::new(Down)
        .then(InstantProvider::new(invoice_reply()))
        .cooldown(NEVER_COOLS);
    bench_calls(c, &rt, "fallback/chain_falls_over", client(chain));
    let chain = FallbackProvider::new(Down)
        .then(InstantProvider::new(invoice_reply()))
        .cooldown(COOLS_AT_ONCE);
    bench_calls(c, &rt, "fallback/chain_first_cooling", client(chain));
}

fn over_http(c: &mut Criterion) {
    let rt = runtime();
    let server = Loopback::start(chat_completion(&invoice_reply()), None);
    let openai = || OpenAi::new("sk-bench").with_base_url(server.base_url());
    bench_calls(c, &rt, "fallback/http_single_provider", client(openai()));
    // A port that was free a moment ago: connections to it are refused.
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let absent = OpenAi::new("sk-bench").with_base_url(format!("http://{refused}/v1"));
    let chain = FallbackProvider::new(Member::new(absent).named("absent"))
        .then(openai())
        .cooldown(NEVER_COOLS);
    bench_calls(c, &rt, "fallback/http_chain_falls_over", client(chain));
}

criterion_group!(benches, in_process, over_http);
criterion_main!(benches);
