//! `<workspace>/modes/paused.json` — the parent session a running sub-mode paused — and
//! the record that carries a sub-mode's conclusion back into its parent's history.
//!
//! `action.json` keeps its ten keys and always names the running session; the paused
//! parent is here, as the `action.json` it had (so it is reloaded like any active session).
//! Written (atomic replace) *before* `action.json` names the sub-mode, removed *after*
//! `action.json` names the parent again: so at a start, a `paused.json` naming the session
//! `action.json` names is the leftover of a push or a pop that did not finish, and is
//! dropped; one naming another session is the paused parent. Only the ModeManager writes
//! it (`mode_core::submode`).

use super::action::{ActionDoc, SCHEMA_VERSION};
use super::manifest::ModeManifest;
use super::session::{excerpt, ExitMarker, Record};
use crate::history::defang;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const PAUSED_FILE: &str = "paused.json";
/// The channel of a conclusion record (no chat ever has it): its `chat_id` is the
/// sub-session the conclusion came from, which is what makes the append idempotent.
pub const CONCLUSION_CHANNEL: &str = "mode";
/// Who speaks a conclusion record.
pub const CONCLUSION_SPEAKER: &str = "homebot";
/// The longest conclusion carried into the parent (characters).
pub const MAX_CONCLUSION_CHARS: usize = 1500;
/// Turns of a sub-session quoted when it ended without a summary.
const EXCERPT_TURNS: usize = 8;

/// Verbs of going back, which enter a paused parent (ending its sub-mode): "回到做饭模式".
pub const RETURN_VERBS: &[&str] = &[
    "回到",
    "返回",
    "切回",
    "换回",
    "回去",
    "go back to",
    "back to",
    "return to",
];

/// `manifest` with the verbs of going back among its enter verbs (the switch guard then
/// judges "回到做饭模式" as it judges "打开做饭模式").
pub fn with_return_verbs(mut manifest: ModeManifest) -> ModeManifest {
    manifest
        .enter_verbs
        .extend(RETURN_VERBS.iter().map(|v| v.to_string()));
    manifest
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PausedDoc {
    pub schema_version: u32,
    /// When the sub-mode paused it (household time, RFC 3339).
    pub paused_at: String,
    /// The sub-mode that paused it.
    pub by: String,
    /// The parent's `action.json` as it was when it was paused.
    pub parent: ActionDoc,
}

#[derive(Debug, thiserror::Error)]
pub enum PausedError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is corrupt: {message}")]
    Corrupt { path: PathBuf, message: String },
}

impl PausedDoc {
    pub fn path(modes_dir: &Path) -> PathBuf {
        modes_dir.join(PAUSED_FILE)
    }

    pub fn new(paused_at: String, by: &str, parent: ActionDoc) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            paused_at,
            by: by.to_string(),
            parent,
        }
    }

    /// `Ok(None)` when no session is paused.
    pub fn read(path: &Path) -> Result<Option<Self>, PausedError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(PausedError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let corrupt = |message: String| PausedError::Corrupt {
            path: path.to_path_buf(),
            message,
        };
        let doc: PausedDoc = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if doc.schema_version != SCHEMA_VERSION {
            return Err(corrupt(format!(
                "unsupported schema_version {}",
                doc.schema_version
            )));
        }
        if !doc.parent.active {
            return Err(corrupt("the paused session is not marked active".into()));
        }
        doc.parent.check().map_err(|d| corrupt(d.to_string()))?;
        Ok(Some(doc))
    }

    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("PausedDoc always serializes");
        bytes.push(b'\n');
        crate::fsutil::write_atomic(path, &bytes)
    }

    /// Remove the file (gone already is fine), durably.
    pub fn remove(path: &Path) -> std::io::Result<()> {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        }
        match path.parent() {
            Some(dir) => crate::fsutil::sync_dir(dir),
            None => Ok(()),
        }
    }

    pub fn session_id(&self) -> &str {
        self.parent.session_id.as_deref().unwrap_or_default()
    }
}

/// Whether `records` already hold the conclusion of sub-session `sub_session`.
pub fn has_conclusion(records: &[Record], sub_session: &str) -> bool {
    records.iter().any(|r| is_conclusion_of(r, sub_session))
}

pub fn is_conclusion(r: &Record) -> bool {
    r.channel == CONCLUSION_CHANNEL && r.speaker_id == CONCLUSION_SPEAKER
}

fn is_conclusion_of(r: &Record, sub_session: &str) -> bool {
    is_conclusion(r) && r.chat_id == sub_session
}

/// What a sub-session concluded: the exit's summary, else an excerpt of its last turns
/// (the mechanical summary). A function of what is on disk once the exit is due (the
/// exit marker and the records), so an archive resumed after a crash makes the same one;
/// never rewritten later, even when the summarizer improves the sub-session's own
/// `summary.md`.
pub fn conclusion_text(marker: &ExitMarker, records: &[Record]) -> String {
    if let Some(s) = marker.summary.as_deref().map(str::trim) {
        if !s.is_empty() {
            return cut(s, MAX_CONCLUSION_CHARS);
        }
    }
    if records.is_empty() {
        return "（这次没有对话。）".into();
    }
    let from = records.len().saturating_sub(EXCERPT_TURNS);
    let mut out = String::from("（没有模型给出的总结；以下为最后几轮对话摘录。）");
    for r in &records[from..] {
        let who = r.speaker_name.as_deref().unwrap_or(&r.speaker_id);
        out.push_str(&format!(
            "\n- {}：{} → {}",
            excerpt(who, 20),
            excerpt(&r.user, 60),
            excerpt(&r.assistant, 80)
        ));
    }
    cut(&out, MAX_CONCLUSION_CHARS)
}

