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
use std::sync::{Arc, OnceLock, RwLock};

pub use crate::config::Replay;
pub use kept::{KeptResult, MAX_KEPT_RESULTS, MAX_KEPT_RESULT_CHARS};

mod kept;

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
    /// The speaker's name, when the household's member list named them at the time
    /// ("妈妈"): the tag the turn is replayed with. Absent: the tag is `speaker_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker_name: Option<String>,
    /// The user message exactly as the turn's first request sent it (time, speaker tag,
    /// words, the `[上下文]` block and the snippets sent to stay), without the blocks
    /// sent for that turn alone. Exact replay sends it again byte for byte; `homebot
    /// audit` shows it. Absent: a turn that sent no request (a fast path, a command), or
    /// a record of an earlier version — replayed as [`said`] of its fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<String>,
    /// Where what outlives the turn's chat is kept, when that is not the chat itself: a
    /// voice wake is a chat of its own, so an ended mode's `[刚结束]` carry is kept under
    /// its satellite and reaches the next wake in that room. Absent: the chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
    /// What the turn's tools returned that matters later (a reminder set, a device
    /// switched, a file written: the tools say which), at most [`MAX_KEPT_RESULTS`] of at
    /// most [`MAX_KEPT_RESULT_CHARS`] characters each. The next request sends them once,
    /// as a `[工具结果]` kept block of its user message; never as tool messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<KeptResult>,
}

/// The longest speaker tag replayed (an id a peer chose is hostile).
const MAX_TAG_CHARS: usize = 40;

/// `text` with its square brackets made full-width: text a user or a model wrote, shown
/// inside a labelled `[块]…[/块]` block, cannot then close the block or open another.
pub fn defang(text: &str) -> String {
    text.replace('[', "［").replace(']', "］")
}

/// A user's turn as every request shows it: the time it was said, the speaker tag, a
/// full-width colon, the words ("18:05 妈妈：少放盐"). The current message starts with
/// exactly these bytes and adds its `[上下文]` block after them; lean replay sends only
/// these bytes again. The tag is cut to 40 characters, with line breaks and full-width
/// colons made spaces, so it stays one short tag whatever an id holds.
pub fn said(at: Option<&str>, speaker: &str, user: &str) -> String {
    let tag: String = speaker
        .chars()
        .take(MAX_TAG_CHARS)
        .map(|c| if c == '：' || c.is_control() { ' ' } else { c })
        .collect();
    let tag = tag.trim();
    let tag = if tag.is_empty() { "?" } else { tag };
    match at {
        Some(at) => format!("{at} {tag}：{user}"),
        None => format!("{tag}：{user}"),
    }
}

impl Record {
    /// The user message this record replays as. `Exact`: the message its turn sent
    /// ([`Record::sent`]), byte for byte. `Lean`, or a record that sent none: [`said`]
    /// of its time, speaker tag and words — the bytes its turn's message started with.
    pub fn replayed_user(&self, replay: Replay) -> String {
        match (&self.sent, replay) {
            (Some(sent), Replay::Exact) => sent.clone(),
            _ => said(
                self.clock(),
                self.speaker_name.as_deref().unwrap_or(&self.speaker_id),
                &self.user,
            ),
        }
    }

    /// `HH:MM` of the timestamp (written in the household's zone), if it has one.
    pub fn clock(&self) -> Option<&str> {
        let t = self.timestamp.get(11..16)?;
        let b = t.as_bytes();
        (b[2] == b':' && [0, 1, 3, 4].iter().all(|&i| b[i].is_ascii_digit())).then_some(t)
    }
}

/// A record's token counts as replayed (user + assistant message), computed once by the
/// context budget: `[tokenizer, conservative]`.
pub type CountCache = OnceLock<[u32; 2]>;

/// An append-only, shared history. Snapshots ([`HistoryView`]) are O(1): they remember
/// a length, and earlier entries are never changed. Beside each record, a cache of its
/// token counts, so a turn counts only what it has not counted before.
#[derive(Debug, Clone, Default)]
pub struct HistoryLog(Arc<RwLock<Entries>>);

#[derive(Debug, Default)]
struct Entries {
    /// Records before this index are no longer held in memory (a long normal chat keeps
    /// only its tail, see [`HistoryLog::forget_before`]); indices stay those of the file.
    offset: usize,
    records: Vec<Record>,
    counts: Vec<CountCache>,
}

#[derive(Debug, Clone, Default)]
pub struct HistoryView {
    log: HistoryLog,
    len: usize,
}

