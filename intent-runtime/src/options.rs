//! Per-call options: validators, examples, instructions, output requirements, judge use
//! and the per-call overrides of the client's settings.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::cost::Cost;

/// A check of a parsed value; an empty list means the value is acceptable.
///
/// Every message becomes a validator issue that is fed back to the model, so write it as
/// an instruction ("Return exactly 3 items, one per input line.").
pub type Validator<T> = Arc<dyn Fn(&T) -> Vec<String> + Send + Sync>;

/// What a validator function may return: the problems it found.
///
/// Implemented for `Result<(), String>` (one problem or none), `Vec<String>`,
/// `Option<String>` and `bool` (with a generic message when `false`).
#[diagnostic::on_unimplemented(
    message = "a validator must return the problems it found, not `{Self}`",
    label = "this validator returns `{Self}`",
    note = "return `Result<(), String>`, `Vec<String>`, `Option<String>` or `bool`: every message becomes a problem fed back to the model"
)]
pub trait IntoProblems {
    /// The problems, empty when there are none.
    fn into_problems(self) -> Vec<String>;
}

impl IntoProblems for Result<(), String> {
    fn into_problems(self) -> Vec<String> {
        self.err().into_iter().collect()
    }
}

impl IntoProblems for Result<(), &str> {
    fn into_problems(self) -> Vec<String> {
        self.err().map(str::to_owned).into_iter().collect()
    }
}

impl IntoProblems for Vec<String> {
    fn into_problems(self) -> Vec<String> {
        self
    }
}

impl IntoProblems for Option<String> {
    fn into_problems(self) -> Vec<String> {
        self.into_iter().collect()
    }
}

impl IntoProblems for bool {
    fn into_problems(self) -> Vec<String> {
        if self {
            Vec::new()
        } else {
            vec![
                "The value was rejected by a validator; re-read the intent and correct it."
                    .to_owned(),
            ]
        }
    }
}

/// A worked example shown to the model: an input and the exact reply expected for it.
///
/// Write the output as the model is to answer: plain text for a `String` target, the
/// envelope `{"value": ...}` for every other target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// The example input, as it would appear in the `## Input` section.
    pub input: String,
    /// The reply expected for it.
    pub output: String,
}

impl Example {
    /// A new example.
    pub fn new(input: impl Into<String>, output: impl Into<String>) -> Self {
        Self {
            input: input.into(),
            output: output.into(),
        }
    }
}

/// Options for one call with target type `T`.
///
/// Fields left unset fall back to the client's settings.
pub struct IntentOptions<T> {
    /// Checks run on the parsed value, in order.
    pub validators: Vec<Validator<T>>,
    /// Worked examples, shown in order.
    pub examples: Vec<Example>,
    /// Instructions appended to the system prompt.
    pub system: Option<String>,
    /// Requirements added to the output contract ("Additional output requirements").
    pub output_requirements: Option<String>,
    /// Ask the judge about every attempt that passed the deterministic checks (when the
    /// client's judge mode allows it).
    pub use_judge: bool,
    /// The model to ask, instead of the provider's default.
    pub model: Option<String>,
    /// Attempts before giving up, instead of the client's.
    pub max_attempts: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Maximum output tokens per model call.
    pub max_output_tokens: Option<u32>,
    /// Ceiling on model calls for this call (judge calls count), instead of the client's.
    pub max_model_calls: Option<u32>,
    /// Budget in money for this call (judge and retries included), instead of the
    /// client's: an attempt that could take the call past it is not sent (see
    /// [`IntentOptions::max_cost`]).
    pub max_cost: Option<Cost>,
    /// Time budget for this call, provider calls in flight included.
    pub time_budget: Option<Duration>,
    /// Ask for a JSON object (`json_object` mode) instead of a strict schema: for targets
    /// whose schema cannot be made strict.
    pub json_mode: bool,
    /// Answer recovery for this call, instead of the client's setting: read the one JSON
    /// answer of a reply that wraps it in prose (see [`AnswerRecovery`]).
    ///
    /// [`AnswerRecovery`]: crate::AnswerRecovery
    pub recover_answer: Option<bool>,
    /// The name the call's telemetry carries (its span is exported as `intent <name>`);
    /// the generated clients set the method's name. Unset, the call is a `transform`.
    pub method: Option<Cow<'static, str>>,
    /// The named provider the call goes to (see
    /// [`IntentClientBuilder::provider_named`](crate::IntentClientBuilder::provider_named)),
    /// instead of the client's provider; a method's `#[intent(..., provider = "...")]`.
    pub provider: Option<Cow<'static, str>>,
}

