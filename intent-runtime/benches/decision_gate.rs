//! The decision gate's saving: generative judge calls and tokens with and without a cheap
//! log-probability decision in front of the judge, on a scripted scenario where most
//! attempts are rejected (the writer's first three drafts of each task miss a
//! requirement; the fourth is right).
//!
//! A third run puts a decision model in front of the judge instead: a `SystemOneClient`
//! asking a loopback System One server, which answers a `noul` and counts its requests.
//!
//! `cargo bench -p intent-rs --bench decision_gate` (`-- --test` runs a small
//! scenario once). Token counts are the scripted provider's estimate, one token per four
//! characters of prompt, schema and reply (of the request body, for the System One
//! server, with one output token per answer): the same estimate on every side.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use intent_rs::decision::{DecisionEvaluator, LogprobDecisionClient, SystemOneClient};
use intent_rs::provider::{
    Provider, ProviderError, ProviderReply, ProviderRequest, ScriptedProvider, ScriptedReply,
};
use intent_rs::{IntentClient, IntentOptions, Usage};
use support::loopback::Loopback;

/// A provider that adds up what its calls cost.
#[derive(Debug)]
struct Metered {
    inner: ScriptedProvider,
    calls: Mutex<(u64, Usage)>,
}

impl Metered {
    fn new(inner: ScriptedProvider) -> Arc<Self> {
        Arc::new(Self {
            inner,
            calls: Mutex::new((0, Usage::default())),
        })
    }

    fn totals(&self) -> (u64, Usage) {
        *self.calls.lock().unwrap()
    }
}

#[async_trait::async_trait]
impl Provider for Metered {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn default_model(&self) -> &str {
        self.inner.default_model()
    }
    fn max_top_logprobs(&self) -> Option<u8> {
        self.inner.max_top_logprobs()
    }
    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        let reply = self.inner.complete(request).await?;
        let mut calls = self.calls.lock().unwrap();
        calls.0 += 1;
        calls.1 += reply.usage;
        Ok(reply)
    }
}

const DRAFTS_PER_TASK: usize = 4;

fn article(task: usize) -> String {
    format!(
        "Report {task}. {}",
        "The council met on Monday and agreed to halve single bus fares from March, funded by the parking levy; ".repeat(12)
    )
}

/// The writer: drafts 1 to 3 of every task lack the date, draft 4 has it. Every task
/// takes exactly four drafts, with or without the gate, so the request index says which.
fn writer() -> ScriptedProvider {
    ScriptedProvider::from_fn(|_, index| {
        let draft = index % DRAFTS_PER_TASK + 1;
        if draft == DRAFTS_PER_TASK {
            ScriptedReply::text(
                "From March, single bus fares halve to 1.50, the council decided on Monday.",
            )
        } else {
            ScriptedReply::text(format!("DRAFT {draft}: bus fares will fall."))
        }
    })
}

/// The generative judge: rejects drafts, passes the final summary.
fn judge() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| {
        if request.user().contains("DRAFT") {
            ScriptedReply::text(
                r#"{"passes": false, "problems": ["The summary leaves out when the change starts; name the month."]}"#,
            )
        } else {
            ScriptedReply::text(r#"{"passes": true, "problems": []}"#)
        }
    })
}

/// The cheap decision model: a one-token yes/no with log-probabilities.
fn gate_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| {
        if request.user().contains("DRAFT") {
            ScriptedReply::logprobs([("no", -0.03), ("yes", -3.6)])
        } else {
            ScriptedReply::logprobs([("yes", -0.02), ("no", -4.1)])
        }
    })
    .with_max_top_logprobs(Some(20))
}

struct Run {
    judge_calls: u64,
    judge_tokens: Usage,
    gate_calls: u64,
    gate_tokens: Usage,
    writer_tokens: Usage,
    succeeded: usize,
}

/// Which gate stands in front of the judge.
#[derive(Clone, Copy, PartialEq)]
enum Gate {
    None,
    /// A chat model's one-token answer with log-probabilities.
    Logprobs,
    /// A decision model over the System One API.
    SystemOne,
}

/// A loopback System One server: a low probability of yes for a draft, a high one for the
/// final summary; counts requests and estimated tokens.
struct DecisionModel {
    server: Loopback,
    calls: Arc<AtomicU64>,
    input_tokens: Arc<AtomicU64>,
}

