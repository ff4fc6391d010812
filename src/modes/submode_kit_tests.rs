//! What the sub-mode unit tests share (`submode_tests`, `submode_recovery_tests`): a
//! ModeCore over the shipped skills at a given time, turns said to it, what its sessions
//! recorded.

use super::mode_core::*;
use super::registry::ModeRegistry;
use super::session::{self, Record, CONVERSATION_FILE};
use super::switch::SwitchAction;
use super::switched::{SwitchError, Switched};
use crate::workspace::Workspace;
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) fn core_at(dir: &Path, now: DateTime<Utc>) -> ModeCore {
    let ws = Workspace::open(dir).unwrap();
    let skills = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let reg = Arc::new(ModeRegistry::load(&[skills], crate::skills::PLUGINS));
    ModeCore::open(
        ws,
        reg,
        "Asia/Shanghai".parse().unwrap(),
        now,
        crate::prompt::frozen_mode_prompt,
    )
    .unwrap()
}

pub(super) fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

pub(super) fn meta(chat: &str) -> TurnMeta {
    TurnMeta {
        channel: "qq".into(),
        chat_id: chat.into(),
        speaker_id: "mom".into(),
        speaker_name: None,
        place: None,
        text: String::new(),
        shared: true,
        room: None,
    }
}

pub(super) fn rec(user: &str) -> Record {
    Record {
        timestamp: "2026-10-22T20:00:00+08:00".into(),
        channel: "qq".into(),
        chat_id: "g".into(),
        speaker_id: "mom".into(),
        user: user.into(),
        assistant: "好".into(),
        error: None,
        speaker_name: None,
        sent: None,
        place: None,
        tool_results: Vec::new(),
    }
}

pub(super) fn sid(c: &ModeCore) -> String {
    c.status().action.session_id.unwrap()
}

pub(super) fn dir_of(c: &ModeCore, mode: &str, sid: &str) -> PathBuf {
    c.workspace().sessions_dir(mode).join(sid)
}

pub(super) fn records(c: &ModeCore, mode: &str, sid: &str) -> Vec<Record> {
    session::load_records(&dir_of(c, mode, sid).join(CONVERSATION_FILE))
        .unwrap()
        .records
}

pub(super) fn users(c: &ModeCore, mode: &str, sid: &str) -> Vec<String> {
    records(c, mode, sid).into_iter().map(|r| r.user).collect()
}

/// One turn that says `words` and asks for `action` on `mode` through the tool.
pub(super) fn say_switch(
    c: &mut ModeCore,
    now: DateTime<Utc>,
    words: &str,
    action: SwitchAction,
    mode: &str,
    summary: Option<&str>,
) -> (Result<Switched, SwitchError>, EndOutcome) {
    let turn = c.begin_turn(now, meta("g"));
    let r = c.switch(
        now,
        action,
        Some(mode),
        summary.map(Into::into),
        SwitchOrigin::Tool {
            turn_id: turn.turn_id,
            user_text: words,
        },
    );
    let out = c.end_turn(now, turn.turn_id, rec(words), None).unwrap();
    (r, out)
}

pub(super) fn say(c: &mut ModeCore, now: DateTime<Utc>, words: &str) -> EndOutcome {
    let turn = c.begin_turn(now, meta("g"));
    c.end_turn(now, turn.turn_id, rec(words), None).unwrap()
}

/// Cooking with two turns, then baking entered by a turn that asks for it.
pub(super) fn cooking_then_baking(c: &mut ModeCore, now: DateTime<Utc>) -> (String, String) {
    let (r, _) = say_switch(c, now, "打开做饭模式", SwitchAction::Enter, "cooking", None);
    r.unwrap();
    let cook = sid(c);
    say(c, now, "番茄炒蛋几个人的量");
    let (r, out) = say_switch(
        c,
        now,
        "打开烘焙模式，烤个戚风",
        SwitchAction::Enter,
        "baking",
        None,
    );
    let bake = sid(c);
    assert!(
        matches!(&r, Ok(Switched::Entered { paused: Some(p), .. }) if p == "做饭模式"),
        "{r:?}"
    );
    assert_eq!(
        out.recorded_in.as_deref(),
        Some(bake.as_str()),
        "the entering turn is the sub-session's first record"
    );
    (cook, bake)
}

/// A ModeCore at 19:55 in which 做饭模式 was just entered, and that session's id.
pub(super) fn in_cooking(dir: &Path) -> (ModeCore, DateTime<Utc>, String) {
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir, now);
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
    let cook = sid(&c);
    (c, now, cook)
}
