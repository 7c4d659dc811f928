//! The decision gate's saving: generative judge calls and tokens with and without a cheap
//! log-probability decision in front of the judge, on a scripted scenario where most
//! attempts are rejected (the writer's first three drafts of each task miss a
//! requirement; the fourth is right).
//!
//! `cargo bench -p intent-rs --bench decision_gate` (`-- --test` runs a small
//! scenario once). Token counts are the scripted provider's estimate, one token per four
//! characters of prompt, schema and reply: the same estimate on both sides.

use std::sync::{Arc, Mutex};

use intent_rs::decision::{DecisionEvaluator, LogprobDecisionClient};
use intent_rs::provider::{
    Provider, ProviderError, ProviderReply, ProviderRequest, ScriptedProvider, ScriptedReply,
};
use intent_rs::{IntentClient, IntentOptions, Usage};

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

async fn run(tasks: usize, gated: bool) -> Run {
    let writer = Metered::new(writer());
    let judge = Metered::new(judge());
    let gate = Metered::new(gate_model());
    let mut builder = IntentClient::builder()
        .shared_provider(writer.clone())
        .max_attempts(DRAFTS_PER_TASK as u32);
    builder = builder.judge(intent_rs::judge::ModelJudge::new(judge.clone()));
    if gated {
        builder = builder.decision_gate(DecisionEvaluator::new(LogprobDecisionClient::shared(
            gate.clone(),
        )));
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
    let (gate_calls, gate_tokens) = gate.totals();
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
        .enable_time()
        .build()
        .expect("runtime");
    let without = runtime.block_on(run(tasks, false));
    let with = runtime.block_on(run(tasks, true));
    assert_eq!(without.succeeded, tasks);
    assert_eq!(with.succeeded, tasks);
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
    for (name, run) in [("without gate", &without), ("with gate", &with)] {
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
}
