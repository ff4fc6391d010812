//! Every request holds the one before it whole: DeepSeek's cache hits only whole units,
//! persisted at the end of each request's input, so a turn's first request must be the
//! previous turn's first request of the same history plus new messages — compared
//! message by message, the tools too. Across two chats and a voice turn of one mode
//! session, a group where two people alternate, a tool round, a failed turn and a
//! restart; and the time each line was said, which the model can read back, also after
//! a compaction and under lean replay. Where a request does not hold the one before it
//! (docs/context.md, "New bases"), what it holds instead: a guest's turn, a turn Home
//! Assistant's own agent answered, the `[刚结束]` block appearing and changing.

use crate::common;
use crate::ha_fake;

use chrono::{TimeZone, Utc};
use common::*;
use homebot::channels::{cli, qq, voice};
use homebot::clock::ManualClock;
use homebot::config::{EnvOverrides, Secret};
use homebot::kernel::{Kernel, KernelOptions};
use homebot::prompt::without_profiles;
use homebot::turn::{Audience, Facts, Modality, Trust, Turn};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

const COMPACTION_MARK: &str = "[压缩历史]";

fn is_compaction(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with(COMPACTION_MARK))
}

/// The first request of each turn (compactions left out).
fn turns(f: &FakeLlm) -> Vec<Value> {
    turn_requests(f)
        .into_iter()
        .filter(|r| !is_compaction(r))
        .collect()
}

fn msgs(r: &Value) -> &Vec<Value> {
    r["messages"].as_array().unwrap()
}

/// Whether `b` holds `a` whole: the same tools, and `a`'s messages, each unchanged, at
/// the start of `b`'s.
fn holds_whole(a: &Value, b: &Value) -> bool {
    let (am, bm) = (msgs(a), msgs(b));
    a["tools"] == b["tools"] && bm.len() > am.len() && bm[..am.len()] == am[..]
}

/// Household time (Asia/Shanghai) on 2 December 2026.
fn at(h: u32, m: u32) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 2, h - 8, m, 0).unwrap()
}