impl<T> Default for IntentOptions<T> {
    fn default() -> Self {
        Self {
            validators: Vec::new(),
            examples: Vec::new(),
            system: None,
            output_requirements: None,
            use_judge: false,
            model: None,
            max_attempts: None,
            temperature: None,
            max_output_tokens: None,
            max_model_calls: None,
            max_cost: None,
            time_budget: None,
            json_mode: false,
            recover_answer: None,
            method: None,
            provider: None,
        }
    }
}

impl<T> Clone for IntentOptions<T> {
    fn clone(&self) -> Self {
        Self {
            validators: self.validators.clone(),
            examples: self.examples.clone(),
            system: self.system.clone(),
            output_requirements: self.output_requirements.clone(),
            use_judge: self.use_judge,
            model: self.model.clone(),
            max_attempts: self.max_attempts,
            temperature: self.temperature,
            max_output_tokens: self.max_output_tokens,
            max_model_calls: self.max_model_calls,
            max_cost: self.max_cost,
            time_budget: self.time_budget,
            json_mode: self.json_mode,
            recover_answer: self.recover_answer,
            method: self.method.clone(),
            provider: self.provider.clone(),
        }
    }
}

impl<T> fmt::Debug for IntentOptions<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntentOptions")
            .field("validators", &self.validators.len())
            .field("examples", &self.examples)
            .field("system", &self.system)
            .field("output_requirements", &self.output_requirements)
            .field("use_judge", &self.use_judge)
            .field("model", &self.model)
            .field("max_attempts", &self.max_attempts)
            .field("temperature", &self.temperature)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("max_model_calls", &self.max_model_calls)
            .field("max_cost", &self.max_cost)
            .field("time_budget", &self.time_budget)
            .field("json_mode", &self.json_mode)
            .field("recover_answer", &self.recover_answer)
            .field("method", &self.method)
            .field("provider", &self.provider)
            .finish()
    }
}

impl<T> IntentOptions<T> {
    /// Options with nothing set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a validator. `f` may return anything that implements [`IntoProblems`].
    pub fn validate<F, R>(mut self, f: F) -> Self
    where
        F: Fn(&T) -> R + Send + Sync + 'static,
        R: IntoProblems,
    {
        self.validators
            .push(Arc::new(move |value| f(value).into_problems()));
        self
    }

    /// Adds a validator that fails with `message` when `predicate` is false.
    pub fn require<F>(mut self, predicate: F, message: impl Into<String>) -> Self
    where
        F: Fn(&T) -> bool + Send + Sync + 'static,
    {
        let message = message.into();
        self.validators.push(Arc::new(move |value| {
            if predicate(value) {
                Vec::new()
            } else {
                vec![message.clone()]
            }
        }));
        self
    }

    /// Adds a worked example.
    pub fn example(mut self, input: impl Into<String>, output: impl Into<String>) -> Self {
        self.examples.push(Example::new(input, output));
        self
    }

    /// Sets instructions appended to the system prompt.
    pub fn system(mut self, instructions: impl Into<String>) -> Self {
        self.system = Some(instructions.into());
        self
    }

    /// Sets additional output requirements.
    pub fn output_requirements(mut self, requirements: impl Into<String>) -> Self {
        self.output_requirements = Some(requirements.into());
        self
    }

    /// Asks the judge about every attempt that passes the deterministic checks.
    pub fn require_judge(mut self) -> Self {
        self.use_judge = true;
        self
    }

    /// Sets the model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sends the call to the client's provider named `name` (see
    /// [`IntentClientBuilder::provider_named`](crate::IntentClientBuilder::provider_named));
    /// a name the client lacks fails the call before anything is sent.
    pub fn provider(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.provider = Some(name.into());
        self
    }

    /// Sets the maximum number of attempts.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// Sets the sampling temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the maximum output tokens per model call.
    pub fn max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// Sets the model-call ceiling for this call.
    pub fn max_model_calls(mut self, calls: u32) -> Self {
        self.max_model_calls = Some(calls);
        self
    }

