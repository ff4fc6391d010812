//! Every request holds the one before it whole: DeepSeek's cache hits only whole units,
//! persisted at the end of each request's input, so a turn's first request must be the
//! previous turn's first request of the same history plus new messages — compared
//! message by message, the tools too. Across two chats and a voice turn of one mode
//! session, a group where two people alternate, a tool round, a failed turn and a
//! restart; and the time each line was said, which the model can read back, also after
//! a compaction and under lean replay. Where a request does not hold the one before it
//! (docs/context.md, "New bases"): [`crate::cache_units_bases`].

use crate::common;

use chrono::{TimeZone, Utc};
use common::*;
use homebot::channels::{cli, qq, voice};
use homebot::clock::ManualClock;
use homebot::config::EnvOverrides;
use homebot::kernel::{Kernel, KernelOptions};
use homebot::turn::Turn;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

pub(crate) const COMPACTION_MARK: &str = "[压缩历史]";

pub(crate) fn is_compaction(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with(COMPACTION_MARK))
}

/// The first request of each turn (compactions left out).
pub(crate) fn turns(f: &FakeLlm) -> Vec<Value> {
    turn_requests(f)
        .into_iter()
        .filter(|r| !is_compaction(r))
        .collect()
}

pub(crate) fn msgs(r: &Value) -> &Vec<Value> {
    r["messages"].as_array().unwrap()
}

/// Whether `b` holds `a` whole: the same tools, and `a`'s messages, each unchanged, at
/// the start of `b`'s.
pub(crate) fn holds_whole(a: &Value, b: &Value) -> bool {
    let (am, bm) = (msgs(a), msgs(b));
    a["tools"] == b["tools"] && bm.len() > am.len() && bm[..am.len()] == am[..]
}

/// Household time (Asia/Shanghai) on 2 December 2026.
pub(crate) fn at(h: u32, m: u32) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 2, h - 8, m, 0).unwrap()
}

/// The `HH:MM` in front of the user message that said `words`, or in a summary line
/// "HH:MM words".
pub(crate) fn time_of(body: &Value, words: &str) -> Option<String> {
    for m in msgs(body) {
        let c = m["content"].as_str().unwrap_or_default();
        for line in c.lines() {
            let Some(i) = line.find(words) else { continue };
            let head = &line[..i];
            if let Some(t) = head
                .split([' ', '：', '（'])
                .find(|t| t.len() == 5 && t.as_bytes()[2] == b':')
            {
                return Some(t.to_string());
            }
        }
    }
    None
}

/// A model that reads the request: "我几点下的锅？" is answered from the times in it; a
/// compaction is summarized as "HH:MM words" lines, the previous summary's kept; "查一下笔记" reads a file first;
/// "出错" fails; anything else is echoed.
pub(crate) async fn model() -> FakeLlm {
    FakeLlm::start(|body, _| reply(body)).await
}

/// The answers of [`model`].
pub(crate) fn reply(body: &Value) -> FakeReply {
    if is_compaction(body) {
        let dialogue = body["messages"][1]["content"].as_str().unwrap_or_default();
        let lines: Vec<String> = dialogue
            .lines()
            .filter_map(|l| {
                // a line of the previous summary that holds a time stays
                if l.len() > 6 && l.as_bytes()[2] == b':' && l.as_bytes()[5] == b' ' {
                    return Some(l.to_string());
                }
                // "- 2026-12-02 18:05 mom@cli：下锅了"
                let rest = l.strip_prefix("- ")?;
                let time = rest.get(11..16)?;
                let words = rest.split_once('：')?.1;
                Some(format!("{time} {words}"))
            })
            .collect();
        return text(&lines.join("\n"));
    }
    let m = msgs(body);
    let last = m.last().unwrap();
    if last["role"] == "tool" {
        return text("笔记里写着：红烧肉炖一小时。");
    }
    let words = user_words(last);
    if words.contains("我几点下的锅") {
        return match time_of(body, "下锅了") {
            Some(t) => text(&format!("你是 {t} 下的锅。")),
            None => text("我不知道。"),
        };
    }
    if words.contains("查一下笔记") {
        return tool_call("list_files", json!({"path": "."}));
    }
    if words.contains("出错") {
        return FakeReply::Status(500, vec![], "down".into());
    }
    text(&format!("好的：{words}"))
}

