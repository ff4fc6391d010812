//! One chat's last turn in the audit trail: the records of every call it made, for `/why`.
//!
//! A turn's calls share a [`TurnTag`](crate::provider::TurnTag); a record written
//! before the tag was kept stands alone. Only the newest files are read, and only their
//! ends: the trail grows for as long as the household keeps it, and a question about the
//! last answer must not read a year of it. The asker's chat is matched exactly (channel
//! and chat id), so no other chat's turn is ever explained to it.

use super::read::all_files;
use crate::provider::audit::AuditRecord;
use crate::provider::purpose;
use crate::workspace::Workspace;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The newest audit files read (by last change): the day's file, a running session's,
/// and a few before them (a turn yesterday evening, a session that just ended).
pub const MAX_FILES: usize = 6;
/// What is read of each file, from its end.
pub const TAIL_BYTES: u64 = 2 * 1024 * 1024;

/// The records of one turn, oldest first (never empty).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnCalls {
    pub records: Vec<AuditRecord>,
}

/// The last turn `channel`/`chat_id` made calls for, if the newest files hold one.
/// Blocking: run it off the async workers.
pub fn last_turn(ws: &Workspace, channel: &str, chat_id: &str) -> Option<TurnCalls> {
    let mut mine: Vec<(chrono::DateTime<chrono::FixedOffset>, AuditRecord)> = newest(ws)
        .iter()
        .flat_map(|f| tail_records(f))
        .filter(|(_, r)| r.channel == channel && r.chat_id == chat_id && !is_background(&r.purpose))
        .collect();
    mine.sort_by_key(|(at, _)| *at);
    let (_, last) = mine.last()?.clone();
    let records: Vec<AuditRecord> = match &last.turn {
        Some(tag) => mine
            .into_iter()
            .map(|(_, r)| r)
            .filter(|r| r.turn.as_ref().is_some_and(|t| t.id == tag.id))
            .collect(),
        None => vec![last],
    };
    Some(TurnCalls { records })
}

fn is_background(p: &str) -> bool {
    p == purpose::COMPACTION || p == purpose::SUMMARY
}

/// The `MAX_FILES` audit files changed last, newest first.
fn newest(ws: &Workspace) -> Vec<PathBuf> {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = all_files(ws)
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    files.into_iter().take(MAX_FILES).map(|(_, p)| p).collect()
}

/// The records in the last `TAIL_BYTES` of `path` (a line cut by the start is dropped;
/// lines that do not parse are skipped, as `homebot audit` skips them).
fn tail_records(path: &Path) -> Vec<(chrono::DateTime<chrono::FixedOffset>, AuditRecord)> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if f.take(TAIL_BYTES).read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let body = if start > 0 {
        // the first line began before the window
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => &buf[i + 1..],
            None => &[][..],
        }
    } else {
        &buf[..]
    };
    body.split(|&b| b == b'\n')
        .filter_map(|line| {
            let r: AuditRecord = serde_json::from_slice(line).ok()?;
            let at = chrono::DateTime::parse_from_rfc3339(&r.timestamp).ok()?;
            Some((at, r))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::TurnTag;

    fn rec(at: &str, chat: &str, purpose: &str, turn: Option<&str>) -> AuditRecord {
        AuditRecord {
            timestamp: at.into(),
            purpose: purpose.into(),
            model: None,
            provider: None,
            channel: "qq".into(),
            chat_id: chat.into(),
            session_id: None,
            shape: None,
            usage: None,
            latency_ms: 1,
            retries: 0,
            outcome: "ok".into(),
            error: None,
            stream: false,
            turn: turn.map(|id| TurnTag {
                id: id.into(),
                strategy: None,
            }),
        }
    }

    fn write(ws: &Workspace, name: &str, recs: &[AuditRecord]) -> PathBuf {
        let dir = ws.root().join("logs/audit");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        let body: String = recs
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn the_chats_last_turn_and_only_its_calls() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        write(
            &ws,
            "2026-12-06.jsonl",
            &[
                rec(
                    "2026-12-06T10:00:00.000+08:00",
                    "group_1",
                    "turn",
                    Some("a"),
                ),
                rec(
                    "2026-12-06T10:05:00.000+08:00",
                    "group_1",
                    "plan",
                    Some("b"),
                ),
                rec(
                    "2026-12-06T10:05:01.000+08:00",
                    "group_1",
                    "plan-step",
                    Some("b"),
                ),
                // another chat later, and background work later still
                rec(
                    "2026-12-06T10:06:00.000+08:00",
                    "private_9",
                    "turn",
                    Some("c"),
                ),
                rec(
                    "2026-12-06T10:07:00.000+08:00",
                    "group_1",
                    "compaction",
                    None,
                ),
                // a corrupt line is skipped
            ],
        );
        let t = last_turn(&ws, "qq", "group_1").unwrap();
        let purposes: Vec<&str> = t.records.iter().map(|r| r.purpose.as_str()).collect();
        assert_eq!(purposes, ["plan", "plan-step"]);
        assert!(last_turn(&ws, "qq", "group_2").is_none());
        assert_eq!(last_turn(&ws, "qq", "private_9").unwrap().records.len(), 1);
    }

    #[test]
    fn a_record_without_a_tag_stands_alone_and_bad_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let p = write(
            &ws,
            "2026-12-05.jsonl",
            &[
                rec("2026-12-05T09:00:00.000+08:00", "g", "turn", None),
                rec("2026-12-05T09:01:00.000+08:00", "g", "turn", None),
            ],
        );
        let mut body = std::fs::read_to_string(&p).unwrap();
        body.push_str("{\"timestamp\": \"broken\n");
        std::fs::write(&p, body).unwrap();
        let t = last_turn(&ws, "qq", "g").unwrap();
        assert_eq!(t.records.len(), 1);
        assert_eq!(t.records[0].timestamp, "2026-12-05T09:01:00.000+08:00");
    }

    #[test]
    fn only_the_end_of_a_long_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let old = rec("2026-12-01T08:00:00.000+08:00", "old", "turn", Some("x"));
        let filler = rec("2026-12-01T09:00:00.000+08:00", "other", "turn", Some("y"));
        let line = serde_json::to_string(&filler).unwrap().len() as u64 + 1;
        let n = (TAIL_BYTES / line + 10) as usize;
        let mut recs = vec![old];
        recs.extend(std::iter::repeat_n(filler, n));
        write(&ws, "2026-12-01.jsonl", &recs);
        // the chat's turn lies before the last TAIL_BYTES: not read
        assert!(last_turn(&ws, "qq", "old").is_none());
        assert!(last_turn(&ws, "qq", "other").is_some());
    }
}
