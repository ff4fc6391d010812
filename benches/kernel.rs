//! Kernel overhead, measured (not asserted): `cargo bench --bench kernel`.
//!
//! A zero-latency in-process provider isolates what homebot itself costs per turn:
//! scheduling, the ModeManager round trips, prompt assembly, and the fsync'd append of
//! every record. Prints tables; compare runs as ratios, these machines are noisy.
//!
//! The real path too: the same mode session answered through the OpenAI-compatible client
//! by a loopback HTTP server that reads and parses every request body, so the cost that
//! grows with the history (serializing it, sending it, the server reading it) is measured.
//!
//! Under `cargo test` (no `--bench` argument) it runs a tiny smoke version instead.

use async_trait::async_trait;
use homebot::kernel::{Kernel, KernelOptions};
use homebot::modes::core::TurnMeta;
use homebot::modes::Record;
use homebot::prompt;
use homebot::provider::{ChatModel, ChatRequest, ChatResponse, Provider, ProviderError};
use homebot::turn::Turn;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct ZeroLatency;

#[async_trait]
impl ChatModel for ZeroLatency {
    async fn complete(&self, _req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError> {
        Ok(ChatResponse {
            content: Some("好的，两个人放两个番茄，约一百五十克。".into()),
            ..Default::default()
        })
    }
    fn model_name(&self) -> &str {
        "zero-latency"
    }
}

fn kernel(ws: &std::path::Path) -> Kernel {
    std::fs::write(
        ws.join("config.toml"),
        "[agent]\nmax_queued_per_chat = 100000\n",
    )
    .unwrap();
    Kernel::start(
        ws,
        KernelOptions {
            provider: Some(Provider::with_model(
                Arc::new(ZeroLatency),
                100_000,
                0,
                ws.join("logs/usage.jsonl"),
            )),
            ..Default::default()
        },
    )
    .unwrap()
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

async fn concurrency(chats: usize, turns_per_chat: usize) -> (f64, Duration, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel(dir.path());
    k.command("/mode enter cooking").await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..chats {
        let k = k.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(turns_per_chat);
            for i in 0..turns_per_chat {
                let t0 = Instant::now();
                let r = k
                    .handle_turn(Turn::new(
                        "bench",
                        format!("chat{c}"),
                        "guest",
                        format!("第{i}问"),
                    ))
                    .await;
                assert!(r.error.is_none(), "{r:?}");
                lat.push(t0.elapsed());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let wall = started.elapsed();
    all.sort();
    let tps = all.len() as f64 / wall.as_secs_f64();
    (tps, pct(&all, 0.5), pct(&all, 0.99))
}

/// A loopback OpenAI-compatible server that parses each request body (as a real one
/// must) and answers at once; returns its base URL.
async fn loopback_llm() -> String {
    use axum::routing::post;
    async fn answer(body: axum::body::Bytes) -> axum::Json<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_slice(&body).expect("a JSON request");
        let n = v["messages"].as_array().map_or(0, Vec::len);
        axum::Json(serde_json::json!({
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                "content": format!("好的，两个人放两个番茄，约一百五十克。（{n}）")}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}
        }))
    }
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(answer))
        .layer(axum::extract::DefaultBodyLimit::disable());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// A mode session that already holds `n` turns: start-up load time, the snapshot
/// (begin-turn) time, prompt assembly time, and whole-turn latency — with the
/// zero-latency provider, and over loopback HTTP through the real client.
async fn history(n: usize, samples: usize) -> [Duration; 5] {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel(dir.path());
    k.command("/mode enter cooking").await;
    let conv = std::path::PathBuf::from(
        homebot::modes::action::ActionDoc::read(
            &dir.path().canonicalize().unwrap().join("modes/action.json"),
        )
        .unwrap()
        .unwrap()
        .session_dir
        .unwrap(),
    )
    .join("conversation.jsonl");
    drop(k);
    let mut body = String::new();
    for i in 0..n {
        let r = Record {
            timestamp: "2026-10-22T20:05:00+08:00".into(),
            channel: "voice".into(),
            chat_id: format!("wake-{i}"),
            speaker_id: "guest".into(),
            user: format!("第{i}步之后要做什么？番茄要切成多大的块？"),
            assistant: "切成一厘米见方的小块，下锅前先把蛋液炒到七分熟盛出备用。".into(),
            error: None,
        };
        body.push_str(&serde_json::to_string(&r).unwrap());
        body.push('\n');
    }
    std::fs::write(&conv, body).unwrap();

    let t0 = Instant::now();
    let k = kernel(dir.path());
    k.command("/status").await; // the ModeManager has loaded the session
    let load = t0.elapsed();

    let base = "base system prompt";
    let mut snap = Vec::new();
    let mut build = Vec::new();
    for i in 0..samples {
        let meta = TurnMeta {
            channel: "bench".into(),
            chat_id: "b".into(),
            speaker_id: "guest".into(),
        };
        let t0 = Instant::now();
        let ticket = k.modes().begin_turn(meta).await.unwrap();
        snap.push(t0.elapsed());
        let t1 = Instant::now();
        let msgs = prompt::build_messages(base, &ticket, None, 20, format!("tail {i}"));
        build.push(t1.elapsed());
        assert_eq!(msgs.len(), 2 * (n + i) + 2);
        let r = Record {
            timestamp: "2026-10-22T20:05:00+08:00".into(),
            channel: "bench".into(),
            chat_id: "b".into(),
            speaker_id: "guest".into(),
            user: format!("q{i}"),
            assistant: "a".into(),
            error: None,
        };
        let began_in = ticket.mode.as_ref().map(|m| m.session_id.clone());
        k.modes()
            .end_turn(ticket.turn_id, r, began_in)
            .await
            .unwrap();
    }
    let mut turn = Vec::new();
    for i in 0..samples {
        let t0 = Instant::now();
        k.handle_turn(Turn::new("bench", "c", "guest", format!("问{i}")))
            .await;
        turn.push(t0.elapsed());
    }
    drop(k);
    // the real path: same workspace, the configured OpenAI-compatible client
    let url = loopback_llm().await;
    let k = Kernel::start(
        dir.path(),
        KernelOptions {
            env: Some(homebot::config::EnvOverrides {
                base_url: Some(url),
                model: Some("bench".into()),
                ..Default::default()
            }),
            lock_wait: Some(Duration::from_secs(5)),
            ..Default::default()
        },
    )
    .unwrap();
    let mut http = Vec::new();
    for i in 0..samples {
        let t0 = Instant::now();
        let r = k
            .handle_turn(Turn::new("bench", "c", "guest", format!("问{i}")))
            .await;
        assert!(r.error.is_none(), "{r:?}");
        http.push(t0.elapsed());
    }
    snap.sort();
    build.sort();
    turn.sort();
    http.sort();
    [
        load,
        pct(&snap, 0.5),
        pct(&build, 0.5),
        pct(&turn, 0.5),
        pct(&http, 0.5),
    ]
}

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (total, sizes, samples): (usize, &[usize], usize) = if full {
        (2000, &[0, 1_000, 10_000], 50)
    } else {
        (20, &[0, 100], 3)
    };

