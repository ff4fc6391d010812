//! Session files: their names, the exit marker, and `summary.md`. The records of
//! `conversation.jsonl` are [`crate::history`]'s format.

use serde::{Deserialize, Serialize};

pub const CONVERSATION_FILE: &str = "conversation.jsonl";
pub const SYSTEM_PROMPT_FILE: &str = "system_prompt.md";
pub const SUMMARY_FILE: &str = "summary.md";
/// Written when an exit is requested; lets an interrupted archive resume after a crash.
pub const EXIT_MARKER_FILE: &str = "exit.json";
/// Written when the plugin's index update failed at archive time; retried at start.
pub const INDEX_PENDING_FILE: &str = "index.pending";
/// Written (before the mechanical `summary.md`) when a session ended without a summary
/// from the model: the summarizer replaces the summary with one the model writes, then
/// removes this file. Holds a [`SummaryJob`].
pub const SUMMARY_PENDING_FILE: &str = "summary.pending";

/// What the summarizer needs to write a session's `summary.md` again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SummaryJob {
    pub display_name: String,
    pub mode_id: String,
    pub session_id: String,
    pub started_at: String,
    pub ended_at: String,
    pub exit_reason: String,
    /// Failed attempts so far (the summarizer gives up after a few).
    #[serde(default)]
    pub attempts: u32,
}

pub use crate::history::{
    append_record, append_record_unsynced, load_records, HistoryLog, HistoryView, Loaded, Record,
};

/// The exit request, persisted so an archive interrupted by a crash resumes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExitMarker {
    pub reason: String,
    pub summary: Option<String>,
    pub requested_at: String,
}

/// Persist an exit request in the session's folder (`exit.json`, atomic replace), so an
/// archive interrupted by a crash resumes.
pub fn write_exit_marker(
    dir: &std::path::Path,
    marker: &ExitMarker,
) -> Result<(), super::error::ModeError> {
    let path = dir.join(EXIT_MARKER_FILE);
    let bytes = serde_json::to_vec_pretty(marker).expect("ExitMarker always serializes");
    crate::fsutil::write_atomic(&path, &bytes).map_err(super::error::io("write", &path))
}

/// What `render_summary` writes when no model summary exists.
pub const NO_MODEL_SUMMARY: &str = "（没有模型给出的总结；以下为对话摘录。）";

/// Everything `summary.md` is made of.
pub struct SummaryInput<'a> {
    pub display_name: &'a str,
    pub mode_id: &'a str,
    pub session_id: &'a str,
    pub started_at: &'a str,
    pub ended_at: &'a str,
    pub exit_reason: &'a str,
    pub llm_summary: Option<&'a str>,
    pub records: &'a [Record],
}

pub fn render_summary(s: &SummaryInput<'_>) -> String {
    let mut speakers: Vec<&str> = Vec::new();
    let mut channels: Vec<&str> = Vec::new();
    for r in s.records {
        if !speakers.contains(&r.speaker_id.as_str()) {
            speakers.push(&r.speaker_id);
        }
        if !channels.contains(&r.channel.as_str()) {
            channels.push(&r.channel);
        }
    }
    let mut out = format!(
        "# {} — {}\n\n- 模式: {} ({})\n- 开始: {}\n- 结束: {}\n- 结束原因: {}\n- 轮数: {}\n- 参与者: {}\n- 频道: {}\n\n## 总结\n\n",
        s.display_name,
        s.session_id,
        s.display_name,
        s.mode_id,
        s.started_at,
        s.ended_at,
        s.exit_reason,
        s.records.len(),
        if speakers.is_empty() { "—".into() } else { speakers.join(", ") },
        if channels.is_empty() { "—".into() } else { channels.join(", ") },
    );
    match s.llm_summary.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => out.push_str(t),
        None => out.push_str(NO_MODEL_SUMMARY),
    }
    out.push_str("\n\n## 对话摘录\n\n");
    if s.records.is_empty() {
        out.push_str("（本次没有对话。）\n");
    }
    for (i, r) in s.records.iter().enumerate() {
        let time = r.timestamp.get(11..16).unwrap_or(&r.timestamp);
        out.push_str(&format!(
            "{}. [{} {}@{}] {} → {}\n",
            i + 1,
            time,
            r.speaker_id,
            r.channel,
            excerpt(&r.user, 60),
            excerpt(&r.assistant, 80)
        ));
    }
    out
}

/// First `max` characters on one line, with an ellipsis when cut.
pub fn excerpt(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}
