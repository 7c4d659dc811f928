//! The cassette file: one exchange per line of JSON, in a fixed field order, read whole
//! when a cassette is opened and appended to one line at a time.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::CassetteError;
use super::fingerprint::{CallKind, RecordedRequest};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply, TokenLogprob};
use crate::result::Usage;

/// One recorded exchange: the request, and the reply (for a stream, its pieces too) or
/// the error it met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Exchange {
    /// How the call was made.
    pub kind: CallKind,
    /// The request's fingerprint when it was recorded: for a person reading the file;
    /// matching recomputes it from `request`, so a hand-edited request matches as edited.
    pub fingerprint: String,
    /// The provider that answered (its [`name`](crate::provider::Provider::name)).
    pub provider: String,
    /// The request, sanitized.
    pub request: RecordedRequest,
    /// A stream's text pieces, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pieces: Option<Vec<String>>,
    /// The reply, when the call succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<RecordedReply>,
    /// The error, when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedError>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Token counts, only those that are not zero written.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct RecordedUsage {
    #[serde(default, skip_serializing_if = "is_zero")]
    input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    output_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    cached_input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    cache_write_input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    reasoning_tokens: u64,
}

/// A reply as a cassette keeps it: everything but the HTTP request id, which changes on
/// every run and determines nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordedReply {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusal_categories: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub usage: RecordedUsage,
    #[serde(default)]
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<TokenLogprob>>,
}

impl RecordedReply {
    pub(crate) fn of(reply: &ProviderReply, clean: impl Fn(&str) -> String) -> Self {
        let usage = reply.usage;
        Self {
            text: clean(&reply.text),
            refusal: reply.refusal.as_deref().map(&clean),
            refusal_categories: reply.refusal_categories.clone(),
            truncated: reply.truncated,
            stop_reason: reply.stop_reason.clone(),
            usage: RecordedUsage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cached_input_tokens: usage.cached_input_tokens,
                cache_write_input_tokens: usage.cache_write_input_tokens,
                reasoning_tokens: usage.reasoning_tokens,
            },
            model: reply.model.clone(),
            response_id: reply.response_id.clone(),
            logprobs: reply.logprobs.clone(),
        }
    }

    /// The reply served on replay, marked as replayed.
    pub(crate) fn into_reply(self) -> ProviderReply {
        let usage = self.usage;
        ProviderReply {
            text: self.text,
            refusal: self.refusal,
            refusal_categories: self.refusal_categories,
            route: None,
            truncated: self.truncated,
            stop_reason: self.stop_reason,
            usage: Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cached_input_tokens: usage.cached_input_tokens,
                cache_write_input_tokens: usage.cache_write_input_tokens,
                reasoning_tokens: usage.reasoning_tokens,
            },
            model: self.model,
            request_id: None,
            response_id: self.response_id,
            logprobs: self.logprobs,
            replayed: true,
        }
    }
}

/// A failed call as a cassette keeps it. The wait a rate limit asked for is not kept: a
/// replay has nothing to wait for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordedError {
    /// The kind, as `ProviderErrorKind::as_str` names it (`rate_limited`).
    pub kind: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub transient: bool,
    pub sent: bool,
}

impl RecordedError {
    pub(crate) fn of(error: &ProviderError, clean: impl Fn(&str) -> String) -> Self {
        Self {
            kind: error.kind().as_str().to_owned(),
            message: clean(error.message()),
            status: error.status(),
            transient: error.is_transient(),
            sent: error.request_sent(),
        }
    }

    /// The error served on replay, from `provider`.
    pub(crate) fn to_error(&self, provider: &str) -> ProviderError {
        let kind =
            ProviderErrorKind::from_name(&self.kind).unwrap_or(ProviderErrorKind::InvalidResponse);
        let mut error =
            ProviderError::new(kind, provider, self.message.clone()).with_transient(self.transient);
        if let Some(status) = self.status {
            error = error.with_status(status);
        }
        if self.transient {
            // Retried at once: the recorded wait was the live provider's, not the replay's.
            error = error.with_retry_after(Duration::ZERO);
        }
        if !self.sent {
            error = error.not_sent();
        }
        error
    }
}

