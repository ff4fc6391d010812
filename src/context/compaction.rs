//! Compaction: when a mode session's replayed history passes its threshold (or its
//! `history_limit`), the older rounds are summarized by the provider into a new
//! `checkpoint.json` — the previous summary plus the newly covered records — and later
//! prompts replay the checkpoint, then the records after it.
//!
//! - Checked after each recorded turn of a mode session (the kernel calls
//!   [`Context::after_turn`]), and again while a prompt is built when that prompt had to
//!   be cut; it runs in its own task, so no turn and no actor waits for it, and at most
//!   one runs per session.
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
use crate::provider::{BlockTokens, CallMeta, ChatRequest, Message, PromptShape, Provider};
use std::path::PathBuf;
use std::sync::Arc;
use tracing::{info, warn};

/// What the summarizer is told, around what to keep (the mode's
/// `context.compaction_instructions`, else [`DEFAULT_FOCUS`]); the marker also lets a
/// test (or an audit reader) tell a compaction request from a turn.
pub const INSTRUCTIONS: &str = "[压缩历史] 你是对话摘要器。把下面一段家庭助手的对话（以及之前的摘要，如果有）压缩成一份简洁的中文摘要，供助手之后继续对话时参考。";
/// What any mode's compaction keeps when the mode says nothing of its own.
pub const DEFAULT_FOCUS: &str = "保留谁（说话人）说了什么要求、已经做出的决定和结论、数量、时间、进度、还没完成的事；删去寒暄和重复。";
const OUTPUT_RULE: &str = "只输出摘要正文，不要加标题或解释。";

/// The compaction request's system message for a mode with `focus` (or the default).
pub fn instructions(focus: Option<&str>) -> String {
    format!(
        "{INSTRUCTIONS}\n{}\n{OUTPUT_RULE}",
        focus.unwrap_or(DEFAULT_FOCUS)
    )
}

/// Tokens kept free in a compaction request beyond its text (instructions, overhead).
const REQUEST_SLACK: u32 = 256;

/// Characters of each side of an oversized record (one that would take more than half a
/// compaction request: a hand-edited log, a pasted book) that the summarizer is shown.
const EXCERPT_CHARS: usize = 200;

