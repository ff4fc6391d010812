//! Unit tests of the mode state machine, its recovery and archiving (no runtime).

use super::manifest::ExpiryPolicy;
use super::mode_core::*;
use super::registry::ModeRegistry;
use super::session::{
    self, ExitMarker, Record, CONVERSATION_FILE, EXIT_MARKER_FILE, INDEX_PENDING_FILE,
    SUMMARY_FILE, SYSTEM_PROMPT_FILE,
};
use super::switch::SwitchAction;
use crate::fsutil;
use crate::workspace::Workspace;
use crate::zone::Zone;
use chrono::{DateTime, SecondsFormat, Utc};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn expiry_time(
    started: DateTime<chrono::FixedOffset>,
    policy: &ExpiryPolicy,
    tz: Zone,
) -> DateTime<chrono::FixedOffset> {
    policy.after(started, tz)
}

#[test]
fn expiry_is_ten_past_midnight_after_the_start_day() {
    let tz: Zone = "Asia/Shanghai".parse().unwrap();
    let started = DateTime::parse_from_rfc3339("2026-10-22T19:55:00+08:00").unwrap();
    let e = expiry_time(started, &ExpiryPolicy::default(), tz);
    assert_eq!(
        e.to_rfc3339_opts(SecondsFormat::Secs, false),
        "2026-10-23T00:10:00+08:00"
    );
    // started just after midnight: still the end of *that* day
    let started = DateTime::parse_from_rfc3339("2026-10-23T00:05:00+08:00").unwrap();
    let e = expiry_time(started, &ExpiryPolicy::default(), tz);
    assert_eq!(
        e.to_rfc3339_opts(SecondsFormat::Secs, false),
        "2026-10-24T00:10:00+08:00"
    );
}

fn core_at(dir: &Path, now: DateTime<Utc>) -> ModeCore {
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

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn meta(chat: &str) -> TurnMeta {
    TurnMeta {
        channel: "cli".into(),
        chat_id: chat.into(),
        speaker_id: "mom".into(),
        speaker_name: None,
        place: None,
        text: String::new(),
        shared: true,
        room: None,
    }
}

fn rec(user: &str) -> Record {
    Record {
        timestamp: "2026-10-22T20:00:00+08:00".into(),
        channel: "cli".into(),
        chat_id: "a".into(),
        speaker_id: "mom".into(),
        user: user.into(),
        assistant: "ok".into(),
        error: None,
        speaker_name: None,
        sent: None,
        place: None,
        tool_results: Vec::new(),
    }
}

fn enter_cooking(c: &mut ModeCore, now: DateTime<Utc>) -> String {
    c.switch(
        now,
        SwitchAction::Enter,
        Some("cooking"),
        None,
        SwitchOrigin::Command(None),
    )
    .unwrap();
    c.status().action.session_id.clone().unwrap()
}

fn conv(core: &ModeCore, sid: &str) -> Vec<String> {
    let p = core
        .ws
        .sessions_dir("cooking")
        .join(sid)
        .join(CONVERSATION_FILE);
    session::load_records(&p)
        .unwrap()
        .records
        .into_iter()
        .map(|r| r.user)
        .collect()
}

#[test]
fn exit_waits_for_in_flight_turns_and_later_turns_stay_out() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let sid = enter_cooking(&mut c, now);
    let slow = c.begin_turn(now, meta("voice")); // a slow turn in the session
    let exiting = c.begin_turn(now, meta("qq"));
    assert!(slow.mode.is_some() && exiting.mode.is_some());
    c.switch(
        now,
        SwitchAction::Exit,
        Some("cooking"),
        Some("番茄炒蛋".into()),
        SwitchOrigin::Tool {
            turn_id: exiting.turn_id,
            user_text: "退出做饭模式",
        },
    )
    .unwrap();
    // a turn that begins after the exit request is not in the exiting session
    let late = c.begin_turn(now, meta("cli"));
    assert!(late.mode.is_none());
    let out = c
        .end_turn(now, exiting.turn_id, rec("退出做饭模式"), None)
        .unwrap();
    assert_eq!(out.recorded_in.as_deref(), Some(sid.as_str()));
    assert_eq!(out.archived, None, "the slow turn is still in flight");
    assert!(c.action.active);
    let out = c.end_turn(now, late.turn_id, rec("late"), None).unwrap();
    assert_eq!(out.recorded_in, None);
    let out = c.end_turn(now, slow.turn_id, rec("slow"), None).unwrap();
    assert_eq!(out.recorded_in.as_deref(), Some(sid.as_str()));
    assert_eq!(
        out.archived.as_deref(),
        Some(sid.as_str()),
        "archived exactly when the last turn ended"
    );
    assert!(!c.action.active);
    assert_eq!(conv(&c, &sid), ["退出做饭模式", "slow"]);
    assert!(matches!(
        c.end_turn(now, slow.turn_id, rec("again"), None),
        Err(ModeError::UnknownTurn(_))
    ));
}

