//! The strategy journal, `<workspace>/logs/strategy.jsonl`: one line per step of a
//! Plan, Spec or Reflect flow and per question asked or answered — what was planned,
//! confirmed, run, drafted, reviewed and revised, by whom, in which chat and mode session
//! — so a household can see what the bot planned and why. The mode's
//! `conversation.jsonl` keeps only what the user said and was told; the provider calls
//! of each step are also in the audit trail with their `purpose` (`plan`, `plan-step`,
//! `reflect-review`, …). Appended with one write per line (never torn); a failed append
//! is logged and does not fail the turn.

use serde::Serialize;
use std::path::{Path, PathBuf};

pub const FILE: &str = "strategy.jsonl";
/// Longest text kept per entry (a draft, a step result), in characters.
pub const MAX_TEXT: usize = 4000;

#[derive(Debug, Serialize)]
pub struct Entry<'a> {
    pub timestamp: String,
    /// `plan`, `spec`, `reflect`, `choice`, `strategy` (a spoken change).
    pub flow: &'a str,
    /// `proposed`, `invalid`, `confirmed`, `cancelled`, `step`, `summary`, `draft`,
    /// `review`, `revision`, `asked`, `answered`, `set-by-voice`, `refused`, …
    pub stage: &'a str,
    pub channel: &'a str,
    pub chat_id: &'a str,
    pub speaker_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<&'a str>,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

pub fn path(workspace: &Path) -> PathBuf {
    workspace.join(crate::workspace::LOGS_DIR).join(FILE)
}

pub fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_TEXT {
        return text.to_string();
    }
    let mut s: String = text.chars().take(MAX_TEXT).collect();
    s.push('…');
    s
}

/// Append `entry` on the blocking pool.
pub async fn append(workspace: &Path, entry: &Entry<'_>) {
    let line = serde_json::to_string(entry).expect("a journal entry always serializes");
    let p = path(workspace);
    let done = tokio::task::spawn_blocking(move || crate::fsutil::append_line(&p, &line)).await;
    match done {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "strategy journal: append failed"),
        Err(e) => tracing::warn!(error = %e, "strategy journal: append task failed"),
    }
}

/// How much of the end of the journal `/strategy log` reads.
const TAIL_BYTES: u64 = 256 * 1024;

/// The last `n` entries, of one chat (`channel`, `chat_id`) or of all when `None`. Reads
/// only the end of the file; a line that does not parse is skipped.
pub fn recent(
    workspace: &Path,
    n: usize,
    chat: Option<(&str, &str)>,
) -> std::io::Result<Vec<serde_json::Value>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = match std::fs::File::open(path(workspace)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    let len = f.metadata()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    f.take(TAIL_BYTES).read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<&str> = text.lines().collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0); // probably cut in the middle
    }
    let mut out: Vec<serde_json::Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| match chat {
            None => true,
            Some((ch, id)) => e["channel"] == ch && e["chat_id"] == id,
        })
        .collect();
    let skip = out.len().saturating_sub(n);
    out.drain(..skip);
    Ok(out)
}

/// One entry as a line for a chat: `time flow/stage chat: text` (text cut at 80 characters).
pub fn render(e: &serde_json::Value) -> String {
    let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
    let text: String = s("text").replace('\n', " ");
    let short: String = text.chars().take(80).collect();
    let more = if text.chars().count() > 80 { "…" } else { "" };
    format!(
        "{} {}/{} {}:{} {}: {short}{more}",
        s("timestamp"),
        s("flow"),
        s("stage"),
        s("channel"),
        s("chat_id"),
        s("speaker_id")
    )
}
