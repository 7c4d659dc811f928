//! Decisions recorded to a cassette and replayed: [`CassetteDecisionClient`], a wrapper
//! around any [`DecisionClient`], for the clients that speak their own API (the System
//! One client) and so never pass through a [`Provider`](crate::provider::Provider)'s
//! cassette.

mod record;

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use record::{
    DECIDE, DecideKind, DecisionExchange, RecordedDecisionError, RecordedDecisionRequest,
};

use super::{DecisionClient, DecisionError, DecisionRequest, DecisionResponse, FailureKind};
use crate::provider::cassette::file::{self, Appender};
use crate::provider::{Cassette, CassetteError, Sanitizer};

impl Cassette {
    /// Reads the cassette (when it exists) and wraps the decision client `client` in it:
    /// its decisions are recorded and replayed in the cassette's mode, next to any
    /// provider calls the same file holds. In replay `client` is never asked, but still
    /// names its [default model](DecisionClient::default_model), which the matching
    /// counts: build it as for recording (any key will do).
    ///
    /// A recorded decision that fails today's checks is an error here, naming the line.
    ///
    /// ```no_run
    /// use intent_rs::IntentClient;
    /// use intent_rs::decision::SystemOneClient;
    /// use intent_rs::provider::{Cassette, ScriptedProvider};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let key = std::env::var("TYPESAFE_API_KEY").unwrap_or_else(|_| "replay".into());
    /// let decisions = Cassette::new("tests/cassettes/triage.jsonl")
    ///     .decision_client(SystemOneClient::typesafe(key))?;
    /// let client = IntentClient::builder()
    ///     .provider(ScriptedProvider::new(Vec::<String>::new()))
    ///     .decision_client(decisions)
    ///     .build()?;
    /// # let _ = client;
    /// # Ok(())
    /// # }
    /// ```
    pub fn decision_client<D: DecisionClient>(
        self,
        client: D,
    ) -> Result<CassetteDecisionClient<D>, CassetteError> {
        let (path, mode, sanitizer) = self.into_parts();
        let loaded = file::read_kinds::<DecisionExchange>(&path, &[DECIDE])?;
        let (replay, record) = mode.plan(&path, loaded.is_some())?;
        let mut recorded = Vec::new();
        let mut queues: HashMap<String, VecDeque<usize>> = HashMap::new();
        for (line, mut exchange) in loaded.unwrap_or_default() {
            let request = exchange
                .check()
                .map_err(|reason| CassetteError::Malformed {
                    path: path.clone(),
                    line,
                    reason,
                })?;
            // Cleaned again with today's sanitizer, as live requests are before matching.
            exchange.request = RecordedDecisionRequest::of(&request, None, &sanitizer);
            queues
                .entry(exchange.request.fingerprint())
                .or_default()
                .push_back(recorded.len());
            recorded.push(Recorded {
                line,
                exchange,
                served: false,
            });
        }
        Ok(CassetteDecisionClient {
            inner: client,
            appender: Appender::new(path.clone()),
            path,
            sanitizer,
            replay,
            record,
            tape: Mutex::new(Tape { recorded, queues }),
        })
    }
}

struct Recorded {
    /// The 1-based line of the file: the exchange's name in messages.
    line: usize,
    exchange: DecisionExchange,
    served: bool,
}

struct Tape {
    recorded: Vec<Recorded>,
    /// The unserved exchanges of each fingerprint, in recorded order.
    queues: HashMap<String, VecDeque<usize>>,
}

/// A [`DecisionClient`] that records its inner client's decisions to a [`Cassette`] and
/// replays them; build it with [`Cassette::decision_client`].
///
/// The exchanges go to the same JSON Lines file as a provider's, as their own kind
/// (`"kind": "decide"`): the request (the model, the state sanitized, the questions),
/// then the response or the failure. One cassette may hold both kinds; each wrapper reads
/// its own and leaves the other's lines alone.
///
/// A request is matched by a fingerprint of what determines its answer: the model (the
/// request's, else the client's [default](DecisionClient::default_model)), the state and
/// the questions (ids, kinds, texts, options). Not the host's request id, which changes on
/// every run and is not recorded. The same request recorded several times is served in
/// recorded order.
///
/// A recorded response is read back through [`DecisionResponse`]'s checked
/// deserialization (each probability in [0, 1], each distribution summing to 1, a
/// selected choice the most probable) and checked against its recorded request when the
/// cassette is opened: a line that fails, edited by hand or left by a version that
/// checked less, is a [`CassetteError::Malformed`] naming the cassette, the line and what
/// is wrong. A replayed response says so ([`DecisionResponse::replayed`]); the typed
/// answers of the DSL's decision methods ([`Binary`](crate::Binary),
/// [`Choice`](crate::Choice), [`Score`](crate::Score)) are plain values with no room
/// for it: ask through [`IntentClient::decide`](crate::IntentClient::decide) to see it,
/// or check [`CassetteDecisionClient::unserved`] at the end of a test.
///
/// Replayed responses are marked [`replayed`](DecisionResponse::replayed) and carry no
/// request id; recorded ones are appended as they finish, one line each under a lock
/// that other processes recording into the same file respect too.
pub struct CassetteDecisionClient<D> {
    inner: D,
    path: PathBuf,
    sanitizer: Sanitizer,
    replay: bool,
    record: bool,
    appender: Appender,
    tape: Mutex<Tape>,
}

impl<D: fmt::Debug> fmt::Debug for CassetteDecisionClient<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CassetteDecisionClient")
            .field("inner", &self.inner)
            .field("path", &self.path)
            .field("replay", &self.replay)
            .field("record", &self.record)
            .finish_non_exhaustive()
    }
}

