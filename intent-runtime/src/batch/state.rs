//! A batch job's state on disk: what was submitted, under which provider batch id, and
//! every request's outcome once it came back; enough for a stopped process to resume
//! without submitting anything twice or losing anything that finished.
//!
//! Layout of the job's directory:
//!
//! - `job.json`: the job's random id, the provider, the number of items, when the job
//!   started, whether it was canceled, and each submission's sequence number, state,
//!   tag (`<job id>-<n>`), time and provider batch id.
//! - `submission-<n>.requests.jsonl`: the requests of submission `n` (item, request
//!   number, fingerprint), written before the batch is created.
//! - `queue-<n>.jsonl`: the lines of the requests waiting for their submission, one file
//!   per model, uploaded from there and removed once their batches are created (a run
//!   that stops leaves them; the next removes them and makes its requests again).
//! - `verdicts.jsonl`: the judge's verdicts on the items (see `verdicts.rs`).
//! - `submission-<n>.results.jsonl`: the outcome of each of them, written once the batch
//!   ended.
//!
//! Every state file is written whole to a temporary file in the same directory and renamed
//! over its name, so a crash leaves the old state or the new one, never half of one.
//!
//! A submission is recorded (`preparing`, with its tag) before its batch is created and
//! marked `submitted` with the batch's id once the provider answers. A process that stops
//! between the two leaves it `preparing`; the next run asks the provider for the batch
//! (`BatchApi::find`: OpenAI by the tag in the batch's metadata, Anthropic by size and
//! creation time) and adopts it when found, so its requests are not sent twice.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{BatchError, spool};
use crate::provider::ResponseFormat;
use crate::provider::batch::Outcome;
use crate::provider::batch::outcome::StoredOutcome;
use crate::result::Cause;

/// The version of the layout; a directory of another version is refused. (Version 2:
/// fingerprints by part, checked before a stored result is used.)
const VERSION: u32 = 2;

/// One request of a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RequestRef {
    pub item: u32,
    pub k: u32,
    /// The request's fingerprint, to notice a directory reused for other inputs.
    pub fingerprint: Fingerprint,
}

/// Where a submission stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SubmissionState {
    /// Recorded, not yet known to be created at the provider: on resume, the provider is
    /// asked for it by its tag.
    Preparing,
    /// Created: `batch_id` is set, results not yet read.
    Submitted,
    /// Its results are in its results file.
    Collected,
    /// Never created (the provider refused it, or a resumed run did not find it at the
    /// provider); its requests go out again.
    Abandoned,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Submission {
    pub seq: u64,
    pub state: SubmissionState,
    /// The tag the batch carries at the provider, where it keeps one: the job's id and
    /// the sequence number.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tag: String,
    /// When the submission was recorded, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub began_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<String>,
    pub model: String,
    pub requests: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct JobFile {
    version: u32,
    /// A random id, unique to the job: its submissions' tags start with it.
    #[serde(default)]
    job_id: String,
    provider: String,
    items: usize,
    /// Milliseconds since the Unix epoch when the job first started: its time limit
    /// counts from there, across restarts.
    started_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    canceled: Option<String>,
    submissions: Vec<Submission>,
}

/// A submission recorded but not known to be created: the process stopped between the
/// two. The provider is asked whether it has the batch before anything goes out again.
#[derive(Debug)]
pub(crate) struct Unconfirmed {
    pub seq: u64,
    pub tag: String,
    pub requests: usize,
    pub began_at_ms: u64,
}

/// A submission that was created and whose results are still to be read.
#[derive(Debug)]
pub(crate) struct Inflight {
    pub seq: u64,
    pub batch_id: String,
    pub requests: HashMap<(u32, u32), Fingerprint>,
}

/// The job's state directory.
#[derive(Debug)]
pub(crate) struct JobState {
    dir: PathBuf,
    file: JobFile,
}

/// What a reopened directory holds.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// Outcomes read back from collected submissions, by (item, request number), each
    /// with the fingerprint of the request it answers.
    pub replay: HashMap<(u32, u32), (Fingerprint, Outcome)>,
    /// Submissions created and not yet collected.
    pub inflight: Vec<Inflight>,
    /// Submissions recorded and perhaps created: see [`JobState::adopted`].
    pub unconfirmed: Vec<Unconfirmed>,
    /// Collected submissions whose results file lacks some of their requests (a write
    /// cut short by a full disk, a file edited or lost): those requests, to be read again
    /// from the provider's copy of the results.
    pub cut_short: Vec<Inflight>,
}

