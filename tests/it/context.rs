//! Context budget and compaction against the fake OpenAI-compatible server: every request
//! fits a small window (counted conservatively, over the messages and the tools), long
//! mode sessions are compacted into `checkpoint.json` while `conversation.jsonl` stays
//! untouched, requests stay append-only between compactions, a failing summarizer never
//! fails a turn, `history_limit` holds, a normal chat whose summarizer is down is trimmed
//! in chunks, and records
//! written before the stored prompt existed replay deterministically.

use crate::common;

use common::*;
use homebot::channels::{cli, qq};
use homebot::context::tokens::conservative_count;
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::Value;
use std::path::Path;

const MAX_TOKENS: u32 = 512;
const COMPACTION_MARK: &str = "[压缩历史]";

fn is_compaction(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with(COMPACTION_MARK))
}

/// The fake model: summaries for compaction requests (or a 500 when `fail_compaction`),
/// an echo of the user's words otherwise.
async fn fake(fail_compaction: bool) -> FakeLlm {
    FakeLlm::start(move |body, _| {
        if is_compaction(body) {
            if fail_compaction {
                return FakeReply::Status(500, vec![], "summarizer down".into());
            }
            return text("摘要：一家人在做番茄炒蛋，妈妈问了鸡蛋和番茄的份量。");
        }
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        text(&format!(
            "好的：{}。番茄切块，鸡蛋打散，先炒蛋再炒番茄。",
            user_words(msgs.last().unwrap())
        ))
    })
    .await
}

fn kernel(
    ws: &Path,
    fake: &FakeLlm,
    window: Option<u32>,
    agent: &str,
    skills: Option<&Path>,
) -> Kernel {
    std::fs::write(
        ws.join("config.toml"),
        format!("[agent]\n{agent}\n[provider]\nmax_retries = 0\nmax_tokens = {MAX_TOKENS}\n"),
    )
    .unwrap();
    let mut env = fake.env();
    env.context_window = window.map(|w| w.to_string());
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(env),
            skills_dirs: skills.map(|s| vec![s.to_path_buf()]),
            ..Default::default()
        },
    )
    .unwrap()
}

/// A request counted the conservative way: each CJK character one token, other text
/// one per four characters, over every message's text and the tools.
fn conservative(body: &Value) -> u32 {
    let mut n = conservative_count(&body["tools"].to_string());
    for m in body["messages"].as_array().unwrap() {
        n += conservative_count(m["content"].as_str().unwrap_or_default());
    }
    n
}

/// The mode's turn requests after a probe turn: the window that leaves `history` tokens
/// for the history above what the system prompt, the tools and one message take.
async fn window_with_history_room(history: u32) -> u32 {
    let ws = workspace();
    let f = fake(false).await;
    let k = kernel(ws.path(), &f, None, "", None);
    k.command("/mode enter cooking").await;
    k.handle_turn(qq::turn("group:5550001", "mom", "鸡蛋要几个？"))
        .await;
    let fixed = conservative(&turns(&f)[0]);
    k.shutdown();
    // the request limit is 90 % of the input budget; per-message overheads ~ 5 %
    ((fixed + history) as f64 / 0.9 * 1.05) as u32 + MAX_TOKENS
}

fn speaker(i: usize) -> (&'static str, &'static str, &'static str) {
    [
        ("qq", "group:5550001", "mom"),
        ("voice", "kitchen", "dad"),
        ("qq", "group:5550001", "kid"),
    ][i % 3]
}

/// The messages of a request before its current user message.
fn stable_part(body: &Value) -> Vec<Value> {
    let m = body["messages"].as_array().unwrap();
    m[..m.len() - 1].to_vec()
}

/// Whether request `b` holds request `a` whole, message by message, and adds one
/// exchange (the reply to `a`, the next user message): DeepSeek's unit at the end of
/// `a`'s input is hit.
fn holds_whole(a: &Value, b: &Value) -> bool {
    let (am, bm) = (
        a["messages"].as_array().unwrap(),
        b["messages"].as_array().unwrap(),
    );
    bm.len() == am.len() + 2 && bm[..am.len()] == am[..]
}

