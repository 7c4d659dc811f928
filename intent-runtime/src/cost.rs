//! Money: an exact amount of US dollars ([`Cost`]), a tally of what calls cost
//! ([`CostTally`]), and the error that says which models have no price.
//!
//! It sits below `result` (an attempt's record carries its cost) and knows nothing of
//! price tables, which live in `pricing`.

use std::fmt;
use std::ops::{Add, AddAssign};
use std::str::FromStr;

/// Pico-dollars (10^-12 USD) in one dollar.
const PICOS_PER_DOLLAR: u64 = 1_000_000_000_000;

/// An amount of US dollars, exact to the pico-dollar (10^-12 USD).
///
/// Why an integer and not `f64`: a cost is a sum of many small products (tokens times a
/// price per token), and a sum of binary fractions drifts: a million calls of $0.000015
/// add up in `f64` to a figure that is not a million times $0.000015. Counted in integer
/// pico-dollars every sum is exact, and two runs that made the same calls report the same
/// figure to the last digit. Why pico: the smallest per-token prices in the providers'
/// tables are a few hundredths of a micro-dollar ($0.0000000125 for a cached token), so a
/// price per token needs 12 decimal places to be held exactly; a `u64` of pico-dollars
/// still holds $18 million, far above anything one process spends. Why not a decimal
/// crate: addition and a multiplication by a token count are all that is needed, and
/// both are one integer instruction here.
///
/// Arithmetic saturates instead of overflowing. `Display` writes dollars with every
/// significant digit and at least two decimals (`$0.001234`, `$1.50`); a precision
/// (`{:.4}`) rounds half up to that many decimals.
///
/// ```
/// use intent_rs::Cost;
/// let per_token: Cost = "0.0000025".parse().unwrap();
/// assert_eq!(per_token.times(1_000).to_string(), "$0.0025");
/// assert_eq!(format!("{:.2}", Cost::from_micro_usd(1_234_567)), "$1.23");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cost(u64);

impl Cost {
    /// Nothing.
    pub const ZERO: Cost = Cost(0);

    /// An amount in pico-dollars (10^-12 USD).
    pub const fn from_pico_usd(picos: u64) -> Cost {
        Cost(picos)
    }

    /// An amount in micro-dollars (10^-6 USD).
    pub const fn from_micro_usd(micros: u64) -> Cost {
        Cost(micros.saturating_mul(1_000_000))
    }

    /// An amount in cents.
    pub const fn from_cents(cents: u64) -> Cost {
        Cost(cents.saturating_mul(10_000_000_000))
    }

    /// The amount in pico-dollars.
    pub const fn as_pico_usd(self) -> u64 {
        self.0
    }

    /// The amount in dollars as a float, for a metric or a span attribute: one conversion
    /// at the end, never a sum of floats.
    pub fn as_usd_f64(self) -> f64 {
        // Whole dollars and the fraction apart, so that no digit is lost to the division.
        (self.0 / PICOS_PER_DOLLAR) as f64 + (self.0 % PICOS_PER_DOLLAR) as f64 / 1e12
    }

    /// This amount (a price per token) times a token count.
    pub const fn times(self, tokens: u64) -> Cost {
        Cost(self.0.saturating_mul(tokens))
    }

    /// The amount rounded to a multiple of 10^-`decimals` dollars, half up.
    fn rounded(self, decimals: usize) -> Cost {
        if decimals >= 12 {
            return self;
        }
        let unit = 10u64.pow(12 - decimals as u32);
        let rest = self.0 % unit;
        let down = self.0 - rest;
        Cost(if rest * 2 >= unit {
            down.saturating_add(unit)
        } else {
            down
        })
    }
}

