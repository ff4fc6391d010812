//! Unit tests of a start after a crash at each point of a sub-mode's push and pop (the
//! files as the crash leaves them); the kill tests with real crashes are in
//! `tests/it/submode_crash.rs`.

use super::mode_core::ModeCore;
use super::paused::PausedDoc;
use super::session::{EXIT_MARKER_FILE, SUMMARY_FILE};
use super::submode_kit_tests::*;

#[test]
fn a_start_after_a_crash_in_the_push_drops_the_leftover_paused_json() {
    let dir = tempfile::tempdir().unwrap();
    let (c, now, cook) = in_cooking(dir.path());
    // paused.json written, action.json not yet: it names the active session
    let doc = PausedDoc::new(
        "2026-10-22T19:56:00+08:00".into(),
        "baking",
        c.status().action,
    );
    let path = PausedDoc::path(&c.workspace().modes_dir());
    doc.write(&path).unwrap();
    drop(c);
    let c = core_at(dir.path(), now);
    assert_eq!(sid(&c), cook);
    assert!(c.status().paused.is_none());
    assert!(!path.exists());
}

#[test]
fn a_start_after_a_crash_in_the_pop_resumes_it_with_one_conclusion() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let (cook, bake) = cooking_then_baking(&mut c, now);
    let modes = c.workspace().modes_dir();
    let action = c.status().action;
    let paused = PausedDoc::read(&PausedDoc::path(&modes)).unwrap().unwrap();
    // the sub-mode's exit requested; then a crash: the marker is on disk, nothing else
    let marker = super::session::ExitMarker {
        reason: "user".into(),
        summary: Some("烤好了曲奇。".into()),
        requested_at: "2026-10-22T20:30:00+08:00".into(),
    };
    let bake_dir = dir_of(&c, "baking", &bake);
    std::fs::write(
        bake_dir.join(EXIT_MARKER_FILE),
        serde_json::to_vec(&marker).unwrap(),
    )
    .unwrap();
    drop(c);
    // first start: resumes the archive, appends the conclusion, resumes the parent
    let c = core_at(dir.path(), now);
    assert_eq!(sid(&c), cook);
    let n = |c: &ModeCore| {
        records(c, "cooking", &cook)
            .iter()
            .filter(|r| r.chat_id == bake)
            .count()
    };
    assert_eq!(n(&c), 1);
    drop(c);
    // as if the crash came after the conclusion and before action.json: put the
    // sub-mode back in action.json and paused.json back, then start again
    action.write(&modes.join("action.json")).unwrap();
    paused.write(&PausedDoc::path(&modes)).unwrap();
    std::fs::remove_file(bake_dir.join(SUMMARY_FILE)).unwrap();
    let c = core_at(dir.path(), now);
    assert_eq!(sid(&c), cook, "the parent runs again");
    assert_eq!(n(&c), 1, "exactly one conclusion");
    assert!(!PausedDoc::path(&modes).exists());
    assert!(bake_dir.join(SUMMARY_FILE).exists());
}

#[test]
fn a_paused_parent_whose_exit_was_committed_ends_its_sub_mode_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let now = t("2026-10-22T19:55:00+08:00");
    let mut c = core_at(dir.path(), now);
    let (cook, bake) = cooking_then_baking(&mut c, now);
    // the parent's exit.json written (the commit), then a crash before the sub-mode's
    let marker = super::session::ExitMarker {
        reason: "user".into(),
        summary: None,
        requested_at: "2026-10-22T20:30:00+08:00".into(),
    };
    std::fs::write(
        dir_of(&c, "cooking", &cook).join(EXIT_MARKER_FILE),
        serde_json::to_vec(&marker).unwrap(),
    )
    .unwrap();
    drop(c);
    let c = core_at(dir.path(), now);
    let st = c.status();
    assert!(!st.action.active && st.paused.is_none(), "{st:?}");
    assert!(dir_of(&c, "baking", &bake).join(SUMMARY_FILE).exists());
    assert!(dir_of(&c, "cooking", &cook).join(SUMMARY_FILE).exists());
    assert!(records(&c, "cooking", &cook)
        .iter()
        .any(|r| r.chat_id == bake));
}