fn has_checkpoint(body: &Value) -> Option<String> {
    let m = &body["messages"][1];
    let c = m["content"].as_str()?;
    c.starts_with("[之前的对话摘要]").then(|| c.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_mode_session_is_compacted_and_always_fits_the_window() {
    let window = window_with_history_room(1500).await;
    let ws = workspace();
    let f = fake(false).await;
    let k = kernel(ws.path(), &f, Some(window), "", None);
    k.command("/mode enter cooking").await;
    let sdir = session_dir(ws.path());
    let conv = sdir.join("conversation.jsonl");
    let mut early = Vec::new();
    for i in 0..40 {
        let (ch, chat, who) = speaker(i);
        let r = k
            .handle_turn(crate::common::turn_of(
                ch,
                chat,
                who,
                format!("第{i}步：番茄炒蛋接下来怎么做？火要多大？"),
            ))
            .await;
        assert!(r.is_answered(), "turn {i}: {r:?}");
        if i == 9 {
            early = std::fs::read(&conv).unwrap();
        }
    }
    // conversation.jsonl: all 40 records, never rewritten
    let lines = jsonl(&conv);
    assert_eq!(lines.len(), 40);
    let bytes = std::fs::read(&conv).unwrap();
    assert!(bytes.starts_with(&early), "earlier records were rewritten");
    for (i, l) in lines.iter().enumerate() {
        assert!(l["user"].as_str().unwrap().starts_with(&format!("第{i}步")));
    }
    // compaction happened, into checkpoint.json
    let compactions: Vec<Value> = f.requests().into_iter().filter(is_compaction).collect();
    assert!(!compactions.is_empty(), "no compaction in 40 turns");
    let sys = compactions[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        sys.contains("菜名和步骤进度"),
        "the cooking skill's words: {sys}"
    );
    let cp = read_json(&sdir.join("checkpoint.json"));
    let through = cp["through"].as_u64().unwrap() as usize;
    assert!((1..=38).contains(&through), "{cp}");
    assert!(cp["summary"].as_str().unwrap().contains("番茄炒蛋"));

    let reqs = turns(&f);
    assert_eq!(reqs.len(), 40);
    let limit = window - MAX_TOKENS;
    for (i, r) in f.requests().iter().enumerate() {
        let n = conservative(r);
        assert!(n <= limit, "request {i}: {n} tokens > input budget {limit}");
    }
    let mut stable_pairs_after_checkpoint = 0;
    for (i, pair) in reqs.windows(2).enumerate() {
        let (a, b) = (&pair[0], &pair[1]);
        // the role block is in every request, in the system message
        for r in [a, b] {
            let sys = r["messages"][0]["content"].as_str().unwrap();
            assert!(sys.contains("份量换算"), "frozen prompt missing in request");
        }
        if has_checkpoint(a) == has_checkpoint(b) {
            // no compaction in between: the previous request is held whole, its user
            // message exactly as it was sent
            assert!(holds_whole(a, b), "pair {i}: not append-only");
            if has_checkpoint(a).is_some() {
                stable_pairs_after_checkpoint += 1;
            }
        }
    }
    assert!(
        stable_pairs_after_checkpoint >= 5,
        "after a compaction requests share a prefix again ({stable_pairs_after_checkpoint})"
    );
    // the checkpoint is after the system message, never in it
    let last = reqs.last().unwrap();
    assert!(has_checkpoint(last).is_some());
    assert!(!last["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("[之前的对话摘要]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_summarizer_never_fails_a_turn_nor_overflows_the_window() {
    let window = window_with_history_room(1200).await;
    let ws = workspace();
    let f = fake(true).await;
    let k = kernel(ws.path(), &f, Some(window), "", None);
    k.command("/mode enter cooking").await;
    let sdir = session_dir(ws.path());
    for i in 0..30 {
        let (ch, chat, who) = speaker(i);
        let r = k
            .handle_turn(crate::common::turn_of(
                ch,
                chat,
                who,
                format!("第{i}步：番茄炒蛋接下来怎么做？火要多大？"),
            ))
            .await;
        assert!(r.is_answered(), "turn {i}: {r:?}");
        assert!(r.text.starts_with("好的："), "{}", r.text);
    }
    let lines = jsonl(&sdir.join("conversation.jsonl"));
    assert_eq!(lines.len(), 30);
    assert!(lines.iter().all(|l| l.get("error").is_none()));
    assert!(
        f.requests().iter().any(is_compaction),
        "compaction was tried"
    );
    assert!(!sdir.join("checkpoint.json").exists());
    let limit = window - MAX_TOKENS;
    let reqs = turns(&f);
    for r in &reqs {
        assert!(conservative(r) <= limit);
        assert!(has_checkpoint(r).is_none());
    }
    // the safe truncation cut the oldest records
    let last = reqs.last().unwrap()["messages"].as_array().unwrap().len();
    assert!(
        last < 2 * 29 + 2,
        "history was not trimmed: {last} messages"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_limit_caps_the_replayed_records() {
    let ws = workspace();
    let skills = ws.path().join("skills-src");
    let homework = skills.join("homework");
    std::fs::create_dir_all(&homework).unwrap();
    std::fs::write(
        homework.join("SKILL.md"),
        "---\nname: homework\ndescription: 作业\n---\n检查作业。",
    )
    .unwrap();
    std::fs::write(
        homework.join("mode.json"),
        r#"{"id":"homework","display_name":"作业模式","context":{"history_limit":6}}"#,
    )
    .unwrap();
    let f = fake(false).await;
    let k = kernel(ws.path(), &f, None, "", Some(&skills));
    let r = k.command("/mode enter homework").await;
    assert!(r.is_answered(), "{r:?}");
    for i in 0..16 {
        let r = k
            .handle_turn(cli::turn("local", "kid", format!("第{i}题怎么做？")))
            .await;
        assert!(r.is_answered(), "{r:?}");
    }
    for r in turns(&f) {
        let msgs = r["messages"].as_array().unwrap();
        let skip = if has_checkpoint(&r).is_some() { 3 } else { 1 };
        let replayed = (msgs.len() - skip - 1) / 2;
        assert!(replayed <= 6, "{replayed} records replayed");
    }
    assert!(f.requests().iter().any(is_compaction));
    assert!(session_dir(ws.path()).join("checkpoint.json").exists());
    // a mode without compaction instructions of its own gets the generic ones: no
    // cooking words in the kernel
    for c in f.requests().iter().filter(|r| is_compaction(r)) {
        let sys = c["messages"][0]["content"].as_str().unwrap();
        assert!(sys.contains("进度") && !sys.contains("菜"), "{sys}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_chat_whose_compaction_fails_is_trimmed_in_chunks_so_prefixes_hold() {
    let ws = workspace();
    // the summarizer is down: today's safe truncation (a chat whose compaction works is
    // tested in tests/it/chat_memory.rs)
    let f = fake(true).await;
    let k = kernel(ws.path(), &f, None, "normal_history_turns = 6", None);
    for i in 0..24 {
        let r = k
            .handle_turn(qq::turn("private:10001", "mom", format!("问题{i}")))
            .await;
        assert!(r.is_answered(), "{r:?}");
    }
    let reqs = turns(&f);
    let mut breaks = 0;
    for pair in reqs.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let sa = stable_part(a);
        let bm = b["messages"].as_array().unwrap();
        assert!(
            (bm.len() - 2) / 2 <= 6,
            "at most normal_history_turns replayed"
        );
        if holds_whole(a, b) {
            continue;
        }
        assert!(bm.len() < sa.len() + 3, "only a trim breaks the prefix");
        breaks += 1;
        // a trim drops back towards half the limit at once (the start moves on a grid)
        let replayed = (bm.len() - 2) / 2;
        assert!(
            (3..6).contains(&replayed),
            "{replayed} replayed after a trim"
        );
    }
    // 24 turns with a limit of 6, trimmed by 3 at a time: a break every 3rd turn at most
    assert!((5..=7).contains(&breaks), "{breaks} prefix breaks");
    // every replayed user message is the one its turn sent: time, speaker tag, words
    // and its [上下文] block
    let last = reqs.last().unwrap()["messages"].as_array().unwrap();
    let first = last[1]["content"].as_str().unwrap();
    assert!(
        &first[2..3] == ":" && first[5..].starts_with(" mom："),
        "{first}"
    );
    assert!(
        first.contains("：问题") && first.contains("\n\n[上下文]\n"),
        "{first}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_of_earlier_versions_replay_lean_from_their_fields() {
    let ws = workspace();
    let f = fake(false).await;
    // records in the formats of earlier versions: no `prompt`, and one with the whole
    // message it sent (`prompt`, [上下文] and all): both replay as time, speaker tag and
    // words (they kept no `sent`)
    let old = r#"{"timestamp":"2026-10-22T20:05:00+08:00","channel":"qq","chat_id":"private:10001","speaker_id":"mom","user":"番茄要放几个？","assistant":"两个。"}
{"timestamp":"2026-10-22T20:06:00+08:00","channel":"qq","chat_id":"private:10001","speaker_id":"dad","user":"鸡蛋呢？","assistant":"三个。","prompt":"[上下文]\n说话人: dad\n[/上下文]\n\n鸡蛋呢？"}
"#;
    let path = chat_file(ws.path(), "qq", "private:10001");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, old).unwrap();
    let k = kernel(ws.path(), &f, None, "", None);
    for q in ["葱要吗？", "盐放多少？"] {
        let r = k.handle_turn(qq::turn("private:10001", "mom", q)).await;
        assert!(r.is_answered(), "{r:?}");
    }
    let reqs = turns(&f);
    let (a, b) = (&reqs[0]["messages"], &reqs[1]["messages"]);
    assert_eq!(a[1], b[1]);
    assert_eq!(a[1]["content"], "20:05 mom：番茄要放几个？");
    assert_eq!(a[3]["content"], "20:06 dad：鸡蛋呢？");
    // the new turns keep what they sent: the previous request is held whole
    assert!(holds_whole(&reqs[0], &reqs[1]));
    let sent = a[5]["content"].as_str().unwrap();
    assert!(
        sent[5..].starts_with(" mom：葱要吗？\n\n[上下文]\n"),
        "{sent}"
    );
    // and the file's old lines are untouched
    assert!(std::fs::read_to_string(&path).unwrap().starts_with(old));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_cannot_fit_is_refused_clearly_and_a_bad_window_stops_start() {
    let ws = workspace();
    let f = fake(false).await;
    let k = kernel(ws.path(), &f, Some(MAX_TOKENS + 600), "", None);
    let r = k.handle_turn(cli::turn("local", "mom", "你好")).await;
    assert!(!r.is_answered(), "{r:?}");
    assert!(r.text.contains("上下文窗口"), "{}", r.text);
    assert_eq!(f.calls(), 0, "nothing over the window is sent");
    k.shutdown();
    drop(k);
    let ws = workspace();
    let mut env = f.env();
    env.context_window = Some("lots".into());
    let e = Kernel::start(
        ws.path(),
        KernelOptions {
            env: Some(env),
            ..Default::default()
        },
    )
    .err()
    .expect("a bad window is refused at start");
    assert!(e.to_string().contains("HOMEBOT_CONTEXT_WINDOW"), "{e}");
}

/// Where homebot keeps a chat's history (as `homebot::chats` names it).
fn chat_file(ws: &Path, channel: &str, chat: &str) -> std::path::PathBuf {
    homebot::chats::ChatHistories::new(&ws.join("chats")).path(channel, chat)
}

/// The first request of each turn (compaction requests left out).
fn turns(f: &FakeLlm) -> Vec<Value> {
    turn_requests(f)
        .into_iter()
        .filter(|r| !is_compaction(r))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_results_that_would_pass_the_window_stop_the_turn_before_sending() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("notes")).unwrap();
    std::fs::write(ws.path().join("notes/big.md"), "番茄".repeat(30_000)).unwrap();
    let f = FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "tool" {
            text("读完了。")
        } else {
            tool_call("read_file", serde_json::json!({"path": "notes/big.md"}))
        }
    })
    .await;
    let k = kernel(ws.path(), &f, Some(8192 + MAX_TOKENS), "", None);
    let r = k
        .handle_turn(cli::turn("local", "mom", "读一下 notes/big.md"))
        .await;
    assert!(r.text.contains("超出了模型的上下文窗口"), "{}", r.text);
    assert!(!r.is_answered());
    assert_eq!(f.calls(), 1, "the over-window request was never sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_checkpoint_is_set_aside_and_the_session_goes_on() {
    let ws = workspace();
    let f = fake(false).await;
    let k = kernel(ws.path(), &f, None, "", None);
    k.command("/mode enter cooking").await;
    let sdir = session_dir(ws.path());
    std::fs::write(sdir.join("checkpoint.json"), b"{\"through\": 3, \"summ").unwrap();
    let r = k
        .handle_turn(qq::turn("group:5550001", "mom", "鸡蛋要几个？"))
        .await;
    assert!(r.is_answered(), "{r:?}");
    assert!(!sdir.join("checkpoint.json").exists());
    assert_eq!(
        std::fs::read(sdir.join("checkpoint.json.corrupt")).unwrap(),
        b"{\"through\": 3, \"summ"
    );
    assert!(has_checkpoint(&turns(&f)[0]).is_none());
    assert_eq!(jsonl(&sdir.join("conversation.jsonl")).len(), 1);
}
