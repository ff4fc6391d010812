//! The core's side of learned examples: which turn a thanks or `/good` keeps, and what a
//! new session's prompt gets (no runtime; the cooking skill learns them).

use super::examples::Judged;
use super::mode_core::examples::{Good, VIEW_CHARS};
use super::mode_core::*;
use super::registry::ModeRegistry;
use super::session::Record;
use super::switch::SwitchAction;
use crate::workspace::Workspace;
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-10-22T19:55:00+08:00")
        .unwrap()
        .with_timezone(&Utc)
}

fn core(dir: &Path) -> ModeCore {
    let ws = Workspace::open(dir).unwrap();
    let skills = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let reg = Arc::new(ModeRegistry::load(&[skills], crate::skills::PLUGINS));
    let tz = "Asia/Shanghai".parse().unwrap();
    let mut c = ModeCore::open(ws, reg, tz, now(), crate::prompt::frozen_mode_prompt).unwrap();
    c.compare_examples_by(Some(crate::memory::topic::topic_words));
    c
}

/// One answered turn of `chat` (`shared`: a group chat), ended at once.
fn say(c: &mut ModeCore, chat: &str, shared: bool, words: &str, error: bool) {
    let meta = TurnMeta {
        channel: "qq".into(),
        chat_id: chat.into(),
        speaker_id: "mom".into(),
        speaker_name: None,
        place: None,
        text: words.into(),
        shared,
        room: None,
    };
    let t = c.begin_turn(now(), meta);
    let record = Record {
        timestamp: "2026-10-22T20:00:00+08:00".into(),
        channel: "qq".into(),
        chat_id: chat.into(),
        speaker_id: "mom".into(),
        user: words.into(),
        assistant: format!("答：{words}"),
        error: error.then(|| "provider down".into()),
        speaker_name: None,
        sent: None,
        place: None,
        tool_results: Vec::new(),
    };
    c.end_turn(now(), t.turn_id, record, None).unwrap();
}

fn kept(dir: &Path) -> Vec<String> {
    let ws = Workspace::open(dir).unwrap();
    let (cases, _) = crate::modes::examples::ExampleStore::new(&ws).load("cooking");
    cases.into_iter().map(|c| c.user).collect()
}

fn switch(c: &mut ModeCore, action: SwitchAction) {
    c.switch(
        now(),
        action,
        Some("cooking"),
        None,
        SwitchOrigin::Command(None),
    )
    .unwrap();
}

#[test]
fn only_the_chats_own_next_message_in_the_same_session_keeps_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = core(dir.path());
    // outside a mode nothing is a candidate
    say(&mut c, "group:1", true, "红烧肉怎么做", false);
    say(&mut c, "group:1", true, "谢谢", false);
    assert!(kept(dir.path()).is_empty());
    switch(&mut c, SwitchAction::Enter);
    // another chat's thanks keeps nothing
    say(&mut c, "group:1", true, "红烧肉怎么做", false);
    say(&mut c, "group:2", true, "谢谢", false);
    // a failed turn is no case
    say(&mut c, "group:2", true, "蒸鱼几分钟", true);
    say(&mut c, "group:2", true, "谢谢", false);
    // a message in between (no signal) ends the candidacy
    say(&mut c, "group:1", true, "接下来呢", false);
    assert_eq!(c.mark_good("qq", "group:3"), Good::Nothing);
    say(&mut c, "group:1", true, "很好", false);
    assert_eq!(kept(dir.path()), ["接下来呢"]);
    // a private chat's answer: neither praise nor `/good` keeps it
    say(&mut c, "private:9", false, "鲈鱼蒸几分钟", false);
    assert_eq!(c.mark_good("qq", "private:9"), Good::Private);
    say(&mut c, "private:9", false, "鲈鱼放姜吗", false);
    say(&mut c, "private:9", false, "谢谢", false);
    // a candidate of an ended session is not kept after it
    say(&mut c, "group:1", true, "番茄炒蛋", false);
    switch(&mut c, SwitchAction::Exit);
    say(&mut c, "group:1", true, "谢谢", false);
    assert_eq!(c.mark_good("qq", "group:1"), Good::Nothing);
    assert_eq!(kept(dir.path()), ["接下来呢"]);
}