#[test]
fn expiry_during_a_turn_archives_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T23:59:00+08:00");
    let mut c = core_at(dir.path(), now);
    let sid = enter_cooking(&mut c, now);
    let turn = c.begin_turn(now, meta("a"));
    let later = t("2026-10-23T00:10:01+08:00");
    assert_eq!(c.check_expiry(later), None, "waits for the in-flight turn");
    let next = c.begin_turn(later, meta("b"));
    assert!(next.mode.is_none(), "no new turn joins an expired session");
    let out = c
        .end_turn(now, turn.turn_id, rec("last words"), None)
        .unwrap();
    assert_eq!(out.archived.as_deref(), Some(sid.as_str()));
    assert_eq!(c.action.exit_reason.as_deref(), Some("expired"));
    assert_eq!(conv(&c, &sid), ["last words"]);
    c.end_turn(now, next.turn_id, rec("b"), None).unwrap();
}

#[test]
fn an_interrupted_archive_resumes_once() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let sid = enter_cooking(&mut c, now);
    let turn = c.begin_turn(now, meta("a"));
    c.end_turn(now, turn.turn_id, rec("hello"), None).unwrap();
    // simulate a crash right after the exit marker was written
    let sdir = c.ws.sessions_dir("cooking").join(&sid);
    let marker = ExitMarker {
        reason: "user".into(),
        summary: None,
        requested_at: "2026-10-22T20:00:00+08:00".into(),
    };
    fsutil::write_atomic(
        &sdir.join(EXIT_MARKER_FILE),
        &serde_json::to_vec(&marker).unwrap(),
    )
    .unwrap();
    drop(c);
    let c = core_at(dir.path(), now);
    assert!(!c.action.active);
    assert_eq!(c.action.exit_reason.as_deref(), Some("user"));
    assert!(sdir.join(SUMMARY_FILE).exists());
    let history = std::fs::read_to_string(dir.path().join("cooking/history.md")).unwrap();
    assert_eq!(
        history.matches(&sid).count(),
        2,
        "one index line (id and summary file name)"
    );
    // and again: nothing doubles
    drop(c);
    let _c = core_at(dir.path(), now);
    let again = std::fs::read_to_string(dir.path().join("cooking/history.md")).unwrap();
    assert_eq!(history, again);
}

#[test]
fn expiry_in_a_dst_gap_moves_forward() {
    // America/Santiago skips 00:00-01:00 on 2024-09-08
    let tz: Zone = "America/Santiago".parse().unwrap();
    let started = DateTime::parse_from_rfc3339("2024-09-07T21:00:00-04:00").unwrap();
    let policy = ExpiryPolicy {
        at: "00:10".into(),
        days_after_start: 1,
    };
    let e = expiry_time(started, &policy, tz);
    assert!(e > started, "{e}");
    assert_eq!(
        e.to_rfc3339_opts(SecondsFormat::Secs, false),
        "2024-09-08T01:10:00-03:00"
    );
}

#[test]
fn a_broken_index_does_not_keep_the_mode_open() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let sid = enter_cooking(&mut c, now);
    // the index path becomes a folder: every update fails
    let history = dir.path().join("cooking/history.md");
    std::fs::remove_file(&history).unwrap();
    std::fs::create_dir_all(history.join("oops")).unwrap();
    c.switch(
        now,
        SwitchAction::Exit,
        None,
        None,
        SwitchOrigin::Command(None),
    )
    .unwrap();
    assert!(!c.action.active, "the session ended anyway");
    let sdir = c.ws.sessions_dir("cooking").join(&sid);
    assert!(sdir.join(SUMMARY_FILE).exists());
    assert!(sdir.join(INDEX_PENDING_FILE).exists());
    assert!(c
        .status()
        .warnings
        .iter()
        .any(|w| w.contains("retried at the next start")));
    // fixed by a human; the next start catches up
    std::fs::remove_dir_all(&history).unwrap();
    drop(c);
    let _c = core_at(dir.path(), now);
    assert!(std::fs::read_to_string(&history).unwrap().contains(&sid));
    assert!(!sdir.join(INDEX_PENDING_FILE).exists());
}

#[test]
fn a_rebuilt_action_json_takes_only_a_real_used_session() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let live = enter_cooking(&mut c, now);
    let turn = c.begin_turn(now, meta("a"));
    c.end_turn(now, turn.turn_id, rec("hello"), None).unwrap();
    let base = c.ws.sessions_dir("cooking");
    // a stray copy and a never-used later session beside the live one
    std::fs::create_dir_all(base.join("cook-backup")).unwrap();
    std::fs::copy(
        base.join(&live).join(SYSTEM_PROMPT_FILE),
        base.join("cook-backup").join(SYSTEM_PROMPT_FILE),
    )
    .unwrap();
    let unused = base.join("cook-20261022-200000-abcdef");
    std::fs::create_dir_all(&unused).unwrap();
    std::fs::copy(
        base.join(&live).join(SYSTEM_PROMPT_FILE),
        unused.join(SYSTEM_PROMPT_FILE),
    )
    .unwrap();
    drop(c);
    std::fs::write(dir.path().join("modes/action.json"), "{broken").unwrap();
    let later = t("2026-10-22T20:30:00+08:00");
    let c = core_at(dir.path(), later);
    assert_eq!(c.action.session_id.as_deref(), Some(live.as_str()));
    assert_eq!(
        c.action.started_at.as_deref(),
        Some("2026-10-22T19:55:00+08:00")
    );
    assert!(
        !unused.exists(),
        "the unused one (no records, only its prompt) is removed, never indexed"
    );
    let index = std::fs::read_to_string(dir.path().join("cooking/history.md")).unwrap();
    assert!(!index.contains("cook-20261022-200000-abcdef"), "{index}");
    assert!(
        !base.join("cook-backup").join(SUMMARY_FILE).exists(),
        "a stray folder is left alone"
    );
}

