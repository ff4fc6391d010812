//! Examples learned from the household (issue 41 §2), through the kernel: in a cooking
//! session a QQ group's answer followed by "谢谢" is kept, `/good` keeps another, a
//! private chat's thanked answer is never kept, and the next session's frozen prompt —
//! the system message the model gets — holds the kept case most like its first words.

use crate::common;

use common::*;
use homebot::channels::qq;

const GROUP: &str = "group:5550001";
const PRIVATE: &str = "private:10001";

fn system_of(req: &serde_json::Value) -> String {
    req["messages"][0]["content"].as_str().unwrap().to_string()
}

/// The workspace's copy of the cooking skill, learning examples.
fn learning_cooking(ws: &std::path::Path) {
    copy_skills(&ws.join("skills"));
    let path = ws.join("skills/home-cooking/mode.json");
    let mut m = read_json(&path);
    m["examples"] = serde_json::json!({"use": 1, "keep": 50});
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

fn kept(ws: &std::path::Path) -> Vec<serde_json::Value> {
    let path = ws.join("modes/examples/cooking.json");
    match path.exists() {
        true => read_json(&path)["cases"].as_array().unwrap().clone(),
        false => Vec::new(),
    }
}

#[tokio::test]
async fn a_thanked_group_answer_reaches_the_next_session_and_a_private_one_is_never_kept() {
    let dir = workspace();
    let ws = dir.path();
    learning_cooking(ws);
    let fake = FakeLlm::scripted().await;
    let k = start_kernel(ws, &fake);
    k.handle_turn(qq::turn(GROUP, "mom", "打开做饭模式")).await;
    assert_eq!(action(ws)["mode_id"], "cooking");
    let first = session_dir(ws);
    // the first session had nothing to learn from
    let got = read_json(&first.join("examples.json"));
    assert_eq!(got, serde_json::json!([]));

    // a group's answer, thanked: kept, with its scene
    k.handle_turn(qq::turn(GROUP, "mom", "红烧肉怎么做才不腻"))
        .await;
    assert!(
        kept(ws).is_empty(),
        "nothing is kept before the household says so"
    );
    k.handle_turn(qq::turn(GROUP, "dad", "谢谢！")).await;
    let cases = kept(ws);
    assert_eq!(cases.len(), 1, "{cases:?}");
    assert_eq!(cases[0]["user"], "红烧肉怎么做才不腻");
    assert_eq!(cases[0]["answer"], "好的：红烧肉怎么做才不腻");
    assert_eq!(cases[0]["judged"], "thanked");
    assert_eq!(cases[0]["scene"]["channel"], "qq");
    assert_eq!(cases[0]["scene"]["chat_id"], GROUP);
    // the thanks itself is no case, and a second thanks keeps nothing more
    k.handle_turn(qq::turn(GROUP, "dad", "谢谢")).await;
    assert_eq!(kept(ws).len(), 1);

    // `/good` right after an answer keeps it
    k.handle_turn(qq::turn(GROUP, "mom", "番茄炒蛋先放什么"))
        .await;
    let r = k.handle_turn(qq::turn(GROUP, "mom", "/good")).await;
    assert!(r.text.contains("cooking-2"), "{}", r.text);
    assert_eq!(kept(ws)[1]["judged"], "good");

    // a private chat in the same session: thanked, praised, `/good` — never kept
    k.handle_turn(qq::turn(PRIVATE, "mom", "清蒸鲈鱼蒸几分钟"))
        .await;
    k.handle_turn(qq::turn(PRIVATE, "mom", "谢谢")).await;
    k.handle_turn(qq::turn(PRIVATE, "mom", "清蒸鲈鱼要放姜吗"))
        .await;
    let r = k.handle_turn(qq::turn(PRIVATE, "mom", "/good")).await;
    assert!(r.text.contains("私聊"), "{}", r.text);
    k.handle_turn(qq::turn(PRIVATE, "mom", "清蒸鲈鱼要放葱吗"))
        .await;
    k.handle_turn(qq::turn(PRIVATE, "mom", "这个好")).await;
    let cases = kept(ws);
    assert_eq!(cases.len(), 2, "{cases:?}");
    assert!(!serde_json::to_string(&cases).unwrap().contains("鲈鱼"));

    // the session ends; the next one starts with the most similar case frozen in
    k.handle_turn(qq::turn(GROUP, "mom", "结束做饭模式")).await;
    assert_eq!(action(ws)["active"], false);
    k.handle_turn(qq::turn(GROUP, "mom", "打开做饭模式，今晚做红烧肉"))
        .await;
    let second = session_dir(ws);
    assert_ne!(first, second);
    k.handle_turn(qq::turn(GROUP, "mom", "先准备什么")).await;
    let system = system_of(fake.requests().last().unwrap());
    assert!(system.contains("[EXAMPLES]"), "{system}");
    assert!(
        system.contains("问：红烧肉怎么做才不腻\n答：好的：红烧肉怎么做才不腻"),
        "{system}"
    );
    // `use` is 1: the less similar case stays out, and the private one was never there
    assert!(!system.contains("番茄炒蛋先放什么"), "{system}");
    assert!(!system.contains("鲈鱼"), "{system}");
    let frozen = std::fs::read_to_string(second.join("system_prompt.md")).unwrap();
    assert!(system.contains(frozen.trim()));
    // the session folder says which examples it got, and the audit shows them
    let got = read_json(&second.join("examples.json"));
    assert_eq!(got[0]["id"], cases[0]["id"]);
    let sid = second.file_name().unwrap().to_string_lossy().into_owned();
    let ws_h = homebot::workspace::Workspace::open(ws).unwrap();
    let audited = homebot::audit::session_dir(&ws_h, &sid).unwrap();
    let line = homebot::modes::examples::cli::session_lines(&audited);
    assert_eq!(
        line,
        format!("examples: {}\n", cases[0]["id"].as_str().unwrap())
    );
    let o = homebot(ws, None)
        .args(["audit", "--session", &sid])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains(&line), "{o:?}");

    // forgetting a case from the command line: the store no longer has it
    let out = homebot::modes::examples::cli::run(&ws_h, None, Some("cooking-1")).unwrap();
    assert_eq!(out, "example cooking-1 forgotten\n");
    let listed = homebot::modes::examples::cli::run(&ws_h, Some("cooking"), None).unwrap();
    assert!(
        listed.contains("cooking: 1 case(s)") && listed.contains("cooking-2"),
        "{listed}"
    );
}

