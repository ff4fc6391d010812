//! A whole cooking session through the kernel against a fake OpenAI-compatible server:
//! two speakers, two chats, enter → turns → exit; then every file is checked, and the
//! recorded requests are checked for a byte-identical stable prefix.

use crate::common;

use common::*;
use homebot::channels::{cli, qq, voice};
use serde_json::Value;

fn is_rfc3339_shanghai(v: &Value) -> bool {
    v.as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .is_some_and(|t| t.offset().local_minus_utc() == 8 * 3600)
}

#[tokio::test]
async fn cooking_session_across_speakers_and_chats() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);

    // enter, from the terminal
    let r = kernel
        .handle_turn(cli::turn(
            "local",
            "mom",
            "打开做饭模式，今晚三个人吃番茄炒蛋",
        ))
        .await;
    assert!(r.is_answered(), "{r:?}");
    assert!(r.text.contains("已进入做饭模式"), "{}", r.text);

    let a = action(ws);
    let keys: Vec<&String> = a.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 10, "{a}");
    assert_eq!(a["schema_version"], 1);
    assert_eq!(a["active"], true);
    assert_eq!(a["mode_id"], "cooking");
    assert_eq!(a["display_name"], "做饭模式");
    assert_eq!(a["skill_name"], "home-cooking");
    assert!(a["exit_reason"].is_null());
    let sid = a["session_id"].as_str().unwrap().to_string();
    let re_ok = sid.len() == "cook-20261022-195500-a1b2c3".len()
        && sid.starts_with("cook-")
        && sid[5..13].chars().all(|c| c.is_ascii_digit())
        && sid[14..20].chars().all(|c| c.is_ascii_digit())
        && sid[21..].chars().all(|c| c.is_ascii_hexdigit());
    assert!(re_ok, "session id {sid}");
    assert!(is_rfc3339_shanghai(&a["started_at"]), "{a}");
    assert!(is_rfc3339_shanghai(&a["expires_at"]), "{a}");
    assert!(a["expires_at"]
        .as_str()
        .unwrap()
        .ends_with("T00:10:00+08:00"));
    let sdir = session_dir(ws);
    assert_eq!(
        sdir,
        ws.canonicalize()
            .unwrap()
            .join("modes/sessions/cooking")
            .join(&sid)
    );
    let frozen = std::fs::read_to_string(sdir.join("system_prompt.md")).unwrap();
    assert!(frozen.contains("份量换算"), "SKILL.md body is frozen in");
    assert!(frozen.contains("[ROLE]") && frozen.contains("[RULES]"));

    // two more turns from another chat and speaker, then back
    let r = kernel
        .handle_turn(qq::turn("group:5550001", "dad", "番茄要放几个？"))
        .await;
    assert_eq!(r.text, "好的：番茄要放几个？");
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "蛋要打几个？"))
        .await;
    assert_eq!(r.text, "好的：蛋要打几个？");
    // exit, from the group
    let r = kernel
        .handle_turn(qq::turn("group:5550001", "dad", "好了，结束做饭模式"))
        .await;
    assert!(r.text.contains("已请求退出做饭模式"), "{}", r.text);

    // action.json: inactive, every key present, the reason kept
    let a = action(ws);
    assert_eq!(a.as_object().unwrap().len(), 10);
    assert_eq!(a["active"], false);
    assert_eq!(a["exit_reason"], "user");
    for k in [
        "mode_id",
        "display_name",
        "session_id",
        "skill_name",
        "started_at",
        "expires_at",
        "session_dir",
    ] {
        assert!(a[k].is_null(), "{k} should be null: {a}");
    }

    // conversation.jsonl: four records, in order, with who/where
    let lines = jsonl(&sdir.join("conversation.jsonl"));
    assert_eq!(lines.len(), 4);
    let expect = [
        ("cli", "local", "mom", "打开做饭模式，今晚三个人吃番茄炒蛋"),
        ("qq", "group:5550001", "dad", "番茄要放几个？"),
        ("cli", "local", "mom", "蛋要打几个？"),
        ("qq", "group:5550001", "dad", "好了，结束做饭模式"),
    ];
    for (line, (ch, chat, sp, user)) in lines.iter().zip(expect) {
        assert_eq!(line["channel"], ch);
        assert_eq!(line["chat_id"], chat);
        assert_eq!(line["speaker_id"], sp);
        assert_eq!(line["user"], user);
        assert!(is_rfc3339_shanghai(&line["timestamp"]));
        // the seed's six keys, and the message the turn sent (exact replay sends it
        // again): the time, the speaker tag, the words and the short [上下文] block
        let keys: Vec<&String> = line.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "assistant",
                "channel",
                "chat_id",
                "sent",
                "speaker_id",
                "timestamp",
                "user"
            ],
            "{line}"
        );
        let sent = line["sent"].as_str().unwrap();
        let time = &line["timestamp"].as_str().unwrap()[11..16];
        assert!(
            sent.starts_with(&format!("{time} {sp}：{user}\n\n[上下文]\n")),
            "{sent}"
        );
    }
    assert_eq!(lines[1]["assistant"], "好的：番茄要放几个？");

    // summary.md and the cooking index
    let summary = std::fs::read_to_string(sdir.join("summary.md")).unwrap();
    assert!(summary.contains(&sid));
    assert!(
        summary.contains("做了番茄炒蛋，三个人吃。"),
        "LLM summary kept: {summary}"
    );
    assert!(summary.contains("轮数: 4"));
    assert!(summary.contains("mom, dad"));
    let history = std::fs::read_to_string(ws.join("cooking/history.md")).unwrap();
    let date = &lines[0]["timestamp"].as_str().unwrap()[..10];
    let entry = history
        .lines()
        .find(|l| l.contains(&sid))
        .expect("session indexed");
    assert!(entry.contains(date) && entry.contains("4 轮"), "{entry}");
    assert!(ws
        .join("cooking/summaries")
        .join(format!("{sid}.md"))
        .exists());

    // prefix cache: requests in the mode share system + tools + history byte for byte
    let reqs = turn_requests(&fake);
    assert_eq!(reqs.len(), 4, "one first-request per turn");
    let in_mode = &reqs[1..];
    for pair in in_mode.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert_eq!(a["tools"].to_string(), b["tools"].to_string());
        let am = a["messages"].as_array().unwrap();
        let bm = b["messages"].as_array().unwrap();
        assert_eq!(bm.len(), am.len() + 2);
        // the previous request whole, message by message (its user message with its
        // [上下文] block): DeepSeek's unit at the end of its input is hit
        for i in 0..am.len() {
            assert_eq!(am[i].to_string(), bm[i].to_string(), "message {i} changed");
        }
    }
    for r in in_mode {
        let msgs = r["messages"].as_array().unwrap();
        let sys = msgs[0]["content"].as_str().unwrap();
        assert!(
            sys.contains("份量换算"),
            "frozen prompt in the system message"
        );
        assert!(
            !sys.contains("dad") && !sys.contains("mom"),
            "no speaker in the system prompt"
        );
        assert!(
            !sys.contains(&date.to_string()),
            "no date in the system prompt"
        );
        // earlier turns are replayed as they were sent: time, speaker tag, words and
        // their own [上下文] block
        for m in msgs[1..msgs.len() - 1]
            .iter()
            .filter(|m| m["role"] == "user")
        {
            let c = m["content"].as_str().unwrap();
            let said = &c[c.find(' ').unwrap() + 1..];
            assert!(
                (said.starts_with("mom：") || said.starts_with("dad："))
                    && c.contains("\n\n[上下文]\n"),
                "replayed exactly: {c}"
            );
        }
        let last = msgs.last().unwrap()["content"].as_str().unwrap();
        assert!(
            last.contains("：") && last.contains(&format!("\n\n[上下文]\n{date} 星期")),
            "{last}"
        );
        assert!(last.contains(" · 说话人 "), "{last}");
        // the session's own facts are constant: in the frozen prompt, not every tail
        assert!(
            !last.contains(&sid) && !last.contains("history.md"),
            "{last}"
        );
        let system = msgs[0]["content"].as_str().unwrap();
        assert!(
            system.contains(&format!(
                "\n[本次会话]\n会话: {sid} · 会话目录: modes/sessions/cooking/{sid}\n"
            )) && system.contains("做饭历史索引: cooking/history.md\n"),
            "{system}"
        );
    }
    let last_of = |i: usize| {
        let m = reqs[i]["messages"].as_array().unwrap();
        m.last().unwrap()["content"].as_str().unwrap().to_string()
    };
    assert!(last_of(1).contains("说话人 dad") && last_of(1).contains(" · qq group:5550001 · "));
    assert!(last_of(2).contains("说话人 mom") && last_of(2).contains(" · cli local · "));

    // usage was recorded with cache fields
    kernel.provider().flush().await; // usage lines are written off the turn's path
    let usage = jsonl(&ws.join("logs/usage.jsonl"));
    assert_eq!(
        usage.len(),
        fake.calls(),
        "one usage line per provider call"
    );
    let text_call = usage
        .iter()
        .find(|u| u["usage"]["prompt_tokens"] == 120)
        .unwrap();
    assert_eq!(text_call["usage"]["cache_hit_tokens"], 64);
    assert_eq!(text_call["usage"]["cache_miss_tokens"], 56);
    assert_eq!(text_call["usage"]["cached_tokens"], 64);
    assert_eq!(text_call["model"], "fake-model");

    // after the exit, a new turn is normal operation and not recorded in the session
    let r = kernel.handle_turn(cli::turn("local", "mom", "谢谢")).await;
    assert_eq!(r.text, "好的：谢谢");
    assert_eq!(jsonl(&sdir.join("conversation.jsonl")).len(), 4);
    let req = fake.requests().last().unwrap().clone();
    assert!(!req["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("份量换算"));
}

/// A model that asks to enter `mode_id` whatever was said, then relays the tool result.
async fn always_enters(mode_id: &'static str) -> FakeLlm {
    FakeLlm::start(move |body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "tool" {
            text(last["content"].as_str().unwrap())
        } else {
            tool_call(
                "switch_mode",
                serde_json::json!({"action": "enter", "mode_id": mode_id}),
            )
        }
    })
    .await
}

