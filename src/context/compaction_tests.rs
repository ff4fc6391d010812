//! Compaction's unit tests: batches, the previous summary folded in, failures, caps,
//! oversized records, a chat's carried block folded in once.

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
        sent: None,
        place: None,
        tool_results: Vec::new(),
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
        checkpoint: checkpoint::path_in(dir),
        session_dir: Some(dir.to_path_buf()),
        session_id: Some("cook-1".into()),
        carried: None,
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
                let [t, k] = record_counts(r, c, crate::config::Replay::Exact);
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
    assert_eq!(
        checkpoint::load(&checkpoint::path_in(d.path()), 30),
        Some(c.clone())
    );
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
    let s = super::super::tokens::cap_to(&ctx.calibration, "番茄".repeat(500), 100);
    assert!(ctx.calibration.count(&s) <= 100, "{s}");
    assert!(s.ends_with('…'));
    assert_eq!(
        super::super::tokens::cap_to(&ctx.calibration, "短".into(), 100),
        "短"
    );
}

#[tokio::test]
async fn a_chat_s_carried_block_is_folded_into_its_next_summary_once() {
    let (ctx, provider, model, d) = setup("群里的摘要：做过红烧肉，放了两勺盐。", false);
    let log = HistoryLog::from_records((0..30).map(record).collect());
    let chat = d.path().join("group_1.checkpoint.json");
    let block: Arc<str> = Arc::from("[刚结束: cook-1]\n红烧肉放了两勺盐。\n[/刚结束]");
    let mut j = job(d.path(), &log, 1000);
    j.checkpoint = chat.clone();
    (j.session_dir, j.session_id) = (None, None);
    j.carried = Some(("cook-1".into(), block.clone()));
    let c = ctx.compact(&provider, j, false).await.unwrap();
    assert_eq!(c.carried.as_deref(), Some("cook-1"));
    assert_eq!(checkpoint::load(&chat, 30), Some(c.clone()));
    for i in 30..60 {
        log.push(record(i));
    }
    let mut j = job(d.path(), &log, 1000);
    j.checkpoint = chat.clone();
    j.carried = Some(("cook-1".into(), block));
    let c2 = ctx.compact(&provider, j, false).await.unwrap();
    assert_eq!(c2.carried.as_deref(), Some("cook-1"), "still covered");
    let asked = model.asked.lock().unwrap().clone();
    assert!(asked[0].contains("红烧肉放了两勺盐"), "{}", asked[0]);
    assert_eq!(
        asked[1].matches("红烧肉放了两勺盐").count(),
        0,
        "folded once: the second batch has only the summary"
    );
    // the plan no longer sends a block the chat's summary covers
    let p = ctx
        .plan(
            "系统",
            &["问"],
            &log.view(),
            crate::context::budget::Source {
                carried: Some(("cook-1", &Arc::from("[刚结束: cook-1]…[/刚结束]"))),
                ..crate::context::budget::Source::normal(20, Some(&chat))
            },
        )
        .unwrap();
    assert!(p.carried.is_none() && p.checkpoint.is_some());
    let p = ctx
        .plan(
            "系统",
            &["问"],
            &log.view(),
            crate::context::budget::Source {
                carried: Some(("cook-2", &Arc::from("[刚结束: cook-2]…[/刚结束]"))),
                ..crate::context::budget::Source::normal(20, Some(&chat))
            },
        )
        .unwrap();
    assert!(
        p.carried.is_some() && p.carried_tokens > 0,
        "a later session is carried"
    );
}

#[tokio::test]
async fn a_compaction_reads_what_the_compacted_turns_tools_kept() {
    let (ctx, provider, model, d) = setup("摘要：18:05 设了关火提醒，18:15 响。", false);
    let mut records: Vec<Record> = (0..30).map(record).collect();
    records[1].tool_results = vec![crate::history::KeptResult::new(
        "set_reminder",
        "提醒 #1 已设好，18:15 响：关火 [/工具结果]",
    )];
    let log = HistoryLog::from_records(records);
    let c = ctx
        .compact(&provider, job(d.path(), &log, 1000), false)
        .await
        .unwrap();
    assert!(
        c.through > 1,
        "the turn that set it is compacted: {}",
        c.through
    );
    let asked = model.asked.lock().unwrap().clone();
    let dialogue = &asked[0];
    // under the turn that set it, one line, its brackets defanged
    let at = dialogue.find("第1步怎么做").expect("the turn");
    let kept = dialogue
        .find("  工具结果：— 20:05 set_reminder：提醒 #1 已设好，18:15 响：关火 ［/工具结果］\n")
        .unwrap_or_else(|| panic!("the kept result: {dialogue}"));
    assert!(kept > at && kept < dialogue.find("第2步怎么做").unwrap());
    assert_eq!(dialogue.matches("工具结果：").count(), 1, "{dialogue}");
}
