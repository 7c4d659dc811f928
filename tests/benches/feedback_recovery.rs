//! Feedback a model can act on: the failing-reply suite (every class of reply that fails
//! verification) answered on the retry by the literal model, which fixes exactly what
//! the feedback locates using only its previous reply, the feedback and the request's
//! schema. Prints, per class and overall, how many replies are recovered within two
//! attempts, and the median length of the first feedback turn.
//!
//! `cargo bench -p intent-tests --bench feedback_recovery` (`-- --test` and `--quick`
//! print the same: the suite is counted, not timed).

#[path = "../tests/feedback_suite/mod.rs"]
mod feedback_suite;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let figures = runtime.block_on(feedback_suite::run_suite());
    println!("{}", figures.table());
    println!(
        "\nmedian first feedback turn: {} characters over {} replies",
        figures.median_feedback_chars, figures.total
    );
    for outcome in figures.outcomes.iter().filter(|o| !o.recovered) {
        println!(
            "\nnot recovered [{}]: {:.100}",
            outcome.class, outcome.reply
        );
    }
}
