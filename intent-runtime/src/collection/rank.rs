//! The order of a ranking: by each item's score, highest first, the failed items last.

use std::cmp::Ordering;

use super::Outcome;

/// Sorts `outcomes` by `score`, highest first; equal scores, and the failed items (after
/// every answered one), keep the input order.
pub(super) fn order<T>(outcomes: &mut [Outcome<T>], score: fn(&T) -> f64) {
    outcomes.sort_by(|a, b| match (&a.result, &b.result) {
        (Ok(x), Ok(y)) => score(y).total_cmp(&score(x)).then(a.index.cmp(&b.index)),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.index.cmp(&b.index),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collection::ItemError;
    use crate::cost::CostTally;
    use crate::decision::DecisionError;
    use crate::result::Usage;

    fn outcome(index: usize, score: Option<f64>) -> Outcome<f64> {
        Outcome {
            index,
            key: index.to_string(),
            result: score.ok_or_else(|| ItemError::from(DecisionError::invalid_response("x"))),
            usage: Usage::default(),
            cost: CostTally::default(),
            from_journal: false,
            from_cache: false,
        }
    }

    #[test]
    fn highest_first_ties_in_input_order_failures_last() {
        let mut outcomes = vec![
            outcome(0, Some(0.2)),
            outcome(1, None),
            outcome(2, Some(0.9)),
            outcome(3, Some(0.2)),
            outcome(4, None),
        ];
        order(&mut outcomes, |score| *score);
        let indices: Vec<usize> = outcomes.iter().map(|o| o.index).collect();
        assert_eq!(indices, [2, 0, 3, 1, 4]);
    }
}
