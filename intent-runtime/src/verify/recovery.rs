//! Answer recovery, opt-in: reading the one JSON answer of a reply that wraps it in
//! prose, and saying precisely why a reply that holds several is refused.
//!
//! The candidates come from `parse::json_candidates`; each is read as the target by the
//! ordinary steps (envelope, schema-guided repair, deserialization or the runtime
//! schema). Exactly one candidate of the target's shape is the reply; two or more are
//! never guessed between.

use crate::result::{IssueSource, ResultIssue};
use crate::schema::ENVELOPE_PROPERTY;

/// Whether the verifier may take the one JSON answer out of a reply that wraps it in
/// prose. Off by default: a reply is then read as the reference documents specify (a
/// code fence around the whole reply is removed, JSON is never taken out of prose), and
/// a chatty reply is a failed attempt.
///
/// Turn it on for models that do not enforce a schema and like to talk: local models
/// behind an OpenAI-compatible server, JSON-object mode, `json_mode`. A reply that is
/// not JSON (nor a bare primitive) is then searched for candidates: fenced code blocks
/// anywhere in it, else balanced JSON objects and arrays in its text, each parsed by the
/// same strict rules as any reply. Exactly one candidate that reads as the target is
/// taken, recorded as [`Repair::JsonExtractedFromProse`](crate::Repair), and checked by
/// the schema, the validators and the judge like any reply; several are a failed
/// attempt whose feedback asks for one answer alone.
///
/// The cost: prose that qualifies its answer ("probably {...}, but check") is read all
/// the same. The validators and the judge see the value, not the prose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum AnswerRecovery {
    /// Only a fence around the whole reply is removed (the default).
    #[default]
    Off,
    /// The one JSON answer in a chatty reply is read, and the repair recorded.
    FromProse,
}

impl AnswerRecovery {
    /// [`AnswerRecovery::FromProse`] when `on`, else [`AnswerRecovery::Off`].
    pub fn from_switch(on: bool) -> Self {
        if on { Self::FromProse } else { Self::Off }
    }

    /// Whether recovery is on.
    pub fn is_on(self) -> bool {
        self == Self::FromProse
    }
}

/// What the candidates of one reply come to.
#[derive(Debug, PartialEq)]
pub(crate) enum Choice<H, M> {
    /// Exactly one candidate reads as the target: it is the reply.
    One(H),
    /// This many different candidates read as the target (or more than can be read).
    Several(Option<usize>),
    /// One candidate was found and it does not read as the target: its issues stand.
    OnlyMiss(M),
    /// This many candidates were found and none reads as the target.
    NoneFits(usize),
    /// No candidate at all: the reply is prose.
    NoCandidate,
}

/// Chooses among the candidates that read as the target (`hits`) and those that did not
/// (`misses`); hits that `same` says are equal (after repairs) count once.
pub(crate) fn choose<H, M>(
    hits: Vec<H>,
    mut misses: Vec<M>,
    too_many: bool,
    same: impl Fn(&H, &H) -> bool,
) -> Choice<H, M> {
    if too_many {
        return Choice::Several(None);
    }
    let mut distinct: Vec<H> = Vec::with_capacity(hits.len());
    for hit in hits {
        if !distinct.iter().any(|seen| same(seen, &hit)) {
            distinct.push(hit);
        }
    }
    match (distinct.len(), misses.len()) {
        (1, _) => distinct.pop().map_or(Choice::NoCandidate, Choice::One),
        (0, 0) => Choice::NoCandidate,
        (0, 1) => misses.pop().map_or(Choice::NoCandidate, Choice::OnlyMiss),
        (0, found) => Choice::NoneFits(found),
        (several, _) => Choice::Several(Some(several)),
    }
}

/// The issue of a reply that held several answers of the target's shape.
pub(crate) fn several_answers(count: Option<usize>, type_name: &str, attempt: u32) -> ResultIssue {
    let how_many = count.map_or_else(|| "many".to_owned(), |n| n.to_string());
    ResultIssue::new(
        IssueSource::Verification,
        format!(
            "The reply held {how_many} different answers ({type_name}) among its text; give \
             exactly one answer, as the JSON object {{\"{ENVELOPE_PROPERTY}\": ...}} alone, \
             with no text around it."
        ),
        attempt,
    )
}

/// The issue of a reply that held prose around JSON values, none of the target's shape.
pub(crate) fn no_answer_fits(found: usize, type_name: &str, attempt: u32) -> ResultIssue {
    ResultIssue::new(
        IssueSource::Verification,
        format!(
            "The reply held prose around {found} JSON values and none of them is a \
             {type_name}; reply with the answer alone, as the JSON object \
             {{\"{ENVELOPE_PROPERTY}\": ...}} and nothing else."
        ),
        attempt,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(hits: Vec<i32>, misses: Vec<&str>, too_many: bool) -> Choice<i32, &str> {
        choose(hits, misses, too_many, |a, b| a == b)
    }

    #[test]
    fn exactly_one_distinct_hit_is_chosen_whatever_missed() {
        assert_eq!(chosen(vec![1], vec!["x", "y"], false), Choice::One(1));
        assert_eq!(chosen(vec![1, 1], vec![], false), Choice::One(1));
    }

    #[test]
    fn several_distinct_hits_are_never_guessed_between() {
        assert_eq!(chosen(vec![1, 2], vec![], false), Choice::Several(Some(2)));
        assert_eq!(chosen(vec![1], vec![], true), Choice::Several(None));
    }

    #[test]
    fn without_a_hit_a_lone_miss_keeps_its_issues() {
        assert_eq!(chosen(vec![], vec!["x"], false), Choice::OnlyMiss("x"));
        assert_eq!(chosen(vec![], vec!["x", "y"], false), Choice::NoneFits(2));
        assert_eq!(chosen(vec![], vec![], false), Choice::NoCandidate);
    }

    #[test]
    fn the_feedback_asks_for_one_answer_alone() {
        let several = several_answers(Some(2), "Invoice", 3);
        assert_eq!(several.source, IssueSource::Verification);
        assert_eq!(several.attempt, 3);
        assert!(several.message.contains("2 different answers (Invoice)"));
        assert!(several.message.contains("exactly one answer"));
        assert!(several_answers(None, "Invoice", 1).message.contains("many"));
        let none = no_answer_fits(2, "Invoice", 1);
        assert!(none.message.contains("prose around 2 JSON values"));
    }
}