#[test]
fn a_new_session_freezes_the_cases_most_like_the_words_that_entered_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = core(dir.path());
    switch(&mut c, SwitchAction::Enter);
    for q in ["红烧肉怎么做才不腻", "清蒸鲈鱼蒸几分钟", "番茄炒蛋先放蛋吗"]
    {
        say(&mut c, "group:1", true, q, false);
        assert!(matches!(c.mark_good("qq", "group:1"), Good::Kept(_)));
    }
    switch(&mut c, SwitchAction::Exit);
    // the turn that enters names the dish: that case first, then the newest
    let meta = TurnMeta {
        channel: "qq".into(),
        chat_id: "group:1".into(),
        speaker_id: "mom".into(),
        speaker_name: None,
        place: None,
        text: "打开做饭模式，今晚做红烧肉".into(),
        shared: true,
        room: None,
    };
    let t = c.begin_turn(now(), meta);
    let origin = SwitchOrigin::Tool {
        turn_id: t.turn_id,
        user_text: "打开做饭模式，今晚做红烧肉",
    };
    c.switch(now(), SwitchAction::Enter, Some("cooking"), None, origin)
        .unwrap();
    let dir_s = PathBuf::from(c.status().action.session_dir.unwrap());
    let prompt = std::fs::read_to_string(dir_s.join("system_prompt.md")).unwrap();
    let block = prompt
        .split("[EXAMPLES]")
        .nth(1)
        .expect("an examples block");
    let first = block.find("红烧肉怎么做才不腻").expect("the similar case");
    let second = block.find("番茄炒蛋先放蛋吗").expect("the newest other");
    assert!(first < second, "{block}");
    assert!(!block.contains("鲈鱼"), "use is 2: {block}");
    let got: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir_s.join("examples.json")).unwrap())
            .unwrap();
    assert_eq!(got.as_array().unwrap().len(), 2);
    assert_eq!(got[0]["user"], "红烧肉怎么做才不腻");
}

#[test]
fn words_that_name_no_dish_get_the_cases_of_their_own_chat_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = core(dir.path());
    switch(&mut c, SwitchAction::Enter);
    for (chat, q) in [
        ("group:2", "红烧肉怎么做才不腻"),
        ("group:1", "清蒸鲈鱼蒸几分钟"),
        ("group:1", "番茄炒蛋先放蛋吗"),
    ] {
        say(&mut c, chat, true, q, false);
        assert!(matches!(c.mark_good("qq", chat), Good::Kept(_)));
    }
    switch(&mut c, SwitchAction::Exit);
    // group:2 enters with words that name nothing: its own case first, though older
    let meta = TurnMeta {
        channel: "qq".into(),
        chat_id: "group:2".into(),
        speaker_id: "dad".into(),
        speaker_name: None,
        place: None,
        text: "打开做饭模式".into(),
        shared: true,
        room: None,
    };
    let t = c.begin_turn(now(), meta);
    let origin = SwitchOrigin::Tool {
        turn_id: t.turn_id,
        user_text: "打开做饭模式",
    };
    c.switch(now(), SwitchAction::Enter, Some("cooking"), None, origin)
        .unwrap();
    let dir_s = PathBuf::from(c.status().action.session_dir.unwrap());
    let got: Vec<crate::modes::examples::Case> =
        serde_json::from_str(&std::fs::read_to_string(dir_s.join("examples.json")).unwrap())
            .unwrap();
    let users: Vec<&str> = got.iter().map(|c| c.user.as_str()).collect();
    assert_eq!(users, ["红烧肉怎么做才不腻", "番茄炒蛋先放蛋吗"]);
}

#[test]
fn the_owner_sees_and_keeps_only_the_shared_candidates_of_the_active_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = core(dir.path());
    // no session: nothing to show
    say(&mut c, "group:1", true, "红烧肉怎么做", false);
    assert!(c.shared_candidates().is_empty());
    switch(&mut c, SwitchAction::Enter);
    let long = "蒸".repeat(VIEW_CHARS + 30);
    say(&mut c, "group:1", true, &long, false);
    say(&mut c, "private:9", false, "鲈鱼蒸几分钟", false);
    let shown = c.shared_candidates();
    assert_eq!(
        shown.len(),
        1,
        "a private chat's candidate never leaves the core"
    );
    assert_eq!(
        (shown[0].channel.as_str(), shown[0].chat_id.as_str()),
        ("qq", "group:1")
    );
    assert_eq!(shown[0].mode_id, "cooking");
    assert_eq!(shown[0].user, format!("{}…", "蒸".repeat(VIEW_CHARS)));
    // the owner's keep of the private chat's is refused; of the group's, kept as theirs
    assert_eq!(
        c.keep_candidate("qq", "private:9", Judged::Dashboard),
        Good::Private
    );
    let Good::Kept(id) = c.keep_candidate("qq", "group:1", Judged::Dashboard) else {
        panic!("kept");
    };
    let ws = Workspace::open(dir.path()).unwrap();
    let (cases, _) = crate::modes::examples::ExampleStore::new(&ws).load("cooking");
    assert_eq!(
        (cases[0].id.as_str(), cases[0].judged),
        (id.as_str(), Judged::Dashboard)
    );
    // kept once: no longer offered, and a second keep finds nothing
    assert!(c.shared_candidates().is_empty());
    assert_eq!(
        c.keep_candidate("qq", "group:1", Judged::Dashboard),
        Good::Nothing
    );
    // an ended session's candidates are not offered
    say(&mut c, "group:1", true, "番茄炒蛋", false);
    assert_eq!(c.shared_candidates().len(), 1);
    switch(&mut c, SwitchAction::Exit);
    assert!(c.shared_candidates().is_empty());
}
