//! Hostile peers against `homebot gateway`: idle connections, half-sent HTTP headers,
//! descriptor exhaustion and oversized Wyoming payloads. Each listener has a cap, a
//! deadline for what the peer owes, and the control socket keeps working throughout.

use crate::common;

use common::gateway::Gateway;
use common::wyoming::{Got, WyPeer};
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "limits-token-123";
const QQ_TOKEN: &str = "qq-limits-token";

fn config(ws: &Path, text: &str) {
    std::fs::write(ws.join("config.toml"), text).unwrap();
}

async fn gateway(ws: &Path, fake: &FakeLlm, nofile: Option<(u64, u64)>) -> Gateway {
    Gateway::start_limited(
        ws,
        fake,
        &[
            ("HOMEBOT_WYOMING_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_VOICE_WS_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_VOICE_TOKEN", TOKEN),
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", QQ_TOKEN),
        ],
        &["wyoming", "voice-ws", "qq"],
        nofile,
    )
    .await
}

async fn python_transcript(gw: &Gateway, text: &str, conv: &str) -> Value {
    let (h, p) = gw.addr("wyoming").rsplit_once(':').unwrap();
    run_peer("wyoming_client.py", &[h, p, "transcript", text, conv]).await
}

/// Wait until a read on `s` sees the end of the stream (Ok) or `within` passes (Err).
async fn closed_within(s: &mut TcpStream, within: Duration) -> Result<Duration, ()> {
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        let left = within.saturating_sub(start.elapsed());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Err(_) => return Err(()),
            Ok(Ok(0)) | Ok(Err(_)) => return Ok(start.elapsed()),
            Ok(Ok(_)) => continue, // e.g. a 408 / 503 before the close
        }
    }
}

#[tokio::test]
async fn wyoming_over_the_cap_is_closed_at_once_and_idle_ones_make_room() {
    let dir = workspace();
    let ws = dir.path();
    config(
        ws,
        "[voice]\nwyoming_max_connections = 8\nwyoming_idle_timeout_secs = 6\n",
    );
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake, None).await;
    let addr = gw.addr("wyoming").to_string();

    // the cap's worth of connections, each admitted (a ping answered), then silent
    let mut idle = Vec::new();
    for i in 0..8 {
        let mut p = WyPeer::connect(&addr).await;
        p.send("ping", json!({"text": format!("p{i}")})).await;
        match p.read(Duration::from_secs(10)).await {
            Got::Event(v) => assert_eq!(v["type"], "pong", "{v}"),
            other => panic!("connection {i} under the cap was not served: {other:?}"),
        }
        idle.push(p);
    }
    let admitted_at = Instant::now();
    // ten more: each told why and closed at once, long before any idle one times out
    for i in 0..10 {
        let mut p = WyPeer::connect(&addr).await;
        let seen = p
            .until_closed(Duration::from_secs(3))
            .await
            .unwrap_or_else(|seen| panic!("connection {i} over the cap stayed open ({seen:?})"));
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0]["type"], "error");
        assert_eq!(seen[0]["data"]["code"], "busy");
    }
    assert!(
        admitted_at.elapsed() < Duration::from_secs(5),
        "the refusals were not immediate"
    );
    // the silent ones are closed by the idle timeout, not before it
    let mut closed_after = Vec::new();
    for p in &mut idle {
        match p.read(Duration::from_secs(30)).await {
            Got::Closed => closed_after.push(admitted_at.elapsed()),
            other => panic!("an idle connection was not closed: {other:?}"),
        }
    }
    assert!(
        closed_after.iter().all(|d| *d >= Duration::from_secs(4)),
        "closed before the idle timeout: {closed_after:?}"
    );
    // room again: a real Home Assistant-like client is answered
    let r = python_transcript(&gw, "还在吗", "conv-after-idle").await;
    assert_eq!(r["type"], "handled", "{r}");
    assert_eq!(r["text"], "好的：还在吗");
    gw.wait_log("connection refused: over the cap", 10).await;
    let refusals = gw.log().matches("connection refused: over the cap").count();
    assert!(
        refusals <= 2,
        "ten refusals within seconds should be one or two log lines, got {refusals}"
    );
}

#[tokio::test]
async fn half_sent_http_headers_are_closed_after_the_handshake_timeout() {
    let dir = workspace();
    let ws = dir.path();
    // the defaults: 10 s to send the request's headers, 8 connections on the QQ port
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake, None).await;
    let opened = Instant::now();
    let mut socks = Vec::new();
    for (label, path) in [("voice-ws", "/voice/ws"), ("qq", "/onebot/v11/ws")] {
        let addr = gw.addr(label).to_string();
        for i in 0..8 {
            let mut s = TcpStream::connect(&addr).await.unwrap();
            if i % 4 != 0 {
                // a request line and some headers, never the blank line that ends them
                let half = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n");
                s.write_all(half.as_bytes()).await.unwrap();
            } // every fourth sends nothing at all
            socks.push((label, i, s));
        }
    }
    for (label, i, s) in &mut socks {
        closed_within(s, Duration::from_secs(25))
            .await
            .unwrap_or_else(|_| panic!("{label}: half-open connection {i} was never closed"));
        let took = opened.elapsed();
        assert!(
            took >= Duration::from_secs(9),
            "{label}: connection {i} closed after {took:?}, before the handshake timeout"
        );
    }
    // and the doors still open for a real client
    let mut req = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
        format!("ws://{}/voice/ws?satellite_id=kitchen", gw.addr("voice-ws")),
    )
    .unwrap();
    req.headers_mut()
        .insert("Authorization", format!("Bearer {TOKEN}").parse().unwrap());
    tokio_tungstenite::connect_async(req)
        .await
        .expect("a satellite connects after the half-open ones are gone");
}

