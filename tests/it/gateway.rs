//! One owner per workspace: a running gateway holds the workspace lock; a CLI started
//! beside it routes its turns through the gateway's control socket; SIGTERM lets the
//! admitted turns finish and record, then the gateway exits 0.

use crate::common;

use common::*;
use homebot::kernel::{Kernel, KernelError, KernelOptions};
use std::path::Path;
use std::time::Duration;
use tokio::process::Child;

async fn start_gateway(ws: &Path, fake: &FakeLlm) -> Child {
    let child = homebot(ws, Some(fake)).arg("gateway").spawn().unwrap();
    eventually(
        "the gateway opened its control socket",
        Duration::from_secs(30),
        || ws.join("control.sock").exists(),
    )
    .await;
    child
}

fn sigterm(child: &Child) {
    let pid = child.id().unwrap().to_string();
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[tokio::test]
async fn cli_beside_a_running_gateway_routes_through_it() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    let fake = FakeLlm::scripted().await;
    let mut gw = start_gateway(&ws, &fake).await;

    // nobody else can become a second writer
    let err = Kernel::start(
        &ws,
        KernelOptions {
            lock_wait: Some(Duration::ZERO),
            ..Default::default()
        },
    )
    .err()
    .expect("the workspace is locked");
    assert!(matches!(err, KernelError::Locked(_)));
    assert!(
        err.to_string()
            .contains("in use by another homebot process (pid"),
        "{err}"
    );

    let o = homebot(&ws, Some(&fake))
        .args(["chat", "-m", "打开做饭模式", "--speaker", "mom"])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("已进入做饭模式"));
    let o = homebot(&ws, Some(&fake))
        .args(["chat", "-m", "番茄几个"])
        .output()
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "好的：番茄几个\n");
    let o = homebot(&ws, Some(&fake))
        .arg("status")
        .output()
        .await
        .unwrap();
    let status = String::from_utf8_lossy(&o.stdout);
    assert!(status.contains("已记录 2 轮"), "{status}");

    // several CLIs at once, all through the one gateway, each recorded once
    let mut runs = Vec::new();
    for i in 0..5 {
        let mut c = homebot(&ws, Some(&fake));
        c.args([
            "chat",
            "-m",
            &format!("并发{i}"),
            "--chat-id",
            &format!("t{i}"),
        ]);
        runs.push(tokio::spawn(async move { c.output().await.unwrap() }));
    }
    for r in runs {
        assert!(r.await.unwrap().status.success());
    }
    let lines = jsonl(&session_dir(&ws).join("conversation.jsonl"));
    assert_eq!(lines.len(), 7);
    for i in 0..5 {
        assert_eq!(
            lines
                .iter()
                .filter(|l| l["user"] == format!("并发{i}"))
                .count(),
            1
        );
    }

    sigterm(&gw);
    let status = tokio::time::timeout(Duration::from_secs(30), gw.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "gateway exit: {status:?}");
    assert!(
        !ws.join("control.sock").exists(),
        "socket removed on shutdown"
    );
    // the lock is free again
    let k = Kernel::start(
        &ws,
        KernelOptions {
            env: Some(fake.env()),
            ..Default::default()
        },
    )
    .unwrap();
    drop(k);
}

#[tokio::test]
async fn sigterm_lets_an_in_flight_turn_finish_and_record() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    let fake = FakeLlm::start(|body, _| {
        FakeReply::Delay(Duration::from_millis(1500), Box::new(scripted(body)))
    })
    .await;
    let mut gw = start_gateway(&ws, &fake).await;
    let mut cli = homebot(&ws, Some(&fake));
    cli.args(["chat", "-m", "慢慢想"]);
    let turn = tokio::spawn(async move { cli.output().await.unwrap() });
    eventually(
        "the turn reached the provider",
        Duration::from_secs(30),
        || fake.calls() > 0,
    )
    .await;
    assert_eq!(fake.calls(), 1, "the turn reached the provider");
    sigterm(&gw);
    let o = turn.await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "好的：慢慢想\n",
        "{o:?}"
    );
    let status = tokio::time::timeout(Duration::from_secs(30), gw.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let chat = jsonl(&ws.join("chats/cli/local.jsonl"));
    assert_eq!(chat.len(), 1);
    assert_eq!(chat[0]["assistant"], "好的：慢慢想");
}

#[tokio::test]
async fn a_port_clash_names_the_channel_and_the_address() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = homebot(dir.path(), Some(&fake))
        .arg("gateway")
        .env("HOMEBOT_WYOMING_LISTEN", &addr)
        .output()
        .await
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("wyoming: cannot listen on {addr}")),
        "{err}"
    );
    assert!(
        !dir.path().join("control.sock").exists(),
        "the failed start cleaned up its socket"
    );
}

#[tokio::test]
async fn a_gateway_without_channels_says_how_to_enable_one_and_the_cli_has_no_terminal() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    let fake = FakeLlm::scripted().await;
    let mut gw = homebot(&ws, Some(&fake))
        .arg("gateway")
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = tokio::io::BufReader::new(gw.stderr.take().unwrap());
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        use tokio::io::AsyncBufReadExt;
        while !line.contains("no channel is enabled") {
            line.clear();
            assert!(err.read_line(&mut line).await.unwrap() > 0, "gateway ended");
        }
    })
    .await
    .expect("the gateway warned");
    assert!(line.contains("HOMEBOT_QQ_LISTEN"), "{line}");
    eventually(
        "the gateway opened its control socket",
        Duration::from_secs(30),
        || ws.join("control.sock").exists(),
    )
    .await;
    // the CLI is a channel too; no terminal of that chat listens to this gateway
    let o = homebot(&ws, None)
        .args(["announce", "--channel", "cli", "--to", "local", "开饭了"])
        .output()
        .await
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no `homebot chat` of that chat is attached"),
        "{o:?}"
    );
    let o = homebot(&ws, None)
        .args(["announce", "--channel", "fax", "--to", "x", "hi"])
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("channel \"fax\" is not running"));
    sigterm(&gw);
    let status = tokio::time::timeout(Duration::from_secs(30), gw.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}
