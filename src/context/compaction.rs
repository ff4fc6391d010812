//! Compaction: when a history's replayed part passes its threshold (or its cap: a mode's
//! `history_limit`, a normal chat's `normal_history_turns`), the older rounds are
//! summarized by the provider into a new checkpoint — the previous summary plus the newly
//! covered records (and a normal chat's carried block, folded in once) — and later
//! prompts replay the checkpoint, then the records after it. Mode sessions and normal
//! chats (QQ groups, private chats, the terminal) are compacted alike; the history file
//! is never rewritten, so it stays the archive of what was compacted.
//!
//! - Checked after each recorded turn (the kernel calls [`Context::after_turn`]), and
//!   again while a prompt is built when that prompt had to be cut; it runs in its own
//!   task, so no turn and no actor waits for it, and at most one runs per history.
//! - In batches: one compaction brings the replayed history down to about half the
//!   threshold, so most turns pass without one. The last two rounds always stay verbatim.
//! - The summary is at most 60 % of the history budget (asked for, then enforced).
//! - If the provider fails, nothing is written: a warning is logged and prompts keep
//!   fitting the window by the budget's safe truncation; the next turn tries again.

use super::budget::{checkpoint_messages, record_counts};
use super::checkpoint::{self, Checkpoint};
use super::tokens::Counts;
use super::{Context, ModePolicy};
use crate::history::HistoryView;
use crate::provider::{
    purpose, BlockTokens, CallMeta, ChatRequest, Message, PromptShape, Provider,
};
use std::path::PathBuf;
use std::sync::Arc;
use tracing::{info, warn};

/// What the summarizer is told, around what to keep (the mode's
/// `context.compaction_instructions`, else [`DEFAULT_FOCUS`]); the marker also lets a
/// test (or an audit reader) tell a compaction request from a turn.
pub const INSTRUCTIONS: &str = "[压缩历史] 你是对话摘要器。把下面一段家庭助手的对话（以及之前的摘要，如果有）压缩成一份简洁的中文摘要，供助手之后继续对话时参考。";
/// What any mode's compaction keeps when the mode says nothing of its own.
pub const DEFAULT_FOCUS: &str = "保留谁（说话人）说了什么要求、已经做出的决定和结论、数量、进度、还没完成的事；删去寒暄和重复。";
/// What every compaction keeps whatever the mode asks: the times things happened.
const TIME_RULE: &str =
    "事情发生的时刻写成“时:分 事情”（如“18:05 下锅”），之后还会被问到几点做了什么、过了多久。";
const OUTPUT_RULE: &str = "只输出摘要正文，不要加标题或解释。";

/// The compaction request's system message for a mode with `focus` (or the default).
pub fn instructions(focus: Option<&str>) -> String {
    format!(
        "{INSTRUCTIONS}\n{}\n{TIME_RULE}\n{OUTPUT_RULE}",
        focus.unwrap_or(DEFAULT_FOCUS)
    )
}

/// Tokens kept free in a compaction request beyond its text (instructions, overhead).
const REQUEST_SLACK: u32 = 256;

/// Characters of each side of an oversized record (one that would take more than half a
/// compaction request: a hand-edited log, a pasted book) that the summarizer is shown.
const EXCERPT_CHARS: usize = 200;

/// One history to check after a turn.
pub struct Job {
    /// Where its checkpoint is kept.
    pub checkpoint: PathBuf,
    /// A mode session's folder and id (`None`: a normal chat).
    pub session_dir: Option<PathBuf>,
    pub session_id: Option<String>,
    /// A normal chat's carried block (the ended session's id and the block), folded into
    /// the next checkpoint.
    pub carried: Option<(String, Arc<str>)>,
    /// The history's log (any view of it: the latest length is used).
    pub history: HistoryView,
    /// The system message the history's requests start with.
    pub system: Arc<str>,
    pub policy: ModePolicy,
    /// The mode's own `context.compaction_instructions`, if any.
    pub focus: Option<Arc<str>>,
    pub channel: String,
    pub chat_id: String,
    /// Household time for the checkpoint's `created_at`.
    pub now: String,
}

/// Why a compaction did not write a checkpoint.
#[derive(Debug, PartialEq)]
pub enum Skipped {
    Disabled,
    Busy,
    BelowThreshold,
    NothingToCompact,
    Failed(String),
}