#[tokio::test]
async fn the_command_line_lists_and_forgets_examples() {
    let dir = workspace();
    let ws = dir.path();
    let w = homebot::workspace::Workspace::open(ws).unwrap();
    let store = homebot::modes::examples::ExampleStore::new(&w);
    let case = homebot::modes::examples::Case {
        id: String::new(),
        user: "红烧肉怎么做才不腻".into(),
        answer: "先焯水。".into(),
        scene: homebot::modes::examples::CaseScene {
            channel: "qq".into(),
            chat_id: GROUP.into(),
            room: None,
        },
        at: "2026-12-01T18:00:00+08:00".into(),
        judged: homebot::modes::examples::Judged::Thanked,
        session_id: "cook-20261201-180000-a1b2c3".into(),
    };
    store.add("cooking", case, 50).unwrap();
    let run = |args: &'static [&'static str]| {
        let mut c = homebot(ws, None);
        c.arg("examples").args(args);
        async move { c.output().await.unwrap() }
    };
    let o = run(&[]).await;
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert!(
        out.contains("cooking: 1 case(s)") && out.contains("cooking-1"),
        "{out}"
    );
    assert!(
        out.contains("红烧肉怎么做才不腻") && out.contains("Thanked"),
        "{out}"
    );
    let o = run(&["forget", "cooking-1"]).await;
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "example cooking-1 forgotten\n"
    );
    // a second forget, or an id of nothing: a clear error, exit 1
    let o = run(&["forget", "cooking-1"]).await;
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("there is no example cooking-1"));
    let o = run(&["cooking"]).await;
    assert!(String::from_utf8_lossy(&o.stdout).contains("cooking: 0 case(s)"));
}
