//! Two reports compared case by case: what regressed, what was fixed, and how the pass
//! rate moved.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::report::Report;

/// The difference between a baseline report and a current one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Cases that passed in the baseline and do not now.
    pub regressions: Vec<String>,
    /// Cases that did not pass in the baseline and do now.
    pub fixes: Vec<String>,
    /// Cases only in the current report.
    pub added: Vec<String>,
    /// Cases only in the baseline.
    pub removed: Vec<String>,
    /// The baseline's pass rate.
    pub baseline_pass_rate: f64,
    /// The current pass rate.
    pub current_pass_rate: f64,
}

impl Comparison {
    /// The change of pass rate, current minus baseline.
    pub fn pass_rate_change(&self) -> f64 {
        self.current_pass_rate - self.baseline_pass_rate
    }

    /// Whether any case regressed.
    pub fn has_regressions(&self) -> bool {
        !self.regressions.is_empty()
    }
}

// The comparing method of `Report` lives here, so that `report` does not import this
// module, which imports it.
impl Report {
    /// Compares this report with an earlier one, case by case (matched by name).
    pub fn compare(&self, baseline: &Report) -> Comparison {
        compare(baseline, self)
    }
}

fn compare(baseline: &Report, current: &Report) -> Comparison {
    let before: HashMap<&str, bool> = baseline
        .cases
        .iter()
        .map(|case| (case.name.as_str(), case.passed()))
        .collect();
    let now: HashMap<&str, bool> = current
        .cases
        .iter()
        .map(|case| (case.name.as_str(), case.passed()))
        .collect();
    let mut comparison = Comparison {
        regressions: Vec::new(),
        fixes: Vec::new(),
        added: Vec::new(),
        removed: Vec::new(),
        baseline_pass_rate: baseline.summary.pass_rate,
        current_pass_rate: current.summary.pass_rate,
    };
    for case in &current.cases {
        match before.get(case.name.as_str()) {
            None => comparison.added.push(case.name.clone()),
            Some(true) if !case.passed() => comparison.regressions.push(case.name.clone()),
            Some(false) if case.passed() => comparison.fixes.push(case.name.clone()),
            Some(_) => {}
        }
    }
    comparison.removed = baseline
        .cases
        .iter()
        .filter(|case| !now.contains_key(case.name.as_str()))
        .map(|case| case.name.clone())
        .collect();
    comparison
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pass rate {:.1} % -> {:.1} % ({:+.1} points)",
            self.baseline_pass_rate * 100.0,
            self.current_pass_rate * 100.0,
            self.pass_rate_change() * 100.0
        )?;
        let lists = [
            ("regressions", &self.regressions),
            ("fixes", &self.fixes),
            ("added", &self.added),
            ("removed", &self.removed),
        ];
        for (label, names) in lists {
            if !names.is_empty() {
                write!(f, "\n{label} ({}): {}", names.len(), names.join(", "))?;
            }
        }
        Ok(())
    }
}