    println!("\nkernel overhead per turn (zero-latency provider, mode active, fsync per record)");
    println!(
        "{:>8} {:>8} {:>10} {:>10} {:>10}",
        "chats", "turns", "turns/s", "p50 ms", "p99 ms"
    );
    for chats in [1usize, 10, 100] {
        let per = (total / chats).max(1);
        let (tps, p50, p99) = concurrency(chats, per).await;
        println!(
            "{:>8} {:>8} {:>10.0} {:>10} {:>10}",
            chats,
            chats * per,
            tps,
            ms(p50),
            ms(p99)
        );
    }

    println!("\nmode session with N recorded turns (medians)");
    println!(
        "{:>8} {:>12} {:>14} {:>14} {:>12} {:>14}",
        "N", "load ms", "snapshot ms", "assemble ms", "turn ms", "http turn ms"
    );
    for &n in sizes {
        let [load, snap, build, turn, http] = history(n, samples).await;
        println!(
            "{:>8} {:>12} {:>14} {:>14} {:>12} {:>14}",
            n,
            ms(load),
            ms(snap),
            ms(build),
            ms(turn),
            ms(http)
        );
    }
    match peak_rss_kib() {
        Some(k) => println!("\npeak RSS: {:.1} MiB", k as f64 / 1024.0),
        None => println!("\npeak RSS: unavailable"),
    }
}
