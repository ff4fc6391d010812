//! The budget of one request, and which recorded turns it replays.
//!
//! A request may hold `request_limit` = 90 % of the input budget (window − output
//! reserve). The system message, the tool definitions and the current user message are
//! never trimmed: if they alone pass the limit the turn is refused with a clear reply.
//! What is left is the history budget: a normal chat's carried block (the mode session
//! it just left, see [`super::carry`]), the checkpoint summary, and the records replayed
//! after it.
//!
//! Which records: everything after the checkpoint — up to the mode's `history_limit` in a
//! mode session, up to `normal_history_turns` in a normal chat. Both are cut **in chunks**: when a cap is
//! passed, the start jumps forward by half the cap at once, aligned to a fixed grid, so
//! the start (and with it the request's prefix) stays put between jumps instead of
//! sliding one turn per request. The same grid serves the token budget when the history
//! does not fit (a mode session whose compaction failed: the safe truncation).
//!
//! The plan is made by `Context::plan` (in `window`, with every other method of
//! [`super::Context`] but compaction's); this file holds what it returns and its arithmetic.
//!
//! Cost: only the records after the checkpoint (or the chat's last cap records) are
//! touched, and each record's counts are computed once (cached beside it in the log).

use super::checkpoint::Checkpoint;
use super::tokens::Counts;
use super::ModePolicy;
use crate::history::{CountCache, Record, Replay};
use std::path::Path;
use std::sync::Arc;

/// Grid step of the safe truncation when no cap gives one.
pub(super) const FALLBACK_STEP: usize = 8;

/// What the request replays and what each block costs.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// A normal chat's carried block (its user message), replayed first, if any.
    pub carried: Option<Arc<str>>,
    /// The checkpoint replayed next, if any.
    pub checkpoint: Option<Arc<Checkpoint>>,
    /// Records `[from, to)` are replayed (failed turns among them are skipped).
    pub from: usize,
    pub to: usize,
    pub system_tokens: u32,
    pub tools_tokens: u32,
    pub carried_tokens: u32,
    pub checkpoint_tokens: u32,
    pub history_tokens: u32,
    pub tail_tokens: u32,
    /// The history budget of this request.
    pub history_budget: u32,
    /// Older records had to be cut to fit (or passed a cap): a compaction is due.
    pub wants_compaction: bool,
    /// The whole request by the bare tokenizer (for calibration against usage).
    pub tokenizer_total: u64,
}

impl Plan {
    pub fn total(&self) -> u32 {
        self.system_tokens
            .saturating_add(self.tools_tokens)
            .saturating_add(self.carried_tokens)
            .saturating_add(self.checkpoint_tokens)
            .saturating_add(self.history_tokens)
            .saturating_add(self.tail_tokens)
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("the system prompt, the tools and this message need {needed} tokens, more than the {limit} a request may hold (context window {window})")]
    TooBig {
        needed: u32,
        limit: u32,
        window: u32,
    },
}

/// What a history replays besides its records, and its policy.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The history's checkpoint file (`None`: it keeps none).
    pub checkpoint: Option<&'a Path>,
    pub policy: ModePolicy,
    /// A normal chat's carried block: the ended session's id and the block.
    pub carried: Option<(&'a str, &'a Arc<str>)>,
}

impl<'a> Source<'a> {
    /// A mode session: its `checkpoint.json` and the mode's policy.
    pub fn mode(checkpoint: &'a Path, policy: ModePolicy) -> Self {
        Self {
            checkpoint: Some(checkpoint),
            policy,
            carried: None,
        }
    }

    /// A normal chat replaying at most `turns` records after its checkpoint (if it keeps
    /// one); compacted like a mode session whose `history_limit` is `turns`.
    pub fn normal(turns: usize, checkpoint: Option<&'a Path>) -> Self {
        Self {
            checkpoint,
            policy: ModePolicy {
                history_limit: Some(turns),
                summary_threshold_tokens: None,
            },
            carried: None,
        }
    }
}

/// The marked user/assistant pair a carried block is replayed as.
pub fn carried_messages(block: &str) -> (String, String) {
    (block.to_string(), super::carry::CARRIED_ACK.to_string())
}

/// The marked first user/assistant pair a checkpoint is replayed as (after the system
/// message, never inside it).
pub fn checkpoint_messages(c: &Checkpoint) -> (String, String) {
    (
        format!(
            "[之前的对话摘要]\n（本次会话前 {} 轮的摘要，由系统在压缩历史时写成，不是用户说的话。）\n{}\n[/之前的对话摘要]",
            c.through,
            c.summary.trim()
        ),
        "好的，我记得之前的内容，接着往下说。".into(),
    )
}

