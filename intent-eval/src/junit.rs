//! JUnit XML for CI systems, written with `quick-junit` (cargo-nextest's writer).

use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use crate::error::EvalError;
use crate::report::{Report, Status, write};

// The JUnit methods of `Report` live here, so that `report` does not import this module,
// which imports it.
impl Report {
    /// The report as JUnit XML: one test suite, one test case per case; a rejected
    /// answer is a failure, a case that could not be graded (the provider failed, or the
    /// validator could not grade) is an error.
    pub fn to_junit(&self) -> String {
        to_junit(self)
    }

    /// Writes the report as JUnit XML to `path`.
    pub fn write_junit(&self, path: impl AsRef<Path>) -> Result<(), EvalError> {
        write(path.as_ref(), &self.to_junit())
    }
}

fn to_junit(report: &Report) -> String {
    let mut suite = TestSuite::new(report.dataset.as_str());
    suite.set_time(duration_ms(report.summary.elapsed_ms));
    suite.add_property(Property::new(
        "pass_rate",
        format!("{:.4}", report.summary.pass_rate),
    ));
    suite.add_property(Property::new(
        "pass_rate_95_interval",
        format!(
            "{:.4}-{:.4}",
            report.summary.pass_rate_low, report.summary.pass_rate_high
        ),
    ));
    for case in &report.cases {
        let mut status = match case.status {
            Status::Passed => TestCaseStatus::success(),
            Status::Failed => TestCaseStatus::non_success(NonSuccessKind::Failure),
            Status::Error => TestCaseStatus::non_success(NonSuccessKind::Error),
        };
        if case.status != Status::Passed {
            status.set_message(case.explanation());
            status.set_type(case.validator());
        }
        let mut test = TestCase::new(case.name.as_str(), status);
        test.set_classname(format!("{}.{}", report.name, report.dataset));
        test.set_time(duration_ms(case.latency_ms));
        if let Some(answer) = &case.answer {
            test.set_system_out(format!("answer: {answer}"));
        }
        suite.add_test_case(test);
    }
    let mut junit = quick_junit::Report::new(report.name.as_str());
    junit.set_time(duration_ms(report.summary.elapsed_ms));
    junit.add_test_suite(suite);
    // Serializing into a `String` cannot fail on I/O; the writer reports no other error
    // for well-formed `XmlString`s, which strip characters XML cannot hold.
    junit.to_string().unwrap_or_default()
}

fn duration_ms(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or_default()
}
