//! The journal of a collection operation: one JSON line per answered item, appended as it
//! is answered, so that a rerun after a crash asks only the items that have no line.
//!
//! A line is `{"op": "<fingerprint>", "key": "<item key>", "item": "<digest>", "value":
//! <answer>}`. The fingerprint names the operation (its kind, question or name, answer
//! type, options and model): a line is taken as an item's answer only by an operation
//! with the same fingerprint, so one file can hold several operations and a changed
//! question asks again. The digest is the item's content (a decision's state): an answer
//! is read back only for the same item, so an input file edited or reordered between runs
//! (keys by position) is asked again rather than answered with another item's answer. A
//! map's items need not serialize and have no digest: its key alone names an item. Failed items get no line: a rerun asks them again. A line cut short by a crash
//! is skipped (and the file is ended with a newline before the next one is written).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::CollectionError;

/// One answered item, as read back.
#[derive(Deserialize)]
struct Line {
    op: String,
    key: String,
    #[serde(default)]
    item: Option<String>,
    value: Value,
}

/// One answered item, as written.
#[derive(Serialize)]
struct NewLine<'a, V> {
    op: &'a str,
    key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    item: Option<&'a str>,
    value: &'a V,
}

/// The answers an earlier run wrote for this operation, and the file new ones go to.
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
    fingerprint: String,
    answered: Answers,
}

/// The answers read back from a journal, by item key, each with its item's digest;
/// shared with the items' futures.
#[derive(Clone)]
pub(crate) struct Answers(Arc<HashMap<String, (Option<String>, Value)>>);

impl Answers {
    /// The answer an earlier run wrote for `key` about the item whose digest is `item`,
    /// when it reads as a `T`; a stored value for another item or of another shape is
    /// asked again.
    pub(crate) fn get<T: DeserializeOwned>(&self, key: &str, item: Option<&str>) -> Option<T> {
        let (stored_item, value) = self.0.get(key)?;
        if stored_item.as_deref() != item {
            return None;
        }
        T::deserialize(value).ok()
    }
}

/// The digest of an item's content, as its journal line keeps it: SHA-256 of its JSON,
/// as 32 hex digits. An item that does not serialize gets a digest no line has.
pub(crate) fn item_digest<I: Serialize>(item: &I) -> String {
    match serde_json::to_vec(item) {
        Ok(json) => hex(&Sha256::digest(json)[..16]),
        Err(_) => "unserializable".to_owned(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl Journal {
    /// Opens (or creates) the journal at `path` for the operation `fingerprint`, reading
    /// back the answers it holds for it.
    pub(crate) fn open(path: &Path, fingerprint: String) -> Result<Journal, CollectionError> {
        let error = |error: io::Error| CollectionError::journal(path, error);
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(error)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(error)?;
        let mut answered = HashMap::new();
        let mut skipped = 0usize;
        for line in BufReader::new(&file).lines() {
            let line = line.map_err(error)?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Line>(&line) {
                Ok(line) if line.op == fingerprint => {
                    answered.insert(line.key, (line.item, line.value));
                }
                Ok(_) => {}
                Err(_) => skipped += 1,
            }
        }
        if skipped > 0 {
            tracing::warn!(
                target: "intent_rs::collection",
                path = %path.display(),
                skipped,
                "journal lines that are not JSON were skipped (a line cut short by a crash); their items are asked again"
            );
        }
        end_with_newline(&mut file).map_err(error)?;
        Ok(Journal {
            path: path.to_owned(),
            file,
            fingerprint,
            answered: Answers(Arc::new(answered)),
        })
    }

    /// The answers an earlier run wrote for this operation.
    pub(crate) fn answers(&self) -> Answers {
        self.answered.clone()
    }

    /// Appends `value` as the answer for `key`: one write of a whole line, so a crash
    /// leaves the line whole or cut short, never two lines mixed.
    pub(crate) fn append<T: Serialize>(
        &mut self,
        key: &str,
        item: Option<&str>,
        value: &T,
    ) -> Result<(), CollectionError> {
        let line = NewLine {
            op: self.fingerprint.as_str(),
            key,
            item,
            value,
        };
        let mut text = serde_json::to_vec(&line)
            .map_err(|error| CollectionError::journal(&self.path, io::Error::other(error)))?;
        text.push(b'\n');
        self.file
            .write_all(&text)
            .map_err(|error| CollectionError::journal(&self.path, error))
    }
}

/// Ends a file a crash cut in the middle of a line with a newline, so the next line
/// starts on its own.
fn end_with_newline(file: &mut File) -> io::Result<()> {
    let length = file.seek(SeekFrom::End(0))?;
    if length == 0 {
        return Ok(());
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    if last[0] != b'\n' {
        file.write_all(b"\n")?;
    }
    Ok(())
}

/// The fingerprint of an operation: SHA-256 of its describing parts, as 16 hex digits
/// (64 bits: one file holds a few operations, not millions).
pub(crate) fn fingerprint(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    hex(&hash.finalize()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temporary(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "intent-journal-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        dir.join(name)
    }

    #[test]
    fn answers_are_read_back_for_the_same_operation_only() {
        let path = temporary("j.jsonl");
        let mut journal = Journal::open(&path, fingerprint(&["filter", "a"])).unwrap();
        journal.append("7", None, &true).unwrap();
        drop(journal);
        let again = Journal::open(&path, fingerprint(&["filter", "a"])).unwrap();
        assert_eq!(again.answers().get::<bool>("7", None), Some(true));
        assert_eq!(again.answers().get::<bool>("8", None), None);
        // Another shape is asked again, not misread.
        assert_eq!(again.answers().get::<String>("7", None), None);
        let other = Journal::open(&path, fingerprint(&["filter", "b"])).unwrap();
        assert_eq!(other.answers().get::<bool>("7", None), None);
    }

    #[test]
    fn a_line_cut_short_is_skipped_and_the_next_starts_on_its_own() {
        let path = temporary("cut.jsonl");
        let op = fingerprint(&["map", "x"]);
        let mut journal = Journal::open(&path, op.clone()).unwrap();
        journal.append("0", None, &1u32).unwrap();
        drop(journal);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"op":"#).unwrap();
        drop(file);
        let mut journal = Journal::open(&path, op.clone()).unwrap();
        journal.append("1", None, &2u32).unwrap();
        drop(journal);
        let journal = Journal::open(&path, op).unwrap();
        assert_eq!(journal.answers().get::<u32>("0", None), Some(1));
        assert_eq!(journal.answers().get::<u32>("1", None), Some(2));
    }

    #[test]
    fn an_answer_is_read_back_only_for_the_same_item_under_its_key() {
        let path = temporary("items.jsonl");
        let op = fingerprint(&["filter", "urgent?"]);
        let first = item_digest(&"the printer is on fire");
        let mut journal = Journal::open(&path, op.clone()).unwrap();
        journal.append("0", Some(&first), &0.9f64).unwrap();
        drop(journal);
        let journal = Journal::open(&path, op).unwrap();
        let answers = journal.answers();
        assert_eq!(answers.get::<f64>("0", Some(&first)), Some(0.9));
        // The input was edited or reordered: key 0 is another item now.
        let other = item_digest(&"please change my address");
        assert_eq!(answers.get::<f64>("0", Some(&other)), None);
        assert_eq!(answers.get::<f64>("0", None), None);
    }

    #[test]
    fn fingerprints_separate_their_parts() {
        assert_ne!(fingerprint(&["ab", "c"]), fingerprint(&["a", "bc"]));
        assert_eq!(fingerprint(&["a"]).len(), 16);
    }
}
