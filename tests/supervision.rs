//! A panic inside the ModeManager restarts it from disk: the turn that hit it gets an
//! error reply, later turns are served, and the active mode session survives. Uses the
//! `modes.begin_turn.panic` failpoint (its own test binary: the failpoint is read from
//! the environment once per process).

mod common;

use common::*;
use homebot::channels::{cli, voice};
use homebot::turn::{Failure, Outcome};

#[tokio::test]
async fn a_panicking_mode_manager_is_restarted_from_disk() {
    std::env::set_var("HOMEBOT_FAILPOINT", "modes.begin_turn.panic");
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(dir.path(), &fake);
    let r = kernel.command("/mode enter cooking").await;
    assert!(r.is_answered(), "{r:?}");
    let sid = action(dir.path())["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let hit = kernel
        .handle_turn(cli::turn("local", "mom", "番茄要几个？"))
        .await;
    assert!(
        matches!(&hit.outcome, Outcome::Failed { error: Failure::Internal, detail }
            if detail.contains("restarted")),
        "{hit:?}"
    );
    assert!(hit.text.contains("自动恢复"), "{hit:?}");
    assert_eq!(fake.calls(), 0, "the failed turn never reached the model");

    let next = kernel
        .handle_turn(voice::turn("wake-2", "dad", "鸡蛋呢？"))
        .await;
    assert!(next.is_answered(), "{next:?}");
    assert_eq!(next.text, "好的：鸡蛋呢？");
    // the session that was active before the panic is still the one, and it recorded
    assert_eq!(action(dir.path())["session_id"], sid.as_str());
    let recs = jsonl(&session_dir(dir.path()).join("conversation.jsonl"));
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["user"], "鸡蛋呢？");
    let status = kernel.command("/status").await.text;
    assert!(status.contains("restarted from disk"), "{status}");
    assert!(status.contains("活动中"), "{status}");
}
