//! Unit tests of sub-modes (the shipped 烘焙模式 under 做饭模式): the push and the pop,
//! the conclusion appended once, ending the parent, expiry. The helpers are in
//! `submode_kit_tests`, shared with `submode_recovery_tests`.

use super::mode_core::*;
use super::paused::{PausedDoc, CONCLUSION_CHANNEL};
use super::session::{EXIT_MARKER_FILE, SUMMARY_FILE};
use super::submode_kit_tests::*;
use super::switch::SwitchAction;
use super::switched::{Refusal, SwitchError, Switched};

#[test]
fn a_sub_mode_is_refused_unless_its_parent_runs() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let (r, _) = say_switch(
        &mut c,
        now,
        "打开烘焙模式",
        SwitchAction::Enter,
        "baking",
        None,
    );
    match r {
        Err(SwitchError::Refused(Refusal::ParentNotActive {
            display_name,
            parent_name,
        })) => {
            assert_eq!(
                (display_name.as_str(), parent_name.as_str()),
                ("烘焙模式", "做饭模式")
            );
        }
        other => panic!("{other:?}"),
    }
    let text = SwitchError::from(Refusal::ParentNotActive {
        display_name: "烘焙模式".into(),
        parent_name: "做饭模式".into(),
    })
    .to_string();
    assert!(text.contains("请先说“打开做饭模式”"), "{text}");
    assert!(!c.status().action.active);
    assert!(!PausedDoc::path(&c.workspace().modes_dir()).exists());
    // /mode enter alike
    let r = c.switch(
        now,
        SwitchAction::Enter,
        Some("baking"),
        None,
        SwitchOrigin::Command(None),
    );
    assert!(matches!(
        r,
        Err(SwitchError::Refused(Refusal::ParentNotActive { .. }))
    ));
    // the words still decide inside the parent
    say_switch(
        &mut c,
        now,
        "打开做饭模式",
        SwitchAction::Enter,
        "cooking",
        None,
    )
    .0
    .unwrap();
    let (r, _) = say_switch(
        &mut c,
        now,
        "烘焙模式是什么",
        SwitchAction::Enter,
        "baking",
        None,
    );
    assert!(
        matches!(r, Err(SwitchError::Refused(Refusal::Words(_)))),
        "{r:?}"
    );
    assert_eq!(c.status().action.mode_id.as_deref(), Some("cooking"));
}

#[test]
fn push_pauses_the_parent_and_return_brings_the_conclusion_back_once() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let (cook, bake) = cooking_then_baking(&mut c, now);
    let cook_dir = dir_of(&c, "cooking", &cook);
    let prompt_before = std::fs::read(cook_dir.join("system_prompt.md")).unwrap();
    let records_before = records(&c, "cooking", &cook);

    // paused.json names the parent; action.json keeps its ten keys and names the sub-mode
    let paused = PausedDoc::read(&PausedDoc::path(&c.workspace().modes_dir()))
        .unwrap()
        .unwrap();
    assert_eq!(paused.session_id(), cook);
    assert_eq!(paused.by, "baking");
    let action: serde_json::Value =
        serde_json::from_slice(&std::fs::read(c.workspace().action_file()).unwrap()).unwrap();
    assert_eq!(action.as_object().unwrap().len(), 10);
    assert_eq!(action["mode_id"], "baking");
    assert_eq!(action["session_id"], bake.as_str());
    let st = c.status();
    assert_eq!(
        st.paused.unwrap().session_id.as_deref(),
        Some(cook.as_str())
    );
    let rows = crate::modes::listing::list_sessions(c.workspace(), c.timezone(), now);
    let state = |id: &str| rows.iter().find(|r| r.session_id == id).unwrap().state;
    assert_eq!(state(&cook), crate::modes::listing::SessionState::Paused);
    assert_eq!(state(&bake), crate::modes::listing::SessionState::Active);

    // a turn in the sub-mode: its own prompt and history
    let turn = c.begin_turn(now, meta("g"));
    let snap = turn.mode.clone().unwrap();
    assert_eq!(snap.session_id, bake);
    assert!(
        snap.system_prompt.contains("烘焙"),
        "the sub-mode's own frozen prompt"
    );
    assert_eq!(turn.history.len(), 1, "only the entering turn");
    c.end_turn(now, turn.turn_id, rec("蛋白打到什么程度"), None)
        .unwrap();

    // "回到做饭模式": the parent's name with a verb of going back
    let (r, out) = say_switch(
        &mut c,
        now,
        "好了，回到做饭模式",
        SwitchAction::Enter,
        "cooking",
        Some("烤了六寸戚风，150度50分钟，正在放凉。"),
    );
    assert!(
        matches!(&r, Ok(Switched::ExitRequested { returns_to: Some(p), .. }) if p == "做饭模式"),
        "{r:?}"
    );
    assert_eq!(out.recorded_in.as_deref(), Some(bake.as_str()));
    assert_eq!(out.archived.as_deref(), Some(bake.as_str()));
    assert_eq!(
        users(&c, "baking", &bake),
        [
            "打开烘焙模式，烤个戚风",
            "蛋白打到什么程度",
            "好了，回到做饭模式"
        ]
    );
    assert!(dir_of(&c, "baking", &bake).join(SUMMARY_FILE).exists());
    assert!(!PausedDoc::path(&c.workspace().modes_dir()).exists());
    let st = c.status();
    assert_eq!(st.action.session_id.as_deref(), Some(cook.as_str()));
    assert!(st.paused.is_none());

    // the parent: same folder, same frozen prompt, its records plus one conclusion
    assert_eq!(
        std::fs::read(cook_dir.join("system_prompt.md")).unwrap(),
        prompt_before
    );
    let after = records(&c, "cooking", &cook);
    assert_eq!(after[..records_before.len()], records_before[..]);
    assert_eq!(after.len(), records_before.len() + 1);
    let conclusion = after.last().unwrap();
    assert_eq!(conclusion.channel, CONCLUSION_CHANNEL);
    assert_eq!(conclusion.chat_id, bake);
    assert!(conclusion
        .user
        .contains("烤了六寸戚风，150度50分钟，正在放凉。"));
    // the next turn runs in the parent and sees the conclusion last
    let turn = c.begin_turn(now, meta("g"));
    assert_eq!(turn.mode.as_ref().unwrap().session_id, cook);
    assert_eq!(
        turn.mode.as_ref().unwrap().system_prompt.as_bytes(),
        &prompt_before[..]
    );
    assert_eq!(turn.history.len(), after.len());
    turn.history
        .with(|r| assert_eq!(r.last(), Some(conclusion)));
    c.end_turn(now, turn.turn_id, rec("接着炒菜"), None)
        .unwrap();
    // a restart changes nothing
    drop(c);
    let c = core_at(dir.path(), now);
    assert_eq!(sid(&c), cook);
    assert_eq!(
        records(&c, "cooking", &cook)
            .iter()
            .filter(|r| r.chat_id == bake)
            .count(),
        1
    );
}