impl Job {
    /// The history, for the log: the session id, else the chat.
    fn label(&self) -> String {
        match &self.session_id {
            Some(s) => s.clone(),
            None => format!("{}/{}", self.channel, self.chat_id),
        }
    }
}

impl Context {
    /// After a turn was recorded: compact its history in a background task of its own
    /// (tracked: the kernel's shutdown cancels it) if it passed the threshold. Returns at
    /// once.
    pub fn after_turn(self: &Arc<Self>, provider: &Provider, job: Job) {
        if !self.compaction || !provider.is_configured() {
            return;
        }
        let (ctx, provider) = (self.clone(), provider.clone());
        self.background.spawn(async move {
            let _ = ctx.compact(&provider, job, false).await;
        });
    }

    /// Check the session and compact it when due (`force`: whatever the threshold, as
    /// long as there is something before the last two rounds). Returns the checkpoint
    /// written.
    pub async fn compact(
        self: &Arc<Self>,
        provider: &Provider,
        job: Job,
        force: bool,
    ) -> Result<Checkpoint, Skipped> {
        if !self.compaction {
            return Err(Skipped::Disabled);
        }
        let Some(_slot) = self.checkpoints.begin_compaction(&job.checkpoint) else {
            return Err(Skipped::Busy);
        };
        let history = job.history.latest();
        let prev = self.checkpoint(&job.checkpoint, &history);
        let label = job.label();
        // a carried block not yet in the chat's summary is folded into this one
        let fold = job
            .carried
            .as_ref()
            .filter(|(id, _)| prev.as_ref().and_then(|c| c.carried.as_deref()) != Some(id));
        let mut span = self.due_span(&job, &history, prev.as_deref(), force)?;
        let prev_text = previous_text(prev.as_deref(), fold);
        let base = instructions(job.focus.as_deref());
        let oversized = self.fit_batch(&mut span, &base, prev_text.as_deref(), &label)?;
        let dialogue = dialogue(&history, &span, prev_text.as_deref(), oversized);
        // the summary may take 60 % of the history budget
        let summary_cap = (u64::from(span.budget) * 6 / 10) as u32;
        let prev_through = prev.as_ref().map(|c| c.through);
        let (messages, meta) =
            self.compaction_call(&job, &span, prev_through, &base, dialogue, summary_cap);
        let summary = self
            .summarize(provider, &messages, &meta, &label, summary_cap)
            .await?;
        let c = Checkpoint {
            through: span.through,
            summary,
            created_at: job.now.clone(),
            carried: match fold {
                Some((id, _)) => Some(id.clone()),
                None => prev.as_ref().and_then(|c| c.carried.clone()),
            },
        };
        self.save_checkpoint(&job, c, &label, span.lo).await
    }

    /// Tokens of `c` as the calibration counts them.
    fn tokens_of(&self, c: Counts) -> u32 {
        self.calibration.combine(c.tokenizer, c.conservative)
    }

    /// Which records a compaction would cover, or why none is due: the records after the
    /// previous checkpoint, up to the newest ones that fit half the threshold (and half
    /// the limit), never fewer than the last two rounds.
    fn due_span(
        &self,
        job: &Job,
        history: &HistoryView,
        prev: Option<&Checkpoint>,
        force: bool,
    ) -> Result<Span, Skipped> {
        let len = history.len();
        // a normal chat holds only its tail in memory: records before it that no summary
        // covers (compactions failed for that long) stay in the file, not in the summary
        let held_from = len - history.with_range(0, |records, _| records.len());
        let lo = prev.map_or(0, |c| c.through.min(len)).max(held_from);
        // the history budget of a request with an empty current message
        let fixed = self.tokens_of(self.system_counts(&job.system)) + self.tools_tokens();
        let budget = self.request_limit().saturating_sub(fixed);
        let threshold = self.threshold(budget, job.policy);
        let costs: Vec<u32> = history.with_range(lo, |records, caches| {
            records
                .iter()
                .zip(caches)
                .map(|(r, c)| {
                    let [t, k] = record_counts(r, c, self.replay);
                    self.calibration.combine(t, k)
                })
                .collect()
        });
        // the dialogue also shows each record's kept tool results (bounded: 3 × 500 chars)
        let kept_costs: Vec<u32> = history.with_range(lo, |records, _| {
            records
                .iter()
                .map(|r| {
                    let lines: String = r.kept_lines().collect::<Vec<_>>().join("\n");
                    if lines.is_empty() {
                        0
                    } else {
                        self.tokens_of(Counts::message(&lines))
                    }
                })
                .collect()
        });
        let total: u64 = costs.iter().map(|&c| u64::from(c)).sum();
        let over_limit = job.policy.history_limit.is_some_and(|l| costs.len() > l);
        if !force && !over_limit && total <= u64::from(threshold) {
            return Err(Skipped::BelowThreshold);
        }
        let keep_cap = job
            .policy
            .history_limit
            .map_or(usize::MAX, |l| (l / 2).max(1));
        let min_keep = 2.min(keep_cap).min(costs.len());
        let mut keep = 0usize;
        let mut kept: u64 = 0;
        for &c in costs.iter().rev() {
            let next = kept + u64::from(c);
            if keep >= min_keep && (next > u64::from(threshold / 2) || keep >= keep_cap) {
                break;
            }
            kept = next;
            keep += 1;
        }
        let through = len - keep;
        if through <= lo {
            return Err(Skipped::NothingToCompact);
        }
        Ok(Span {
            lo,
            through,
            costs,
            kept_costs,
            budget,
        })
    }