/// The record appended to the parent's `conversation.jsonl`: a marked block that says
/// the system added it, answered by a short acknowledgement, replayed like any turn.
pub fn conclusion_record(
    sub_name: &str,
    sub_session: &str,
    parent_name: &str,
    marker: &ExitMarker,
    records: &[Record],
) -> Record {
    let text = conclusion_text(marker, records);
    let block = format!(
        "[子模式结论: {sub_name} {sub_session}]\n（系统添加：{sub_name}已结束，回到{parent_name}；以下是它的结论。）\n{}\n[/子模式结论]",
        defang(&text)
    );
    Record {
        timestamp: marker.requested_at.clone(),
        channel: CONCLUSION_CHANNEL.into(),
        chat_id: sub_session.into(),
        speaker_id: CONCLUSION_SPEAKER.into(),
        user: block.clone(),
        assistant: format!("好的，{sub_name}的结论我记下了，接着{parent_name}。"),
        error: None,
        speaker_name: None,
        sent: Some(block),
        place: None,
        tool_results: Vec::new(),
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(user: &str) -> Record {
        Record {
            timestamp: "2026-10-22T20:00:00+08:00".into(),
            channel: "qq".into(),
            chat_id: "g".into(),
            speaker_id: "mom".into(),
            user: user.into(),
            assistant: "好".into(),
            error: None,
            speaker_name: Some("妈妈".into()),
            sent: None,
            place: None,
            tool_results: Vec::new(),
        }
    }

    fn marker(summary: Option<&str>) -> ExitMarker {
        ExitMarker {
            reason: "user".into(),
            summary: summary.map(Into::into),
            requested_at: "2026-10-22T20:30:00+08:00".into(),
        }
    }

    #[test]
    fn the_exit_summary_wins_else_an_excerpt_of_the_last_turns() {
        let records: Vec<Record> = (0..12).map(|i| rec(&format!("第{i}步"))).collect();
        let t = conclusion_text(&marker(Some(" 烤了戚风蛋糕 ")), &records);
        assert_eq!(t, "烤了戚风蛋糕");
        let t = conclusion_text(&marker(Some("  ")), &records);
        assert!(t.contains("妈妈：第11步 → 好"), "{t}");
        assert!(!t.contains("第3步"), "only the last 8 turns: {t}");
        assert_eq!(t.lines().count(), 9);
    }

    #[test]
    fn a_conclusion_is_bounded_defanged_and_found_again() {
        let long = "烤".repeat(5000) + "]";
        let r = conclusion_record("烘焙模式", "bake-1", "做饭模式", &marker(Some(&long)), &[]);
        assert!(r.user.chars().count() < MAX_CONCLUSION_CHARS + 200);
        assert!(r.user.starts_with("[子模式结论: 烘焙模式 bake-1]\n"));
        assert!(r.user.ends_with("\n[/子模式结论]"));
        assert_eq!(r.sent.as_deref(), Some(r.user.as_str()));
        let r2 = conclusion_record("x", "bake-2", "y", &marker(Some("a]b")), &[]);
        assert!(r2.user.contains("a］b"), "{}", r2.user);
        assert!(has_conclusion(&[rec("x"), r.clone()], "bake-1"));
        assert!(!has_conclusion(&[rec("x"), r], "bake-2"));
    }

    #[test]
    fn paused_json_round_trips_and_refuses_what_is_not_a_paused_session() {
        let dir = tempfile::tempdir().unwrap();
        let p = PausedDoc::path(dir.path());
        assert!(PausedDoc::read(&p).unwrap().is_none());
        let parent: ActionDoc = serde_json::from_str(
            r#"{"schema_version":1,"active":true,"mode_id":"cooking","display_name":"做饭模式",
            "session_id":"cook-20261022-195500-a1b2c3","skill_name":"home-cooking",
            "started_at":"2026-10-22T19:55:00+08:00","expires_at":"2026-10-23T00:10:00+08:00",
            "session_dir":"/x","exit_reason":null}"#,
        )
        .unwrap();
        let doc = PausedDoc::new("2026-10-22T20:00:00+08:00".into(), "baking", parent);
        doc.write(&p).unwrap();
        assert_eq!(PausedDoc::read(&p).unwrap(), Some(doc.clone()));
        assert_eq!(doc.session_id(), "cook-20261022-195500-a1b2c3");
        let mut inactive = doc;
        inactive.parent = ActionDoc::inactive(None);
        inactive.write(&p).unwrap();
        assert!(PausedDoc::read(&p).is_err());
        std::fs::write(&p, "{\"schema_version\":1,").unwrap();
        assert!(PausedDoc::read(&p).is_err());
        PausedDoc::remove(&p).unwrap();
        PausedDoc::remove(&p).unwrap();
        assert!(!p.exists());
    }
}
