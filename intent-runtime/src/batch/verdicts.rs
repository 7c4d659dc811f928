//! The judge's verdicts on a batch job's items, kept in the job's directory: a resumed
//! job replays an item's calls from what earlier runs stored, and its judge calls too,
//! so an item already judged is not judged (and paid for) again.
//!
//! `verdicts.jsonl` holds one line per verdict, appended as it comes: the item, the
//! number of the item's judge call, a fingerprint of what the judge was asked, and the
//! judge's answer. A line cut short by a crash is skipped (that verdict is asked again).
//! A failed judge call is not stored.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::BatchError;
use super::router::{Router, current_item};
use crate::judge::{Judge, JudgeReading, JudgeRequest, JudgeResponse, JudgeVerdict};
use crate::provider::ProviderError;
use crate::provider::batch::outcome::StoredOutcome;

const FILE: &str = "verdicts.jsonl";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredReading {
    Verdict { passes: bool, problems: Vec<String> },
    NoVerdict,
    Unreadable(String),
}

#[derive(Debug, Serialize, Deserialize)]
struct Line {
    item: u32,
    /// The item's judge call, counted from 0.
    call: u32,
    hash: u64,
    reading: StoredReading,
    reply: StoredOutcome,
}

#[derive(Debug)]
struct Store {
    /// Verdicts of earlier runs not yet replayed.
    stored: HashMap<(u32, u32), (u64, JudgeResponse)>,
    /// Judge calls made so far, per item.
    calls: Vec<u32>,
    path: PathBuf,
    out: Option<File>,
    /// The file ends in a line cut short: the next line starts on a new one.
    cut: bool,
}

/// A judge that answers a job's items from the verdicts earlier runs stored, and stores
/// the verdicts it asks for.
#[derive(Debug)]
pub(crate) struct RecordedJudge {
    judge: Arc<dyn Judge>,
    store: Mutex<Store>,
    /// Told of a stored verdict that answers another question: the job's directory holds
    /// another job.
    router: Arc<Router>,
}

fn state_error(path: &Path, error: impl std::fmt::Display) -> BatchError {
    BatchError::State {
        path: path.to_owned(),
        message: error.to_string(),
        cause: None,
    }
}

