//! A panic inside the Cron actor restarts it from disk (the one supervision helper, as
//! for the ModeManager): the request that hit it gets an error, the reminders already set
//! are still there, later requests are served, and the ModeManager beside it on the same
//! actor thread never notices. Uses the `cron.set_reminder.panic` failpoint, armed only
//! while a flag file exists (its own test binary: the failpoint is read from the
//! environment once per process).

mod common;

use common::*;
use homebot::channels::cli;
use homebot::reminders::Origin;

fn origin() -> Origin {
    Origin {
        channel: "cli".into(),
        chat_id: "local".into(),
        speaker_id: "mom".into(),
        target: "local".into(),
    }
}

#[tokio::test]
async fn a_panicking_cron_actor_is_restarted_from_disk() {
    let dir = workspace();
    let flag = dir.path().join("panic-now");
    std::env::set_var(
        "HOMEBOT_FAILPOINT",
        format!("cron.set_reminder.panic@{}", flag.display()),
    );
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(dir.path(), &fake);
    let cron = kernel.reminders();
    let first = cron
        .set(Some(600), None, "关火".into(), origin())
        .await
        .unwrap();

    std::fs::write(&flag, b"").unwrap();
    let hit = cron
        .set(Some(900), None, "收衣服".into(), origin())
        .await
        .unwrap_err();
    assert!(hit.to_string().contains("restarted from disk"), "{hit}");
    std::fs::remove_file(&flag).unwrap();

    // the actor answers again, with the book read back from reminders.json
    let later = cron
        .set(Some(1200), None, "浇花".into(), origin())
        .await
        .unwrap();
    let texts: Vec<String> = cron
        .list(false)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.text)
        .collect();
    assert_eq!(texts, ["关火", "浇花"]);
    assert!(later.id > first.id);
    // the ModeManager on the same actor thread is untouched
    let r = kernel.handle_turn(cli::turn("local", "mom", "你好")).await;
    assert!(r.is_answered(), "{r:?}");
    assert_eq!(r.text, "好的：你好");
}