/// The `HH:MM` in front of the user message that said `words`, or in a summary line
/// "HH:MM words".
fn time_of(body: &Value, words: &str) -> Option<String> {
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
async fn model() -> FakeLlm {
    FakeLlm::start(|body, _| reply(body)).await
}

/// The answers of [`model`].
fn reply(body: &Value) -> FakeReply {
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

const MEMBERS: &str = "[household]\nname = \"测试之家\"\ntimezone = \"Asia/Shanghai\"\n\
[[members]]\nid = \"mom\"\nname = \"妈妈\"\n[[members]]\nid = \"kid\"\nname = \"小明\"\n";

fn start(ws: &Path, fake: &FakeLlm, clock: &ManualClock, extra: &str) -> Kernel {
    start_env(ws, fake.env(), clock, extra)
}

/// [`start`] with the environment's overrides given.
fn start_env(ws: &Path, env: EnvOverrides, clock: &ManualClock, extra: &str) -> Kernel {
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

async fn say(k: &Kernel, clock: &ManualClock, (h, m): (u32, u32), t: Turn) -> String {
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

/// A guest in a group whose window holds the members' profiles: the guest's request
/// replays their messages without the `[成员资料]` blocks — the same system message and
/// tools, every member's message changed — so it holds no earlier request whole (a new
/// base). The next member's request holds the member request before the guest's whole
/// (the guest's message replayed as it was sent), not the guest's; a guest's next turn
/// holds the guest's request before it whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_s_turn_is_a_new_base_and_members_go_on_from_the_request_before_it() {
    let dir = workspace();
    let ws = dir.path();
    let fake = model().await;
    let clock = ManualClock::new(at(12, 0));
    let k = start(ws, &fake, &clock, "");
    let member = |who: &str, words: &str| qq::turn("group:5550001", who, words);
    // a sender the household has not mapped, as the QQ channel reads one
    let guest = |words: &str| {
        let facts = Facts {
            audience: Audience::Group,
            modality: Modality::Text,
            trust: Trust::Guest,
            memory_peer: Some("group_5550001".into()),
            place: None,
            scenes: Vec::new(),
        };
        Turn::new(qq::CHANNEL, "group:5550001", "qq:20002", words, facts)
    };
    say(&k, &clock, (12, 1), member("mom", "第一句")).await;
    say(&k, &clock, (12, 2), member("kid", "第二句")).await;
    say(&k, &clock, (12, 3), guest("第三句")).await;
    say(&k, &clock, (12, 4), member("mom", "第四句")).await;
    say(&k, &clock, (12, 5), guest("第五句")).await;
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
    let reqs = turns(&fake);
    assert_eq!(reqs.len(), 5, "{reqs:#?}");
    let (kid, g1, mom, g2) = (&reqs[1], &reqs[2], &reqs[3], &reqs[4]);
    assert!(holds_whole(&reqs[0], kid));
    // the guest's request: a new base
    assert!(
        !holds_whole(&reqs[0], g1) && !holds_whole(kid, g1),
        "{g1:#}"
    );
    let (km, gm) = (msgs(kid), msgs(g1));
    assert_eq!(g1["tools"], kid["tools"]);
    assert_eq!(gm[0], km[0], "one system message for members and guests");
    assert_eq!(gm.len(), km.len() + 2);
    for (i, (g, m)) in gm.iter().zip(km).enumerate().skip(1) {
        let sent = m["content"].as_str().unwrap();
        assert_eq!(g["role"], m["role"], "{i}");
        assert_eq!(
            g["content"].as_str().unwrap(),
            without_profiles(sent),
            "{i}"
        );
        if m["role"] == "user" {
            // each member's first message sent her profile; the guest's has it not
            assert!(sent.contains("\n\n[成员资料]\n"), "{i}: {sent}");
            assert_ne!(g, m, "{i}");
        } else {
            assert_eq!(g, m, "{i}");
        }
    }
    let g1_all = serde_json::to_string(g1).unwrap();
    assert!(
        !g1_all.contains("不吃香菜") && !g1_all.contains("花生过敏"),
        "{g1_all}"
    );
    // the member after the guest: the member request before the guest's, whole, then
    // the guest's message as it was sent; the profiles are not sent again
    assert!(holds_whole(kid, mom) && !holds_whole(g1, mom), "{mom:#}");
    let mm = msgs(mom);
    assert_eq!(mm.len(), km.len() + 4);
    assert_eq!(&mm[km.len() + 1], gm.last().unwrap());
    let mom_all = serde_json::to_string(mom).unwrap();
    assert_eq!(mom_all.matches("妈妈不吃香菜。").count(), 1, "{mom_all}");
    assert_eq!(mom_all.matches("小明对花生过敏。").count(), 1, "{mom_all}");
    // a guest after a member: the guest's request before, whole
    assert!(holds_whole(g1, g2) && !holds_whole(mom, g2), "{g2:#}");
}

/// A turn Home Assistant's own agent answers (the fast path, against a simulated Home
/// Assistant) sends no request. It is recorded, and the next request holds the request
/// before it whole, then replays it in the lean form (it sent no message to keep).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_home_assistant_answers_sends_no_request_and_the_next_holds_the_one_before() {
    const HA_TOKEN: &str = "sim-ha-token";
    let ha = ha_fake::SimHa::start(HA_TOKEN, 0).await;
    ha.add_home();
    let dir = workspace();
    let ws = dir.path();
    let fake = model().await;
    let clock = ManualClock::new(at(12, 0));
    let mut env = fake.env();
    // given here, not through the environment other tests of this process share
    env.ha_token = Some(Secret::new(HA_TOKEN));
    let extra = format!("[home_assistant]\nurl = \"{}\"\n", ha.url());
    let k = start_env(ws, env, &clock, &extra);
    homebot::channels::start_enabled(&k).await.unwrap();
    eventually_async(
        "HA's registries read",
        std::time::Duration::from_secs(30),
        || async {
            let lines = k.doors().status_lines().await.join("\n");
            if lines.contains("厨房") {
                Ok(())
            } else {
                Err(lines)
            }
        },
    )
    .await;
    let mom = |words: &str| qq::turn("private:10001", "mom", words);
    say(&k, &clock, (12, 1), mom("讲个笑话")).await;
    let calls = fake.calls();
    let said = say(&k, &clock, (12, 2), mom("打开厨房的灯")).await;
    assert_eq!(said, "厨房灯已打开");
    assert_eq!(fake.calls(), calls, "the fast path asked the model");
    assert_eq!(ha.conversations().len(), 2);
    say(&k, &clock, (12, 3), mom("讲个故事")).await;
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
    let reqs = turns(&fake);
    assert_eq!(reqs.len(), 2, "{reqs:#?}");
    assert!(holds_whole(&reqs[0], &reqs[1]), "{:#}", reqs[1]);
    let (n, m) = (msgs(&reqs[0]).len(), msgs(&reqs[1]));
    assert_eq!(m.len(), n + 4);
    assert_eq!(m[n + 1]["content"], "12:02 妈妈：打开厨房的灯");
    assert_eq!(m[n + 2]["content"], "厨房灯已打开");
}

/// The `[刚结束]` pair of the mode a chat just left, right after the system message: on
/// the chat's first turn after the mode (an exit without a summary, the summarizer down:
/// the session's last turns, as an excerpt) it is a new base — the chat's previous
/// request follows it, two messages later — and the next turn holds it whole. When the
/// summary replaces the excerpt (the summarizer up again after a restart), that message
/// alone changes: another new base, held whole by the turn after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_block_of_the_mode_a_chat_left_is_a_new_base_when_it_appears_and_when_it_changes() {
    use std::sync::atomic::{AtomicBool, Ordering};
    const SUMMARIZER_MARK: &str = "你是家庭助手 homebot 的会话总结员";
    let is_summary = |body: &Value| {
        msgs(body)[0]["content"]
            .as_str()
            .is_some_and(|s| s.starts_with(SUMMARIZER_MARK))
    };
    let dir = workspace();
    let ws = dir.path();
    let up = Arc::new(AtomicBool::new(false));
    let u = up.clone();
    let fake = FakeLlm::start(move |body, _| {
        if is_summary(body) {
            if u.load(Ordering::SeqCst) {
                return text("妈妈做了红烧肉，盐一共放了两勺。");
            }
            return FakeReply::Status(500, vec![], "down".into());
        }
        reply(body)
    })
    .await;
    let clock = ManualClock::new(at(18, 0));
    let k = start(ws, &fake, &clock, "");
    let mom = |words: &str| qq::turn("private:10001", "mom", words);
    say(&k, &clock, (18, 1), mom("今天吃什么")).await;
    assert!(k.command("/mode enter cooking").await.is_answered());
    say(&k, &clock, (18, 2), mom("盐放两勺")).await;
    clock.set(at(18, 5));
    assert!(k.command("/mode exit").await.is_answered());
    // the summarizer's attempt failed: the job stays for the next start
    let pending = || -> Option<Value> {
        let sessions = ws.join("modes/sessions/cooking");
        std::fs::read_dir(sessions).ok()?.find_map(|e| {
            let p = e.ok()?.path().join("summary.pending");
            serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
        })
    };
    eventually_async(
        "a failed summary attempt",
        std::time::Duration::from_secs(30),
        || async {
            match pending() {
                Some(job) if job["attempts"] == 1 => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    say(&k, &clock, (18, 10), mom("刚才放了多少盐")).await;
    say(&k, &clock, (18, 11), mom("好的")).await;
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
    k.shutdown();
    drop(k);
    // up again: the next start writes the summary
    up.store(true, Ordering::SeqCst);
    let k = start(ws, &fake, &clock, "");
    eventually_async(
        "the summary written",
        std::time::Duration::from_secs(30),
        || async {
            match pending() {
                None => Ok(()),
                Some(job) => Err(job.to_string()),
            }
        },
    )
    .await;
    say(&k, &clock, (18, 20), mom("记下了")).await;
    say(&k, &clock, (18, 21), mom("谢谢")).await;
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;

    let reqs: Vec<Value> = turns(&fake)
        .into_iter()
        .filter(|r| !is_summary(r))
        .collect();
    // before the mode, in the mode, two with the excerpt, two with the summary
    assert_eq!(reqs.len(), 6, "{reqs:#?}");
    let (before, excerpt, summary) = (&reqs[0], &reqs[2], &reqs[4]);
    let block = |r: &Value| msgs(r)[1]["content"].as_str().unwrap().to_string();
    // the block appears: a new base; the chat's previous request follows the pair
    assert!(!holds_whole(before, excerpt), "{excerpt:#}");
    let (b, e) = (msgs(before), msgs(excerpt));
    assert_eq!(excerpt["tools"], before["tools"]);
    assert_eq!(e[0], b[0]);
    let first = block(excerpt);
    assert!(
        first.starts_with("[刚结束: cook")
            && first.ends_with("[/刚结束]")
            && first.contains("摘录")
            && first.contains("盐放两勺"),
        "{first}"
    );
    assert_eq!(e[2]["role"], "assistant");
    assert_eq!(e[3..3 + b.len() - 1], b[1..]);
    // it stays: the next turn holds that request whole
    assert!(holds_whole(excerpt, &reqs[3]), "{:#}", reqs[3]);
    // the summary replaces the excerpt: that message alone differs
    assert!(!holds_whole(&reqs[3], summary), "{summary:#}");
    let (p, s) = (msgs(&reqs[3]), msgs(summary));
    assert_eq!(summary["tools"], reqs[3]["tools"]);
    assert_eq!(s[0], p[0]);
    let second = block(summary);
    assert!(
        second.starts_with("[刚结束: cook")
            && second.contains("盐一共放了两勺")
            && !second.contains("摘录"),
        "{second}"
    );
    assert_eq!(s[2..p.len()], p[2..]);
    assert!(holds_whole(summary, &reqs[5]), "{:#}", reqs[5]);
}