fn io_error(path: &Path, error: std::io::Error) -> BatchError {
    BatchError::State {
        path: path.to_owned(),
        message: error.to_string(),
        cause: Some(Cause::new(error)),
    }
}

/// Writes `path` whole through a temporary file renamed over it.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<(), BatchError> {
    let temporary = temporary_path(path);
    let result = (|| {
        let mut out = BufWriter::new(File::create(&temporary)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(|error| error.into_error())?;
        file.sync_all()?;
        fs::rename(&temporary, path)
    })();
    result.map_err(|error| {
        let _ = fs::remove_file(&temporary);
        io_error(path, error)
    })
}

fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    path.with_file_name(name)
}

/// A random id for a new job (64 bits, as hex), mixed with the time so that two jobs
/// started from one seed still differ.
fn new_job_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64);
    format!("{:016x}", fastrand::u64(..) ^ nanos.rotate_left(17))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

impl JobState {
    /// Opens the job's directory, creating it for a new job, and reads back what an
    /// earlier run left: `provider` and `items` must match it.
    pub(crate) fn open(
        dir: &Path,
        provider: &str,
        items: usize,
    ) -> Result<(Self, Loaded), BatchError> {
        fs::create_dir_all(dir).map_err(|error| io_error(dir, error))?;
        let path = dir.join("job.json");
        let file = match fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice::<JobFile>(&bytes).map_err(|error| BatchError::State {
                    path: path.clone(),
                    message: format!("not a batch job's state ({error})"),
                    cause: Some(Cause::new(error)),
                })?
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => JobFile {
                version: VERSION,
                job_id: new_job_id(),
                provider: provider.to_owned(),
                items,
                started_at_ms: now_ms(),
                canceled: None,
                submissions: Vec::new(),
            },
            Err(error) => return Err(io_error(&path, error)),
        };
        if file.version != VERSION || file.provider != provider || file.items != items {
            return Err(BatchError::OtherJob {
                dir: dir.to_owned(),
                difference: format!(
                    "it holds {} items through {} (state layout {}), and this job has {items} items through {provider} (layout {VERSION})",
                    file.items, file.provider, file.version
                ),
            });
        }
        let mut state = JobState {
            dir: dir.to_owned(),
            file,
        };
        let mut loaded = Loaded::default();
        let mut changed = false;
        for submission in &mut state.file.submissions {
            match submission.state {
                SubmissionState::Collected => {
                    let requests = read_requests(&requests_path(dir, submission.seq))?;
                    let mut results = read_results(&results_path(dir, submission.seq))?;
                    let mut lost = HashMap::new();
                    for (key, fingerprint) in requests {
                        match results.remove(&key) {
                            Some(outcome) => {
                                loaded.replay.insert(key, (fingerprint, outcome));
                            }
                            None => {
                                lost.insert(key, fingerprint);
                            }
                        }
                    }
                    if !lost.is_empty() {
                        loaded.cut_short.push(Inflight {
                            seq: submission.seq,
                            batch_id: submission.batch_id.clone().unwrap_or_default(),
                            requests: lost,
                        });
                    }
                }
                SubmissionState::Submitted => {
                    let path = requests_path(dir, submission.seq);
                    let requests = read_requests(&path)?;
                    loaded.inflight.push(Inflight {
                        seq: submission.seq,
                        batch_id: submission.batch_id.clone().unwrap_or_default(),
                        requests,
                    });
                }
                // The process stopped before the provider's answer to the creation was
                // recorded: the provider may have created the batch. The job asks it
                // (by the tag) before anything goes out again.
                SubmissionState::Preparing if !submission.tag.is_empty() => {
                    loaded.unconfirmed.push(Unconfirmed {
                        seq: submission.seq,
                        tag: submission.tag.clone(),
                        requests: submission.requests,
                        began_at_ms: submission.began_at_ms,
                    });
                }
                SubmissionState::Preparing => {
                    submission.state = SubmissionState::Abandoned;
                    changed = true;
                }
                SubmissionState::Abandoned => {}
            }
        }
        // A request whose lost result a later submission answered again is not lost.
        for cut in &mut loaded.cut_short {
            cut.requests.retain(|key, _| {
                !loaded.replay.contains_key(key)
                    && !loaded
                        .inflight
                        .iter()
                        .any(|later| later.requests.contains_key(key))
            });
        }
        loaded.cut_short.retain(|cut| !cut.requests.is_empty());
        if state.file.job_id.is_empty() {
            state.file.job_id = new_job_id();
            changed = true;
        }
        if changed || !path.exists() {
            state.save()?;
        }
        spool::clear(dir)?;
        Ok((state, loaded))
    }

    fn save(&self) -> Result<(), BatchError> {
        let path = self.dir.join("job.json");
        write_atomically(&path, |out| {
            serde_json::to_writer_pretty(&mut *out, &self.file)?;
            out.write_all(b"\n")
        })
    }

    /// When the job first started.
    pub(crate) fn started_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.file.started_at_ms)
    }

    /// Why the job was canceled, when it was.
    pub(crate) fn canceled(&self) -> Option<&str> {
        self.file.canceled.as_deref()
    }

    /// How many provider batches were created for the job so far.
    pub(crate) fn batches(&self) -> usize {
        self.file
            .submissions
            .iter()
            .filter(|s| {
                matches!(
                    s.state,
                    SubmissionState::Submitted | SubmissionState::Collected
                ) && s.batch_id.is_some()
            })
            .count()
    }

    /// Records that the job was canceled, for `reason`.
    pub(crate) fn set_canceled(&mut self, reason: &str) -> Result<(), BatchError> {
        self.file.canceled = Some(reason.to_owned());
        self.save()
    }

    /// Every provider batch id the job recorded.
    pub(crate) fn batch_ids(&self) -> Vec<String> {
        self.file
            .submissions
            .iter()
            .filter_map(|s| s.batch_id.clone())
            .collect()
    }

    /// Records that the unconfirmed submission `seq` was found at the provider as
    /// `batch_id`: it is in flight.
    pub(crate) fn adopted(&mut self, seq: u64, batch_id: &str) -> Result<Inflight, BatchError> {
        let requests = read_requests(&requests_path(&self.dir, seq))?;
        self.submitted(seq, batch_id)?;
        Ok(Inflight {
            seq,
            batch_id: batch_id.to_owned(),
            requests,
        })
    }

    /// The tag of submission `seq`.
    pub(crate) fn tag(&self, seq: u64) -> String {
        format!("{}-{seq}", self.file.job_id)
    }

    /// Records a submission about to be created: its requests first, then its entry;
    /// its sequence number.
    pub(crate) fn begin(
        &mut self,
        model: &str,
        requests: &[RequestRef],
    ) -> Result<u64, BatchError> {
        let seq = self.file.submissions.last().map_or(1, |s| s.seq + 1);
        write_atomically(&requests_path(&self.dir, seq), |out| {
            for request in requests {
                serde_json::to_writer(&mut *out, request)?;
                out.write_all(b"\n")?;
            }
            Ok(())
        })?;
        let tag = self.tag(seq);
        self.file.submissions.push(Submission {
            seq,
            state: SubmissionState::Preparing,
            tag,
            began_at_ms: now_ms(),
            batch_id: None,
            model: model.to_owned(),
            requests: requests.len(),
        });
        self.save()?;
        Ok(seq)
    }

    fn submission(&mut self, seq: u64) -> Option<&mut Submission> {
        self.file.submissions.iter_mut().find(|s| s.seq == seq)
    }

    /// Records that submission `seq` was created as the provider's batch `batch_id`.
    pub(crate) fn submitted(&mut self, seq: u64, batch_id: &str) -> Result<(), BatchError> {
        if let Some(submission) = self.submission(seq) {
            submission.state = SubmissionState::Submitted;
            submission.batch_id = Some(batch_id.to_owned());
        }
        self.save()
    }

    /// Records that submission `seq` was never created.
    pub(crate) fn abandoned(&mut self, seq: u64) -> Result<(), BatchError> {
        if let Some(submission) = self.submission(seq) {
            submission.state = SubmissionState::Abandoned;
        }
        self.save()
    }

    /// A writer of submission `seq`'s results, committed by [`JobState::collected`]. The
    /// lines its file already holds whole come first: a submission whose file lost lines
    /// is written again with the lost ones added, never with fewer than it had.
    pub(crate) fn results_writer(&self, seq: u64) -> Result<ResultsWriter, BatchError> {
        let path = results_path(&self.dir, seq);
        let kept = read_results(&path)?;
        let temporary = temporary_path(&path);
        let file = File::create(&temporary).map_err(|error| io_error(&temporary, error))?;
        let mut writer = ResultsWriter {
            seq,
            path,
            temporary,
            out: BufWriter::new(file),
            error: None,
        };
        for (&(item, k), outcome) in &kept {
            writer.write(item, k, outcome);
        }
        Ok(writer)
    }

    /// Renames the results in place and marks submission `seq` collected.
    pub(crate) fn collected(&mut self, writer: ResultsWriter) -> Result<(), BatchError> {
        let seq = writer.seq;
        writer.commit()?;
        if let Some(submission) = self.submission(seq) {
            submission.state = SubmissionState::Collected;
        }
        self.save()
    }
}