/// What the tape has for a request.
enum Lookup {
    /// The exchange's line, and its response or failure.
    Found(
        usize,
        Result<DecisionResponse, Option<RecordedDecisionError>>,
    ),
    Missing(String),
}

impl<D> CassetteDecisionClient<D> {
    /// The cassette's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many recorded decisions have not been served yet: zero at the end of a test
    /// that asked every recorded decision.
    pub fn unserved(&self) -> usize {
        self.tape().recorded.iter().filter(|r| !r.served).count()
    }

    fn tape(&self) -> std::sync::MutexGuard<'_, Tape> {
        // A poisoned lock only means a caller panicked while holding it: the tape is a
        // list and a few queues, consistent between statements.
        self.tape
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the next unserved exchange recorded for `request`, or says why there is none.
    fn take(&self, request: &RecordedDecisionRequest, fingerprint: &str) -> Lookup {
        let mut tape = self.tape();
        if let Some(index) = tape
            .queues
            .get_mut(fingerprint)
            .and_then(VecDeque::pop_front)
        {
            let recorded = &mut tape.recorded[index];
            recorded.served = true;
            let exchange = &recorded.exchange;
            // One of the two is there: checked when the cassette was opened.
            let answer = exchange
                .response
                .clone()
                .ok_or_else(|| exchange.error.clone());
            return Lookup::Found(recorded.line, answer);
        }
        Lookup::Missing(self.explain_missing(&tape, request, fingerprint))
    }

    /// Why no exchange answers `request`: the nearest recorded one and what differs.
    fn explain_missing(
        &self,
        tape: &Tape,
        request: &RecordedDecisionRequest,
        fingerprint: &str,
    ) -> String {
        let path = self.path.display();
        let short = &fingerprint[..fingerprint.len().min(12)];
        let head = format!(
            "the cassette {path} has no exchange left for this decision request (fingerprint {short})"
        );
        let advice = "re-record it (CassetteMode::RecordNew appends what is missing; deleting the file records it all again)";
        let same: Vec<String> = tape
            .recorded
            .iter()
            .filter(|r| r.exchange.request.fingerprint() == fingerprint)
            .map(|r| r.line.to_string())
            .collect();
        if !same.is_empty() {
            return format!(
                "{head}: it was recorded {} time(s) (exchange(s) {}) and each was served already: the code asks it more often than when it was recorded; {advice}",
                same.len(),
                same.join(", ")
            );
        }
        let nearest = tape
            .recorded
            .iter()
            .map(|r| (r, r.exchange.request.differences(request)))
            .min_by_key(|(_, differences)| differences.len());
        match nearest {
            None => format!("{head}: the cassette holds no decision; {advice}"),
            Some((r, differences)) => format!(
                "{head}: the nearest recorded decision, exchange {} (line {} of {path}), differs in {}; {advice}",
                r.line,
                r.line,
                differences.join("; ")
            ),
        }
    }

    /// The recorded answer of exchange `line`, served for `request`.
    fn replayed(
        &self,
        line: usize,
        answer: Result<DecisionResponse, Option<RecordedDecisionError>>,
        request: &DecisionRequest,
    ) -> Result<DecisionResponse, DecisionError> {
        match answer {
            // Checked against its recorded request when the cassette was opened; the
            // request asked now has the same fingerprint, so the same questions.
            Ok(response) => response
                .answering(request)
                .map(DecisionResponse::mark_replayed)
                .map_err(|error| {
                    DecisionError::invalid_response(format!(
                        "exchange {line} (line {line} of the cassette {}) does not answer this request: {}",
                        self.path.display(),
                        error.message()
                    ))
                }),
            Err(Some(error)) => Err(error.to_error()),
            Err(None) => Err(DecisionError::invalid_response(format!(
                "exchange {line} (line {line} of the cassette {}) holds neither a response nor an error",
                self.path.display()
            ))),
        }
    }

    /// Appends an exchange; a failure to write is logged, not raised: the decision itself
    /// was made, and the next run will record what is missing.
    fn append(&self, exchange: &DecisionExchange) {
        if let Err(error) = self.appender.append(exchange) {
            tracing::error!(cassette = %self.path.display(), %error, "a decision could not be recorded");
        }
    }
}

#[async_trait::async_trait]
impl<D: DecisionClient> DecisionClient for CassetteDecisionClient<D> {
    async fn decide(&self, request: &DecisionRequest) -> Result<DecisionResponse, DecisionError> {
        let record =
            RecordedDecisionRequest::of(request, self.inner.default_model(), &self.sanitizer);
        let fingerprint = record.fingerprint();
        if self.replay {
            match self.take(&record, &fingerprint) {
                Lookup::Found(line, answer) => return self.replayed(line, answer, request),
                Lookup::Missing(why) if !self.record => {
                    // Nothing was sent, and asking again cannot help: a configuration
                    // failure, as a provider cassette's miss is.
                    return Err(DecisionError::new(FailureKind::NotSent, why));
                }
                Lookup::Missing(_) => {}
            }
        }
        let answer = self.inner.decide(request).await;
        let clean = |text: &str| self.sanitizer.clean(text);
        let exchange = DecisionExchange {
            kind: DecideKind::Decide,
            fingerprint,
            request: record,
            response: answer
                .as_ref()
                .ok()
                .map(|response| response.for_cassette(clean)),
            error: answer
                .as_ref()
                .err()
                .map(|error| RecordedDecisionError::of(error, clean)),
        };
        self.append(&exchange);
        answer
    }

    fn default_model(&self) -> Option<&str> {
        self.inner.default_model()
    }
}

#[cfg(test)]
mod tests;