pub(crate) const MEMBERS: &str = "[household]\nname = \"测试之家\"\ntimezone = \"Asia/Shanghai\"\n\
[[members]]\nid = \"mom\"\nname = \"妈妈\"\n[[members]]\nid = \"kid\"\nname = \"小明\"\n";

pub(crate) fn start(ws: &Path, fake: &FakeLlm, clock: &ManualClock, extra: &str) -> Kernel {
    start_env(ws, fake.env(), clock, extra)
}

/// [`start`] with the environment's overrides given.
pub(crate) fn start_env(ws: &Path, env: EnvOverrides, clock: &ManualClock, extra: &str) -> Kernel {
    std::fs::write(
        ws.join("config.toml"),
        format!("{MEMBERS}[agent]\n{extra}\n[provider]\nmax_retries = 0\n"),
    )
    .unwrap();
    for (id, profile) in [("mom", "妈妈不吃香菜。"), ("kid", "小明对花生过敏。")] {
        std::fs::create_dir_all(ws.join("members").join(id)).unwrap();
        std::fs::write(ws.join("members").join(id).join("USER.md"), profile).unwrap();
    }
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(env),
            clock: Some(Arc::new(clock.clone())),
            lock_wait: Some(std::time::Duration::from_secs(5)),
            ..Default::default()
        },
    )
    .unwrap()
}

