//! How far a collection operation has come: counts, cost so far and the time left, handed
//! to the caller's callback and logged through `tracing` after every finished item (and,
//! for an operation sent through a batch job, after each of the job's steps).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cost::CostTally;

/// A progress report of one operation.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Progress {
    /// How many inputs there are, when the iterator says so exactly (a stream does not).
    pub total: Option<usize>,
    /// Items finished: answered, failed or read from the journal.
    pub done: usize,
    /// Of those, the items that failed.
    pub failed: usize,
    /// Of those, the items read from the journal or served from the client's response
    /// cache (answered earlier, paid for then).
    pub cached: usize,
    /// Items asked and not yet answered.
    pub in_flight: usize,
    /// What the finished items cost so far.
    pub cost: CostTally,
    /// Time since the operation started.
    pub elapsed: Duration,
    /// The time left at the pace of the items asked so far, when the total is known and
    /// some item was asked.
    pub remaining: Option<Duration>,
}

/// The caller's progress callback.
pub(crate) type OnProgress = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Counts one operation's items and reports them.
pub(crate) struct Tracker {
    report: Progress,
    started: Instant,
    on_progress: Option<OnProgress>,
    operation: &'static str,
}

impl Tracker {
    pub(crate) fn new(
        operation: &'static str,
        total: Option<usize>,
        on_progress: Option<OnProgress>,
    ) -> Self {
        Tracker {
            report: Progress {
                total,
                ..Progress::default()
            },
            started: Instant::now(),
            on_progress,
            operation,
        }
    }

    /// An item was asked.
    pub(crate) fn started(&mut self) {
        self.report.in_flight += 1;
    }

    /// An item finished: `started` when it was asked (not read from the journal), `served`
    /// when its answer cost nothing now (read from the journal or the client's cache).
    pub(crate) fn finished(&mut self, started: bool, served: bool, failed: bool, cost: &CostTally) {
        let report = &mut self.report;
        report.done += 1;
        if started {
            report.in_flight = report.in_flight.saturating_sub(1);
        }
        if served {
            report.cached += 1;
        }
        report.failed += usize::from(failed);
        report.cost += cost;
        self.report();
    }

    /// A batch job's step: `in_flight` of its items wait in it (queued, in a provider
    /// batch, or running here).
    pub(crate) fn waiting(&mut self, in_flight: usize) {
        self.report.in_flight = in_flight;
        self.report();
    }

    /// Logs the counts and hands them to the callback.
    fn report(&mut self) {
        let report = &mut self.report;
        report.elapsed = self.started.elapsed();
        // The pace of the asked items only: journal reads and cache hits take no time and
        // would make the estimate far too short.
        let asked_done = report.done - report.cached;
        report.remaining = match report.total {
            Some(total) if asked_done > 0 => {
                let left = total.saturating_sub(report.done);
                Some(report.elapsed.mul_f64(left as f64 / asked_done as f64))
            }
            _ => None,
        };
        tracing::debug!(
            target: "intent_rs::collection",
            operation = self.operation,
            done = report.done,
            failed = report.failed,
            cached = report.cached,
            in_flight = report.in_flight,
            cost_usd = report.cost.priced.as_usd_f64(),
            remaining_ms = report.remaining.map(|left| left.as_millis() as u64),
            "collection progress"
        );
        if let Some(on_progress) = &self.on_progress {
            on_progress(report);
        }
    }

    /// The last report, logged once at `info`.
    pub(crate) fn finish(&mut self) -> Progress {
        self.report.elapsed = self.started.elapsed();
        self.report.remaining = Some(Duration::ZERO);
        let report = &self.report;
        tracing::info!(
            target: "intent_rs::collection",
            operation = self.operation,
            done = report.done,
            failed = report.failed,
            cached = report.cached,
            cost_usd = report.cost.priced.as_usd_f64(),
            elapsed_ms = report.elapsed.as_millis() as u64,
            "collection finished"
        );
        self.report.clone()
    }
}