#[tokio::test]
async fn refused_switches_change_nothing() {
    let dir = workspace();
    let ws = dir.path();
    let fake = always_enters("cooking").await;
    let kernel = start_kernel(ws, &fake);
    for words in [
        "做饭模式是什么",
        "我想开始做饭",
        "不要打开做饭模式",
        "how do I open cooking mode?",
    ] {
        let r = kernel.handle_turn(cli::turn("local", "mom", words)).await;
        assert!(r.text.starts_with("refused"), "{words}: {}", r.text);
        assert_eq!(action(ws)["active"], false, "{words}");
    }
    assert!(std::fs::read_dir(ws.join("modes/sessions"))
        .unwrap()
        .next()
        .is_none());
    // an unknown mode id is refused with the list of modes
    let fake2 = always_enters("sewing").await;
    drop(kernel);
    let kernel = start_kernel(ws, &fake2);
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "打开缝纫模式"))
        .await;
    assert!(
        r.text.contains("unknown mode \"sewing\"") && r.text.contains("cooking"),
        "{}",
        r.text
    );
    assert_eq!(action(ws)["active"], false);
}

#[tokio::test]
async fn one_mode_at_a_time_and_declarative_modes_need_no_rust() {
    let dir = workspace();
    let ws = dir.path();
    let skills = ws.join("skills");
    std::fs::create_dir_all(skills.join("homework")).unwrap();
    std::fs::write(
        skills.join("homework/mode.json"),
        r#"{"id":"homework","display_name":"作业模式","aliases":["homework mode"]}"#,
    )
    .unwrap();
    std::fs::write(
        skills.join("homework/SKILL.md"),
        "---\nname: homework\ndescription: 陪孩子写作业\n---\n引导孩子自己思考，不直接给答案。\n",
    )
    .unwrap();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    let r = kernel.command("/mode enter homework").await;
    assert!(r.is_answered(), "{r:?}");
    assert_eq!(action(ws)["mode_id"], "homework");
    let sid = action(ws)["session_id"].as_str().unwrap().to_string();
    assert!(sid.starts_with("homework-"), "{sid}");
    let frozen = std::fs::read_to_string(session_dir(ws).join("system_prompt.md")).unwrap();
    assert!(frozen.contains("不直接给答案"));

    // cooking cannot be entered while homework is active, by tool or by command
    let r = kernel
        .handle_turn(cli::turn("local", "kid", "打开做饭模式"))
        .await;
    assert!(r.text.contains("一次只能有一个模式"), "{}", r.text);
    let r = kernel.command("/mode enter cooking").await;
    assert!(!r.is_answered() && r.text.contains("作业模式"), "{r:?}");
    assert_eq!(action(ws)["mode_id"], "homework");

    let r = kernel.command("/mode exit").await;
    assert!(r.is_answered(), "{r:?}");
    assert_eq!(action(ws)["active"], false);
    assert!(ws
        .join("modes/sessions/homework")
        .join(&sid)
        .join("summary.md")
        .exists());
    let r = kernel.command("/mode enter cooking").await;
    assert!(r.is_answered(), "{r:?}");
    let st = kernel.command("/mode status").await;
    assert!(st.text.contains("做饭模式 (cooking) 活动中"), "{}", st.text);
    // every mode is listed with what it is for, from its SKILL.md's front matter
    assert!(
        st.text.contains("作业模式 (homework) — 陪孩子写作业\n"),
        "{}",
        st.text
    );
    assert!(
        st.text.contains("做饭模式 (cooking) — 做饭模式：在厨房里"),
        "{}",
        st.text
    );
}