/// The exchange kinds [`read`] keeps: a provider's calls.
const PROVIDER_KINDS: &[&str] = &["complete", "stream"];

/// Every exchange kind a cassette may hold: a provider's calls, and the decisions a
/// decision client answered over its own API (read by the decision cassette).
const KNOWN_KINDS: &[&str] = &["complete", "stream", "decide"];

/// Reads the provider exchanges of the cassette at `path`, in order, each with its line
/// number; `None` when there is no file. See [`read_kinds`].
pub(crate) fn read(path: &Path) -> Result<Option<Vec<(usize, Exchange)>>, CassetteError> {
    read_kinds(path, PROVIDER_KINDS)
}

/// Only the `kind` of a line, read first to route the line to its reader.
#[derive(Deserialize)]
struct KindOnly<'a> {
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
}

/// Reads the exchanges of the cassette at `path` whose `kind` is one of `kinds`, in order,
/// each with its line number; `None` when there is no file. Lines of the other known kinds
/// belong to another reader and are skipped (one cassette may hold a provider's calls and
/// a decision client's). A last line cut short (a crash while it was written) is left out
/// with a warning; any other line that is not an exchange is an error.
pub(crate) fn read_kinds<T: DeserializeOwned>(
    path: &Path,
    kinds: &[&str],
) -> Result<Option<Vec<(usize, T)>>, CassetteError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(CassetteError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut exchanges = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<KindOnly<'_>>(line).and_then(|found| {
            if kinds.contains(&found.kind.as_ref()) {
                serde_json::from_str::<T>(line).map(Some)
            } else if KNOWN_KINDS.contains(&found.kind.as_ref()) {
                Ok(None)
            } else {
                Err(serde::de::Error::custom(format!(
                    "`{}` is not a kind of exchange (expected one of {})",
                    found.kind,
                    KNOWN_KINDS.join(", ")
                )))
            }
        });
        match parsed {
            Ok(Some(exchange)) => exchanges.push((index + 1, exchange)),
            Ok(None) => {}
            Err(_) if index + 1 == lines.len() && !complete => {
                tracing::warn!(
                    cassette = %path.display(),
                    line = index + 1,
                    "the cassette's last line is cut short (a recording stopped while writing it); it is left out"
                );
            }
            Err(error) => {
                return Err(CassetteError::Malformed {
                    path: path.to_owned(),
                    line: index + 1,
                    reason: error.to_string(),
                });
            }
        }
    }
    Ok(Some(exchanges))
}

/// Appends exchanges to a cassette, one whole line per write, so that concurrent calls
/// never interleave and a crash loses at most the exchange being written.
///
/// Each line is written under this appender's mutex (the calls of one wrapper) and an
/// exclusive advisory lock on the file (`flock`, `LockFileEx`): other wrappers of the
/// same cassette, and other processes recording into it (test binaries run in parallel),
/// wait for the line to be written whole. The lock is held for one write, and the file
/// stays open between writes.
#[derive(Debug)]
pub(crate) struct Appender {
    path: PathBuf,
    file: Mutex<Option<File>>,
}

/// Releases the file lock when the write is done, on every path out.
struct Locked<'a>(&'a File);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // Unlocking cannot fail on a file this process locked; were it to, closing the
        // file (when the cassette is dropped) releases the lock.
        let _ = fs4::FileExt::unlock(self.0);
    }
}

