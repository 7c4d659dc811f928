//! The text decision clients send: the state as one encoded data section, then the
//! questions, each option with its label.

use std::fmt::Write;

use serde_json::Value;

use super::{DecisionOption, DecisionQuestion};

/// The state as a data section. It is written as JSON (a string state as a JSON string),
/// so its newlines and quotes are escaped and it cannot close its section or pose as a
/// heading of the instructions that follow.
pub(crate) fn state_section(state: &Value) -> String {
    format!("## State (data)\n<<<STATE\n{state}\nSTATE>>>\n")
}

/// The question's text, its criteria, and its options each behind a label.
pub(crate) fn question_text(question: &DecisionQuestion, labels: &[String]) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "{}", question.text().trim());
    match question {
        DecisionQuestion::Binary(binary) => {
            if let Some(criteria) = binary.criteria() {
                let _ = writeln!(text, "Criteria for yes: {}", criteria.trim());
            }
        }
        DecisionQuestion::Choice(choice) => {
            text.push_str("Choices:\n");
            options(&mut text, choice.choices(), labels);
        }
        DecisionQuestion::Score(score) => {
            text.push_str("Levels, lowest first:\n");
            options(&mut text, score.levels(), labels);
        }
    }
    text
}

fn options(text: &mut String, options: &[DecisionOption], labels: &[String]) {
    for (index, option) in options.iter().enumerate() {
        let label = labels.get(index).map_or(option.name(), String::as_str);
        let named = if label == option.name() {
            String::new()
        } else {
            format!(" {}", option.name())
        };
        match option.description() {
            Some(description) => {
                let _ = writeln!(text, "- {label}:{named} ({})", description.trim());
            }
            None => {
                let _ = writeln!(text, "- {label}:{named}");
            }
        }
    }
}