impl HistoryLog {
    pub fn from_records(records: Vec<Record>) -> Self {
        Self::from_tail(records, 0)
    }
    /// A log whose first `offset` records are not held: `records` are those from there.
    pub fn from_tail(records: Vec<Record>, offset: usize) -> Self {
        let counts = records.iter().map(|_| CountCache::new()).collect();
        Self(Arc::new(RwLock::new(Entries {
            offset,
            records,
            counts,
        })))
    }
    /// Let go of the records before index `from` (the length and every index stay as
    /// they are; reading before `from` gives nothing).
    pub fn forget_before(&self, from: usize) {
        let mut guard = self
            .0
            .write()
            .expect("history lock is never poisoned: no panics while held");
        let g = &mut *guard;
        let n = from.saturating_sub(g.offset).min(g.records.len());
        g.records.drain(..n);
        g.counts.drain(..n);
        g.records.shrink_to(g.records.len() * 2);
        g.counts.shrink_to(g.counts.len() * 2);
        g.offset += n;
    }
    pub fn push(&self, r: Record) {
        let mut g = self
            .0
            .write()
            .expect("history lock is never poisoned: no panics while held");
        g.records.push(r);
        g.counts.push(CountCache::new());
    }
    pub fn len(&self) -> usize {
        let g = self.0.read().expect("history lock is never poisoned");
        g.offset + g.records.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Records held in memory (`len` minus those forgotten).
    pub fn held(&self) -> usize {
        self.0
            .read()
            .expect("history lock is never poisoned")
            .records
            .len()
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
    /// Run `f` over the records this view saw (the log may have grown since) that are
    /// held in memory (all of them unless the log forgot its oldest).
    pub fn with<R>(&self, f: impl FnOnce(&[Record]) -> R) -> R {
        self.with_range(0, |records, _| f(records))
    }

    /// Run `f` over the records `[from, len)` this view saw and their count caches; only
    /// that range is touched, however long the history is. Records the log no longer
    /// holds are left out.
    pub fn with_range<R>(&self, from: usize, f: impl FnOnce(&[Record], &[CountCache]) -> R) -> R {
        let g = self.log.0.read().expect("history lock is never poisoned");
        let end = self.len.saturating_sub(g.offset).min(g.records.len());
        let from = from.saturating_sub(g.offset).min(end);
        f(&g.records[from..end], &g.counts[from..end])
    }

    /// A view of the same log as it is now (including records appended since).
    pub fn latest(&self) -> HistoryView {
        self.log.view()
    }

    /// Whether two views are of the same log.
    pub fn same_log(&self, other: &HistoryView) -> bool {
        Arc::ptr_eq(&self.log.0, &other.log.0)
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
    append_record_unsynced(path, r)?.sync_data()
}

/// [`append_record`] without the fsync: the file, to sync before the record is relied on.
pub fn append_record_unsynced(path: &Path, r: &Record) -> std::io::Result<fs::File> {
    let line = serde_json::to_string(r).expect("Record always serializes");
    if crate::failpoint::active("append.partial") {
        // crash test: half a record reaches the disk, then the process stops dead
        let mut f = OpenOptions::new().create(true).append(true).open(path)?;
        f.write_all(&line.as_bytes()[..line.len() / 2])?;
        f.sync_all()?;
        crate::failpoint::hit("append.partial");
    }
    crate::fsutil::append_line_unsynced(path, &line)
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
            speaker_name: None,
            sent: None,
            place: None,
            tool_results: Vec::new(),
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
        assert_eq!(v.latest().len(), 2);
        assert_eq!(log.view().with_range(1, |r, c| (r.len(), c.len())), (1, 1));
        assert_eq!(v.with_range(5, |r, _| r.len()), 0);
    }

    #[test]
    fn a_record_replays_as_sent_or_as_its_time_tag_and_words() {
        let r = rec(1);
        assert_eq!(r.replayed_user(Replay::Lean), "20:05 mom：q1");
        // no message kept (a fast path, an earlier version): the lean form in both
        assert_eq!(r.replayed_user(Replay::Exact), "20:05 mom：q1");
        let named = Record {
            speaker_name: Some("妈妈".into()),
            ..r.clone()
        };
        assert_eq!(named.replayed_user(Replay::Lean), "20:05 妈妈：q1");
        let sent = Record {
            sent: Some("20:05 妈妈：q1\n\n[上下文]\n2026-10-22 星期四\n[/上下文]".into()),
            ..named.clone()
        };
        assert_eq!(
            sent.replayed_user(Replay::Exact),
            sent.sent.as_deref().unwrap()
        );
        assert_eq!(sent.replayed_user(Replay::Lean), "20:05 妈妈：q1");
        // a line of an earlier version, with the whole message it sent, parses and
        // replays lean from its fields
        let old = r#"{"timestamp":"2026-10-22T20:05:00+08:00","channel":"cli","chat_id":"local","speaker_id":"mom","user":"q1","assistant":"a1","prompt":"[上下文]\n…\n[/上下文]\n\nq1"}"#;
        let back: Record = serde_json::from_str(old).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.replayed_user(Replay::Exact), "20:05 mom：q1");
        // a timestamp that is not one replays without a time
        let odd = Record {
            timestamp: "yesterday".into(),
            ..r.clone()
        };
        assert_eq!(odd.replayed_user(Replay::Lean), "mom：q1");
        // a hostile id stays one short tag on one line
        let long = format!("a\nb：{}", "x".repeat(100));
        let s = said(None, &long, "hi");
        assert!(s.starts_with("a b "), "{s}");
        assert_eq!(s.chars().count(), 40 + "：hi".chars().count());
        assert_eq!(said(None, " \n ", "hi"), "?：hi");
        assert_eq!(said(Some("07:30"), "爸爸", "hi"), "07:30 爸爸：hi");
    }
}