fn requests_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("submission-{seq}.requests.jsonl"))
}

fn results_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("submission-{seq}.results.jsonl"))
}

fn read_lines(
    path: &Path,
    mut each: impl FnMut(&str) -> Result<(), String>,
) -> Result<(), BatchError> {
    let file = File::open(path).map_err(|error| io_error(path, error))?;
    for line in BufReader::new(file).lines() {
        let line = line.map_err(|error| io_error(path, error))?;
        if line.trim().is_empty() {
            continue;
        }
        each(&line).map_err(|message| BatchError::State {
            path: path.to_owned(),
            message,
            cause: None,
        })?;
    }
    Ok(())
}

fn read_requests(path: &Path) -> Result<HashMap<(u32, u32), Fingerprint>, BatchError> {
    let mut requests = HashMap::new();
    read_lines(path, |line| {
        let request: RequestRef = serde_json::from_str(line).map_err(|e| e.to_string())?;
        requests.insert((request.item, request.k), request.fingerprint);
        Ok(())
    })?;
    Ok(requests)
}

/// The outcomes stored in a results file, by (item, request number). A line that cannot
/// be read (cut short by a crash or a full disk) is left out, and a missing file holds
/// none: the job reads those results again from the provider.
fn read_results(path: &Path) -> Result<HashMap<(u32, u32), Outcome>, BatchError> {
    let mut results = HashMap::new();
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(results),
        Err(error) => return Err(io_error(path, error)),
    };
    for line in BufReader::new(file).split(b'\n') {
        let line = line.map_err(|error| io_error(path, error))?;
        match serde_json::from_slice::<StoredResult>(&line) {
            Ok(stored) => {
                results.insert((stored.item, stored.k), stored.outcome.into_outcome());
            }
            Err(_) if line.iter().all(u8::is_ascii_whitespace) => {}
            Err(error) => tracing::warn!(
                path = %path.display(),
                %error,
                "a stored batch result could not be read; it is read again from the provider"
            ),
        }
    }
    Ok(results)
}

