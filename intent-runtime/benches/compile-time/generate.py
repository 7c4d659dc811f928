#!/usr/bin/env python3
"""Writes a throwaway crate whose one `#[intents]` trait has N intent methods.

Usage: generate.py OUT_DIR METHODS RUNTIME_PATH [LOCKFILE] [--with-caller]

The methods cycle through five shapes a real trait has (an enum, a struct with a
validator, a plain-text summary of two inputs, a list, a runtime JSON value with a
guardrail), so the figures are per typical method. With --with-caller, the crate also
awaits every method, so each method's future is compiled in it, as in a user's crate.
The crate is its own workspace, so
it builds outside the intent-rs workspace; pass the workspace's Cargo.lock to build with
the same dependency versions (and reuse their artifacts from a shared target dir).
"""

import os
import shutil
import sys

TYPES = '''use intent_rs::{AIResult, IntentError, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The sentiment of a review.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
pub enum Sentiment {
    /// Mostly favourable.
    Positive,
    /// Neither.
    Neutral,
    /// Mostly unfavourable.
    Negative,
}

/// One invoice line.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
pub struct Line {
    /// What was sold.
    pub item: String,
    /// Price in cents.
    pub cents: i64,
}

/// An invoice.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
pub struct Invoice {
    /// Invoice number.
    pub number: String,
    /// Sum of the lines, in cents.
    pub total_cents: i64,
    /// The lines.
    pub lines: Vec<Line>,
}

/// A meeting to summarize.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Meeting {
    /// Its title.
    pub title: String,
    /// Its length.
    pub minutes: u32,
}

/// The validator the invoice methods use.
pub fn totals_add_up(invoice: &Invoice) -> Result<(), String> {
    let sum: i64 = invoice.lines.iter().map(|line| line.cents).sum();
    if sum == invoice.total_cents {
        Ok(())
    } else {
        Err(format!("The lines add up to {sum} cents; make total_cents match them."))
    }
}
'''

SHAPES = [
    '''    /// Sentiment {i}.
    #[intent("Classify the sentiment of review {i}")]
    async fn sentiment_{i}(&self, review: &str) -> Result<Sentiment, IntentError>;
''',
    '''    /// Invoice {i}.
    #[intent("Extract the fields of invoice {i}", max_attempts = 2)]
    #[validate(totals_add_up)]
    async fn invoice_{i}(&self, document: &str) -> AIResult<Invoice>;
''',
    '''    /// Summary {i}.
    #[intent("Summarize meeting {i} in one sentence")]
    async fn summary_{i}(&self, meeting: &Meeting, audience: String) -> Result<String, IntentError>;
''',
    '''    /// Lines {i}.
    #[intent("List the lines of invoice {i}", temperature = 0.0)]
    async fn lines_{i}(&self, document: &str) -> AIResult<Vec<Line>>;
''',
    '''    /// Facts {i}.
    #[intent("Extract the facts of note {i} as JSON")]
    #[guardrail(max_model_calls = 2)]
    async fn facts_{i}(&self, text: &str) -> AIResult<Value>;
''',
]


CALLS = [
    '    let _ = client.sentiment_{i}("Loved it").await;\n',
    '    let _ = client.invoice_{i}("Invoice 7").await;\n',
    '    let _ = client.summary_{i}(&meeting, "the board".to_owned()).await;\n',
    '    let _ = client.lines_{i}("Invoice 7").await;\n',
    '    let _ = client.facts_{i}("Water boils at 100 C").await;\n',
]

# A caller of every method, polled once from a plain function: like a user's crate, it
# makes this crate compile each method's future (an unused `impl Future` would only be
# compiled by a crate that awaits it).
CALLER = """
/// Awaits every method once.
pub async fn call_all(client: &GeneratedClient) {{
    let meeting = Meeting {{ title: "Budget".to_owned(), minutes: 30 }};
{calls}}}

/// Polls [`call_all`] once, so its future is compiled here.
pub fn poll_all_once(client: &GeneratedClient) -> bool {{
    let mut future = std::pin::pin!(call_all(client));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    future.as_mut().poll(&mut context).is_ready()
}}
"""


def main() -> None:
    with_caller = "--with-caller" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--with-caller"]
    if len(args) not in (3, 4):
        sys.exit(__doc__)
    out, methods, runtime = args[0], int(args[1]), os.path.abspath(args[2])
    os.makedirs(os.path.join(out, "src"), exist_ok=True)
    with open(os.path.join(out, "Cargo.toml"), "w") as f:
        f.write(f'''[package]
name = "intent-compile-time-{methods}{'-caller' if with_caller else ''}"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
intent-rs = {{ path = "{runtime}" }}
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
schemars = "1.2"

# Its own workspace: it is generated outside (or excluded from) the intent-rs workspace.
[workspace]
''')
    if len(args) == 4:
        shutil.copyfile(args[3], os.path.join(out, "Cargo.lock"))
    body = "".join(SHAPES[i % len(SHAPES)].format(i=i) for i in range(methods))
    with open(os.path.join(out, "src", "lib.rs"), "w") as f:
        f.write("//! Generated by generate.py: a trait of intent methods, for compile-time figures.\n")
        # With one method, some of the shared types and imports go unused.
        f.write("#![allow(unused_imports, unused_variables, dead_code)]\n\n")
        f.write(TYPES)
        f.write(f"\n/// {methods} intent methods.\n#[intents]\npub trait Generated {{\n{body}}}\n")
        if with_caller:
            calls = "".join(CALLS[i % len(CALLS)].format(i=i) for i in range(methods))
            f.write(CALLER.format(calls=calls))


if __name__ == "__main__":
    main()
