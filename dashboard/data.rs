//! What the pages and the API show, read from disk beside the running gateway: never a
//! write (the history's own loader repairs a torn tail, so it is not used here), never
//! the mode manager's lock. Every read is bounded: a session's records are read from the
//! file's tail within [`MAX_READ_BYTES`], at most [`MAX_RECORDS`] of them are returned,
//! a summary is cut at [`MAX_SUMMARY_BYTES`], a record's text at [`MAX_TEXT_CHARS`].

use crate::config::Config;
use crate::history::Record;
use crate::modes::action::{ActionDoc, ActionError};
use crate::modes::listing::{list_sessions, SessionRow};
use crate::modes::session::{CONVERSATION_FILE, SUMMARY_FILE};
use crate::provider::audit::{AuditRecord, SESSION_AUDIT_FILE};
use crate::provider::logwriter::LogView;
use crate::workspace::Workspace;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Records returned for one session (the newest).
pub const MAX_RECORDS: usize = 200;
/// Bytes of a file's tail read for its records.
pub const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;
/// Bytes of `summary.md` read.
pub const MAX_SUMMARY_BYTES: u64 = 64 * 1024;
/// Characters of one side of a record shown.
pub const MAX_TEXT_CHARS: usize = 4000;
/// Sessions listed (the newest).
pub const MAX_SESSIONS: usize = 100;
/// Turns in a token chart (the newest).
pub const MAX_CHART_TURNS: usize = 200;
/// Longest session id looked at.
pub const MAX_ID_CHARS: usize = 128;

/// One recorded turn as shown.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Line {
    /// Its index in `conversation.jsonl` (0 is the first turn).
    pub index: usize,
    pub timestamp: String,
    pub channel: String,
    /// The speaker's name when the household named them, else their id.
    pub speaker: String,
    pub user: String,
    pub assistant: String,
    /// The turn failed (the reply is the apology the user saw).
    pub failed: bool,
}

impl Line {
    fn of(index: usize, r: Record) -> Self {
        Self {
            index,
            timestamp: r.timestamp,
            channel: cut(&r.channel, 32),
            speaker: cut(r.speaker_name.as_deref().unwrap_or(&r.speaker_id), 64),
            user: cut(&r.user, MAX_TEXT_CHARS),
            assistant: cut(&r.assistant, MAX_TEXT_CHARS),
            failed: r.error.is_some(),
        }
    }
}

/// A name or id as the pages show it: at most 64 characters (as a record's speaker).
pub fn cut_id(s: &str) -> String {
    cut(s, 64)
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

/// A session's records from index `after` on (at most [`MAX_RECORDS`], the newest), and
/// how many complete records the file holds.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Conversation {
    pub total: usize,
    pub records: Vec<Line>,
}

/// Read `conversation.jsonl` (or any history file) without changing it: complete lines
/// only (an append in progress is not a record yet), unreadable ones skipped.
pub fn conversation(path: &Path, after: usize) -> Conversation {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Conversation::default();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    // lines before the tail read are counted, not parsed
    let start = len.saturating_sub(MAX_READ_BYTES);
    let mut total = 0usize;
    // the tail starts inside a line: counted here, its rest skipped below
    let mut straddles = false;
    if start > 0 {
        let mut head = std::io::BufReader::new((&mut f).take(start));
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match head.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if !blank(&buf) {
                        total += 1;
                    }
                    straddles = !buf.ends_with(b"\n");
                }
            }
        }
        if f.seek(SeekFrom::Start(start)).is_err() {
            return Conversation::default();
        }
    }
    let mut tail = Vec::new();
    if f.take(MAX_READ_BYTES).read_to_end(&mut tail).is_err() {
        return Conversation::default();
    }
    let mut body: &[u8] = &tail;
    if straddles {
        let skip = body
            .iter()
            .position(|&b| b == b'\n')
            .map_or(body.len(), |i| i + 1);
        body = &body[skip..];
    }
    let complete = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut out = Vec::new();
    for line in body[..complete].split(|&b| b == b'\n') {
        if blank(line) {
            continue;
        }
        let index = total;
        total += 1;
        if index < after {
            continue;
        }
        if let Ok(r) = serde_json::from_slice::<Record>(line) {
            out.push(Line::of(index, r));
        }
    }
    let keep = out.len().saturating_sub(MAX_RECORDS);
    out.drain(..keep);
    Conversation {
        total,
        records: out,
    }
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// The first record of a session (the turn that entered the mode, when a turn did).
pub fn first_record(path: &Path) -> Option<Line> {
    let f = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    std::io::BufReader::new(f.take(MAX_READ_BYTES))
        .read_until(b'\n', &mut line)
        .ok()?;
    if !line.ends_with(b"\n") {
        return None;
    }
    serde_json::from_slice::<Record>(&line)
        .ok()
        .map(|r| Line::of(0, r))
}

