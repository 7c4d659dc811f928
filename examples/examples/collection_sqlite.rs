//! Intents over the rows of a SQLite table: each ticket without a team is routed to one
//! (`classify`), and the label is written back to its row, in one transaction.
//!
//! `cargo run --example collection_sqlite` (offline: a scripted model answers by keywords).
//! The database is made in the temporary folder from `examples/data/tickets.jsonl` the
//! first time; run the example again and only the rows still without a team are asked
//! (the table itself is the journal). With `OPENAI_API_KEY` (or another provider
//! `provider::from_env` reads) a real model answers.

use intent_examples::{choose_provider, scripted_ticket_decision};
use intent_rs::collection::Collection;
use intent_rs::provider::ScriptedProvider;
use intent_rs::{DecisionEnum, IntentClient};
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

/// A row of the `tickets` table, as the model is shown it.
#[derive(Debug, Serialize, Deserialize)]
struct Ticket {
    id: String,
    subject: String,
    body: String,
}

/// Where a ticket goes.
#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Team {
    /// Payments, invoices, refunds and plan changes of paying customers.
    Billing,
    /// Something does not work.
    Support,
    /// Questions before buying: prices, trials, editions.
    Sales,
}

impl Team {
    fn name(self) -> &'static str {
        Team::VARIANTS[self as usize].name
    }
}

/// The offline model: the team by keywords, with log-probabilities.
fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| scripted_ticket_decision(request.user()))
        .with_max_top_logprobs(Some(20))
}

/// Opens the example's database, filling it from the tickets file the first time.
fn open_database() -> Result<Connection, Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join("intent-rs-collection-example.sqlite");
    let mut db = Connection::open(&path)?;
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS tickets (
             id TEXT PRIMARY KEY, subject TEXT NOT NULL, body TEXT NOT NULL, team TEXT
         )",
    )?;
    let count: i64 = db.query_row("SELECT count(*) FROM tickets", [], |row| row.get(0))?;
    if count == 0 {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/tickets.jsonl"))?;
        let fill = db.transaction()?;
        for line in text.lines() {
            let ticket: Ticket = serde_json::from_str(line)?;
            fill.execute(
                "INSERT INTO tickets (id, subject, body) VALUES (?1, ?2, ?3)",
                params![ticket.id, ticket.subject, ticket.body],
            )?;
        }
        fill.commit()?;
    }
    println!("database: {}", path.display());
    Ok(db)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_model());
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        .build()?;
    let mut db = open_database()?;

    // A SQLite statement cannot cross an `.await`, so the rows are read first: a few
    // hundred small rows; for millions, read and label them a page at a time.
    let rows: Vec<Ticket> = db
        .prepare("SELECT id, subject, body FROM tickets WHERE team IS NULL ORDER BY id")?
        .query_map([], |row| {
            Ok(Ticket {
                id: row.get(0)?,
                subject: row.get(1)?,
                body: row.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    println!("{} rows without a team", rows.len());

    let teams = Collection::new(&client)
        .concurrency(16)
        .classify::<Team, _>("Which team should handle this support ticket?")
        .key(|ticket: &Ticket| ticket.id.clone())
        .run(rows)
        .await?;

    // The labels, written back in one transaction; a failed row keeps no team, so the
    // next run asks it again.
    let write = db.transaction()?;
    let mut labelled = 0;
    for outcome in &teams {
        match &outcome.result {
            Ok(choice) => {
                write.execute(
                    "UPDATE tickets SET team = ?1 WHERE id = ?2",
                    params![choice.selected.name(), outcome.key],
                )?;
                labelled += 1;
            }
            Err(error) => eprintln!(
                "{}: not labelled ({:?}): {error}",
                outcome.key,
                error.kind()
            ),
        }
    }
    write.commit()?;

    let mut per_team =
        db.prepare("SELECT team, count(*) FROM tickets GROUP BY team ORDER BY team")?;
    let counts = per_team.query_map([], |row| {
        Ok((row.get::<_, Option<String>>(0)?, row.get::<_, i64>(1)?))
    })?;
    println!("{labelled} rows labelled now; the table holds:");
    for count in counts {
        let (team, rows) = count?;
        println!("  {:<8} {rows}", team.as_deref().unwrap_or("(none)"));
    }
    Ok(())
}