impl RecordedJudge {
    /// `judge`, for a job of `items` items whose directory is `dir` and whose requests
    /// `router` routes.
    pub(crate) fn open(
        judge: Arc<dyn Judge>,
        dir: &Path,
        items: usize,
        router: Arc<Router>,
    ) -> Result<Self, BatchError> {
        let path = dir.join(FILE);
        let mut stored = HashMap::new();
        let mut cut = false;
        match File::open(&path) {
            Ok(mut file) => {
                let mut last = [0u8];
                if file.seek(SeekFrom::End(-1)).is_ok() {
                    cut = file.read_exact(&mut last).is_ok() && last[0] != b'\n';
                }
                file.seek(SeekFrom::Start(0))
                    .map_err(|error| state_error(&path, error))?;
                for line in BufReader::new(file).lines() {
                    let line = line.map_err(|error| state_error(&path, error))?;
                    // A line cut short by a crash: that verdict is asked again.
                    let Ok(line) = serde_json::from_str::<Line>(&line) else {
                        continue;
                    };
                    let reading = match line.reading {
                        StoredReading::Verdict { passes, problems } => {
                            JudgeReading::Verdict(JudgeVerdict { passes, problems })
                        }
                        StoredReading::NoVerdict => JudgeReading::NoVerdict,
                        StoredReading::Unreadable(reason) => JudgeReading::Unreadable(reason),
                    };
                    let Ok(reply) = line.reply.into_outcome() else {
                        continue;
                    };
                    stored.insert(
                        (line.item, line.call),
                        (line.hash, JudgeResponse { reading, reply }),
                    );
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(state_error(&path, error)),
        }
        Ok(Self {
            judge,
            router,
            store: Mutex::new(Store {
                stored,
                calls: vec![0; items],
                path,
                out: None,
                cut,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What to do with an item's judge call.
enum Next {
    /// Answer with what an earlier run stored.
    Stored(Box<JudgeResponse>),
    /// An earlier run stored a verdict for this call that answers another question: the
    /// directory holds another job.
    Other(u32),
    /// Ask the judge: the item's call number `0`.
    Ask(u32),
    /// Not one of the job's items: ask, store nothing.
    NotAnItem,
}

impl Store {
    /// Counts item `item`'s judge call and looks for its stored verdict.
    fn next(&mut self, item: u32, hash: u64) -> Next {
        let Some(calls) = self.calls.get_mut(item as usize) else {
            return Next::NotAnItem;
        };
        let call = *calls;
        *calls += 1;
        match self.stored.remove(&(item, call)) {
            Some((stored, response)) if stored == hash => Next::Stored(Box::new(response)),
            Some(_) => Next::Other(call),
            None => Next::Ask(call),
        }
    }

    /// Appends a verdict; a failure to write is logged (the verdict is asked again on
    /// a resume), never the call's failure.
    fn append(&mut self, line: &Line) {
        let mut text = match serde_json::to_vec(line) {
            Ok(text) => text,
            Err(error) => {
                tracing::warn!(%error, "a judge verdict could not be written as JSON");
                return;
            }
        };
        text.push(b'\n');
        if std::mem::take(&mut self.cut) {
            text.insert(0, b'\n');
        }
        if self.out.is_none() {
            match OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
            {
                Ok(file) => self.out = Some(file),
                Err(error) => {
                    tracing::warn!(path = %self.path.display(), %error, "the judge's verdicts could not be stored");
                    return;
                }
            }
        }
        if let Some(out) = &mut self.out
            && let Err(error) = out.write_all(&text)
        {
            tracing::warn!(path = %self.path.display(), %error, "a judge verdict could not be stored");
        }
    }
}

/// A fingerprint of what the judge is asked, so a stored verdict answers only the same
/// question.
fn fingerprint(request: &JudgeRequest<'_>) -> u64 {
    let mut hash = super::state::Fnv::default();
    hash.write(request.intent.as_bytes());
    hash.write(request.input.as_bytes());
    hash.write(request.candidate.as_bytes());
    hash.write(request.instructions.unwrap_or_default().as_bytes());
    hash.write(request.output_requirements.unwrap_or_default().as_bytes());
    hash.write(request.model.unwrap_or_default().as_bytes());
    hash.0
}

#[async_trait::async_trait]
impl Judge for RecordedJudge {
    async fn judge(&self, request: &JudgeRequest<'_>) -> Result<JudgeResponse, ProviderError> {
        let Some(item) = current_item() else {
            return self.judge.judge(request).await;
        };
        let hash = fingerprint(request);
        let next = self.lock().next(item, hash);
        let call = match next {
            Next::Stored(response) => return Ok(*response),
            Next::Other(call) => {
                let difference = format!(
                    "the judge's stored verdict {} on item {item} answers another question (another intent, input, reply or judge)",
                    call + 1
                );
                return Err(self.router.other_job(item, call, difference));
            }
            Next::Ask(call) => call,
            Next::NotAnItem => return self.judge.judge(request).await,
        };
        let response = self.judge.judge(request).await?;
        let reading = match &response.reading {
            JudgeReading::Verdict(verdict) => StoredReading::Verdict {
                passes: verdict.passes,
                problems: verdict.problems.clone(),
            },
            JudgeReading::NoVerdict => StoredReading::NoVerdict,
            JudgeReading::Unreadable(reason) => StoredReading::Unreadable(reason.clone()),
        };
        let line = Line {
            item,
            call,
            hash,
            reading,
            reply: StoredOutcome::of(&Ok(response.reply.clone())),
        };
        self.lock().append(&line);
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::batch::router::as_item;
    use crate::provider::ProviderReply;

    #[derive(Debug, Default)]
    struct Counting(AtomicUsize);

    #[async_trait::async_trait]
    impl Judge for Counting {
        async fn judge(&self, _: &JudgeRequest<'_>) -> Result<JudgeResponse, ProviderError> {
            let n = self.0.fetch_add(1, Ordering::SeqCst);
            Ok(JudgeResponse {
                reading: JudgeReading::Verdict(JudgeVerdict {
                    passes: n.is_multiple_of(2),
                    problems: vec![format!("call {n}")],
                }),
                reply: ProviderReply::text(format!("verdict {n}")),
            })
        }
    }

    fn request(candidate: &str) -> JudgeRequest<'_> {
        JudgeRequest {
            intent: "Count",
            input: "a b",
            candidate,
            instructions: None,
            output_requirements: None,
            model: None,
        }
    }

    fn router(dir: &Path) -> Arc<Router> {
        let model = crate::provider::ScriptedProvider::new(Vec::<String>::new());
        let api = crate::batch::BatchProvider::scripted(model.clone()).api;
        Arc::new(Router::new(
            api,
            Arc::new(model),
            None,
            2,
            dir,
            crate::batch::router::Earlier::default(),
        ))
    }

    #[tokio::test]
    async fn stored_verdicts_answer_the_same_question_of_the_same_item_and_call() {
        let dir = std::env::temp_dir().join(format!("intent-verdicts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let counting = Arc::new(Counting::default());
        let open = || RecordedJudge::open(counting.clone(), &dir, 2, router(&dir)).unwrap();
        let judge = open();
        let first = as_item(1, judge.judge(&request("2"))).await.unwrap();
        let second = as_item(1, judge.judge(&request("3"))).await.unwrap();
        assert_eq!(counting.0.load(Ordering::SeqCst), 2);
        drop(judge);
        // A line cut short by a crash is skipped.
        let mut file = OpenOptions::new()
            .append(true)
            .open(dir.join(FILE))
            .unwrap();
        file.write_all(b"{\"item\":0,\"ca").unwrap();
        drop(file);
        let judge = open();
        assert_eq!(as_item(1, judge.judge(&request("2"))).await.unwrap(), first);
        assert_eq!(
            as_item(1, judge.judge(&request("3"))).await.unwrap(),
            second
        );
        // A third call was never judged: the judge is asked, and the verdict stored.
        let third = as_item(1, judge.judge(&request("4"))).await.unwrap();
        assert_eq!(counting.0.load(Ordering::SeqCst), 3);
        // Outside an item, the judge is asked and nothing is stored.
        judge.judge(&request("2")).await.unwrap();
        assert_eq!(counting.0.load(Ordering::SeqCst), 4);
        drop(judge);
        // The verdict stored after the cut line is read back.
        let judge = open();
        as_item(1, judge.judge(&request("2"))).await.unwrap();
        as_item(1, judge.judge(&request("3"))).await.unwrap();
        assert_eq!(as_item(1, judge.judge(&request("4"))).await.unwrap(), third);
        assert_eq!(counting.0.load(Ordering::SeqCst), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_stored_verdict_on_another_question_is_another_job_not_an_answer() {
        let dir =
            std::env::temp_dir().join(format!("intent-verdicts-other-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let counting = Arc::new(Counting::default());
        let judge = RecordedJudge::open(counting.clone(), &dir, 2, router(&dir)).unwrap();
        as_item(1, judge.judge(&request("2"))).await.unwrap();
        drop(judge);
        let router = router(&dir);
        let judge = RecordedJudge::open(counting.clone(), &dir, 2, router.clone()).unwrap();
        let error = as_item(1, judge.judge(&request("3"))).await.unwrap_err();
        assert!(!error.request_sent(), "{error}");
        assert_eq!(
            counting.0.load(Ordering::SeqCst),
            1,
            "the judge is not asked"
        );
        let difference = router.mismatch().unwrap();
        assert!(
            difference.contains("verdict 1 on item 1 answers another question"),
            "{difference}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
