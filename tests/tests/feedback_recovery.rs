//! The failing-reply suite answered by the literal model (`feedback_suite/`): the share
//! of replies recovered within two attempts, and what the feedback may and may not say.

mod feedback_suite;

use feedback_suite::{INPUT, run_suite};

#[tokio::test]
async fn the_literal_model_recovers_at_least_95_percent_within_two_attempts() {
    let figures = run_suite().await;
    for outcome in &figures.outcomes {
        assert!(
            outcome.first_failed,
            "a suite reply must fail: {}",
            outcome.reply
        );
    }
    let missed: Vec<String> = figures
        .outcomes
        .iter()
        .filter(|o| !o.recovered)
        .map(|o| format!("[{}] {:.120}\n{}", o.class, o.reply, o.feedback))
        .collect();
    println!(
        "{}\n\nnot recovered:\n{}",
        figures.table(),
        missed.join("\n\n")
    );
    assert!(
        figures.rate() >= 0.95,
        "{} of {} recovered:\n{}",
        figures.recovered,
        figures.total,
        missed.join("\n\n")
    );
}

/// The longest run of reply characters a feedback turn may repeat: a short excerpt.
const MAX_QUOTED_CHARS: usize = 30;

#[tokio::test]
async fn feedback_is_short_and_quotes_neither_the_input_nor_more_than_an_excerpt() {
    let figures = run_suite().await;
    assert!(
        figures.median_feedback_chars <= 250,
        "median feedback turn {} characters",
        figures.median_feedback_chars
    );
    for outcome in &figures.outcomes {
        assert!(
            !outcome.feedback.contains(&INPUT[..10]),
            "the input is quoted: {}",
            outcome.feedback
        );
        let chars: Vec<char> = outcome.reply.chars().collect();
        for window in chars.windows(MAX_QUOTED_CHARS + 1) {
            let quoted: String = window.iter().collect();
            assert!(
                !outcome.feedback.contains(&quoted),
                "more than an excerpt of the reply is quoted ({quoted}):\n{}",
                outcome.feedback
            );
        }
    }
}