impl DecisionModel {
    fn start() -> Self {
        let calls = Arc::new(AtomicU64::new(0));
        let input_tokens = Arc::new(AtomicU64::new(0));
        let (counted_calls, counted_tokens) = (Arc::clone(&calls), Arc::clone(&input_tokens));
        let server = Loopback::start_routed(move |_, _, body| {
            counted_calls.fetch_add(1, Ordering::SeqCst);
            let tokens = body.len().div_ceil(4) as u64;
            counted_tokens.fetch_add(tokens, Ordering::SeqCst);
            let draft = String::from_utf8_lossy(body).contains("DRAFT");
            serde_json::json!({
                "model": "jev-1.14.0",
                "answers": {"satisfies_intent": {"type": "noul", "noul": if draft { 0.03 } else { 0.98 }}},
                "usage": {"input_tokens": tokens, "output_tokens": 1}
            })
            .to_string()
        });
        Self {
            server,
            calls,
            input_tokens,
        }
    }

    fn totals(&self) -> (u64, Usage) {
        let calls = self.calls.load(Ordering::SeqCst);
        let usage = Usage {
            input_tokens: self.input_tokens.load(Ordering::SeqCst),
            output_tokens: calls,
            ..Usage::default()
        };
        (calls, usage)
    }
}

async fn run(tasks: usize, gated: Gate) -> Run {
    let writer = Metered::new(writer());
    let judge = Metered::new(judge());
    let gate = Metered::new(gate_model());
    let decision_model = (gated == Gate::SystemOne).then(DecisionModel::start);
    let mut builder = IntentClient::builder()
        .shared_provider(writer.clone())
        .max_attempts(DRAFTS_PER_TASK as u32);
    builder = builder.judge(intent_rs::judge::ModelJudge::new(judge.clone()));
    match &decision_model {
        Some(model) => {
            let client = SystemOneClient::compatible(format!("http://{}", model.server.addr));
            builder = builder.decision_gate(DecisionEvaluator::new(client));
        }
        None if gated == Gate::Logprobs => {
            builder = builder.decision_gate(DecisionEvaluator::new(LogprobDecisionClient::shared(
                gate.clone(),
            )));
        }
        None => {}
    }
    let client = builder.build().expect("client");
    let mut succeeded = 0;
    for task in 0..tasks {
        let result = client
            .transform(
                &article(task),
                "Summarize the report in one sentence that says when the change starts",
                IntentOptions::<String>::new().require_judge(),
            )
            .await;
        succeeded += usize::from(result.is_success());
    }
    let (judge_calls, judge_tokens) = judge.totals();
    let (gate_calls, gate_tokens) = match &decision_model {
        Some(model) => model.totals(),
        None => gate.totals(),
    };
    Run {
        judge_calls,
        judge_tokens,
        gate_calls,
        gate_tokens,
        writer_tokens: writer.totals().1,
        succeeded,
    }
}

fn total(usage: Usage) -> u64 {
    usage.input_tokens + usage.output_tokens
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--test");
    let tasks = if quick { 5 } else { 200 };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let without = runtime.block_on(run(tasks, Gate::None));
    let with = runtime.block_on(run(tasks, Gate::Logprobs));
    let system_one = runtime.block_on(run(tasks, Gate::SystemOne));
    assert_eq!(without.succeeded, tasks);
    assert_eq!(with.succeeded, tasks);
    assert_eq!(system_one.succeeded, tasks);
    // The same drafts on both sides; the retry prompts differ only in the feedback they
    // carry (the gate's sentence or the judge's problem).
    assert_eq!(
        without.writer_tokens.output_tokens,
        with.writer_tokens.output_tokens
    );

    println!("decision gate, {tasks} tasks, {DRAFTS_PER_TASK} drafts each (3 of 4 rejected):");
    println!(
        "| | generative judge calls | judge tokens (in / out) | gate calls | gate tokens (in / out) | judge + gate tokens | writer input tokens |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (name, run) in [
        ("without gate", &without),
        ("with gate", &with),
        ("with System One gate", &system_one),
    ] {
        println!(
            "| {name} | {} | {} / {} | {} | {} / {} | {} | {} |",
            run.judge_calls,
            run.judge_tokens.input_tokens,
            run.judge_tokens.output_tokens,
            run.gate_calls,
            run.gate_tokens.input_tokens,
            run.gate_tokens.output_tokens,
            total(run.judge_tokens) + total(run.gate_tokens),
            run.writer_tokens.input_tokens,
        );
    }
    let saved_calls = 100.0 * (1.0 - with.judge_calls as f64 / without.judge_calls as f64);
    let saved_judge_output = 100.0
        * (1.0
            - with.judge_tokens.output_tokens as f64 / without.judge_tokens.output_tokens as f64);
    println!(
        "generative judge calls: -{saved_calls:.0}%; judge output tokens: -{saved_judge_output:.0}%"
    );
    assert_eq!(without.judge_calls, (tasks * DRAFTS_PER_TASK) as u64);
    assert_eq!(with.judge_calls, tasks as u64);
    assert_eq!(system_one.judge_calls, tasks as u64);
    assert_eq!(system_one.gate_calls, (tasks * DRAFTS_PER_TASK) as u64);
}
