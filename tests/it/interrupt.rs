//! Ctrl-C during a turn in `homebot chat`: the first one cancels the turn in flight — it
//! is recorded as cancelled — and the chat goes on; a second one leaves (exit 130). The
//! control socket is removed either way, and a chat routed through a running gateway
//! cancels its turn there by hanging up.

use crate::common;

use common::*;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;

/// How long the child may take to reach the provider, or to record.
const WAIT: Duration = Duration::from_secs(12);

fn interrupt(child: &Child) {
    let pid = child.id().unwrap().to_string();
    let ok = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(ok.success());
}

async fn slow_fake() -> FakeLlm {
    FakeLlm::start(|body, _| FakeReply::Delay(Duration::from_secs(20), Box::new(scripted(body))))
        .await
}

fn interactive(ws: &Path, fake: &FakeLlm) -> Child {
    homebot(ws, Some(fake))
        .args(["chat", "--speaker", "mom"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn the_first_ctrl_c_cancels_the_turn_and_the_chat_goes_on() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    let fake = slow_fake().await;
    let mut child = interactive(&ws, &fake);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all("慢慢想\n".as_bytes()).await.unwrap();
    eventually("the turn reached the provider", WAIT, || fake.calls() > 0).await;
    interrupt(&child);
    let cancelled = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(l) = out.next_line().await.unwrap() {
            if l.contains("已取消这一轮") {
                return true;
            }
        }
        false
    })
    .await
    .expect("the cancelled turn answered at once, not after the provider");
    assert!(cancelled);
    stdin.write_all("/quit\n".as_bytes()).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let recs = jsonl(&ws.join("chats/cli/local.jsonl"));
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["user"], "慢慢想");
    assert_eq!(recs[0]["error"], "cancelled by the user");
    assert!(!ws.join("control.sock").exists(), "socket removed");
}

#[tokio::test]
async fn a_second_ctrl_c_leaves_and_removes_the_socket() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    let fake = slow_fake().await;
    let mut child = interactive(&ws, &fake);
    let mut stdin = child.stdin.take().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    stdin.write_all("慢慢想\n".as_bytes()).await.unwrap();
    eventually("the turn reached the provider", WAIT, || fake.calls() > 0).await;
    interrupt(&child);
    // the first Ctrl-C is acknowledged before the second is sent
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(l) = err.next_line().await.unwrap() {
            if l.contains("再按一次 Ctrl-C 退出") {
                return;
            }
        }
        panic!("no acknowledgement of the first Ctrl-C");
    })
    .await
    .unwrap();
    interrupt(&child);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the second Ctrl-C ended the chat")
        .unwrap();
    // 130 when it came while the turn was still winding down, 0 when it came at the prompt
    assert!(matches!(status.code(), Some(130) | Some(0)), "{status:?}");
    assert!(!ws.join("control.sock").exists(), "socket removed");
    let recs = jsonl(&ws.join("chats/cli/local.jsonl"));
    assert_eq!(recs.len(), 1, "the cancelled turn is recorded");
    assert_eq!(recs[0]["error"], "cancelled by the user");
}

#[tokio::test]
async fn ctrl_c_beside_a_gateway_cancels_the_turn_there() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    let fake = slow_fake().await;
    let mut gw = homebot(&ws, Some(&fake)).arg("gateway").spawn().unwrap();
    eventually(
        "the gateway opened its control socket",
        Duration::from_secs(30),
        || ws.join("control.sock").exists(),
    )
    .await;
    let cli = homebot(&ws, None)
        .args(["chat", "-m", "慢慢想"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    eventually("the turn reached the provider", WAIT, || fake.calls() > 0).await;
    interrupt(&cli);
    let o = tokio::time::timeout(Duration::from_secs(10), cli.wait_with_output())
        .await
        .expect("the one-shot chat ended at once")
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("已取消这一轮"),
        "{o:?}"
    );
    // the gateway cancelled and recorded it, and keeps serving
    let path = ws.join("chats/cli/local.jsonl");
    let recs = eventually_some("a record in the chat's history", WAIT, || {
        Some(path.as_path())
            .filter(|p| p.exists())
            .map(jsonl)
            .filter(|l| !l.is_empty())
    })
    .await;
    assert_eq!(recs[0]["error"], "cancelled by the user");
    assert!(
        ws.join("control.sock").exists(),
        "the gateway's socket stays"
    );
    gw.start_kill().unwrap();
}
