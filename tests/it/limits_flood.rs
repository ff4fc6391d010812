//! Floods of connections that never finish a request, on every network port. Each
//! accepted socket, under the cap or over it, is closed by the gateway itself: one over
//! the cap at once (answered 503, or a Wyoming `busy` event), an admitted one when its
//! deadline passes (the handshake timeout on the HTTP ports, the idle timeout on
//! Wyoming) — also when it sends complete requests but never reads the replies. So a
//! flood gives its descriptors back without the peer's help, and a real client gets in
//! afterwards. Descriptors are counted in the gateway's `/proc/<pid>/fd`.
#![cfg(target_os = "linux")]

use crate::common;

use common::gateway::Gateway;
use common::watch::{watch, Fate};
use common::wyoming::{Got, WyPeer};
use common::*;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

const TOKEN: &str = "flood-token-123";
const QQ_TOKEN: &str = "qq-flood-token";
/// The cap on every port in these tests.
const CAP: usize = 4;
/// The handshake (HTTP) and idle (Wyoming) deadline in these tests.
const DEADLINE: Duration = Duration::from_secs(3);
/// Closed sooner than this counts as refused at once: well inside [`DEADLINE`].
const PROMPT: Duration = Duration::from_secs(2);
/// How long past its deadline a socket may take to be seen closed (a loaded machine).
const SLACK: Duration = Duration::from_secs(10);

async fn gateway(ws: &std::path::Path, fake: &FakeLlm) -> Gateway {
    let secs = DEADLINE.as_secs();
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[qq]\nmax_connections = {CAP}\nhandshake_timeout_secs = {secs}\n\
             [voice]\nws_max_connections = {CAP}\nwyoming_max_connections = {CAP}\n\
             handshake_timeout_secs = {secs}\nwyoming_idle_timeout_secs = {secs}\n"
        ),
    )
    .unwrap();
    Gateway::start(
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
    )
    .await
}

fn open_fds(gw: &Gateway) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", gw.pid()))
        .unwrap()
        .count()
}