    /// Sets the budget in money for this call, instead of the client's
    /// ([`IntentClientBuilder::max_cost`](crate::IntentClientBuilder::max_cost)).
    ///
    /// Before each attempt, what the call has spent (every earlier attempt's calls,
    /// the judge's included, priced on the client's price table) plus the most the
    /// attempt's request may cost (its prompt at a token per four characters, its output
    /// at `max_output_tokens` or the model's maximum, at the model's dearest rates) must
    /// stay within the budget; otherwise the attempt is not sent and the call ends with
    /// a guardrail issue that gives the budget, the spent and the estimate. A budget that
    /// cannot be checked (a model with no price, no bound on the output) stops the call
    /// the same way. The judge's call is not in the estimate: it counts in what the next
    /// attempt finds spent.
    pub fn max_cost(mut self, budget: Cost) -> Self {
        self.max_cost = Some(budget);
        self
    }

    /// Sets the time budget for this call.
    pub fn time_budget(mut self, budget: Duration) -> Self {
        self.time_budget = Some(budget);
        self
    }

    /// Uses JSON-object mode instead of a strict schema.
    pub fn json_mode(mut self) -> Self {
        self.json_mode = true;
        self
    }

    /// Names the call in telemetry: its span is exported as `intent <name>`.
    pub fn method(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.method = Some(name.into());
        self
    }
    /// Turns answer recovery on or off for this call, whatever the client's setting: with
    /// it on, the one JSON answer of a reply that wraps it in prose is read and the repair
    /// recorded (see [`AnswerRecovery`] for when to turn it on and what it costs).
    ///
    /// [`AnswerRecovery`]: crate::AnswerRecovery
    pub fn recover_answer(mut self, on: bool) -> Self {
        self.recover_answer = Some(on);
        self
    }
}

/// Settings that take precedence over a method's attributes, its options and the
/// client's defaults, for one call or for every call of one client copy.
///
/// Give them to [`IntentClient::with_options`](crate::IntentClient::with_options), or to
/// the `with_options` of a generated client, which return a configured copy; the
/// original is unchanged, and the copies share the provider, the cache and the totals.
/// Unset fields leave the setting to the method and the client.
///
/// ```
/// use std::time::Duration;
/// use intent_rs::Overrides;
///
/// let careful = Overrides::new()
///     .model("gpt-4o")
///     .temperature(0.0)
///     .max_attempts(5)
///     .time_budget(Duration::from_secs(20));
/// assert_eq!(careful.model.as_deref(), Some("gpt-4o"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Overrides {
    /// The model to ask.
    pub model: Option<String>,
    /// The sampling temperature.
    pub temperature: Option<f32>,
    /// Attempts before giving up.
    pub max_attempts: Option<u32>,
    /// The time budget of a call, provider calls in flight included.
    pub time_budget: Option<Duration>,
    /// The named provider calls go to, over the methods' `provider = "..."`.
    pub provider: Option<String>,
}

impl Overrides {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks `model`.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Samples at `temperature`.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Gives up after `attempts` attempts.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// Stops a call after `budget`.
    pub fn time_budget(mut self, budget: Duration) -> Self {
        self.time_budget = Some(budget);
        self
    }

    /// Sends calls to the client's provider named `name` (see
    /// [`IntentClientBuilder::provider_named`](crate::IntentClientBuilder::provider_named)).
    pub fn provider(mut self, name: impl Into<String>) -> Self {
        self.provider = Some(name.into());
        self
    }

    /// These overrides, with every field that `newer` sets taken from `newer`.
    pub(crate) fn merged(&self, newer: Overrides) -> Overrides {
        Overrides {
            model: newer.model.or_else(|| self.model.clone()),
            temperature: newer.temperature.or(self.temperature),
            max_attempts: newer.max_attempts.or(self.max_attempts),
            time_budget: newer.time_budget.or(self.time_budget),
            provider: newer.provider.or_else(|| self.provider.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validator_return_types_become_problems() {
        assert_eq!(Ok::<(), String>(()).into_problems(), Vec::<String>::new());
        assert_eq!(Err::<(), String>("x".into()).into_problems(), vec!["x"]);
        assert_eq!(Some("y".to_owned()).into_problems(), vec!["y"]);
        assert_eq!(true.into_problems(), Vec::<String>::new());
        assert_eq!(false.into_problems().len(), 1);
    }

    #[test]
    fn require_reports_its_message_only_when_the_predicate_fails() {
        let options = IntentOptions::<i32>::new().require(|n| *n > 0, "Must be positive.");
        assert!((options.validators[0])(&1).is_empty());
        assert_eq!((options.validators[0])(&-1), vec!["Must be positive."]);
    }
}