    /// Shorten `span` to the oldest records that fit one compaction request beside the
    /// instructions and the previous summary (the rest are covered next time). Returns
    /// the cost above which a record is shown as an excerpt.
    fn fit_batch(
        &self,
        span: &mut Span,
        base: &str,
        prev_text: Option<&str>,
        label: &str,
    ) -> Result<u32, Skipped> {
        let mut room = self
            .request_limit()
            .saturating_sub(self.tokens_of(Counts::message(base)) + REQUEST_SLACK)
            .saturating_sub(prev_text.map_or(0, |t| self.tokens_of(Counts::message(t))));
        // an oversized record is shown as an excerpt: it neither blocks every later
        // compaction nor makes each one re-read megabytes
        let oversized = room / 2;
        let excerpt_cost = self.tokens_of(Counts::message(&"字".repeat(2 * EXCERPT_CHARS + 80)));
        let mut batch_end = span.lo;
        let n = span.through - span.lo;
        for (&c, &k) in span.costs[..n].iter().zip(&span.kept_costs[..n]) {
            let c = if c > oversized { excerpt_cost } else { c } + k;
            if c > room {
                break;
            }
            room -= c;
            batch_end += 1;
        }
        span.through = batch_end;
        if span.through <= span.lo {
            warn!(history = %label, "compaction skipped: the oldest record alone does not fit a request");
            return Err(Skipped::NothingToCompact);
        }
        Ok(oversized)
    }

    /// The compaction request: its messages, and how the audit trail describes it.
    fn compaction_call(
        &self,
        job: &Job,
        span: &Span,
        prev_through: Option<usize>,
        base: &str,
        dialogue: String,
        summary_cap: u32,
    ) -> (Vec<Message>, CallMeta) {
        let chars = (summary_cap as usize).max(50);
        let instructions = format!("{base}\n摘要不超过 {chars} 个字。");
        let shape = PromptShape {
            blocks: vec![
                BlockTokens {
                    name: "system".into(),
                    tokens: u64::from(self.tokens_of(Counts::message(&instructions))),
                },
                BlockTokens {
                    name: "compacted".into(),
                    tokens: u64::from(self.tokens_of(Counts::message(&dialogue))),
                },
            ],
            history_from: span.lo,
            history_to: span.through,
            compacted_through: prev_through,
            prefix_hash: String::new(),
            ..Default::default()
        };
        let messages = vec![
            Message::System {
                content: instructions,
            },
            Message::User { content: dialogue },
        ];
        let meta = CallMeta {
            channel: job.channel.clone(),
            chat_id: job.chat_id.clone(),
            session_id: job.session_id.clone(),
            session_dir: job.session_dir.clone(),
            purpose: purpose::COMPACTION,
            shape: Some(Arc::new(shape)),

            turn: None,
        };
        (messages, meta)
    }

    /// Ask the provider for the summary, capped to `cap` tokens.
    async fn summarize(
        &self,
        provider: &Provider,
        messages: &[Message],
        meta: &CallMeta,
        label: &str,
        cap: u32,
    ) -> Result<String, Skipped> {
        let req = ChatRequest {
            messages,
            tools: &[],
            depth: None,
        };
        let summary = match provider.complete(&req, meta).await {
            Ok(r) => r.content.unwrap_or_default().trim().to_string(),
            Err(e) => {
                warn!(history = %label, error = %e, "compaction failed; older turns are trimmed to fit the window until the next try");
                return Err(Skipped::Failed(e.to_string()));
            }
        };
        if summary.is_empty() {
            warn!(history = %label, "compaction returned an empty summary; not written");
            return Err(Skipped::Failed("empty summary".into()));
        }
        Ok(super::tokens::cap_to(&self.calibration, summary, cap))
    }

