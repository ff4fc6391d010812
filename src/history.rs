//! Recorded turns: the JSONL format shared by mode sessions (`conversation.jsonl`) and
//! normal-operation chats (`chats/…/*.jsonl`), and the in-memory history they feed.
//!
//! One [`Record`] per turn, appended by the backend (never by the LLM) with one write +
//! fsync each. At load a torn last line — a crash in the middle of an append — is moved
//! to `<file>.corrupt` and cut from the file; a bad line in the middle is kept in place,
//! skipped, and reported; something that is not a file at all (a folder, a pipe) is moved
//! aside whole to `<file>.corrupt` and the history starts empty.

use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// One recorded turn.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub timestamp: String,
    pub channel: String,
    pub chat_id: String,
    pub speaker_id: String,
    pub user: String,
    pub assistant: String,
    /// Present only when the turn failed (provider down, timeout, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An append-only, shared history. Snapshots ([`HistoryView`]) are O(1): they remember
/// a length, and earlier entries are never changed.
#[derive(Debug, Clone, Default)]
pub struct HistoryLog(Arc<RwLock<Vec<Record>>>);

#[derive(Debug, Clone, Default)]
pub struct HistoryView {
    log: HistoryLog,
    len: usize,
}

impl HistoryLog {
    pub fn from_records(records: Vec<Record>) -> Self {
        Self(Arc::new(RwLock::new(records)))
    }
    pub fn push(&self, r: Record) {
        self.0
            .write()
            .expect("history lock is never poisoned: no panics while held")
            .push(r);
    }
    pub fn len(&self) -> usize {
        self.0.read().expect("history lock is never poisoned").len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn view(&self) -> HistoryView {
        HistoryView {
            log: self.clone(),
            len: self.len(),
        }
    }
}

impl HistoryView {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Run `f` over the records this view saw (the log may have grown since).
    pub fn with<R>(&self, f: impl FnOnce(&[Record]) -> R) -> R {
        let g = self.log.0.read().expect("history lock is never poisoned");
        f(&g[..self.len])
    }
}

/// Result of loading a JSONL history: the records and what was wrong with the file.
#[derive(Debug, Default)]
pub struct Loaded {
    pub records: Vec<Record>,
    pub warnings: Vec<String>,
}

/// Load a JSONL history, repairing a torn tail (kept in `<file>.corrupt`, never deleted).
pub fn load_records(path: &Path) -> std::io::Result<Loaded> {
    match fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        // checked before reading: reading a pipe would block, a folder fails every start
        Ok(m) if !m.is_file() => {
            let aside = crate::fsutil::move_aside(path, "corrupt")?;
            return Ok(Loaded {
                records: Vec::new(),
                warnings: vec![format!(
                    "{} is not a file; moved aside to {} and started anew",
                    path.display(),
                    aside.display()
                )],
            });
        }
        _ => {}
    }
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => return Err(e),
    };
    let mut out = Loaded::default();
    // Everything after the last newline is an unfinished append.
    let complete_len = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut keep_len = complete_len;
    let mut torn: Vec<u8> = bytes[complete_len..].to_vec();
    let body = &bytes[..complete_len];
    let lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let n_lines = lines.len().saturating_sub(1); // trailing empty piece after the last \n
    for (i, line) in lines[..n_lines].iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Record>(line) {
            Ok(r) => out.records.push(r),
            Err(e) if i + 1 == n_lines && torn.is_empty() => {
                // A bad *last* line is a torn write too (e.g. garbage then a newline).
                keep_len = complete_len - line.len() - 1;
                torn = bytes[keep_len..complete_len].to_vec();
                out.warnings.push(format!(
                    "{}: last line unreadable ({e}); moved to .corrupt",
                    path.display()
                ));
            }
            Err(e) => out.warnings.push(format!(
                "{}: line {} unreadable ({e}); kept in the file and skipped",
                path.display(),
                i + 1
            )),
        }
    }
    if !torn.is_empty() {
        let aside = corrupt_path(path);
        let mut f = crate::fsutil::open_append_private(&aside)?;
        f.write_all(&torn)?;
        if torn.last() != Some(&b'\n') {
            f.write_all(b"\n")?;
        }
        f.sync_all()?;
        let f = OpenOptions::new().write(true).open(path)?;
        f.set_len(keep_len as u64)?;
        f.sync_all()?;
        if !out.warnings.iter().any(|w| w.contains("moved to .corrupt")) {
            out.warnings.push(format!(
                "{}: torn last line ({} bytes) moved to {}",
                path.display(),
                torn.len(),
                aside.display()
            ));
        }
    }
    Ok(out)
}

/// Where a torn tail of `path` is kept.
pub fn corrupt_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".corrupt");
    PathBuf::from(s)
}

pub fn append_record(path: &Path, r: &Record) -> std::io::Result<()> {
    let line = serde_json::to_string(r).expect("Record always serializes");
    if crate::failpoint::active("append.partial") {
        // crash test: half a record reaches the disk, then the process stops dead
        let mut f = OpenOptions::new().create(true).append(true).open(path)?;
        f.write_all(&line.as_bytes()[..line.len() / 2])?;
        f.sync_all()?;
        crate::failpoint::hit("append.partial");
    }
    crate::fsutil::append_line(path, &line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(n: u32) -> Record {
        Record {
            timestamp: "2026-10-22T20:05:00+08:00".into(),
            channel: "cli".into(),
            chat_id: "local".into(),
            speaker_id: "mom".into(),
            user: format!("q{n}"),
            assistant: format!("a{n}"),
            error: None,
        }
    }

    #[test]
    fn record_has_exactly_the_seed_keys() {
        let v = serde_json::to_value(rec(1)).unwrap();
        let mut keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "assistant",
                "channel",
                "chat_id",
                "speaker_id",
                "timestamp",
                "user"
            ]
        );
    }

    #[test]
    fn torn_tail_is_set_aside_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("conversation.jsonl");
        append_record(&p, &rec(1)).unwrap();
        append_record(&p, &rec(2)).unwrap();
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"timestamp\":\"2026-10-2").unwrap();
        drop(f);
        let l = load_records(&p).unwrap();
        assert_eq!(l.records.len(), 2);
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        assert_eq!(
            fs::read_to_string(corrupt_path(&p)).unwrap(),
            "{\"timestamp\":\"2026-10-2\n"
        );
        // the file is whole again and appends continue cleanly
        append_record(&p, &rec(3)).unwrap();
        let l = load_records(&p).unwrap();
        assert_eq!(l.records.len(), 3);
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn bad_middle_line_is_kept_and_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("conversation.jsonl");
        append_record(&p, &rec(1)).unwrap();
        crate::fsutil::append_line(&p, "not json").unwrap();
        append_record(&p, &rec(2)).unwrap();
        let before = fs::read(&p).unwrap();
        let l = load_records(&p).unwrap();
        assert_eq!(l.records.len(), 2);
        assert!(l.warnings[0].contains("line 2"), "{:?}", l.warnings);
        assert_eq!(fs::read(&p).unwrap(), before, "file must not be rewritten");
    }

    #[test]
    fn views_are_stable_snapshots() {
        let log = HistoryLog::default();
        log.push(rec(1));
        let v = log.view();
        log.push(rec(2));
        assert_eq!(v.with(|r| r.len()), 1);
        assert_eq!(log.view().with(|r| r.len()), 2);
    }
}