/// The folder of session `id` (active or archived), the id checked first: it becomes a
/// path component, so only a well-formed session id is looked for.
pub fn session_dir(ws: &Workspace, id: &str) -> Result<PathBuf, SessionError> {
    if id.chars().count() > MAX_ID_CHARS {
        return Err(SessionError::BadId);
    }
    crate::audit::session_dir(ws, id).map_err(|e| match e {
        crate::audit::AuditError::BadSessionId(_) => SessionError::BadId,
        crate::audit::AuditError::UnknownSession(..) => SessionError::Unknown,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionError {
    BadId,
    Unknown,
}

/// The `## 总结` part of `summary.md` (the model's summary, or the note that there was
/// none), bounded.
pub fn summary(dir: &Path) -> Option<String> {
    let f = std::fs::File::open(dir.join(SUMMARY_FILE)).ok()?;
    let mut bytes = Vec::new();
    f.take(MAX_SUMMARY_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let part = match text.split_once("## 总结") {
        Some((_, rest)) => rest.split("\n## ").next().unwrap_or(rest),
        None => &text,
    };
    Some(part.trim().to_string())
}

/// One session as listed.
#[derive(Debug, Clone, Serialize)]
pub struct SessionInfo {
    pub mode_id: String,
    /// The mode's name from its manifest (the id when the mode is gone).
    pub display_name: String,
    pub session_id: String,
    /// `active`, `expired`, `exiting`, `archived`, `unfinished`.
    pub state: &'static str,
    pub started_at: Option<String>,
    pub turns: usize,
    pub summary: Option<String>,
}

/// The newest sessions ([`MAX_SESSIONS`]), with their summaries.
pub fn sessions(
    ws: &Workspace,
    cfg: &Config,
    names: &BTreeMap<String, String>,
) -> Vec<SessionInfo> {
    let rows = list_sessions(ws, cfg.timezone(), chrono::Utc::now());
    rows.into_iter()
        .take(MAX_SESSIONS)
        .map(|r| info_of(ws, names, r))
        .collect()
}

fn info_of(ws: &Workspace, names: &BTreeMap<String, String>, r: SessionRow) -> SessionInfo {
    let dir = ws.sessions_dir(&r.mode_id).join(&r.session_id);
    SessionInfo {
        display_name: names
            .get(&r.mode_id)
            .cloned()
            .unwrap_or_else(|| r.mode_id.clone()),
        summary: summary(&dir),
        mode_id: r.mode_id,
        session_id: r.session_id,
        state: r.state.as_str(),
        started_at: r
            .started
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)),
        turns: r.turns,
    }
}

/// One session in full: what [`sessions`] lists, its records and its token chart.
#[derive(Debug, Clone, Serialize)]
pub struct SessionDetail {
    #[serde(flatten)]
    pub info: SessionInfo,
    pub conversation: Conversation,
    pub tokens: Vec<TurnTokens>,
}

/// The provider's log lines still on their way to their files: the audit figures add
/// them to what the files hold, so they include every call answered so far. `None`
/// without a provider to ask.
pub type Unwritten<'a> = Option<&'a LogView<'a>>;

pub fn session(
    ws: &Workspace,
    cfg: &Config,
    names: &BTreeMap<String, String>,
    id: &str,
    unwritten: Unwritten<'_>,
) -> Result<SessionDetail, SessionError> {
    let dir = session_dir(ws, id)?;
    let row = list_sessions(ws, cfg.timezone(), chrono::Utc::now())
        .into_iter()
        .find(|r| r.session_id == id)
        .ok_or(SessionError::Unknown)?;
    Ok(SessionDetail {
        info: info_of(ws, names, row),
        conversation: conversation(&dir.join(CONVERSATION_FILE), 0),
        tokens: turn_tokens(&dir.join(SESSION_AUDIT_FILE), unwritten),
    })
}

/// A turn's provider calls added up: what the chart draws.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct TurnTokens {
    /// 1 for the session's first turn.
    pub turn: usize,
    pub prompt: u64,
    pub cached: u64,
    pub completion: u64,
    pub calls: u32,
}

/// The session's turn calls from its audit file (tail-bounded), grouped by the turn they
/// were made for (their history range ends where the turn starts).
pub fn turn_tokens(audit: &Path, unwritten: Unwritten<'_>) -> Vec<TurnTokens> {
    let mut by_turn: BTreeMap<usize, TurnTokens> = BTreeMap::new();
    for r in audit_tail(audit, unwritten) {
        let (Some(u), Some(shape)) = (r.usage, r.shape.as_ref()) else {
            continue;
        };
        if r.purpose != "turn" {
            continue;
        }
        let turn = shape.history_to + 1;
        let t = by_turn.entry(turn).or_insert(TurnTokens {
            turn,
            prompt: 0,
            cached: 0,
            completion: 0,
            calls: 0,
        });
        t.prompt += u.prompt;
        t.cached += u.cached;
        t.completion += u.completion;
        t.calls += 1;
    }
    let v: Vec<TurnTokens> = by_turn.into_values().collect();
    let skip = v.len().saturating_sub(MAX_CHART_TURNS);
    v[skip..].to_vec()
}

/// The records of the audit file `path` (its tail), then those on their way to it.
pub(super) fn audit_tail(path: &Path, unwritten: Unwritten<'_>) -> Vec<AuditRecord> {
    let mut records = file_tail(path);
    if let Some(view) = unwritten {
        records.extend(
            view.unwritten(path)
                .iter()
                .filter_map(|l| serde_json::from_str(l).ok()),
        );
    }
    records
}

fn file_tail(path: &Path) -> Vec<AuditRecord> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(MAX_READ_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if f.take(MAX_READ_BYTES).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let mut body: &[u8] = &bytes;
    if start > 0 {
        let skip = body
            .iter()
            .position(|&b| b == b'\n')
            .map_or(body.len(), |i| i + 1);
        body = &body[skip..];
    }
    body.split(|&b| b == b'\n')
        .filter(|l| !blank(l))
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

/// The mode state as in `action.json` (`None` before the first start), or why it could
/// not be read.
pub fn action(ws: &Workspace) -> Result<Option<ActionDoc>, ActionError> {
    ActionDoc::read(&ws.action_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(user: &str) -> String {
        serde_json::to_string(&Record {
            timestamp: "2026-10-22T19:55:00+08:00".into(),
            channel: "cli".into(),
            chat_id: "local".into(),
            speaker_id: "mom".into(),
            user: user.into(),
            assistant: "好".into(),
            error: None,
            speaker_name: Some("妈妈".into()),
            sent: Some(format!(
                "19:55 妈妈：{user}\n\n[上下文]\n…\n[/上下文]\n\n[成员资料]\n私事\n[/成员资料]"
            )),
            place: None,
            tool_results: Vec::new(),
        })
        .unwrap()
    }

    #[test]
    fn complete_lines_only_and_never_written() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("conversation.jsonl");
        let text = format!("{}\nnot json\n{}\n{{\"half", rec("一"), rec("二"));
        std::fs::write(&p, &text).unwrap();
        let c = conversation(&p, 0);
        assert_eq!(c.total, 3);
        let idx: Vec<usize> = c.records.iter().map(|l| l.index).collect();
        assert_eq!(idx, [0, 2]);
        assert_eq!(c.records[1].user, "二");
        assert_eq!(c.records[0].speaker, "妈妈");
        // the words and the reply only: never the message as sent (blocks, a profile)
        let shown = serde_json::to_string(&c.records).unwrap();
        assert!(
            !shown.contains("私事") && !shown.contains("上下文"),
            "{shown}"
        );
        assert_eq!(conversation(&p, 2).records.len(), 1);
        assert!(conversation(&p, 3).records.is_empty());
        // the torn tail is left for the writer's own recovery
        assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
    }

    #[test]
    fn a_huge_file_is_read_from_its_tail_with_true_indexes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("conversation.jsonl");
        let one = rec(&"长".repeat(2000));
        let n = (MAX_READ_BYTES as usize / one.len()) * 2;
        let mut text = String::new();
        for _ in 0..n {
            text.push_str(&one);
            text.push('\n');
        }
        std::fs::write(&p, &text).unwrap();
        let c = conversation(&p, 0);
        assert_eq!(c.total, n);
        assert_eq!(c.records.len(), MAX_RECORDS);
        assert_eq!(c.records.last().unwrap().index, n - 1);
    }

    #[test]
    fn hostile_session_ids_are_refused_before_any_path_is_made() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        for id in [
            "..",
            "../../etc/passwd",
            "cook-20261022-195500-a1b2c3/../x",
            "%2e%2e",
            "",
            &"a".repeat(10_000),
        ] {
            assert_eq!(session_dir(&ws, id), Err(SessionError::BadId), "{id}");
        }
        assert_eq!(
            session_dir(&ws, "cook-20261022-195500-a1b2c3"),
            Err(SessionError::Unknown)
        );
    }
}
