//! The requests waiting for their submission, written to files in the job's directory as
//! the items make them (one file per model): a submission's input is read back from its
//! file as it is uploaded, so a waiting request is not held in memory as a line and a
//! submission is never held whole.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::BatchError;
use crate::result::Cause;

/// Where a queued request's line is in its model's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placed {
    /// Its first byte.
    pub start: u64,
    /// Its length, the newline included.
    pub len: u64,
}

/// The files of the requests queued since the last submission.
#[derive(Debug)]
pub(crate) struct Spool {
    dir: PathBuf,
    next: u64,
    open: HashMap<String, Open>,
}

#[derive(Debug)]
struct Open {
    path: PathBuf,
    out: BufWriter<File>,
    len: u64,
}

fn state_error(path: &Path, error: &std::io::Error) -> BatchError {
    BatchError::State {
        path: path.to_owned(),
        message: error.to_string(),
        cause: Some(Cause::new(std::io::Error::new(
            error.kind(),
            error.to_string(),
        ))),
    }
}

const PREFIX: &str = "queue-";
const SUFFIX: &str = ".jsonl";

impl Spool {
    /// A spool writing into `dir`, which holds no queue files (see [`clear`]).
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            next: 1,
            open: HashMap::new(),
        }
    }

    /// Appends `line` and a newline to `model`'s file.
    pub(crate) fn push(&mut self, model: &str, line: &[u8]) -> Result<Placed, BatchError> {
        if !self.open.contains_key(model) {
            let path = self.dir.join(format!("{PREFIX}{}{SUFFIX}", self.next));
            self.next += 1;
            let file = File::create(&path).map_err(|error| state_error(&path, &error))?;
            let open = Open {
                path,
                out: BufWriter::with_capacity(64 * 1024, file),
                len: 0,
            };
            self.open.insert(model.to_owned(), open);
        }
        let Some(open) = self.open.get_mut(model) else {
            return Err(BatchError::State {
                path: self.dir.clone(),
                message: "the queue file was not opened".to_owned(),
                cause: None,
            });
        };
        let written = open
            .out
            .write_all(line)
            .and_then(|()| open.out.write_all(b"\n"));
        if let Err(error) = written {
            return Err(state_error(&open.path, &error));
        }
        let placed = Placed {
            start: open.len,
            len: line.len() as u64 + 1,
        };
        open.len += placed.len;
        Ok(placed)
    }

    /// The files written so far, flushed, by model; later lines go to new files.
    pub(crate) fn take(&mut self) -> Result<HashMap<String, PathBuf>, BatchError> {
        let mut files = HashMap::with_capacity(self.open.len());
        for (model, open) in self.open.drain() {
            let Open { path, out, .. } = open;
            if let Err(error) = out.into_inner() {
                let error = error.into_error();
                return Err(state_error(&path, &error));
            }
            files.insert(model, path);
        }
        Ok(files)
    }
}

/// Removes the queue files a stopped run left in `dir`: their requests are made again.
pub(crate) fn clear(dir: &Path) -> Result<(), BatchError> {
    let entries = fs::read_dir(dir).map_err(|error| state_error(dir, &error))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(PREFIX) && name.ends_with(SUFFIX) {
            let path = entry.path();
            fs::remove_file(&path).map_err(|error| state_error(&path, &error))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_placed_one_after_another_per_model_and_handed_over_flushed() {
        let dir = std::env::temp_dir().join(format!("intent-spool-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let mut spool = Spool::new(&dir);
        assert_eq!(
            spool.push("a", b"{\"x\":1}").unwrap(),
            Placed { start: 0, len: 8 }
        );
        assert_eq!(spool.push("b", b"{}").unwrap(), Placed { start: 0, len: 3 });
        assert_eq!(
            spool.push("a", b"{\"x\":22}").unwrap(),
            Placed { start: 8, len: 9 }
        );
        let files = spool.take().unwrap();
        assert_eq!(
            fs::read_to_string(&files["a"]).unwrap(),
            "{\"x\":1}\n{\"x\":22}\n"
        );
        assert_eq!(fs::read_to_string(&files["b"]).unwrap(), "{}\n");
        // Later lines start new files.
        assert_eq!(spool.push("a", b"{}").unwrap(), Placed { start: 0, len: 3 });
        let again = spool.take().unwrap();
        assert_ne!(again["a"], files["a"]);
        clear(&dir).unwrap();
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        let _ = fs::remove_dir_all(&dir);
    }
}
