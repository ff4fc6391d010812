//! The fast path: a plain sentence goes to Home Assistant's own agent first
//! (`conversation/process` with `agent_id: conversation.home_assistant`, never the
//! household's pipeline agent, which may be homebot itself). When it handled the sentence
//! (`action_done`, `query_answer`) its speech is the reply: no LLM call, no tokens, and it
//! works with the LLM down. Anything else — an error, `no_intent_match`, no answer within
//! [`WITHIN`] — and the turn goes to the LLM as before.
//!
//! Only for plain sentences (one line, at most [`MAX_CHARS`] characters), outside a run
//! mode, not while a question or plan waits for this chat's answer, and not for guests
//! unless `guests_may_control` (Home Assistant's agent switches devices). A fast-path
//! turn is recorded like any other, and a `purpose: fast_path` line goes to the audit
//! trail (`homebot audit` shows it; `homebot stats` counts it apart from LLM calls).

use super::access::{Converse, HomeAccess};
use crate::turn::Turn;
use std::io::Write;
use std::time::{Duration, Instant};

/// How long Home Assistant's agent may take before the LLM answers instead.
pub const WITHIN: Duration = Duration::from_secs(2);
/// Longest sentence sent to Home Assistant's agent.
pub const MAX_CHARS: usize = 100;
pub use crate::home::{BUILTIN_AGENT as AGENT, FAST_PATH as PURPOSE};

/// Whether a sentence may take the fast path at all.
pub fn plain(text: &str) -> bool {
    let t = text.trim();
    !t.is_empty()
        && !t.starts_with('/')
        && !t.contains('\n')
        && t.chars().count() <= MAX_CHARS
        && !t.chars().any(|c| c.is_control())
}

impl HomeAccess {
    /// Home Assistant's answer to this turn's sentence, if its own agent handled it.
    /// `waiting` says whether a question or plan waits for this chat's answer (asked only
    /// once the cheaper conditions hold).
    pub async fn fast_path(
        &self,
        turn: &Turn,
        in_mode: bool,
        waiting: impl std::future::Future<Output = bool>,
    ) -> Option<String> {
        if !self.cfg.enabled() || !self.cfg.fast_path || in_mode || !plain(&turn.text) {
            return None;
        }
        if self.is_guest(turn) && !self.cfg.guests_may_control {
            return None;
        }
        let door = self.door()?;
        // a question or a plan waiting for this chat's answer takes the sentence
        if waiting.await {
            return None;
        }
        let started = Instant::now();
        let text = turn.text.trim();
        // the door bounds itself too; this bound is the turn's promise
        let answer = tokio::time::timeout(
            WITHIN + Duration::from_millis(200),
            door.converse(text, turn.room.as_deref(), WITHIN),
        )
        .await
        .unwrap_or_else(|_| Converse::NotHandled("no answer within the fast path's bound".into()));
        match answer {
            Converse::Handled {
                speech,
                response_type,
            } => {
                tracing::info!(channel = %turn.channel, chat = %turn.chat_id, response_type = %response_type, ms = started.elapsed().as_millis() as u64, "answered by Home Assistant's own agent (fast path)");
                self.record(turn, started.elapsed()).await;
                Some(speech)
            }
            Converse::NotHandled(why) => {
                tracing::debug!(why = %why, "fast path: not handled by Home Assistant; the LLM answers");
                None
            }
        }
    }

    /// One `purpose: fast_path` line in today's audit file (best effort: a failure is
    /// logged, the reply is not held up by it).
    async fn record(&self, turn: &Turn, took: Duration) {
        let now = chrono::Utc::now().with_timezone(&self.tz);
        let rec = crate::provider::audit::AuditRecord {
            timestamp: now.to_rfc3339_opts(chrono::SecondsFormat::Millis, false),
            purpose: PURPOSE.into(),
            model: Some(AGENT.into()),
            // no model endpoint answered: Home Assistant's own agent did
            provider: None,
            channel: turn.channel.clone(),
            chat_id: turn.chat_id.clone(),
            session_id: None,
            shape: None,
            usage: None,
            latency_ms: took.as_millis() as u64,
            retries: 0,
            outcome: "ok".into(),
            error: None,
            stream: false,
            turn: None,
        };
        let mut line = serde_json::to_string(&rec).expect("an audit record always encodes");
        line.push('\n');
        let path = self
            .audit_dir
            .join(format!("{}.jsonl", now.format("%Y-%m-%d")));
        let dir = self.audit_dir.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let r = std::fs::create_dir_all(&dir).and_then(|_| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)?
                    // one write of one line: appends from the provider's writer never interleave inside it
                    .write_all(line.as_bytes())
            });
            if let Err(e) = r {
                tracing::warn!(path = %path.display(), error = %e, "fast-path audit line not written");
            }
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_sentences() {
        assert!(plain("打开厨房的灯"));
        assert!(!plain("/status"));
        assert!(!plain("第一行\n第二行"));
        assert!(!plain(&"灯".repeat(MAX_CHARS + 1)));
        assert!(!plain("  "));
    }
}