/// Poll until the gateway holds no more descriptors than `baseline`.
async fn fds_back_to(gw: &Gateway, baseline: usize, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let now = open_fds(gw);
        if now <= baseline {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway still holds {now} descriptors, {baseline} before the flood"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Open `n` connections to `addr`, each watched from its own connect: the first half
/// send nothing, the others `partial` (a request never finished).
async fn flood(addr: &str, n: usize, partial: &[u8]) -> Vec<Fate> {
    let deadline = Instant::now() + DEADLINE + SLACK;
    let mut watchers = Vec::new();
    for i in 0..n {
        let opened = Instant::now();
        let mut s = TcpStream::connect(addr).await.unwrap();
        if i >= n / 2 {
            // an over-cap socket may be closed already: the write may fail
            let _ = s.write_all(partial).await;
        }
        watchers.push(tokio::spawn(watch(s, opened, deadline)));
    }
    let mut fates = Vec::new();
    for w in watchers {
        fates.push(w.await.unwrap());
    }
    fates
}

/// Every socket closed; all but the cap's worth at once, the rest at their deadline.
fn check_released(label: &str, fates: &[Fate]) {
    let open = fates.iter().filter(|f| f.closed_after.is_none()).count();
    assert_eq!(
        open,
        0,
        "{label}: {open} of {} flooding connections were never closed",
        fates.len()
    );
    // held: never answered and closed no sooner than the deadline (a refusal says 503 or
    // busy, however long a loaded machine took to say it)
    let held: Vec<Duration> = fates
        .iter()
        .filter(|f| f.said.is_empty())
        .filter_map(|f| f.closed_after)
        .filter(|d| *d >= DEADLINE - Duration::from_millis(100))
        .collect();
    assert!(
        held.len() <= CAP,
        "{label}: {} connections were held, more than the cap of {CAP}: {held:?}",
        held.len()
    );
}

/// Connect with a small receive buffer, send `request` over and over without ever
/// reading a reply until the socket takes no more (both sides' buffers full) or
/// `stuff_for` passes.
async fn non_reader(addr: &str, request: &[u8], stuff_for: Duration) -> TcpStream {
    let sock = TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let s = sock.connect(addr.parse().unwrap()).await.unwrap();
    let batch = request.repeat(64);
    // where the next write starts: a partial write is continued, so the stream stays a
    // sequence of whole requests
    let mut at = 0;
    let until = Instant::now() + stuff_for;
    while Instant::now() < until {
        match tokio::time::timeout(Duration::from_millis(300), s.writable()).await {
            Err(_) => break, // the gateway stopped reading
            Ok(Err(_)) => break,
            Ok(Ok(())) => match s.try_write(&batch[at..]) {
                Ok(n) => at = (at + n) % batch.len(),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break, // closed by the gateway meanwhile
            },
        }
    }
    s
}

/// The cap's worth of [`non_reader`]s, stuffed at the same time.
async fn non_readers(addr: &str, request: &[u8]) -> Vec<TcpStream> {
    let mut tasks = Vec::new();
    for _ in 0..CAP {
        let (addr, request) = (addr.to_string(), request.to_vec());
        tasks.push(tokio::spawn(async move {
            non_reader(&addr, &request, Duration::from_secs(1)).await
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// The voice WebSocket answers a satellite's handshake.
async fn satellite_connects(gw: &Gateway) -> Result<(), String> {
    let mut req = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
        format!("ws://{}/voice/ws?satellite_id=kitchen", gw.addr("voice-ws")),
    )
    .unwrap();
    req.headers_mut()
        .insert("Authorization", format!("Bearer {TOKEN}").parse().unwrap());
    tokio_tungstenite::connect_async(req)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

async fn implementation_connects(gw: &Gateway) -> Result<(), String> {
    let mut req = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
        format!("ws://{}/onebot/v11/ws", gw.addr("qq")),
    )
    .unwrap();
    let h = req.headers_mut();
    h.insert("X-Self-ID", "3000000001".parse().unwrap());
    h.insert("X-Client-Role", "Universal".parse().unwrap());
    h.insert(
        "Authorization",
        format!("Bearer {QQ_TOKEN}").parse().unwrap(),
    );
    tokio_tungstenite::connect_async(req)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn http_floods_are_released_by_the_handshake_deadline() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake).await;
    for (label, path) in [("qq", "/onebot/v11/ws"), ("voice-ws", "/voice/ws")] {
        let addr = gw.addr(label).to_string();
        let baseline = open_fds(&gw);
        // 100 silent and 100 half-header connections, 50 times the cap
        let half = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n");
        let fates = flood(&addr, 200, half.as_bytes()).await;
        check_released(label, &fates);
        let answered = fates
            .iter()
            .filter(|f| f.said.starts_with(b"HTTP/1.1 503"))
            .count();
        // the silent ones over the cap all read the 503; a half-header one may see the
        // reset (its unread bytes) first
        assert!(
            answered >= 100 - CAP,
            "{label}: only {answered} refused connections were answered 503"
        );
        fds_back_to(&gw, baseline, SLACK).await;
        eprintln!(
            "{label}: 200 connections, {} held until the deadline, {answered} answered 503; descriptors back to {baseline}",
            fates
                .iter()
                .filter(|f| f.closed_after.is_some_and(|d| d >= PROMPT))
                .count()
        );

        // the cap's worth of peers that send whole requests and never read a reply:
        // hyper's header timer does not cover them (it is not waiting for a head while
        // it cannot write), the handshake deadline does
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        let opened = Instant::now();
        let stuck = non_readers(&addr, request.as_bytes()).await;
        let refused = match label {
            "qq" => implementation_connects(&gw).await,
            _ => satellite_connects(&gw).await,
        };
        assert!(
            refused.as_ref().is_err_and(|e| e.contains("503")),
            "{label}: with the cap held, a client was not refused 503: {refused:?}"
        );
        // not a byte of theirs is read meanwhile: the gateway must let go by itself
        let deadline = opened + DEADLINE + SLACK;
        let back = loop {
            let r = match label {
                "qq" => implementation_connects(&gw).await,
                _ => satellite_connects(&gw).await,
            };
            match r {
                Ok(()) => break opened.elapsed(),
                Err(e) if Instant::now() < deadline && e.contains("503") => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => {
                    panic!("{label}: peers that never read their replies still hold the cap: {e}")
                }
            }
        };
        assert!(
            back >= DEADLINE - Duration::from_millis(100),
            "{label}: the cap was free after {back:?}, before the deadline"
        );
        fds_back_to(&gw, baseline, SLACK).await;
        for s in stuck {
            let fate = watch(s, opened, Instant::now() + Duration::from_secs(2)).await;
            assert!(
                fate.closed_after.is_some(),
                "{label}: a non-reader is still connected"
            );
        }
        eprintln!("{label}: non-reading peers let go; a real client connected after {back:?}");
    }
}

#[tokio::test]
async fn a_wyoming_flood_is_released_by_the_idle_deadline() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake).await;
    let addr = gw.addr("wyoming").to_string();
    let baseline = open_fds(&gw);
    // 100 silent and 100 sending half a header line
    let fates = flood(&addr, 200, b"{\"type\":\"describe\"").await;
    check_released("wyoming", &fates);
    let busy = fates
        .iter()
        .filter(|f| String::from_utf8_lossy(&f.said).contains("\"busy\""))
        .count();
    assert!(
        busy >= 100 - CAP,
        "only {busy} refused connections were told busy"
    );
    fds_back_to(&gw, baseline, SLACK).await;
    eprintln!("wyoming: 200 connections, {busy} told busy; descriptors back to {baseline}");

    // peers that ask and ask and never read an answer are closed within the idle
    // timeout of the answer they block
    let ask = b"{\"type\":\"describe\"}\n";
    let opened = Instant::now();
    let stuck = non_readers(&addr, ask).await;
    let mut p = WyPeer::connect(&addr).await;
    match p.read(Duration::from_secs(5)).await {
        Got::Event(v) => assert_eq!(v["data"]["code"], "busy", "{v}"),
        other => panic!("with the cap held, a client was not refused: {other:?}"),
    }
    // not a byte of theirs is read meanwhile; a real client polls until it is served
    let deadline = opened + DEADLINE + DEADLINE + SLACK;
    let back = loop {
        let mut p = WyPeer::connect(&addr).await;
        match p.read(Duration::from_millis(300)).await {
            Got::Event(v) if v["data"]["code"] == "busy" && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Got::Nothing => {
                // nothing said yet: admitted, or refused by a gateway slower than 300 ms
                // (a loaded machine); a real client asks, and hears which
                p.send("describe", json!({})).await;
                match p.read(Duration::from_secs(10)).await {
                    Got::Event(v) if v["type"] == "info" => break opened.elapsed(),
                    Got::Event(v) if v["data"]["code"] == "busy" && Instant::now() < deadline => {}
                    Got::Closed if Instant::now() < deadline => {} // refused; our ask met the reset
                    other => panic!("an admitted client was not served: {other:?}"),
                }
            }
            other => panic!("peers that never read their answers still hold the cap: {other:?}"),
        }
    };
    fds_back_to(&gw, baseline, SLACK).await;
    for s in stuck {
        let fate = watch(s, opened, Instant::now() + Duration::from_secs(2)).await;
        assert!(
            fate.closed_after.is_some(),
            "a Wyoming non-reader is still connected"
        );
    }
    eprintln!("wyoming: non-reading peers let go; a real client was served after {back:?}");
}