    /// Put the checkpoint in use, then on disk (a failed save takes it out again).
    async fn save_checkpoint(
        &self,
        job: &Job,
        c: Checkpoint,
        label: &str,
        lo: usize,
    ) -> Result<Checkpoint, Skipped> {
        // in use from now on, before it reaches the disk: whoever sees the file also
        // gets it from the cache (a failed save takes it out again, below)
        self.checkpoints.set(&job.checkpoint, c.clone());
        // its fsyncs on the blocking pool: on a runtime worker they held up every turn
        // queued behind it (the limit bench's slowest 10 % waited 20–45 ms for them)
        let path = job.checkpoint.clone();
        let saved = tokio::task::spawn_blocking(move || checkpoint::save(&path, &c).map(|()| c))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)));
        let c = match saved {
            Ok(c) => c,
            Err(e) => {
                warn!(history = %label, error = %e, "cannot write the checkpoint; older turns are trimmed to fit the window");
                self.checkpoints.forget(&job.checkpoint);
                return Err(Skipped::Failed(e.to_string()));
            }
        };
        info!(history = %label, through = c.through, previous = lo, "history compacted");
        Ok(c)
    }
}

/// What one compaction covers: records `lo..through` of the history.
struct Span {
    /// Records before it are covered by the previous checkpoint (or not held).
    lo: usize,
    through: usize,
    /// The tokens of each record from `lo` on.
    costs: Vec<u32>,
    /// The tokens of each record's kept tool results, as the dialogue shows them.
    kept_costs: Vec<u32>,
    /// The history budget of a request with an empty current message.
    budget: u32,
}

/// The previous summary, with a carried block to fold in appended.
fn previous_text(prev: Option<&Checkpoint>, fold: Option<&(String, Arc<str>)>) -> Option<String> {
    let mut prev_text = prev.map(|c| checkpoint_messages(c).0);
    if let Some((_, block)) = fold {
        let t = prev_text.get_or_insert_with(String::new);
        if !t.is_empty() {
            t.push_str("\n\n");
        }
        t.push_str(block);
    }
    prev_text
}

/// What the summarizer reads: the previous summary, then each covered round with the
/// time it was said (an oversized one as an excerpt) and its kept tool results.
fn dialogue(history: &HistoryView, span: &Span, prev_text: Option<&str>, oversized: u32) -> String {
    let (lo, through) = (span.lo, span.through);
    let mut dialogue = String::new();
    if let Some(p) = prev_text {
        dialogue.push_str(p);
        dialogue.push_str("\n\n");
    }
    dialogue.push_str(&format!("[对话：第 {} 到 {} 轮]\n", lo + 1, through));
    history.with_range(lo, |records, _| {
        let n = through - lo;
        for (r, &c) in records[..n].iter().zip(&span.costs[..n]) {
            if r.error.is_some() {
                continue;
            }
            let (user, assistant) = if c > oversized {
                (excerpt(&r.user), excerpt(&r.assistant))
            } else {
                (r.user.clone(), r.assistant.clone())
            };
            // the day and the time it was said: the summary keeps the times that
            // matter ("18:05 下锅"), so they can be asked for after a compaction
            let at = r
                .timestamp
                .get(..16)
                .unwrap_or(&r.timestamp)
                .replace('T', " ");
            dialogue.push_str(&format!(
                "- {at} {}@{}：{}\n  助手：{}\n",
                r.speaker_id, r.channel, user, assistant
            ));
            // what its tools returned that matters later (a reminder's time): once the
            // record is compacted the summary is the only place it is read again
            for line in r.kept_lines() {
                dialogue.push_str(&format!("  工具结果：{line}\n"));
            }
        }
    });
    dialogue
}

/// The start of an oversized record's text, with a mark saying how much was left out.
fn excerpt(text: &str) -> String {
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if out.len() < text.len() {
        let left = text.chars().count() - EXCERPT_CHARS;
        out.push_str(&format!("…（原文过长，其余 {left} 字略去）"));
    }
    out
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
