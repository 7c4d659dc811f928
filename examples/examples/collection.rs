//! Intents over collections: triage of 300 support tickets read from
//! `examples/data/tickets.jsonl`. Each ticket is asked two questions at once (`decide`:
//! which team, and is it urgent), the urgent ones are ranked (`rank`) and get a first
//! reply drafted by an intent method (`map`); the labels are written to a JSON Lines file.
//!
//! `cargo run --example collection` (offline: a scripted model answers by keywords, with
//! log-probabilities). With `OPENAI_API_KEY` (or another provider `provider::from_env`
//! reads) a real model answers: two small requests per ticket (a log-probability client
//! reads one answer token per request), and one reply per urgent ticket. With a decision
//! model configured (`TYPESAFE_API_KEY` or `TYPESAFE_BASE_URL`, read by
//! `SystemOneClient::from_env`), it answers both questions about a ticket in one request.
//! The answers are journaled: run it again and nothing is asked twice.

use std::io::Write;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use intent_examples::{choose_provider, scripted_ticket_decision};
use intent_rs::collection::{Collection, Progress, Questions};
use intent_rs::decision::{SystemOneClient, SystemOneConfigError};
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, DecisionEnum, IntentClient, intents};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A support ticket as the file holds it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Ticket {
    id: String,
    customer: String,
    subject: String,
    body: String,
}

/// Where a ticket goes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, DecisionEnum)]
enum Team {
    /// Payments, invoices, refunds and plan changes of paying customers.
    Billing,
    /// Something does not work.
    Support,
    /// Questions before buying: prices, trials, editions.
    Sales,
}

const URGENT: &str =
    "Is this ticket urgent: is a customer blocked or is there a deadline today or tomorrow?";

#[intents]
trait Desk {
    #[intent("Write the first reply to the ticket: one sentence, friendly, no promises of dates")]
    async fn first_reply(&self, ticket: &Ticket) -> AIResult<String>;
}

/// The offline model: decision questions answered by keywords of the ticket, with
/// log-probabilities; a short first reply otherwise.
fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| {
        if request.top_logprobs.is_some() {
            return scripted_ticket_decision(request.user());
        }
        ScriptedReply::text(
            r#"Thank you for telling us; a specialist is looking into it now and will write again as soon as we know more."#,
        )
    })
    .with_max_top_logprobs(Some(20))
}

fn read_tickets() -> Result<Vec<Ticket>, Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/tickets.jsonl");
    let text = std::fs::read_to_string(path)?;
    let mut tickets = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let ticket = serde_json::from_str(line)
            .map_err(|error| format!("{path}, line {}: {error}", number + 1))?;
        tickets.push(ticket);
    }
    Ok(tickets)
}

/// A terminal progress bar fed by the collection's progress reports (hidden when the
/// output is not a terminal, as in CI).
fn progress_bar(label: &'static str) -> (ProgressBar, impl Fn(&Progress) + Send + Sync + 'static) {
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{prefix:>9} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(label);
    let shown = bar.clone();
    let report = move |progress: &Progress| {
        if let Some(total) = progress.total {
            shown.set_length(total as u64);
        }
        shown.set_position(progress.done as u64);
        shown.set_message(format!(
            "{} failed, {} from the journal, {} in flight, ${:.4}{}",
            progress.failed,
            progress.cached,
            progress.in_flight,
            progress.cost.priced.as_usd_f64(),
            progress
                .remaining
                .map(|left| format!(", {:.0}s left", left.as_secs_f64()))
                .unwrap_or_default()
        ));
    };
    (bar, report)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_model());
    let builder = IntentClient::builder().shared_provider(chosen.provider);
    // A decision model over its own API when one is configured, else the chat model.
    let client = match SystemOneClient::from_env() {
        Ok(decisions) => builder.decision_client(decisions),
        Err(SystemOneConfigError::NotConfigured) => builder,
        Err(other) => return Err(other.into()),
    }
    .build()?;
    let tickets = read_tickets()?;
    let work = std::env::temp_dir().join("intent-rs-collection-example");
    let labels_path: PathBuf = work.join("labels.jsonl");

    let collection = Collection::new(&client)
        .concurrency(16)
        .journal(work.join("journal.jsonl"));

    let (bar, report) = progress_bar("triage");
    let triage = collection
        .clone()
        .on_progress(report)
        .decide(
            Questions::new()
                .choice::<Team>("team", "Which team should handle this support ticket?")
                .binary("urgent", URGENT),
        )
        .key(|ticket: &&Ticket| ticket.id.clone())
        .run(&tickets)
        .await?;
    bar.finish();

    // The labels, written back next to each ticket's id.
    std::fs::create_dir_all(&work)?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(&labels_path)?);
    let mut urgent = Vec::new();
    let mut per_team = [0usize; 3];
    let mut failed = 0;
    for (ticket, outcome) in tickets.iter().zip(&triage) {
        // Each answer read by its id, as the type it was asked with.
        let team = outcome
            .value()
            .map(|answers| answers.choice::<Team>("team"));
        let urgency = outcome.value().map(|answers| answers.binary("urgent"));
        let problem = match (&outcome.result, &team, &urgency) {
            (Err(error), _, _) => Some(error.to_string()),
            (_, Some(Err(error)), _) | (_, _, Some(Err(error))) => Some(error.to_string()),
            _ => None,
        };
        let team = team.and_then(Result::ok).map(|choice| choice.selected);
        let p_urgent = urgency
            .and_then(Result::ok)
            .map(|binary| binary.probability);
        let label = serde_json::json!({
            "id": ticket.id,
            "team": team,
            "urgent": p_urgent.map(|p| p >= 0.5),
            "p_urgent": p_urgent,
            "failed": problem,
        });
        writeln!(out, "{label}")?;
        match team {
            Some(team) => per_team[team as usize] += 1,
            None => failed += 1,
        }
        if p_urgent.is_some_and(|p| p >= 0.5) {
            urgent.push(ticket.clone());
        }
    }
    out.flush()?;

    println!(
        "{} tickets: {} billing, {} support, {} sales; {} urgent; {} failed",
        tickets.len(),
        per_team[0],
        per_team[1],
        per_team[2],
        urgent.len(),
        failed
    );

    // The urgent ones, most urgent first, each with a first reply drafted.
    let ranked = collection
        .rank(URGENT)
        .key(|ticket: &&Ticket| ticket.id.clone())
        .run(&urgent)
        .await?;
    let desk = DeskClient::new(client.clone());
    let desk = &desk;
    let replies = collection
        .map("first_reply", |ticket: &Ticket| desk.first_reply(ticket))
        .key(|ticket: &&Ticket| ticket.id.clone())
        .run(&urgent)
        .await?;
    println!("\nmost urgent first:");
    for outcome in ranked.iter().take(5) {
        let ticket = &urgent[outcome.index];
        let reply = replies.iter().find(|reply| reply.key == outcome.key);
        println!(
            "  {} p={:.2} {:?}\n    reply: {}",
            ticket.id,
            outcome
                .value()
                .map_or(f64::NAN, |binary| binary.probability),
            ticket.subject,
            reply
                .and_then(|reply| reply.value())
                .map_or("(none)", String::as_str)
        );
    }
    let spent =
        triage.cost_tally().priced + ranked.cost_tally().priced + replies.cost_tally().priced;
    println!(
        "\nlabels written to {}; this run cost ${:.4} ({} answers read back from the journal)",
        labels_path.display(),
        spent.as_usd_f64(),
        triage.progress().cached + ranked.progress().cached + replies.progress().cached
    );
    Ok(())
}