#[tokio::test]
async fn voice_websockets_over_the_cap_are_refused_at_once() {
    let dir = workspace();
    let ws = dir.path();
    config(ws, "[voice]\nws_max_connections = 3\n");
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake, None).await;
    let url = format!("ws://{}/voice/ws", gw.addr("voice-ws"));
    let connect = |n: usize| {
        let url = url.clone();
        async move {
            let mut req =
                tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
                    format!("{url}?satellite_id=sat-{n}"),
                )
                .unwrap();
            req.headers_mut()
                .insert("Authorization", format!("Bearer {TOKEN}").parse().unwrap());
            tokio_tungstenite::connect_async(req).await
        }
    };
    let mut held = Vec::new();
    for n in 0..3 {
        held.push(connect(n).await.expect("under the cap").0);
    }
    let start = Instant::now();
    match connect(3).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status().as_u16(), 503),
        Ok(_) => panic!("a fourth satellite got past a cap of three"),
        Err(e) => panic!("refused without an answer: {e}"),
    }
    assert!(start.elapsed() < Duration::from_secs(3));
    // a place is freed when a satellite leaves
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match connect(4).await {
            Ok(_) => break,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("the freed place was never given back: {e}"),
        }
    }
}

#[tokio::test]
async fn status_still_answers_while_wyoming_is_flooded_short_of_descriptors() {
    let dir = workspace();
    let ws = dir.path();
    // 128 descriptors (soft = hard, so raising changes nothing): the budget left after
    // the reserve is below Wyoming's default cap of 64, so the budget is what stops it
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake, Some((128, 128))).await;
    let addr = gw.addr("wyoming").to_string();
    let lines_before = gw.log().lines().count();
    let mut flood = Vec::new();
    for _ in 0..500 {
        match TcpStream::connect(&addr).await {
            Ok(s) => flood.push(s),
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
    // the owner still gets in through the control socket, more than once
    for _ in 0..3 {
        let o = tokio::time::timeout(
            Duration::from_secs(20),
            homebot(ws, None).arg("status").output(),
        )
        .await
        .expect("homebot status hung while Wyoming was flooded")
        .unwrap();
        assert!(o.status.success(), "{o:?}");
        assert!(!o.stdout.is_empty());
    }
    gw.wait_log("descriptor budget", 10).await;
    // a refused connection is closed at once; an admitted one is still open
    let mut refused = 0;
    for s in flood.iter_mut().rev().take(50) {
        if closed_within(s, Duration::from_millis(200)).await.is_ok() {
            refused += 1;
        }
    }
    assert!(refused > 0, "nothing was refused by the descriptor budget");
    // the log stays quiet: a few throttled warnings, not a line per connection
    let grew = gw.log().lines().count() - lines_before;
    assert!(grew < 20, "the flood wrote {grew} log lines:\n{}", gw.log());
    assert!(!gw.log().contains("accept failed"), "{}", gw.log());
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake, Some((200, 4096))).await;
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", gw.pid())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let nums: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(nums, ["4096", "4096"], "{line}");
}

#[tokio::test]
async fn wyoming_payloads_are_refused_before_they_are_read() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake, None).await;
    let addr = gw.addr("wyoming").to_string();
    // 4 MiB of "audio" announced: refused at the header, not a byte of it awaited
    for header in [
        r#"{"type":"audio-chunk","data":{"rate":16000,"width":2,"channels":1},"payload_length":4194304}"#,
        r#"{"type":"transcript","data":{"text":"番茄"},"payload_length":1}"#,
        r#"{"type":"describe","payload_length":16}"#,
    ] {
        let mut p = WyPeer::connect(&addr).await;
        p.send_raw(format!("{header}\n").as_bytes()).await;
        let seen = p
            .until_closed(Duration::from_secs(5))
            .await
            .unwrap_or_else(|seen| panic!("{header}: still waiting for the payload ({seen:?})"));
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0]["type"], "error");
        assert_eq!(seen[0]["data"]["code"], "payload-refused", "{seen:?}");
    }
    assert_eq!(fake.calls(), 0, "a refused transcript reached the model");
    // the same events without payloads are served
    let mut p = WyPeer::connect(&addr).await;
    p.send("describe", json!({})).await;
    match p.read(Duration::from_secs(10)).await {
        Got::Event(v) => assert_eq!(v["type"], "info"),
        other => panic!("{other:?}"),
    }
}
