//! Where a request does not hold the one before it whole (docs/context.md, "New bases"),
//! what it holds instead: a guest's turn, a turn Home Assistant's own agent answered, the
//! `[刚结束]` block of the mode a chat left appearing and changing. The kit and the
//! requests that do hold the one before are in [`crate::cache_units`].

use crate::cache_units::*;
use crate::common;
use crate::ha_fake;

use common::*;
use homebot::channels::qq;
use homebot::clock::ManualClock;
use homebot::config::Secret;
use homebot::prompt::without_profiles;
use homebot::turn::{Audience, Facts, Modality, Trust, Turn};
use serde_json::Value;
use std::sync::Arc;

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
