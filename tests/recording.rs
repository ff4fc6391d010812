//! Nothing acknowledged is lost silently: a turn that cannot be recorded says so in its
//! reply, new turns are refused before the LLM while the disk is known to be full, and
//! `status` shows the failure with its time and error; once a write succeeds again,
//! turns are served and recorded as usual. And a very long chat id (a voice
//! `conversation_id` of 300 bytes) is recorded like any other.
//!
//! The disk is "full" through the `append.enospc@<flag>` failpoint: every append fails
//! with ENOSPC while the flag file exists. Failpoints are read once per process, so this
//! is its own test binary and every test in it shares the one setting (and runs one at a
//! time, since the flag is shared).

mod common;

use common::*;
use homebot::channels::{cli, qq, voice};
use homebot::clock::ManualClock;
use homebot::kernel::{Kernel, KernelOptions};
use homebot::turn::{Failure, Outcome, Refusal};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The flag file that makes the disk "full"; sets the failpoint before any kernel starts.
fn disk_full_flag() -> &'static Path {
    static FLAG: OnceLock<PathBuf> = OnceLock::new();
    FLAG.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("homebot-recording-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let flag = dir.join("disk-full");
        std::env::set_var(
            "HOMEBOT_FAILPOINT",
            format!("append.enospc@{}", flag.display()),
        );
        flag
    })
}

fn start_at(ws: &Path, fake: &FakeLlm, clock: &ManualClock) -> Kernel {
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            clock: Some(Arc::new(clock.clone())),
            ..Default::default()
        },
    )
    .unwrap()
}

fn at(s: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(s)
        .unwrap()
        .with_timezone(&chrono::Utc)
}

#[tokio::test]
async fn a_turn_that_cannot_be_recorded_says_so_and_new_turns_wait_for_space() {
    let _serial = SERIAL.lock().await;
    let flag = disk_full_flag();
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T20:00:00+08:00"));
    let kernel = start_at(ws, &fake, &clock);

    // outside a mode: the chat's own history
    std::fs::write(flag, "").unwrap();
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "晚饭吃什么？"))
        .await;
    assert!(r.text.starts_with("好的：晚饭吃什么？"), "{r:?}");
    assert!(r.text.contains("（注意：这一轮没能保存到记录里："), "{r:?}");
    // answered, but not kept: a storage failure
    assert!(
        matches!(&r.outcome, Outcome::Failed { error: Failure::Storage, detail }
            if detail.contains("No space left on device")),
        "{r:?}"
    );
    assert!(!ws.join("chats/cli/local.jsonl").exists());

    // the disk is known to be full: the next turn is refused before the model
    clock.advance(chrono::Duration::seconds(30));
    let calls = fake.calls();
    let r = kernel
        .handle_turn(voice::turn("wake-1", "dad", "那明天呢？"))
        .await;
    assert!(
        matches!(
            r.outcome,
            Outcome::Refused {
                reason: Refusal::DiskFull,
                ..
            }
        ),
        "{r:?}"
    );
    assert!(r.text.contains("磁盘满了"), "{r:?}");
    assert_eq!(
        fake.calls(),
        calls,
        "a refused turn never reaches the model"
    );
    let status = kernel.status_text().await;
    assert!(
        status.contains("记录写不进去（自 2026-10-22T20:00:00+08:00）")
            && status.contains("No space left on device"),
        "{status}"
    );

    // space again: served and recorded, and the current failure is gone from status
    std::fs::remove_file(flag).unwrap();
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "晚饭吃什么？"))
        .await;
    assert!(r.is_answered(), "{r:?}");
    assert_eq!(r.text, "好的：晚饭吃什么？");
    let recs = jsonl(&ws.join("chats/cli/local.jsonl"));
    assert_eq!(recs.len(), 1);
    let status = kernel.status_text().await;
    assert!(!status.contains("记录写不进去"), "{status}");
    assert!(
        status.contains("2026-10-22T20:00:00+08:00: a turn of cli/local could not be recorded"),
        "the failure stays in the warnings: {status}"
    );

    // inside a mode: the session's conversation.jsonl
    let entered = kernel.command("/mode enter cooking").await;
    assert!(entered.is_answered(), "{entered:?}");
    let conv = session_dir(ws).join("conversation.jsonl");
    std::fs::write(flag, "").unwrap();
    let r = kernel
        .handle_turn(qq::turn("group:1", "mom", "番茄几个？"))
        .await;
    assert!(r.text.contains("没能保存到记录里"), "{r:?}");
    assert!(!r.is_answered(), "{r:?}");
    assert_eq!(std::fs::read_to_string(&conv).unwrap(), "");
    std::fs::remove_file(flag).unwrap();
    let r = kernel
        .handle_turn(qq::turn("group:1", "mom", "番茄几个？"))
        .await;
    assert!(r.is_answered(), "{r:?}");
    assert_eq!(jsonl(&conv).len(), 1);
}

#[tokio::test]
async fn a_300_byte_voice_conversation_id_is_recorded() {
    let _serial = SERIAL.lock().await;
    disk_full_flag();
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let id = format!("01J{}", "x".repeat(297));
    assert_eq!(id.len(), 300);
    let kernel = start_kernel(ws, &fake);
    let r = kernel
        .handle_turn(voice::turn(&id, "guest", "第一句"))
        .await;
    assert!(r.is_answered(), "{r:?}");
    drop(kernel);

    let files: Vec<PathBuf> = std::fs::read_dir(ws.join("chats/voice"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name_len = files[0].file_name().unwrap().len();
    assert!(name_len < 255, "file name of {name_len} bytes");
    let recs = jsonl(&files[0]);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["chat_id"], id.as_str());

    // the same conversation continues with its history after a restart
    let kernel = start_kernel(ws, &fake);
    let r = kernel
        .handle_turn(voice::turn(&id, "guest", "第二句"))
        .await;
    assert!(r.is_answered(), "{r:?}");
    let last = turn_requests(&fake).pop().unwrap();
    assert!(last.to_string().contains("第一句"), "{last}");
    assert_eq!(jsonl(&files[0]).len(), 2);
}