/// Writes one submission's results, line by line, to a temporary file.
#[derive(Debug)]
pub(crate) struct ResultsWriter {
    seq: u64,
    path: PathBuf,
    temporary: PathBuf,
    out: BufWriter<File>,
    error: Option<std::io::Error>,
}

impl ResultsWriter {
    /// Appends the outcome of request `k` of `item`; a write error is kept for
    /// [`ResultsWriter::commit`].
    pub(crate) fn write(&mut self, item: u32, k: u32, outcome: &Outcome) {
        if self.error.is_some() {
            return;
        }
        let line = StoredResultRef {
            item,
            k,
            outcome: StoredOutcome::of(outcome),
        };
        let written = serde_json::to_writer(&mut self.out, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        if let Err(error) = written {
            self.error = Some(error);
        }
    }

    fn commit(self) -> Result<(), BatchError> {
        let ResultsWriter {
            path,
            temporary,
            out,
            error,
            ..
        } = self;
        let result = match error {
            Some(error) => Err(error),
            None => out
                .into_inner()
                .map_err(|error| error.into_error())
                .and_then(|file| file.sync_all())
                .and_then(|()| fs::rename(&temporary, &path)),
        };
        result.map_err(|error| {
            let _ = fs::remove_file(&temporary);
            io_error(&path, error)
        })
    }
}

#[derive(Serialize)]
struct StoredResultRef {
    item: u32,
    k: u32,
    outcome: StoredOutcome,
}

#[derive(Deserialize)]
struct StoredResult {
    item: u32,
    k: u32,
    outcome: StoredOutcome,
}

/// A request's fingerprint, stored beside everything the job keeps about the request (its
/// submission, its result) and compared before any of it answers a request of a later
/// run: a directory reused for other inputs is refused instead of answering them with
/// another job's replies.
///
/// One FNV-1a hash per part of the request, so that a mismatch can say which part
/// differs; stable across runs and builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Fingerprint([u64; 4]);

/// What each part of a [`Fingerprint`] covers, in the order a mismatch is reported.
const PARTS: [&str; 4] = [
    "the model",
    "the system prompt (the intent and its instructions)",
    "the messages (the input, and on a retry the earlier reply and its problems)",
    "the reply format or the sampling settings (schema, token limit, temperature, log-probabilities)",
];

impl Fingerprint {
    /// The fingerprint of `request`.
    pub(crate) fn of(request: &crate::provider::ProviderRequest) -> Self {
        let mut model = Fnv::default();
        model.write(request.model.as_deref().unwrap_or("").as_bytes());
        let mut system = Fnv::default();
        system.write(request.system.as_bytes());
        let mut messages = Fnv::default();
        for message in &request.messages {
            messages.write(message.role.as_str().as_bytes());
            messages.write(message.content.as_bytes());
        }
        let mut settings = Fnv::default();
        settings.write(match request.response_format {
            ResponseFormat::Text => b"text".as_slice(),
            ResponseFormat::JsonObject => b"json_object",
            ResponseFormat::JsonSchema => b"json_schema",
        });
        settings.write(request.schema_name.as_bytes());
        if let Some(schema) = &request.schema {
            // `Value`'s text is its keys in order: the same schema always writes the same.
            settings.write(schema.to_string().as_bytes());
        }
        settings.write(
            &request
                .max_output_tokens
                .map_or([0xff; 4], u32::to_le_bytes),
        );
        settings.write(
            &request
                .temperature
                .map_or([0xff; 4], |t| t.to_bits().to_le_bytes()),
        );
        settings.write(&[request.top_logprobs.map_or(0xff, |n| n)]);
        // Written only when set, so the fingerprints of other requests stay as they were.
        if request.minimal_thinking {
            settings.write(b"minimal_thinking");
        }
        Fingerprint([model.0, system.0, messages.0, settings.0])
    }