impl Appender {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            file: Mutex::new(None),
        }
    }

    /// Writes `exchange` as one line at the end of the file, creating the file (and its
    /// folder) on the first write.
    pub(crate) fn append<T: Serialize>(&self, exchange: &T) -> Result<(), CassetteError> {
        let mut line = serde_json::to_string(exchange).map_err(|error| CassetteError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(error),
        })?;
        line.push('\n');
        let failed = |source| CassetteError::Write {
            path: self.path.clone(),
            source,
        };
        // A poisoned lock only means another writer panicked between writes: the file
        // holds whole lines, so writing on is safe.
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if file.is_none() {
            if let Some(folder) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(folder).map_err(failed)?;
            }
            // Readable too: the last byte is read to find a line cut short.
            let opened = OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(&self.path)
                .map_err(failed)?;
            *file = Some(opened);
        }
        let Some(file) = file.as_mut() else {
            return Ok(());
        };
        // Called as the crate's function, not as a method: std's `File::lock` (newer than
        // this crate's minimum Rust) would be picked over it where it exists.
        fs4::FileExt::lock(&*file).map_err(failed)?;
        let _locked = Locked(file);
        // A writer that died mid-line left a line without its end: this line starts on a
        // line of its own, so that the cut one stays alone (and is reported) instead of
        // swallowing this one.
        if !ends_a_line(file).map_err(failed)? {
            line.insert(0, '\n');
        }
        // One write of the whole line, at the end (`O_APPEND`), under the lock.
        (&*file).write_all(line.as_bytes()).map_err(failed)?;
        Ok(())
    }
}

/// Whether the file is empty or ends with a line end.
fn ends_a_line(mut file: &File) -> std::io::Result<bool> {
    if file.metadata()?.len() == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;

    fn path(name: &str) -> PathBuf {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "intent-cassette-file-{}-{n}-{name}.jsonl",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        path
    }

    #[test]
    fn an_append_waits_while_another_handle_holds_the_files_lock() {
        let path = path("locked");
        std::fs::write(&path, "").unwrap();
        // Another writer (another process, or another wrapper of the same cassette)
        // holding the lock.
        let holder = File::open(&path).unwrap();
        fs4::FileExt::lock(&holder).unwrap();
        let appender = Arc::new(Appender::new(path.clone()));
        let (done, finished) = mpsc::channel();
        let writer = std::thread::spawn(move || {
            appender.append(&json!({"kind": "decide"})).unwrap();
            done.send(()).unwrap();
        });
        assert!(
            finished.recv_timeout(Duration::from_millis(300)).is_err(),
            "the line was written while another handle held the lock"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        fs4::FileExt::unlock(&holder).unwrap();
        finished.recv_timeout(Duration::from_secs(10)).unwrap();
        writer.join().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"kind\":\"decide\"}\n"
        );
    }

    #[test]
    fn writers_with_their_own_handles_never_interleave_lines() {
        let path = path("two-writers");
        // Lines far larger than a pipe's or a page's atomic write.
        let filler = "x".repeat(256 * 1024);
        let writers: Vec<_> = (0..2)
            .map(|writer| {
                let appender = Appender::new(path.clone());
                let filler = filler.clone();
                std::thread::spawn(move || {
                    for n in 0..20 {
                        let line =
                            json!({"kind": "decide", "writer": writer, "n": n, "filler": filler});
                        appender.append(&line).unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut seen = [0; 2];
        for line in text.lines() {
            let value: Value = serde_json::from_str(line).expect("a whole line");
            assert_eq!(value["filler"].as_str().map(str::len), Some(filler.len()));
            seen[value["writer"].as_u64().unwrap() as usize] += 1;
        }
        assert_eq!(seen, [20, 20]);
    }

    #[test]
    fn a_line_cut_short_by_a_writer_that_died_is_kept_apart_from_the_next() {
        let path = path("cut");
        std::fs::write(&path, "{\"kind\": \"complete\", \"fingerpr").unwrap();
        Appender::new(path.clone())
            .append(&json!({"kind": "decide"}))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"kind\": \"complete\", \"fingerpr\n{\"kind\":\"decide\"}\n"
        );
    }

    #[test]
    fn each_reader_keeps_its_own_kinds_and_refuses_an_unknown_one() {
        let path = path("kinds");
        std::fs::write(
            &path,
            "{\"kind\": \"decide\", \"x\": 1}\n{\"kind\": \"stream\", \"x\": 2}\n",
        )
        .unwrap();
        let decisions = read_kinds::<Value>(&path, &["decide"]).unwrap().unwrap();
        assert_eq!(decisions.len(), 1);
        assert_eq!(decisions[0].0, 1);
        std::fs::write(&path, "{\"kind\": \"telepathy\"}\n").unwrap();
        let error = read_kinds::<Value>(&path, &["decide"]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("`telepathy` is not a kind of exchange"),
            "{error}"
        );
    }
}