/// A record's counts as replayed under `replay` (user + assistant message); a failed
/// turn is not replayed and costs nothing. The cache holds one way of replaying: a
/// process replays one way.
pub fn record_counts(r: &Record, cache: &CountCache, replay: Replay) -> [u32; 2] {
    if r.error.is_some() {
        return [0, 0];
    }
    *cache.get_or_init(|| {
        let c = Counts::message(&r.replayed_user(replay)).plus(Counts::message(&r.assistant));
        [c.tokenizer, c.conservative]
    })
}

/// The first replayed index when at most `cap` records of `[lo, len)` may be replayed:
/// `lo` while they fit, else a point on the grid `lo + k·step` (step = half the cap), so
/// it moves only every `step` records. At most `cap` records remain.
pub fn chunked_start(lo: usize, len: usize, cap: Option<usize>) -> usize {
    let lo = lo.min(len);
    let Some(cap) = cap else { return lo };
    let n = len - lo;
    if n <= cap {
        return lo;
    }
    if cap == 0 {
        return len;
    }
    let step = (cap / 2).max(1);
    lo + ((n - cap) / step + 1) * step
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Context;
    use crate::history::HistoryLog;
    use crate::history::HistoryView;

    fn rec(i: usize, words: &str) -> Record {
        Record {
            timestamp: "2026-10-22T20:05:00+08:00".into(),
            channel: "cli".into(),
            chat_id: "local".into(),
            speaker_id: "mom".into(),
            user: format!("{i}:{words}"),
            assistant: format!("答{i}：{words}"),
            error: None,
            speaker_name: None,
            sent: None,
            place: None,
            tool_results: Vec::new(),
        }
    }

    fn log(n: usize, words: &str) -> HistoryView {
        HistoryLog::from_records((0..n).map(|i| rec(i, words)).collect()).view()
    }

    #[test]
    fn chunked_start_moves_in_steps_and_never_keeps_more_than_the_cap() {
        assert_eq!(chunked_start(0, 5, Some(20)), 0);
        assert_eq!(chunked_start(0, 20, Some(20)), 0);
        let starts: Vec<usize> = (21..=45).map(|n| chunked_start(0, n, Some(20))).collect();
        for (n, s) in (21..=45).zip(&starts) {
            assert!(n - s <= 20 && n - s >= 10, "len {n} start {s}");
            assert_eq!(s % 10, 0, "on the grid");
        }
        // between two jumps the start stays put
        assert_eq!(starts[0], starts[8]);
        assert_eq!(chunked_start(7, 10, None), 7);
        assert_eq!(chunked_start(12, 10, None), 10);
        assert_eq!(chunked_start(0, 3, Some(0)), 3);
    }

    #[test]
    fn a_normal_chat_fits_the_budget_and_keeps_its_prefix_between_trims() {
        let ctx = Context::new(4096, 3072, &[]);
        let mut prev = None;
        let mut jumps = 0;
        for n in 0..80 {
            let h = log(n, "番茄炒蛋要先炒蛋再炒番茄");
            let p = ctx
                .plan("系统", &["现在几点"], &h, Source::normal(20, None))
                .unwrap();
            assert!(p.total() <= ctx.request_limit());
            assert!(n - p.from <= 20);
            if let Some(f) = prev {
                if f != p.from {
                    jumps += 1;
                }
            }
            prev = Some(p.from);
        }
        assert!(jumps <= 7, "{jumps} jumps in 80 turns");
    }

    #[test]
    fn too_big_a_message_is_refused_and_the_budget_cuts_history() {
        let ctx = Context::new(1024, 800, &[]);
        let huge = "字".repeat(900);
        let h = log(3, "x");
        assert!(matches!(
            ctx.plan("系统", &[&huge], &h, Source::normal(20, None)),
            Err(PlanError::TooBig { .. })
        ));
        let h = log(40, &"很长的一句话".repeat(10));
        let p = ctx
            .plan("系统", &["问"], &h, Source::normal(40, None))
            .unwrap();
        assert!(p.total() <= ctx.request_limit(), "{p:?}");
        assert!(p.from > 0 && p.to == 40);
    }

    #[test]
    fn a_mode_session_replays_after_its_checkpoint_within_its_limit() {
        let d = tempfile::tempdir().unwrap();
        let ctx = Context::new(65536, 61440, &[]);
        let h = log(30, "好");
        let file = super::super::checkpoint::path_in(d.path());
        super::super::checkpoint::save(
            &file,
            &Checkpoint {
                through: 12,
                summary: "前十二轮".into(),
                created_at: "t".into(),
                carried: None,
            },
        )
        .unwrap();
        let policy = ModePolicy {
            history_limit: Some(10),
            summary_threshold_tokens: None,
        };
        let src = Source::mode(&file, policy);
        let p = ctx.plan("系统", &["问"], &h, src).unwrap();
        assert_eq!(p.checkpoint.as_ref().unwrap().through, 12);
        assert!(p.to - p.from <= 10 && p.from >= 12, "{p:?}");
        assert!(p.wants_compaction);
        assert!(p.checkpoint_tokens > 0);
    }
}