impl Add for Cost {
    type Output = Cost;
    fn add(self, rhs: Cost) -> Cost {
        Cost(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, rhs: Cost) {
        *self = *self + rhs;
    }
}

impl std::iter::Sum for Cost {
    fn sum<I: Iterator<Item = Cost>>(iter: I) -> Cost {
        iter.fold(Cost::ZERO, Add::add)
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let amount = match f.precision() {
            Some(decimals) => self.rounded(decimals),
            None => *self,
        };
        let whole = amount.0 / PICOS_PER_DOLLAR;
        let fraction = format!("{:012}", amount.0 % PICOS_PER_DOLLAR);
        let shown = match f.precision() {
            Some(decimals) => &fraction[..decimals.min(12)],
            None => {
                let significant = fraction.trim_end_matches('0').len().max(2);
                &fraction[..significant]
            }
        };
        if shown.is_empty() {
            write!(f, "${whole}")
        } else {
            write!(f, "${whole}.{shown}")
        }
    }
}

/// Why a text is not an amount of dollars.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not an amount of US dollars: write a non-negative decimal such as `0.05` or `$1.20`, with at most 12 decimals"
)]
pub struct CostParseError {
    text: String,
}

impl FromStr for Cost {
    type Err = CostParseError;

    /// Reads `0.05`, `$0.05` or `12`: exact, no float involved.
    fn from_str(text: &str) -> Result<Cost, CostParseError> {
        let error = || CostParseError {
            text: text.to_owned(),
        };
        let digits = text.trim();
        let digits = digits.strip_prefix('$').unwrap_or(digits);
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && fraction.is_empty())
            || !all_digits(whole)
            || !all_digits(fraction)
            || fraction.len() > 12
        {
            return Err(error());
        }
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| error())?
        };
        let fraction: u64 = if fraction.is_empty() {
            0
        } else {
            format!("{fraction:0<12}").parse().map_err(|_| error())?
        };
        whole
            .checked_mul(PICOS_PER_DOLLAR)
            .and_then(|picos| picos.checked_add(fraction))
            .map(Cost)
            .ok_or_else(error)
    }
}

/// A cost is written as its exact decimal text in dollars (`"0.001234"`), never as a float.
impl serde::Serialize for Cost {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self.to_string();
        serializer.serialize_str(text.trim_start_matches('$'))
    }
}

/// A cost is read from its decimal text in dollars (what [`Serialize`](serde::Serialize)
/// writes), exactly.
impl<'de> serde::Deserialize<'de> for Cost {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A cost as far as the price table knows it: what the calls with a price cost, and the
/// models of the calls without one. An attempt's record carries one
/// ([`AttemptRecord::cost`](crate::AttemptRecord::cost)); tallies add up across attempts,
/// calls and jobs, and [`CostTally::total`] gives the cost only when nothing was unpriced.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CostTally {
    /// The cost of the calls that had a price.
    pub priced: Cost,
    /// The models that answered some of the calls and have no price in the client's
    /// table, each once: those calls' tokens are in the usage but in no cost.
    pub unpriced_models: Vec<String>,
}

impl CostTally {
    /// Whether every call had a price.
    pub fn is_complete(&self) -> bool {
        self.unpriced_models.is_empty()
    }

    /// The cost, when every call had a price; else which models had none, with the
    /// priced part.
    pub fn total(&self) -> Result<Cost, UnpricedModels> {
        if self.unpriced_models.is_empty() {
            Ok(self.priced)
        } else {
            Err(UnpricedModels {
                models: self.unpriced_models.clone(),
                priced: self.priced,
            })
        }
    }

    /// Notes a model with no price (once).
    pub(crate) fn unpriced(&mut self, model: &str) {
        if !self.unpriced_models.iter().any(|m| m == model) {
            self.unpriced_models.push(model.to_owned());
        }
    }
}

impl AddAssign<&CostTally> for CostTally {
    fn add_assign(&mut self, rhs: &CostTally) {
        self.priced += rhs.priced;
        for model in &rhs.unpriced_models {
            self.unpriced(model);
        }
    }
}

/// A call, evaluation or batch job whose cost is not known in full: some of its calls
/// were answered by models that the price table does not list. The cost is never
/// guessed; the part that was priced is kept.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no price for {} in the price table, so the cost is unknown (the calls with a price cost {priced}): add the model with `PriceTable::insert` or load a newer table with `PriceTable::from_litellm_json`, and give it to `IntentClientBuilder::price_table`",
    list(models)
)]
pub struct UnpricedModels {
    /// The models with no price, each once, in the order they were met.
    pub models: Vec<String>,
    /// What the calls that had a price cost.
    pub priced: Cost,
}