#[test]
fn a_session_expired_while_down_ends_at_its_expiry_time() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let sid = enter_cooking(&mut c, now);
    let turn = c.begin_turn(now, meta("a"));
    c.end_turn(now, turn.turn_id, rec("hello"), None).unwrap();
    // the cron tick at 00:10 was missed; the next turn comes the morning after
    let morning = t("2026-10-23T08:30:00+08:00");
    let next = c.begin_turn(morning, meta("b"));
    assert!(next.mode.is_none());
    let summary =
        std::fs::read_to_string(c.ws.sessions_dir("cooking").join(&sid).join(SUMMARY_FILE))
            .unwrap();
    assert!(
        summary.contains("- 结束: 2026-10-23T00:10:00+08:00"),
        "{summary}"
    );
    assert_eq!(c.action.exit_reason.as_deref(), Some("expired"));
}

#[test]
fn opening_the_state_expires_a_past_due_session_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let sid = enter_cooking(&mut c, now);
    drop(c);
    let c = core_at(dir.path(), t("2026-10-24T12:00:00+08:00"));
    let st = c.status();
    assert!(
        !st.action.active,
        "a past-due session is not shown as active"
    );
    assert_eq!(st.action.exit_reason.as_deref(), Some("expired"));
    let summary =
        std::fs::read_to_string(c.ws.sessions_dir("cooking").join(&sid).join(SUMMARY_FILE))
            .unwrap();
    assert!(
        summary.contains("- 结束: 2026-10-23T00:10:00+08:00"),
        "{summary}"
    );
}

#[test]
fn turns_begun_before_a_restart_still_end_in_their_session() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let sid = enter_cooking(&mut c, now);
    let in_mode = c.begin_turn(now, meta("voice"));
    let next = c.next_turn_id();
    drop(c);
    // what the ModeManager does after a panic
    let mut fresh = core_at(dir.path(), now);
    fresh.continue_turn_ids(next);
    let out = fresh
        .end_turn(now, in_mode.turn_id, rec("before the restart"), Some(&sid))
        .unwrap();
    assert_eq!(out.recorded_in.as_deref(), Some(sid.as_str()));
    assert_eq!(conv(&fresh, &sid), ["before the restart"]);
    // an id the new core handed out is checked as before
    let t2 = fresh.begin_turn(now, meta("cli"));
    fresh.end_turn(now, t2.turn_id, rec("x"), None).unwrap();
    assert!(matches!(
        fresh.end_turn(now, t2.turn_id, rec("again"), None),
        Err(ModeError::UnknownTurn(_))
    ));
}

#[test]
fn an_entry_whose_action_json_cannot_be_written_leaves_no_session_folder() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    // action.json cannot be replaced: a folder with something in it stands in its place
    let action = dir.path().join("modes/action.json");
    std::fs::remove_file(&action).unwrap();
    std::fs::create_dir(&action).unwrap();
    std::fs::write(action.join("x"), "").unwrap();
    let e = c
        .switch(
            now,
            SwitchAction::Enter,
            Some("cooking"),
            None,
            SwitchOrigin::Command(None),
        )
        .unwrap_err();
    assert!(e.to_string().contains("action.json"), "{e}");
    assert!(c.status().action.session_id.is_none());
    let left: Vec<_> = std::fs::read_dir(c.ws.sessions_dir("cooking"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_recovered_orphan_keeps_its_own_start_and_end() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let sid = enter_cooking(&mut c, now);
    let turn = c.begin_turn(now, meta("a"));
    let mut r = rec("最后一句");
    r.timestamp = "2026-10-22T20:05:00+08:00".into();
    c.end_turn(now, turn.turn_id, r, None).unwrap();
    drop(c);
    // action.json lost its knowledge of the session (written back as inactive by hand)
    super::action::ActionDoc::inactive(None)
        .write(&dir.path().join("modes/action.json"))
        .unwrap();
    let c = core_at(dir.path(), t("2026-10-25T09:00:00+08:00"));
    let summary =
        std::fs::read_to_string(c.ws.sessions_dir("cooking").join(&sid).join(SUMMARY_FILE))
            .unwrap();
    assert!(
        summary.contains("- 开始: 2026-10-22T19:55:00+08:00"),
        "{summary}"
    );
    assert!(
        summary.contains("- 结束: 2026-10-22T20:05:00+08:00"),
        "{summary}"
    );
    assert!(summary.contains("- 结束原因: recovered"), "{summary}");
}