#[test]
fn without_a_summary_the_conclusion_is_an_excerpt_and_exit_words_return_too() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let (cook, bake) = cooking_then_baking(&mut c, now);
    say(&mut c, now, "烤箱预热好了");
    // `/mode exit` (no id) ends the running sub-mode
    let r = c.switch(
        now,
        SwitchAction::Exit,
        None,
        None,
        SwitchOrigin::Command(None),
    );
    assert!(
        matches!(
            &r,
            Ok(Switched::Exited {
                returns_to: Some(_),
                ..
            })
        ),
        "{r:?}"
    );
    assert_eq!(sid(&c), cook);
    let last = records(&c, "cooking", &cook).pop().unwrap();
    assert_eq!(last.chat_id, bake);
    assert!(
        last.user.contains("以下为最后几轮对话摘录"),
        "{}",
        last.user
    );
    assert!(last.user.contains("烤箱预热好了"), "{}", last.user);
}

#[test]
fn ending_the_parent_ends_both_sub_mode_first() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let (cook, bake) = cooking_then_baking(&mut c, now);
    let (r, out) = say_switch(
        &mut c,
        now,
        "结束做饭模式",
        SwitchAction::Exit,
        "cooking",
        Some("做了番茄炒蛋和戚风。"),
    );
    assert!(
        matches!(&r, Ok(Switched::ExitRequested { mode_id, .. }) if mode_id == "cooking"),
        "{r:?}"
    );
    assert_eq!(out.recorded_in.as_deref(), Some(bake.as_str()));
    assert_eq!(
        out.archived.as_deref(),
        Some(cook.as_str()),
        "the parent last"
    );
    let st = c.status();
    assert!(!st.action.active && st.paused.is_none());
    assert_eq!(st.action.exit_reason.as_deref(), Some("user"));
    for (mode, s) in [("cooking", &cook), ("baking", &bake)] {
        assert!(dir_of(&c, mode, s).join(SUMMARY_FILE).exists(), "{mode}");
    }
    // the sub-mode's conclusion reached the parent before the parent's summary
    let cook_summary =
        std::fs::read_to_string(dir_of(&c, "cooking", &cook).join(SUMMARY_FILE)).unwrap();
    assert!(cook_summary.contains("子模式结论"), "{cook_summary}");
    assert!(cook_summary.contains("做了番茄炒蛋和戚风。"));
    assert!(!PausedDoc::path(&c.workspace().modes_dir()).exists());
    // a new session can start
    say_switch(
        &mut c,
        now,
        "打开做饭模式",
        SwitchAction::Enter,
        "cooking",
        None,
    )
    .0
    .unwrap();
}