fn list(models: &[String]) -> String {
    let named: Vec<String> = models.iter().map(|m| format!("`{m}`")).collect();
    match named.len() {
        1 => format!("model {}", named[0]),
        _ => format!("models {}", named.join(", ")),
    }
}

// What `main` prints for a returned error is its sentence, as for every error of this
// crate (written by hand: this module sits below the one that has the macro).
impl fmt::Debug for CostParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Debug for UnpricedModels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_keeps_every_significant_digit_and_two_decimals_at_least() {
        assert_eq!(Cost::ZERO.to_string(), "$0.00");
        assert_eq!(Cost::from_cents(150).to_string(), "$1.50");
        assert_eq!(Cost::from_micro_usd(1_234).to_string(), "$0.001234");
        assert_eq!(Cost::from_pico_usd(75_000).to_string(), "$0.000000075");
        assert_eq!(format!("{:.4}", Cost::from_micro_usd(1_235)), "$0.0012");
        assert_eq!(format!("{:.5}", Cost::from_micro_usd(1_235)), "$0.00124");
        assert_eq!(format!("{:.0}", Cost::from_cents(250)), "$3");
    }

    #[test]
    fn a_million_small_costs_add_up_exactly() {
        let per_call: Cost = "0.000015".parse().unwrap();
        let total: Cost = std::iter::repeat_n(per_call, 1_000_000).sum();
        assert_eq!(total.to_string(), "$15.00");
        // What a float sum of the same figures gives: not 15.
        let float: f64 = std::iter::repeat_n(0.000015_f64, 1_000_000).sum();
        assert_ne!(float, 15.0);
    }

    #[test]
    fn parsing_is_exact_and_refuses_what_is_not_an_amount() {
        assert_eq!("$1.5".parse::<Cost>(), Ok(Cost::from_cents(150)));
        assert_eq!(".25".parse::<Cost>(), Ok(Cost::from_cents(25)));
        assert_eq!("0.000000000001".parse::<Cost>(), Ok(Cost::from_pico_usd(1)));
        for bad in ["", "$", "-1", "1e-6", "0.0000000000001", "1.2.3", "abc"] {
            let error = bad.parse::<Cost>().unwrap_err();
            assert!(error.to_string().contains("not an amount"), "{bad}");
        }
        assert_eq!(Cost::from_cents(7).as_usd_f64(), 0.07);
    }

    #[test]
    fn a_cost_goes_to_json_and_back_as_exact_text() {
        let cost = Cost::from_pico_usd(1_234_567_890_123);
        let json = serde_json::to_string(&cost).unwrap();
        assert_eq!(json, "\"1.234567890123\"");
        assert_eq!(serde_json::from_str::<Cost>(&json).unwrap(), cost);
        assert!(serde_json::from_str::<Cost>("\"-1\"").is_err());
    }

    fn total<'a>(tallies: impl IntoIterator<Item = &'a CostTally>) -> Result<Cost, UnpricedModels> {
        let mut sum = CostTally::default();
        for tally in tallies {
            sum += tally;
        }
        sum.total()
    }

    #[test]
    fn totals_name_each_unpriced_model_once() {
        let priced = CostTally {
            priced: Cost::from_cents(1),
            unpriced_models: vec![],
        };
        let unpriced = CostTally {
            priced: Cost::from_cents(2),
            unpriced_models: vec!["m-1".to_owned()],
        };
        assert_eq!(total([&priced, &priced]), Ok(Cost::from_cents(2)));
        let missing = total([&priced, &unpriced, &unpriced]).unwrap_err();
        assert_eq!(missing.models, ["m-1"]);
        assert_eq!(missing.priced, Cost::from_cents(5));
        assert!(missing.to_string().starts_with("no price for model `m-1`"));
    }
}
