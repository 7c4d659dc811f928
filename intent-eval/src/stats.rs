//! The statistics of a summary: the pass rate's confidence interval and latency
//! percentiles.

/// The z value of a two-sided 95 % interval.
pub const Z_95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval of `passed` successes in `total` trials at `z`.
///
/// Unlike the normal approximation it stays inside [0, 1] and is meaningful for small
/// datasets and for pass rates of 0 or 1, which evaluations often have. With no trial
/// nothing is known: the interval is [0, 1].
pub fn wilson_interval(passed: usize, total: usize, z: f64) -> (f64, f64) {
    if total == 0 {
        return (0.0, 1.0);
    }
    let n = total as f64;
    let p = passed as f64 / n;
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// The `q`-th percentile (0 < q ≤ 100) of sorted `values` by the nearest-rank method:
/// always one of the observed values. `None` when there is none.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// A duration as fractional milliseconds, as reports keep latencies.
pub(crate) fn millis(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_published_values() {
        // 8 of 10 at 95 %: 0.4902 to 0.9433 (Wilson, 1927; as tabulated by Newcombe, 1998).
        let (low, high) = wilson_interval(8, 10, Z_95);
        assert!((low - 0.4902).abs() < 1e-4, "{low}");
        assert!((high - 0.9433).abs() < 1e-4, "{high}");
        // All passed: the upper bound is 1, the lower one is not.
        let (low, high) = wilson_interval(20, 20, Z_95);
        assert!(
            (high - 1.0).abs() < 1e-12 && low < 0.85 && low > 0.8,
            "{low}"
        );
        assert_eq!(wilson_interval(0, 0, Z_95), (0.0, 1.0));
    }

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), Some(50.0));
        assert_eq!(percentile(&values, 99.0), Some(99.0));
        assert_eq!(percentile(&values, 100.0), Some(100.0));
        assert_eq!(percentile(&[7.0], 90.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