#[test]
fn turns_around_the_push_and_the_pop_stay_in_their_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, now, cook) = in_cooking(dir.path());
    let slow = c.begin_turn(now, meta("voice")); // begun in the parent
    let (_, _) = say_switch(
        &mut c,
        now,
        "打开烘焙模式",
        SwitchAction::Enter,
        "baking",
        None,
    );
    let bake = sid(&c);
    let in_sub = c.begin_turn(now, meta("cli"));
    assert_eq!(in_sub.mode.as_ref().unwrap().session_id, bake);
    // the slow parent turn ends while the parent is paused: recorded in the parent
    let out = c.end_turn(now, slow.turn_id, rec("slow"), None).unwrap();
    assert_eq!(out.recorded_in.as_deref(), Some(cook.as_str()));
    // the return waits for the sub-mode's other turn
    let (_, out) = say_switch(
        &mut c,
        now,
        "回到做饭模式",
        SwitchAction::Enter,
        "cooking",
        None,
    );
    assert_eq!(out.archived, None);
    // a turn begun now joins the parent, not the exiting sub-mode
    let next = c.begin_turn(now, meta("qq2"));
    assert_eq!(next.mode.as_ref().unwrap().session_id, cook);
    let out = c
        .end_turn(now, in_sub.turn_id, rec("in sub"), None)
        .unwrap();
    assert_eq!(out.archived.as_deref(), Some(bake.as_str()));
    let out = c.end_turn(now, next.turn_id, rec("next"), None).unwrap();
    assert_eq!(out.recorded_in.as_deref(), Some(cook.as_str()));
    let cooked = users(&c, "cooking", &cook);
    assert_eq!(
        cooked[..2],
        ["打开做饭模式".to_string(), "slow".to_string()]
    );
    assert!(cooked[2].starts_with("[子模式结论: 烘焙模式"));
    assert_eq!(cooked[3], "next");
    assert_eq!(
        users(&c, "baking", &bake),
        ["打开烘焙模式", "回到做饭模式", "in sub"]
    );
}

#[test]
fn the_parents_expiry_archives_the_sub_mode_first_then_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T23:00:00+08:00");
    let mut c = core_at(dir.path(), now);
    let (cook, bake) = cooking_then_baking(&mut c, now);
    let later = t("2026-10-23T00:10:01+08:00");
    assert_eq!(c.check_expiry(later).as_deref(), Some(cook.as_str()));
    let st = c.status();
    assert!(!st.action.active && st.paused.is_none());
    assert_eq!(st.action.exit_reason.as_deref(), Some("expired"));
    let marker = |mode: &str, s: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir_of(&c, mode, s).join(EXIT_MARKER_FILE)).unwrap())
            .unwrap()
    };
    assert_eq!(marker("baking", &bake)["reason"], "expired");
    assert_eq!(
        marker("cooking", &cook)["requested_at"],
        "2026-10-23T00:10:00+08:00"
    );
    let last = records(&c, "cooking", &cook).pop().unwrap();
    assert_eq!(
        last.chat_id, bake,
        "the conclusion is the parent's last record"
    );
    assert_eq!(last.timestamp, "2026-10-23T00:10:00+08:00");
}

#[test]
fn unsure_words_ask_and_a_yes_enters_or_returns_like_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, now, cook) = in_cooking(dir.path());
    for (words, mode) in [
        ("打开烘焙模式吧？", "baking"),
        ("要不要回到做饭模式呢", "cooking"),
    ] {
        let turn = c.begin_turn(now, meta("g"));
        let r = c.switch(
            now,
            SwitchAction::Enter,
            Some(mode),
            None,
            SwitchOrigin::Tool {
                turn_id: turn.turn_id,
                user_text: words,
            },
        );
        match r {
            Err(SwitchError::Refused(Refusal::Words(w))) => assert!(w.kind.asks(), "{words}: {w}"),
            other => panic!("{words}: {other:?}"),
        }
        // the person's yes, in the next turn, is the command
        c.end_turn(now, turn.turn_id, rec(words), None).unwrap();
        let yes = c.begin_turn(now, meta("g"));
        let r = c.switch(
            now,
            SwitchAction::Enter,
            Some(mode),
            None,
            SwitchOrigin::Confirmed {
                turn_id: yes.turn_id,
            },
        );
        assert!(r.is_ok(), "{words}: {r:?}");
        c.end_turn(now, yes.turn_id, rec("好"), None).unwrap();
    }
    assert_eq!(sid(&c), cook, "back in the same cooking session");
    assert!(c.status().paused.is_none());
}