#[tokio::test]
async fn user_profiles_load_in_normal_operation_but_never_in_a_mode() {
    let dir = workspace();
    let ws = dir.path();
    std::fs::write(
        ws.join("config.toml"),
        "[[members]]\nid = \"mom\"\nname = \"妈妈\"\nspeaker_ids = [\"kitchen-mom\"]\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("members/mom")).unwrap();
    std::fs::write(
        ws.join("members/mom/USER.md"),
        "妈妈对芒果过敏，喜欢清淡。PROFILE-MOM",
    )
    .unwrap();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    let request = |i: usize| fake.requests()[i]["messages"].to_string();
    let system = |i: usize| {
        fake.requests()[i]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let last_user = |i: usize| {
        let r = fake.requests()[i].clone();
        let m = r["messages"].as_array().unwrap();
        m.last().unwrap()["content"].as_str().unwrap().to_string()
    };

    kernel
        .handle_turn(voice::turn("w1", "kitchen-mom", "晚饭吃什么"))
        .await;
    // the member's profile, found by speaker id: a block of her message, never in the
    // system message (a group where two people alternate keeps one system message)
    let tail = last_user(0);
    assert!(
        tail.contains("[成员资料]\n妈妈（kitchen-mom）的 USER.md：\n妈妈对芒果过敏，喜欢清淡。PROFILE-MOM\n[/成员资料]"),
        "{tail}"
    );
    assert!(!system(0).contains("PROFILE-MOM"));
    assert!(tail.contains("说话人 kitchen-mom（妈妈）"), "{tail}");
    kernel
        .handle_turn(cli::turn("local", "dad", "晚饭吃什么"))
        .await;
    assert!(
        !request(1).contains("PROFILE-MOM"),
        "another speaker does not get mom's profile"
    );
    // in the same chat her profile is sent once: the window holds it
    kernel
        .handle_turn(voice::turn("w1", "kitchen-mom", "要几个鸡蛋"))
        .await;
    assert!(!last_user(2).contains("PROFILE-MOM"), "{}", last_user(2));
    assert_eq!(
        request(2).matches("PROFILE-MOM").count(),
        1,
        "{}",
        request(2)
    );

    kernel.command("/mode enter cooking").await;
    kernel
        .handle_turn(voice::turn("w2", "kitchen-mom", "开始吧"))
        .await;
    let last = fake.requests().len() - 1;
    assert!(
        !request(last).contains("PROFILE-MOM"),
        "a mode is shared: no USER.md in its requests"
    );
}
