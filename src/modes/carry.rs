//! Carry-over: a new session of a mode may start with the previous session's summary as a
//! marked "last time" block of its frozen prompt, so "continue yesterday's braised pork"
//! works. Only a summary the model wrote (the `## 总结` part of `summary.md`) is carried —
//! never the excerpt of raw dialogue a mechanical summary holds, and never another
//! session's conversation.

use super::dirs::{file_name, read_dirs};
use super::session::SUMMARY_FILE;
use super::session_id::SessionId;
use crate::workspace::Workspace;

/// The most of a summary carried (characters); a longer one is cut with a mark.
pub const MAX_CARRY_CHARS: usize = 1500;

/// The previous session's summary, as the frozen prompt shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CarryOver {
    pub session_id: String,
    /// Where it came from, relative to the workspace.
    pub source: String,
    pub summary: String,
}

pub use super::session::NO_MODEL_SUMMARY;

/// The newest archived session of `mode_id` that has a model-written summary.
pub fn previous(ws: &Workspace, mode_id: &str) -> Option<CarryOver> {
    let mut dirs: Vec<(SessionId, std::path::PathBuf)> = read_dirs(&ws.sessions_dir(mode_id))
        .into_iter()
        .filter_map(|d| SessionId::parse(&file_name(&d)).map(|id| (id, d)))
        .collect();
    dirs.sort_by(|a, b| (b.0.started_local(), &b.1).cmp(&(a.0.started_local(), &a.1)));
    // the newest archived one decides: an older summary is not yesterday's
    let (id, dir) = dirs
        .into_iter()
        .find(|(_, d)| d.join(SUMMARY_FILE).exists())?;
    let text = std::fs::read_to_string(dir.join(SUMMARY_FILE)).ok()?;
    let summary = model_summary(&text)?;
    let source = dir
        .join(SUMMARY_FILE)
        .strip_prefix(ws.root())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| SUMMARY_FILE.into());
    Some(CarryOver {
        session_id: id.to_string(),
        source,
        summary: cap(&summary, MAX_CARRY_CHARS),
    })
}

/// The `## 总结` section of a `summary.md`, if a model wrote it.
pub fn model_summary(summary_md: &str) -> Option<String> {
    let start = summary_md.find("## 总结")? + "## 总结".len();
    let rest = &summary_md[start..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    let text = rest[..end].trim();
    (!text.is_empty() && !text.starts_with(NO_MODEL_SUMMARY)).then(|| text.to_string())
}

fn cap(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push_str("…（已截断）");
    out
}
