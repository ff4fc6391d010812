//! A chat remembers: the mode session it just left (a QQ group asks "刚才放了多少盐" after
//! the cooking mode ended), and its own older turns (a long normal chat is compacted into
//! a checkpoint beside its log instead of dropping them), against the fake
//! OpenAI-compatible server and, for the group, the OneBot simulator over a real
//! WebSocket.

use crate::common;

use common::onebot::text_of;
use common::qq::{at_bot, gateway, sim, text as seg, GROUP, GROUP2, MOM};
use common::*;
use homebot::context::tokens::conservative_count;
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const COMPACTION_MARK: &str = "[压缩历史]";
const SUMMARIZER_MARK: &str = "你是家庭助手 homebot 的会话总结员";

fn system_of(body: &Value) -> &str {
    body["messages"][0]["content"].as_str().unwrap_or_default()
}

fn is_turn(body: &Value) -> bool {
    let s = system_of(body);
    !s.starts_with(COMPACTION_MARK) && !s.starts_with(SUMMARIZER_MARK)
}

fn content(m: &Value) -> &str {
    m["content"].as_str().unwrap_or_default()
}

/// The cooking session's model: enters and leaves the mode when asked (with a summary
/// at the exit), answers "多少盐" from what its request holds, echoes the rest.
fn cook(body: &Value) -> FakeReply {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let last = msgs.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        return text(&format!("（模式操作结果）{}", content(&last)));
    }
    let words = user_words(&last);
    if words.contains("做饭模式") {
        let args = if words.contains("结束") {
            json!({"action": "exit", "mode_id": "cooking",
                   "summary": "妈妈做了红烧肉，盐一共放了两勺，爸爸说偏咸。"})
        } else {
            json!({"action": "enter", "mode_id": "cooking"})
        };
        return tool_call("switch_mode", args);
    }
    if words.contains("多少盐") {
        // only what the request itself carries can answer
        let earlier: String = msgs[..msgs.len() - 1].iter().map(content).collect();
        return text(if earlier.contains("两勺") {
            "刚才放了两勺盐。"
        } else {
            "我不记得刚才放了多少盐。"
        });
    }
    text(&format!("好的：{words}"))
}

#[tokio::test]
async fn after_the_mode_ends_the_group_that_cooked_still_knows_how_much_salt() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, _| cook(body)).await;
    let gw = gateway(ws, &fake).await;
    let mut s = sim(&gw).await;
    let said = [
        (GROUP, 401, "今天吃什么"),
        (GROUP, 402, "打开做饭模式"),
        (GROUP, 403, "盐我放了两勺"),
        (GROUP, 404, "结束做饭模式"),
        (GROUP, 405, "刚才放了多少盐"),
        (GROUP, 406, "那下次少放点"),
        (GROUP2, 407, "刚才放了多少盐"),
    ];
    let mut replies = Vec::new();
    for (group, mid, words) in said {
        s.group_msg(group, MOM, mid, json!([at_bot(), seg(words)]))
            .await;
        replies.push(text_of(&s.expect_send().await));
    }
    assert!(replies[3].contains("已请求退出做饭模式"), "{replies:?}");
    assert!(replies[4].contains("两勺"), "{replies:?}");
    assert!(
        replies[6].contains("不记得"),
        "a group that did not take part carries nothing: {replies:?}"
    );

    let turns: Vec<Value> = fake.requests().into_iter().filter(is_turn).collect();
    let ask = turns
        .iter()
        .find(|r| {
            let m = r["messages"].as_array().unwrap();
            user_words(m.last().unwrap()) == "刚才放了多少盐"
        })
        .unwrap();
    let m = ask["messages"].as_array().unwrap();
    // the block sits right after the system message, as a marked pair
    let block = content(&m[1]);
    assert!(block.starts_with("[刚结束: cook-"), "{block}");
    assert!(block.ends_with("[/刚结束]"), "{block}");
    assert!(
        block.contains("做饭模式会话") && block.contains("盐一共放了两勺"),
        "{block}"
    );
    assert!(
        !block.contains("摘录"),
        "the model's summary, not an excerpt"
    );
    assert_eq!(m[2]["role"], "assistant");
    // then the chat's own history from before the mode
    assert_eq!(user_words(&m[3]), "今天吃什么", "{}", content(&m[3]));
    // the next request of the group starts with the same bytes: the block does not break
    // the prefix
    let next = turns
        .iter()
        .find(|r| {
            let m = r["messages"].as_array().unwrap();
            user_words(m.last().unwrap()) == "那下次少放点"
        })
        .unwrap();
    let n = next["messages"].as_array().unwrap();
    assert_eq!(n[..m.len()], m[..], "the previous request held whole");
    // the other group's request has no block
    let other = turns.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!other.iter().any(|x| content(x).contains("[刚结束")));
    // who carries what is on disk (for a restart), relative to the workspace
    let carried = read_json(&ws.join("chats/carried.json"));
    let entries = carried["chats"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{carried}");
    assert_eq!(entries[0]["chat_id"], format!("group:{GROUP}"));
    assert!(entries[0]["session_dir"]
        .as_str()
        .unwrap()
        .starts_with("modes/sessions/cooking/"));
}