pub(crate) async fn say(k: &Kernel, clock: &ManualClock, (h, m): (u32, u32), t: Turn) -> String {
    clock.set(at(h, m));
    k.handle_turn(t).await.text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_session_over_two_chats_a_voice_turn_a_tool_round_a_failure_and_a_restart() {
    let dir = workspace();
    let ws = dir.path();
    let fake = model().await;
    let clock = ManualClock::new(at(18, 0));
    let k = start(ws, &fake, &clock, "");
    assert!(k.command("/mode enter cooking").await.is_answered());
    let group = |who: &str, words: &str| qq::turn("group:5550001", who, words);
    say(&k, &clock, (18, 1), group("mom", "今晚做红烧肉")).await;
    say(&k, &clock, (18, 2), group("kid", "我要吃两块")).await;
    say(&k, &clock, (18, 3), cli::turn("local", "mom", "肉切好了")).await;
    say(
        &k,
        &clock,
        (18, 5),
        voice::turn("wake-1", "guest", "下锅了"),
    )
    .await;
    let noted = say(&k, &clock, (18, 6), group("mom", "查一下笔记")).await;
    assert!(noted.contains("炖一小时"), "{noted}");
    let failed = say(&k, &clock, (18, 7), group("kid", "出错")).await;
    assert!(!failed.contains("好的"), "{failed}");
    say(&k, &clock, (18, 8), group("mom", "加点糖")).await;
    // a restart: the next request is built from the files alone
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
    k.shutdown();
    drop(k);
    let k = start(ws, &fake, &clock, "");
    let said = say(&k, &clock, (18, 47), group("kid", "我几点下的锅？")).await;
    assert_eq!(said, "你是 18:05 下的锅。");
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;

    let reqs = turns(&fake);
    // enter (a tool call) + 8 turns; the failed turn's request was sent too
    assert_eq!(reqs.len(), 8, "{reqs:#?}");
    for (i, pair) in reqs.windows(2).enumerate() {
        let (a, b) = (&pair[0], &pair[1]);
        if i == 5 {
            // after the failed turn (not replayed): the request before it is held whole
            assert!(!holds_whole(a, b), "the failed turn is not replayed");
            assert!(holds_whole(&reqs[4], b), "the request before the failure");
            continue;
        }
        assert!(
            holds_whole(a, b),
            "request {i} is not held whole by the next:\n{a:#}\n{b:#}"
        );
    }
    // the tool round of "查一下笔记": its second request holds the first whole
    let all = fake.requests();
    let round = all
        .iter()
        .position(|r| msgs(r).last().unwrap()["role"] == "tool")
        .unwrap();
    assert!(holds_whole(&all[round - 1], &all[round]));
    // one system message for every speaker and channel; no member's profile in a mode
    let system = &msgs(&reqs[0])[0];
    assert!(reqs.iter().all(|r| &msgs(r)[0] == system));
    assert!(!serde_json::to_string(&reqs).unwrap().contains("不吃香菜"));
    // the voice turn is marked spoken; the speech rule is in the system message only
    let spoken = msgs(reqs.last().unwrap())
        .iter()
        .find(|m| user_words(m) == "下锅了")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        spoken.starts_with("18:05 guest：下锅了\n\n[上下文]\n2026-12-02 星期三 · voice wake-1 · 说话人 guest · 语音\n[/上下文]"),
        "{spoken}"
    );
    assert!(system["content"]
        .as_str()
        .unwrap()
        .contains(homebot::prompt::SPEECH_RULE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_where_two_people_alternate_keeps_one_prefix_and_sends_each_profile_once() {
    let dir = workspace();
    let ws = dir.path();
    let fake = model().await;
    let clock = ManualClock::new(at(12, 0));
    let k = start(ws, &fake, &clock, "");
    for i in 0..6u32 {
        let who = ["mom", "kid"][i as usize % 2];
        let t = qq::turn("group:5550001", who, format!("第{i}句"));
        say(&k, &clock, (12, 10 + i), t).await;
    }
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
    let reqs = turns(&fake);
    assert_eq!(reqs.len(), 6);
    for pair in reqs.windows(2) {
        assert!(holds_whole(&pair[0], &pair[1]), "{:#}", pair[1]);
    }
    let last = serde_json::to_string(reqs.last().unwrap()).unwrap();
    assert_eq!(last.matches("妈妈不吃香菜。").count(), 1, "{last}");
    assert_eq!(last.matches("小明对花生过敏。").count(), 1, "{last}");
    // each in the speaker's own first message
    let first_kid = msgs(reqs.last().unwrap())
        .iter()
        .find(|m| user_words(m) == "第1句")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        first_kid.ends_with("[成员资料]\n小明（kid）的 USER.md：\n小明对花生过敏。\n[/成员资料]"),
        "{first_kid}"
    );
}

/// Memories recalled turn after turn: in a normal chat they are kept (sent once while the
/// window holds them), so every request still holds the one before it whole; in a mode
/// session, which several chats share, a private chat's hold for their turn only, and a
/// group's are kept (the group hears the turn anyway).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memories_recalled_turn_after_turn_keep_the_prefix_in_a_chat() {
    let dir = workspace();
    let ws = dir.path();
    let fake = model().await;
    let clock = ManualClock::new(at(18, 0));
    let k = start(ws, &fake, &clock, "");
    let mom = |words: &str| qq::turn("private:10001", "mom", words);
    let now = at(18, 0).fixed_offset();
    let keys = k.memory().scene_of(&mom("晚饭"), now).keys;
    assert!(k.memory().ready().await);
    for fact in ["家里三个人吃饭", "周三晚上不吃辣"] {
        k.memory()
            .commit(
                fact.into(),
                keys.clone(),
                "qq:private:10001".into(),
                now.timestamp(),
            )
            .await
            .unwrap();
    }
    k.memory().flush().await;
    for (i, words) in ["晚饭吃什么", "晚饭做个汤吧", "晚饭几点开饭"]
        .iter()
        .enumerate()
    {
        say(&k, &clock, (18, 1 + i as u32), mom(words)).await;
    }
    let reqs = turns(&fake);
    assert_eq!(reqs.len(), 3);
    for pair in reqs.windows(2) {
        assert!(holds_whole(&pair[0], &pair[1]), "{:#}", pair[1]);
    }
    let last = serde_json::to_string(reqs.last().unwrap()).unwrap();
    assert_eq!(last.matches("家里三个人吃饭").count(), 1, "{last}");
    assert_eq!(last.matches("周三晚上不吃辣").count(), 1, "{last}");
    // kept in the first message that recalled them
    let first = msgs(&reqs[0]).last().unwrap()["content"].as_str().unwrap();
    assert!(
        first.contains("[场景记忆]") && first.contains("家里三个人吃饭"),
        "{first}"
    );

    // in a mode session: an aside, sent again each turn it is recalled, never replayed
    say(&k, &clock, (18, 10), mom("/mode enter cooking")).await;
    say(&k, &clock, (18, 11), mom("晚饭吃什么")).await;
    say(&k, &clock, (18, 12), mom("晚饭做个汤吧")).await;
    let reqs = turns(&fake);
    let (a, b) = (&reqs[reqs.len() - 2], &reqs[reqs.len() - 1]);
    for r in [a, b] {
        let tail = msgs(r).last().unwrap()["content"].as_str().unwrap();
        assert!(tail.contains("家里三个人吃饭"), "{tail}");
    }
    let b_all = serde_json::to_string(b).unwrap();
    assert_eq!(b_all.matches("家里三个人吃饭").count(), 1, "{b_all}");
    assert!(!holds_whole(a, b), "an aside is not replayed");

    // …but a group's memories in the session are heard by the group anyway: kept
    let group = |who: &str, words: &str| qq::turn("group:5550001", who, words);
    let keys = k.memory().scene_of(&group("mom", "晚饭"), now).keys;
    k.memory()
        .commit(
            "群里约好周五吃火锅".into(),
            keys,
            "qq:group:5550001".into(),
            now.timestamp(),
        )
        .await
        .unwrap();
    k.memory().flush().await;
    say(&k, &clock, (18, 13), group("mom", "晚饭吃什么")).await;
    say(&k, &clock, (18, 14), group("kid", "晚饭做个汤吧")).await;
    let reqs = turns(&fake);
    let (a, b) = (&reqs[reqs.len() - 2], &reqs[reqs.len() - 1]);
    assert!(holds_whole(a, b), "{b:#}");
    let b_all = serde_json::to_string(b).unwrap();
    assert_eq!(b_all.matches("群里约好周五吃火锅").count(), 1, "{b_all}");
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_is_in_the_history_after_a_compaction_and_under_lean_replay() {
    for replay in ["exact", "lean"] {
        let dir = workspace();
        let ws = dir.path();
        let fake = model().await;
        let clock = ManualClock::new(at(18, 0));
        let extra = format!("normal_history_turns = 4\n[context]\nreplay = \"{replay}\"");
        let k = start(ws, &fake, &clock, &extra);
        let mom = |words: &str| cli::turn("local", "mom", words);
        say(&k, &clock, (18, 5), mom("下锅了")).await;
        let said = say(&k, &clock, (18, 20), mom("我几点下的锅？")).await;
        assert_eq!(said, "你是 18:05 下的锅。", "{replay}");
        // past the chat's limit of 4 turns: its oldest ones are compacted
        for i in 0..6 {
            say(&k, &clock, (18, 21 + i), mom(&format!("第{i}步做完了"))).await;
        }
        let p = ws.join("chats/cli/local.checkpoint.json");
        let what = format!("{replay}: a checkpoint holding the time");
        eventually_async(&what, std::time::Duration::from_secs(30), || async {
            match std::fs::read_to_string(&p) {
                Ok(t) if t.contains("18:05 下锅了") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        let said = say(&k, &clock, (18, 47), mom("我几点下的锅？")).await;
        assert_eq!(said, "你是 18:05 下的锅。", "{replay}");
        let last = turns(&fake).pop().unwrap();
        let first_user = msgs(&last)[1]["content"].as_str().unwrap();
        assert!(
            first_user.starts_with("[之前的对话摘要]") && first_user.contains("18:05 下锅了"),
            "{replay}: {first_user}"
        );
        assert!(
            !msgs(&last)[2..].iter().any(|m| user_words(m) == "下锅了"),
            "{replay}: the turn itself was compacted"
        );
        // under lean replay a line is its time, tag and words; under exact, as sent
        let replayed = msgs(&last)[3]["content"].as_str().unwrap();
        match replay {
            "lean" => assert!(
                replayed.len() < 40 && replayed.starts_with("18:") && replayed.contains(" 妈妈："),
                "{replayed}"
            ),
            _ => assert!(
                replayed.contains("\n\n[上下文]\n2026-12-02 星期三"),
                "{replayed}"
            ),
        }
        k.shutdown_gracefully(std::time::Duration::from_secs(10))
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aside_is_sent_once_after_the_message_and_the_next_turn_holds_the_turn_before() {
    let dir = workspace();
    let ws = dir.path();
    let fake = model().await;
    let clock = ManualClock::new(at(19, 0));
    let k = start(ws, &fake, &clock, "");
    let mom = |words: &str| qq::turn("private:10001", "mom", words);
    say(&k, &clock, (19, 1), mom("第一句")).await;
    // a channel's hint holds for its turn alone: an aside
    let mut hinted = mom("第二句");
    hinted.reply_hint = Some("只回答一行".into());
    say(&k, &clock, (19, 2), hinted).await;
    say(&k, &clock, (19, 3), mom("第三句")).await;
    k.provider().flush().await;
    let reqs = turns(&fake);
    assert_eq!(reqs.len(), 3);
    // on the wire the aside is joined to its message (no two user messages in a row)
    let second = msgs(&reqs[1]).last().unwrap()["content"].as_str().unwrap();
    assert!(
        second.contains("第二句\n\n[上下文]\n")
            && second.ends_with("[回复要求]\n只回答一行\n[/回复要求]"),
        "{second}"
    );
    // the next request replays the message without it: it holds the turn before whole
    assert!(!holds_whole(&reqs[1], &reqs[2]));
    assert!(holds_whole(&reqs[0], &reqs[2]));
    assert!(!serde_json::to_string(&reqs[2])
        .unwrap()
        .contains("只回答一行"));
    // the audit says which turn sent one
    let wsp = homebot::workspace::Workspace::open(&ws.canonicalize().unwrap()).unwrap();
    let audit = homebot::audit::load(&wsp, None).unwrap();
    let asides: Vec<bool> = audit
        .records
        .iter()
        .filter_map(|r| r.shape.as_ref().map(|s| s.aside))
        .collect();
    assert_eq!(asides, [false, true, false]);
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn turns_that_overlap_in_a_mode_session_are_replayed_one_after_the_other() {
    use std::sync::{Condvar, Mutex};
    let dir = workspace();
    let ws = dir.path();
    // the two overlapping turns' requests wait for each other (at most 10 s), so both
    // are built from the same history
    let gate = Arc::new((Mutex::new(0usize), Condvar::new()));
    let g = gate.clone();
    let fake = FakeLlm::start(move |body, _| {
        let words = user_words(msgs(body).last().unwrap());
        if words.starts_with("同时") {
            let (n, cv) = &*g;
            let mut n = n.lock().unwrap();
            *n += 1;
            cv.notify_all();
            let _ = cv
                .wait_timeout_while(n, std::time::Duration::from_secs(10), |n| *n < 2)
                .unwrap();
        }
        text(&format!("好的：{words}"))
    })
    .await;
    let clock = ManualClock::new(at(18, 0));
    let k = start(ws, &fake, &clock, "");
    assert!(k.command("/mode enter cooking").await.is_answered());
    clock.set(at(18, 1));
    k.handle_turn(qq::turn("group:5550001", "mom", "开始吧"))
        .await;
    clock.set(at(18, 2));
    let (a, b) = tokio::join!(
        k.handle_turn(qq::turn("group:5550001", "mom", "同时一")),
        k.handle_turn(cli::turn("local", "kid", "同时二")),
    );
    assert!(a.is_answered() && b.is_answered(), "{a:?} {b:?}");
    k.handle_turn(qq::turn("group:5550001", "mom", "然后呢"))
        .await;
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
    let reqs = turns(&fake);
    assert_eq!(reqs.len(), 4);
    // both overlapping requests hold the first whole; the next holds exactly one of
    // them (the one recorded first), never both
    assert!(holds_whole(&reqs[0], &reqs[1]) && holds_whole(&reqs[0], &reqs[2]));
    let held = [&reqs[1], &reqs[2]]
        .iter()
        .filter(|r| holds_whole(r, &reqs[3]))
        .count();
    assert_eq!(held, 1, "{:#}", reqs[3]);
}
