//! Answers to decision questions: the one-token label request of the log-probability
//! client (a distribution over the labels it offers, reported as log-probabilities) and
//! the stated client's answers (a probability of yes per binary question, a
//! distribution summing to 1 per choice or score question).

use fastrand::Rng;
use serde_json::{Map, Value, json};

use crate::provider::{LogprobAlternative, TokenLogprob};

/// The labels a log-probability request offers, read from its last line
/// (`... one of: yes, no.`); `None` when it offers none.
pub(crate) fn offered_labels(user: &str) -> Option<Vec<String>> {
    let line = user.lines().rev().find(|line| !line.trim().is_empty())?;
    let (_, offered) = line.rsplit_once("one of: ")?;
    let labels: Vec<String> = offered
        .trim_end()
        .trim_end_matches('.')
        .split(", ")
        .map(str::trim)
        .filter(|label| !label.is_empty())
        .map(str::to_owned)
        .collect();
    (!labels.is_empty()).then_some(labels)
}

/// A distribution over `count` options: the first (yes, for a binary question) gets
/// `first` when given, the rest share what is left at random.
fn distribution(count: usize, first: Option<f64>, rng: &mut Rng) -> Vec<f64> {
    let weights: Vec<f64> = (0..count).map(|_| 0.05 + rng.f64()).collect();
    match first {
        Some(first) if count > 0 => {
            let rest: f64 = weights[1..].iter().sum();
            std::iter::once(first)
                .chain(weights[1..].iter().map(|w| {
                    if rest > 0.0 {
                        w / rest * (1.0 - first)
                    } else {
                        0.0
                    }
                }))
                .collect()
        }
        _ => {
            let total: f64 = weights.iter().sum();
            weights.iter().map(|w| w / total).collect()
        }
    }
}

/// The probability of yes for a binary question: `yes` when set, otherwise one drawn
/// from 0.95 to 0.99, above the decision gate's default threshold.
fn probability_yes(yes: Option<f64>, rng: &mut Rng) -> f64 {
    yes.unwrap_or_else(|| 0.95 + rng.f64() * 0.04)
}

/// The label reply: the most likely label as the text, and the labels with their
/// log-probabilities, most likely first, cut to `limit` alternatives. A binary question
/// (labels `yes`, `no`) gets `yes` probability of yes.
pub(crate) fn label_reply(
    labels: &[String],
    yes: Option<f64>,
    limit: usize,
    rng: &mut Rng,
) -> (String, Vec<TokenLogprob>) {
    let binary = labels.len() == 2 && labels[0] == "yes" && labels[1] == "no";
    let first = binary.then(|| probability_yes(yes, rng));
    let mut alternatives: Vec<LogprobAlternative> = labels
        .iter()
        .zip(distribution(labels.len(), first, rng))
        // A probability of 0 has no logarithm worth sending; the smallest positive one
        // stands for it, as a provider reports an unlikely token.
        .map(|(label, p)| LogprobAlternative::new(label.clone(), p.max(f64::MIN_POSITIVE).ln()))
        .collect();
    alternatives.sort_by(|a, b| b.logprob.total_cmp(&a.logprob));
    alternatives.truncate(limit.max(1));
    let text = alternatives[0].token.clone();
    let token = TokenLogprob {
        token: text.clone(),
        logprob: alternatives[0].logprob,
        top_logprobs: alternatives,
    };
    (text, vec![token])
}

/// The stated answers for the answers' schema (an object keyed by question id, each a
/// `probability_yes` or a `probabilities` object of the options' names).
pub(crate) fn stated_answers(answers_schema: &Value, yes: Option<f64>, rng: &mut Rng) -> Value {
    let mut answers = Map::new();
    let questions = answers_schema.get("properties").and_then(Value::as_object);
    for (id, question) in questions.into_iter().flatten() {
        let fields = question.get("properties");
        let answer = if fields.and_then(|f| f.get("probability_yes")).is_some() {
            json!({"probability_yes": probability_yes(yes, rng)})
        } else {
            let names: Vec<&String> = fields
                .and_then(|f| f.get("probabilities"))
                .and_then(|p| p.get("properties"))
                .and_then(Value::as_object)
                .map(|names| names.keys().collect())
                .unwrap_or_default();
            let probabilities: Map<String, Value> = names
                .iter()
                .zip(distribution(names.len(), None, rng))
                .map(|(name, p)| ((*name).clone(), json!(p)))
                .collect();
            json!({"probabilities": probabilities})
        };
        answers.insert(id.clone(), answer);
    }
    Value::Object(answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offered_labels_are_read_from_the_last_line() {
        let user =
            "## Question\nIs it done?\n## Answer\nReply with one label only, one of: yes, no.";
        assert_eq!(offered_labels(user).unwrap(), ["yes", "no"]);
        assert_eq!(
            offered_labels("...one of: A, B, C.\n").unwrap(),
            ["A", "B", "C"]
        );
        assert_eq!(offered_labels("Summarize the text"), None);
    }

    #[test]
    fn distributions_sum_to_one_and_yes_leads_by_default() {
        let mut rng = Rng::with_seed(4);
        for count in 2..8 {
            let d = distribution(count, None, &mut rng);
            assert!((d.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        }
        let labels = ["yes".to_owned(), "no".to_owned()];
        let (text, tokens) = label_reply(&labels, None, 20, &mut rng);
        assert_eq!(text, "yes");
        assert!(tokens[0].logprob.exp() >= 0.95);
        let (text, tokens) = label_reply(&labels, Some(0.1), 1, &mut rng);
        assert_eq!(text, "no");
        assert_eq!(tokens[0].top_logprobs.len(), 1, "cut to the limit");
    }
}