fn kernel(ws: &Path, fake: &FakeLlm, window: u32, agent: &str) -> Kernel {
    std::fs::write(
        ws.join("config.toml"),
        format!("[agent]\n{agent}\n[provider]\nmax_retries = 0\nmax_tokens = 512\n"),
    )
    .unwrap();
    let mut env = fake.env();
    env.context_window = Some(window.to_string());
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(env),
            ..Default::default()
        },
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_its_summary_is_written_the_chat_carries_the_session_s_last_turns() {
    let dir = workspace();
    let ws = dir.path();
    // the summarizer is down: the session keeps its mechanical summary and its job
    let fake = FakeLlm::start(|body, _| {
        if system_of(body).starts_with(SUMMARIZER_MARK) {
            return FakeReply::Status(500, vec![], "down".into());
        }
        cook(body)
    })
    .await;
    let k = kernel(ws, &fake, 65536, "");
    let turn = |w: &str| homebot::channels::cli::turn("local", "mom", w);
    k.command("/mode enter cooking").await;
    k.handle_turn(turn("盐放两勺够吗")).await;
    // an exit without a summary (like the expiry after midnight)
    let r = k.command("/mode exit").await;
    assert!(r.is_answered(), "{r:?}");
    let r = k.handle_turn(turn("刚才放了多少盐")).await;
    assert!(r.text.contains("两勺"), "{r:?}");
    let ask = fake.requests().into_iter().rfind(is_turn).unwrap();
    let block = content(&ask["messages"][1]).to_string();
    assert!(block.starts_with("[刚结束: cook-"), "{block}");
    assert!(
        block.contains("摘录") && block.contains("盐放两勺够吗"),
        "{block}"
    );
}

/// The chat's files in `chats/<channel>/`, by suffix.
fn chat_file(ws: &Path, channel: &str, suffix: &str) -> Option<PathBuf> {
    std::fs::read_dir(ws.join("chats").join(channel))
        .ok()?
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(suffix))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_normal_chat_is_compacted_not_dropped_and_always_fits() {
    const WINDOW: u32 = 7000;
    const TURNS: usize = 10;
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, _| {
        if system_of(body).starts_with(COMPACTION_MARK) {
            let batch = content(&body["messages"][1]).matches("助手：").count();
            return text(&format!("摘要：这一批有 {batch} 轮，妈妈问了一串问题。"));
        }
        let msgs = body["messages"].as_array().unwrap();
        let words = user_words(msgs.last().unwrap());
        text(&format!("好的：{words}。{}", "答案要详细一点。".repeat(8)))
    })
    .await;
    let k = kernel(
        ws,
        &fake,
        WINDOW,
        &format!("normal_history_turns = {TURNS}"),
    );
    for i in 0..60 {
        let r = k
            .handle_turn(homebot::channels::qq::turn(
                "group:1",
                "mom",
                format!("问题{i}"),
            ))
            .await;
        assert!(r.is_answered(), "turn {i}: {r:?}");
    }
    let ckpt_path = chat_file(ws, "qq", ".checkpoint.json").expect("a checkpoint beside the log");
    let log = chat_file(ws, "qq", ".jsonl").unwrap();
    assert_eq!(
        jsonl(&log).len(),
        60,
        "nothing is deleted from the chat's log"
    );
    let ckpt = read_json(&ckpt_path);
    let through = ckpt["through"].as_u64().unwrap() as usize;
    assert!(through >= 60 - 2 * TURNS, "{ckpt}");

    let reqs = fake.requests();
    let turns: Vec<&Value> = reqs.iter().filter(|r| is_turn(r)).collect();
    let compactions: Vec<&Value> = reqs
        .iter()
        .filter(|r| system_of(r).starts_with(COMPACTION_MARK))
        .collect();
    assert!(compactions.len() >= 3, "{} compactions", compactions.len());
    // each older question went into a summary exactly once (in the batches' dialogue)
    for i in 0..through {
        let needle = format!("mom@qq：问题{i}\n");
        let n = compactions
            .iter()
            .filter(|c| content(&c["messages"][1]).contains(&needle))
            .count();
        assert_eq!(n, 1, "问题{i} summarized {n} times");
    }
    let mut breaks = 0;
    for (i, r) in turns.iter().enumerate() {
        let m = r["messages"].as_array().unwrap();
        // every request fits the window (counted conservatively, with the tools)
        let mut n = conservative_count(&r["tools"].to_string());
        n += m
            .iter()
            .map(|x| conservative_count(content(x)))
            .sum::<u32>();
        assert!(n <= WINDOW - 512, "turn {i}: {n} tokens");
        // at most normal_history_turns verbatim after the summary
        let skip = if content(&m[1]).starts_with("[之前的对话摘要]") {
            3
        } else {
            1
        };
        assert!((m.len() - skip - 1) / 2 <= TURNS, "turn {i}");
        if i > 0 {
            let prev = turns[i - 1]["messages"].as_array().unwrap();
            if m.len() < prev.len() || m[..prev.len() - 1] != prev[..prev.len() - 1] {
                breaks += 1;
            }
        }
    }
    // the prefix breaks only when a new summary lands (and, in a burst faster than the
    // summarizer, once more when the cap trims before it) — not every turn
    assert!(
        breaks <= 2 * compactions.len() && breaks < 60 / 3,
        "{breaks} prefix breaks, {} compactions",
        compactions.len()
    );
    let last = turns.last().unwrap()["messages"].as_array().unwrap();
    assert!(
        content(&last[1]).starts_with("[之前的对话摘要]"),
        "{}",
        content(&last[1])
    );
    // a restart replays the same checkpoint from the file
    k.shutdown_gracefully(std::time::Duration::from_secs(5))
        .await;
    k.shutdown();
    drop(k);
    let k = kernel(
        ws,
        &fake,
        WINDOW,
        &format!("normal_history_turns = {TURNS}"),
    );
    k.handle_turn(homebot::channels::qq::turn(
        "group:1",
        "mom",
        "重启后的问题",
    ))
    .await;
    let after = fake.requests().into_iter().rfind(is_turn).unwrap();
    assert!(content(&after["messages"][1]).starts_with("[之前的对话摘要]"));
}