    /// The first part in which `self` (what was stored) and `asked` differ, described;
    /// `None` when they are the same request.
    pub(crate) fn difference(&self, asked: &Fingerprint) -> Option<&'static str> {
        self.0
            .iter()
            .zip(asked.0)
            .position(|(stored, asked)| *stored != asked)
            .map(|part| PARTS[part])
    }

    /// A fingerprint for tests: every part `value`.
    #[cfg(test)]
    pub(crate) fn test(value: u64) -> Self {
        Fingerprint([value; 4])
    }
}

/// The description of a request of this run that differs from the one the directory
/// holds for the same item: for [`BatchError::OtherJob`].
pub(crate) fn item_difference(item: u32, k: u32, what: &str) -> String {
    let request = match k {
        0 => "first request".to_owned(),
        k => format!("request {} (a retry)", k + 1),
    };
    format!("item {item}'s {request} is not the one stored for it: it differs in {what}")
}

/// FNV-1a, stable across runs and builds (unlike std's hasher).
pub(crate) struct Fnv(pub(crate) u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds `bytes`, and a separator.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator, so ("ab", "c") and ("a", "bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply};
    use crate::result::Usage;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("intent-batch-state-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_fingerprint_names_the_first_part_that_differs() {
        use crate::provider::{Message, ProviderRequest};
        let request = ProviderRequest::text("Count the words", "words: a b");
        let same = Fingerprint::of(&request.clone());
        assert_eq!(Fingerprint::of(&request).difference(&same), None);
        let differs = |change: fn(&mut ProviderRequest)| {
            let mut changed = request.clone();
            change(&mut changed);
            Fingerprint::of(&request).difference(&Fingerprint::of(&changed))
        };
        assert_eq!(differs(|r| r.model = Some("other".into())), Some(PARTS[0]));
        assert_eq!(differs(|r| r.system.push('!')), Some(PARTS[1]));
        assert_eq!(
            differs(|r| r.messages.push(Message::user("again"))),
            Some(PARTS[2])
        );
        assert_eq!(differs(|r| r.temperature = Some(0.5)), Some(PARTS[3]));
        assert_eq!(differs(|r| r.top_logprobs = Some(5)), Some(PARTS[3]));
        assert_eq!(differs(|r| r.minimal_thinking = true), Some(PARTS[3]));
        assert_eq!(
            differs(|r| r.schema = Some(std::sync::Arc::new(serde_json::json!({"type": "object"})))),
            Some(PARTS[3])
        );
        // Both the model and the input differ: the model is named.
        assert_eq!(
            differs(|r| {
                r.model = Some("other".into());
                r.system.clear();
            }),
            Some(PARTS[0])
        );
        assert_eq!(
            item_difference(3, 1, PARTS[2]),
            format!(
                "item 3's request 2 (a retry) is not the one stored for it: it differs in {}",
                PARTS[2]
            )
        );
    }

    #[test]
    fn outcomes_round_trip() {
        let reply: Outcome = Ok(ProviderReply {
            text: "{\"value\": 1}".into(),
            stop_reason: Some("stop".into()),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
                cached_input_tokens: 4,
                cache_write_input_tokens: 1,
                reasoning_tokens: 1,
            },
            model: "m".into(),
            request_id: Some("req_1".into()),
            ..ProviderReply::default()
        });
        assert_eq!(StoredOutcome::of(&reply).into_outcome(), reply);
        let error: Outcome =
            Err(
                ProviderError::new(ProviderErrorKind::Canceled, "openai", "stopped")
                    .with_status(499),
            );
        assert_eq!(StoredOutcome::of(&error).into_outcome(), error);
    }

    #[test]
    fn a_submission_left_preparing_is_unconfirmed_and_a_submitted_one_is_in_flight() {
        let dir = temp_dir("reopen");
        let (mut state, loaded) = JobState::open(&dir, "openai", 3).unwrap();
        assert!(loaded.inflight.is_empty());
        let refs = [
            RequestRef {
                item: 0,
                k: 0,
                fingerprint: Fingerprint::test(7),
            },
            RequestRef {
                item: 2,
                k: 0,
                fingerprint: Fingerprint::test(9),
            },
        ];
        let first = state.begin("m", &refs).unwrap();
        state.submitted(first, "batch_1").unwrap();
        let second = state.begin("m", &refs[..1]).unwrap();
        assert_eq!(second, first + 1);
        drop(state);
        let (state, loaded) = JobState::open(&dir, "openai", 3).unwrap();
        assert_eq!(loaded.inflight.len(), 1);
        assert_eq!(loaded.inflight[0].batch_id, "batch_1");
        assert_eq!(
            loaded.inflight[0].requests.get(&(2, 0)),
            Some(&Fingerprint::test(9))
        );
        // The second is unconfirmed until the provider is asked, under its tag.
        assert_eq!(state.file.submissions[1].state, SubmissionState::Preparing);
        assert_eq!(loaded.unconfirmed.len(), 1);
        assert_eq!(loaded.unconfirmed[0].seq, second);
        assert_eq!(loaded.unconfirmed[0].tag, state.tag(second));
        assert!(loaded.unconfirmed[0].tag.len() > 16);
        let mut state = state;
        let adopted = state.adopted(second, "batch_2").unwrap();
        assert_eq!(adopted.requests.get(&(0, 0)), Some(&Fingerprint::test(7)));
        drop(state);
        let (state, loaded) = JobState::open(&dir, "openai", 3).unwrap();
        assert_eq!(loaded.inflight.len(), 2);
        assert!(loaded.unconfirmed.is_empty());
        assert_eq!(state.batch_ids(), ["batch_1", "batch_2"]);
        // Another job's directory is refused.
        let error = JobState::open(&dir, "openai", 4).unwrap_err();
        assert!(matches!(error, BatchError::OtherJob { .. }), "{error}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn collected_results_are_read_back_and_a_failed_write_leaves_no_file() {
        let dir = temp_dir("results");
        let (mut state, _) = JobState::open(&dir, "anthropic", 1).unwrap();
        let seq = state
            .begin(
                "m",
                &[RequestRef {
                    item: 0,
                    k: 0,
                    fingerprint: Fingerprint::test(1),
                }],
            )
            .unwrap();
        state.submitted(seq, "msgbatch_1").unwrap();
        let mut writer = state.results_writer(seq).unwrap();
        writer.write(0, 0, &Ok(ProviderReply::text("hi")));
        state.collected(writer).unwrap();
        let (_, loaded) = JobState::open(&dir, "anthropic", 1).unwrap();
        assert!(loaded.inflight.is_empty());
        assert_eq!(
            loaded.replay.get(&(0, 0)).unwrap().1.as_ref().unwrap().text,
            "hi"
        );
        assert!(fs::read_dir(&dir).unwrap().all(|entry| {
            !entry
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        }));
        let _ = fs::remove_dir_all(&dir);
    }
}