/// One session to check after a turn.
pub struct Job {
    pub session_dir: PathBuf,
    pub session_id: String,
    /// The session's log (any view of it: the latest length is used).
    pub history: HistoryView,
    /// The frozen system message the session's requests start with.
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

impl Context {
    /// After a turn of a mode session was recorded: compact it in a task of its own if
    /// its history passed the threshold. Returns at once.
    pub fn after_turn(self: &Arc<Self>, provider: &Provider, job: Job) {
        if !self.compaction || !provider.is_configured() {
            return;
        }
        let (ctx, provider) = (self.clone(), provider.clone());
        tokio::spawn(async move {
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
        let Some(_slot) = self.begin_compaction(&job.session_dir) else {
            return Err(Skipped::Busy);
        };
        let history = job.history.latest();
        let len = history.len();
        let prev = self.checkpoint(&job.session_dir, &history);
        let lo = prev.as_ref().map_or(0, |c| c.through.min(len));
        let cal = &self.calibration;
        let count = |c: Counts| cal.combine(c.tokenizer, c.conservative);
        // the history budget of a request with an empty current message
        let fixed = count(self.system_counts(&job.system)) + self.tools_tokens();
        let budget = self.request_limit().saturating_sub(fixed);
        let threshold = self.threshold(budget, job.policy);
        let costs: Vec<u32> = history.with_range(lo, |records, caches| {
            records
                .iter()
                .zip(caches)
                .map(|(r, c)| {
                    let [t, k] = record_counts(r, c);
                    cal.combine(t, k)
                })
                .collect()
        });
        let total: u64 = costs.iter().map(|&c| u64::from(c)).sum();
        let over_limit = job.policy.history_limit.is_some_and(|l| costs.len() > l);
        if !force && !over_limit && total <= u64::from(threshold) {
            return Err(Skipped::BelowThreshold);
        }
        // keep the newest records while they fit half the threshold (and half the
        // limit), never fewer than the last two rounds
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
        let mut through = len - keep;
        if through <= lo {
            return Err(Skipped::NothingToCompact);
        }
        // the summary may take 60 % of the history budget
        let summary_cap = (u64::from(budget) * 6 / 10) as u32;
        // the compaction request itself must fit: instructions + previous summary +
        // the records it covers (a batch: the oldest ones that fit, the rest next time)
        let prev_text = prev.as_ref().map(|c| checkpoint_messages(c).0);
        let base = instructions(job.focus.as_deref());
        let mut room = self
            .request_limit()
            .saturating_sub(count(Counts::message(&base)) + REQUEST_SLACK)
            .saturating_sub(
                prev_text
                    .as_deref()
                    .map_or(0, |t| count(Counts::message(t))),
            );
        // an oversized record is shown as an excerpt: it neither blocks every later
        // compaction nor makes each one re-read megabytes
        let oversized = room / 2;
        let excerpt_cost = count(Counts::message(&"字".repeat(2 * EXCERPT_CHARS + 80)));
        let mut batch_end = lo;
        for &c in &costs[..through - lo] {
            let c = if c > oversized { excerpt_cost } else { c };
            if c > room {
                break;
            }
            room -= c;
            batch_end += 1;
        }
        through = batch_end;
        if through <= lo {
            warn!(session = %job.session_id, "compaction skipped: the oldest record alone does not fit a request");
            return Err(Skipped::NothingToCompact);
        }
        let mut dialogue = String::new();
        if let Some(p) = &prev_text {
            dialogue.push_str(p);
            dialogue.push_str("\n\n");
        }
        dialogue.push_str(&format!("[对话：第 {} 到 {} 轮]\n", lo + 1, through));
        history.with_range(lo, |records, _| {
            let n = through - lo;
            for (r, &c) in records[..n].iter().zip(&costs[..n]) {
                if r.error.is_some() {
                    continue;
                }
                let (user, assistant) = if c > oversized {
                    (excerpt(&r.user), excerpt(&r.assistant))
                } else {
                    (r.user.clone(), r.assistant.clone())
                };
                dialogue.push_str(&format!(
                    "- {} {}@{}：{}\n  助手：{}\n",
                    r.timestamp, r.speaker_id, r.channel, user, assistant
                ));
            }
        });
        let chars = (summary_cap as usize).max(50);
        let instructions = format!("{base}\n摘要不超过 {chars} 个字。");
        let messages = vec![
            Message::System {
                content: instructions.clone(),
            },
            Message::User {
                content: dialogue.clone(),
            },
        ];
        let shape = PromptShape {
            blocks: vec![
                BlockTokens {
                    name: "system".into(),
                    tokens: u64::from(count(Counts::message(&instructions))),
                },
                BlockTokens {
                    name: "compacted".into(),
                    tokens: u64::from(count(Counts::message(&dialogue))),
                },
            ],
            history_from: lo,
            history_to: through,
            compacted_through: prev.as_ref().map(|c| c.through),
            prefix_hash: String::new(),
        };
        let meta = CallMeta {
            channel: job.channel.clone(),
            chat_id: job.chat_id.clone(),
            session_id: Some(job.session_id.clone()),
            session_dir: Some(job.session_dir.clone()),
            purpose: "compaction",
            shape: Some(Arc::new(shape)),
        };
        let req = ChatRequest {
            messages: &messages,
            tools: &[],
        };
        let summary = match provider.complete(&req, &meta).await {
            Ok(r) => r.content.unwrap_or_default().trim().to_string(),
            Err(e) => {
                warn!(session = %job.session_id, error = %e, "compaction failed; older turns are trimmed to fit the window until the next try");
                return Err(Skipped::Failed(e.to_string()));
            }
        };
        if summary.is_empty() {
            warn!(session = %job.session_id, "compaction returned an empty summary; not written");
            return Err(Skipped::Failed("empty summary".into()));
        }
        let summary = cap_summary(self, summary, summary_cap);
        let c = Checkpoint {
            through,
            summary,
            created_at: job.now.clone(),
        };
        if let Err(e) = checkpoint::save(&job.session_dir, &c) {
            warn!(session = %job.session_id, error = %e, "cannot write the checkpoint; older turns are trimmed to fit the window");
            return Err(Skipped::Failed(e.to_string()));
        }
        info!(session = %job.session_id, through, previous = lo, "history compacted");
        self.set_checkpoint(&job.session_dir, c.clone());
        Ok(c)
    }
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

/// `summary` cut (at a character boundary, with a mark) until it counts at most `cap`.
fn cap_summary(ctx: &Context, summary: String, cap: u32) -> String {
    if ctx.calibration.count(&summary) <= cap {
        return summary;
    }
    let chars: Vec<char> = summary.chars().collect();
    let (mut lo, mut hi) = (0usize, chars.len());
    // the longest prefix that fits, by bisection
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let s: String = chars[..mid].iter().collect();
        if ctx.calibration.count(&s) + 2 <= cap {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let mut s: String = chars[..lo].iter().collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{HistoryLog, Record};
    use crate::provider::{ChatModel, ChatResponse, ProviderError};
    use std::sync::Mutex;

    /// Answers every call with `summary`, keeping what it was asked.
    struct Summarizer {
        summary: String,
        asked: Mutex<Vec<String>>,
        fail: bool,
    }

    #[async_trait::async_trait]
    impl ChatModel for Summarizer {
        async fn complete(&self, req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError> {
            if let Some(Message::User { content }) = req.messages.last() {
                self.asked.lock().unwrap().push(content.clone());
            }
            if self.fail {
                return Err(ProviderError::NotConfigured);
            }
            Ok(ChatResponse {
                content: Some(self.summary.clone()),
                ..Default::default()
            })
        }
        fn model_name(&self) -> &str {
            "summarizer"
        }
    }

    fn record(i: usize) -> Record {
        Record {
            timestamp: "2026-10-22T20:05:00+08:00".into(),
            channel: "qq".into(),
            chat_id: "group:1".into(),
            speaker_id: if i.is_multiple_of(2) { "mom" } else { "dad" }.into(),
            user: format!("第{i}步怎么做？"),
            assistant: "把番茄切块，鸡蛋打散，先炒蛋再下番茄，中火翻炒两分钟。".repeat(3),
            error: None,
            speaker_name: None,
        }
    }

    fn setup(
        summary: &str,
        fail: bool,
    ) -> (Arc<Context>, Provider, Arc<Summarizer>, tempfile::TempDir) {
        let model = Arc::new(Summarizer {
            summary: summary.into(),
            asked: Mutex::new(Vec::new()),
            fail,
        });
        let d = tempfile::tempdir().unwrap();
        let provider = Provider::with_model(model.clone(), 1, 0, d.path().join("usage.jsonl"));
        (Arc::new(Context::new(8192, 7168, &[])), provider, model, d)
    }

    fn job(dir: &std::path::Path, log: &HistoryLog, threshold: u32) -> Job {
        Job {
            session_dir: dir.to_path_buf(),
            session_id: "cook-1".into(),
            history: log.view(),
            system: "系统".into(),
            policy: ModePolicy {
                history_limit: None,
                summary_threshold_tokens: Some(threshold),
            },
            focus: None,
            channel: "qq".into(),
            chat_id: "group:1".into(),
            now: "2026-10-22T21:00:00+08:00".into(),
        }
    }

    #[tokio::test]
    async fn compaction_works_in_batches_and_folds_in_the_previous_summary() {
        let (ctx, provider, model, d) = setup("第一份摘要：妈妈和爸爸在做番茄炒蛋。", false);
        let log = HistoryLog::from_records((0..30).map(record).collect());
        let costs: Vec<u32> = log.view().with_range(0, |r, c| {
            r.iter()
                .zip(c)
                .map(|(r, c)| {
                    let [t, k] = record_counts(r, c);
                    ctx.calibration.combine(t, k)
                })
                .collect()
        });
        let threshold = 1000;
        assert!(costs.iter().sum::<u32>() > threshold);
        // below the threshold: nothing
        let small = HistoryLog::from_records((0..3).map(record).collect());
        assert_eq!(
            ctx.compact(&provider, job(d.path(), &small, threshold), false)
                .await,
            Err(Skipped::BelowThreshold)
        );
        let c = ctx
            .compact(&provider, job(d.path(), &log, threshold), false)
            .await
            .unwrap();
        // the records kept verbatim fit half the threshold, and are at least two
        let kept: u32 = costs[c.through..].iter().sum();
        assert!(30 - c.through >= 2, "{}", c.through);
        assert!(kept <= threshold / 2, "{kept}");
        assert_eq!(checkpoint::load(d.path(), 30), Some(c.clone()));
        // the prompt from now on: checkpoint + records after it, far below the threshold
        // until enough new turns come
        for i in 30..60 {
            log.push(record(i));
        }
        let c2 = ctx
            .compact(&provider, job(d.path(), &log, threshold), false)
            .await
            .unwrap();
        assert!(c2.through > c.through);
        let asked = model.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 2);
        assert!(
            asked[1].contains("第一份摘要"),
            "the previous summary is folded in"
        );
        assert!(asked[1].contains(&format!("第{}步", c.through)));
        assert!(
            !asked[1].contains("第0步怎么做"),
            "already covered records are not resent"
        );
        assert!(asked[1].contains("mom@qq"), "who said it");
    }

    #[tokio::test]
    async fn a_failing_summarizer_writes_nothing_and_the_summary_is_capped() {
        let (ctx, provider, _, d) = setup("x", true);
        let log = HistoryLog::from_records((0..30).map(record).collect());
        let r = ctx
            .compact(&provider, job(d.path(), &log, 500), false)
            .await;
        assert!(matches!(r, Err(Skipped::Failed(_))), "{r:?}");
        assert!(!checkpoint::path_in(d.path()).exists());
        // a summary far longer than 60 % of the history budget is cut to it
        let (ctx, provider, _, d) = setup(&"很长的摘要".repeat(5000), false);
        let c = ctx
            .compact(&provider, job(d.path(), &log, 500), false)
            .await
            .unwrap();
        let budget = ctx.request_limit() - ctx.system_counts("系统").conservative;
        assert!(ctx.calibration.count(&c.summary) <= budget * 6 / 10);
    }

    #[tokio::test]
    async fn an_oversized_record_is_compacted_as_an_excerpt_and_blocks_nothing() {
        let (ctx, provider, model, d) = setup("摘要：做了番茄炒蛋。", false);
        let mut records: Vec<Record> = (0..30).map(record).collect();
        // the oldest record: a hand edit far bigger than any request
        records[0].user = "番茄".repeat(2_000_000);
        let log = HistoryLog::from_records(records);
        let c = ctx
            .compact(&provider, job(d.path(), &log, 1000), false)
            .await
            .unwrap();
        assert!(c.through > 1, "compaction went past the oversized record");
        let asked = model.asked.lock().unwrap().clone();
        assert!(
            asked[0].contains("原文过长，其余 3999800 字略去"),
            "excerpt mark"
        );
        assert!(asked[0].len() < 64 * 1024, "{} bytes asked", asked[0].len());
        assert!(asked[0].contains("第1步怎么做"));
    }

    #[test]
    fn a_mode_words_what_its_compaction_keeps() {
        let generic = instructions(None);
        assert!(generic.starts_with(INSTRUCTIONS) && generic.contains(DEFAULT_FOCUS));
        assert!(!generic.contains('菜'), "{generic}");
        let own = instructions(Some("保留每道题的答案"));
        assert!(own.starts_with(INSTRUCTIONS) && own.contains("保留每道题的答案"));
        assert!(!own.contains(DEFAULT_FOCUS));
    }

    #[test]
    fn a_long_summary_is_cut_to_its_cap() {
        let ctx = Context::new(8192, 7168, &[]);
        let s = cap_summary(&ctx, "番茄".repeat(500), 100);
        assert!(ctx.calibration.count(&s) <= 100, "{s}");
        assert!(s.ends_with('…'));
        assert_eq!(cap_summary(&ctx, "短".into(), 100), "短");
    }
}
