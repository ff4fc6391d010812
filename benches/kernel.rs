//! Kernel overhead, measured (not asserted): `cargo bench --bench kernel`.
//!
//! A zero-latency in-process provider isolates what homebot itself costs per turn:
//! scheduling, the ModeManager round trips, prompt assembly, and the fsync'd append of
//! every record. Prints tables; compare runs as ratios, these machines are noisy.
//!
//! The real path too: mode sessions answered through the OpenAI-compatible client by a
//! loopback HTTP server that reads and parses every request body — the kernel cost per
//! turn near turn 10 and near the last turn of one long session with compaction on, and
//! the prefix-cache hit ratio the server computes from the byte-identical prefix of
//! consecutive request bodies (a mode session of three speakers on two channels, and a
//! normal chat past its trim point).
//!
//! At the limit: 50 chats at once against a loopback server that takes 50 ms per request,
//! with `provider.max_concurrent = 64` and at the default (8 slots): turns/s, latency,
//! and the process's CPU time per turn (server included), which the machine's other load
//! does not change the way it changes the latency.
//!
//! `cargo bench --bench kernel -- limit` runs only the tables named (`overhead`,
//! `session`, `cache`, `limit`); `BENCH_ROW=<part of a label>` only those rows of the
//! `limit` table. Under `cargo test` (no `--bench` argument) it runs a tiny smoke version.

use async_trait::async_trait;
use homebot::kernel::{Kernel, KernelOptions};
use homebot::provider::{ChatModel, ChatRequest, ChatResponse, Provider, ProviderError};
use homebot::turn::Turn;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "kernel/limit.rs"]
mod limit;

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

/// What the loopback server saw: per turn request, the body's bytes and the bytes of its
/// longest byte-identical prefix with the previous turn request's body (what a prefix
/// cache such as DeepSeek's could reuse); and how many compaction requests came.
#[derive(Default)]
struct Seen {
    prev: Vec<u8>,
    prompt_bytes: u64,
    cached_bytes: u64,
    turns: u64,
    compactions: u64,
}

impl Seen {
    fn ratio(&self) -> f64 {
        if self.prompt_bytes == 0 {
            0.0
        } else {
            self.cached_bytes as f64 / self.prompt_bytes as f64
        }
    }
}

/// A loopback OpenAI-compatible server that parses each request body (as a real one
/// must) and answers at once; it reports as usage the prefix it shares with the previous
/// turn request (cached) — in bytes / 4, a token stand-in. Returns its base URL.
async fn loopback_llm() -> (String, Arc<std::sync::Mutex<Seen>>) {
    use axum::extract::State;
    use axum::routing::post;
    type Shared = Arc<std::sync::Mutex<Seen>>;
    async fn answer(
        State(seen): State<Shared>,
        body: axum::body::Bytes,
    ) -> axum::Json<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_slice(&body).expect("a JSON request");
        let n = v["messages"].as_array().map_or(0, Vec::len);
        let compaction = v["messages"][0]["content"]
            .as_str()
            .is_some_and(|s| s.starts_with("[压缩历史]"));
        let mut s = seen.lock().unwrap();
        let (prompt, cached) = if compaction {
            s.compactions += 1;
            (body.len() as u64, 0)
        } else {
            let common = s
                .prev
                .iter()
                .zip(body.iter())
                .take_while(|(a, b)| a == b)
                .count() as u64;
            s.prompt_bytes += body.len() as u64;
            s.cached_bytes += common;
            s.turns += 1;
            s.prev = body.to_vec();
            (body.len() as u64, common)
        };
        drop(s);
        let content = if compaction {
            "前面几轮：一家三口做番茄炒蛋，鸡蛋六个、番茄三个，蛋已炒好盛出。".to_string()
        } else {
            format!("好的，两个人放两个番茄，约一百五十克。（{n}）")
        };
        axum::Json(serde_json::json!({
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                "content": content}}],
            "usage": {"prompt_tokens": prompt / 4, "completion_tokens": 10,
                      "prompt_cache_hit_tokens": cached / 4}
        }))
    }
    let seen: Shared = Default::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(answer))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

/// A kernel on `ws` whose provider is the loopback server at `url` (the real client:
/// every request is serialized and sent), with a context window of `window` tokens.
fn http_kernel(ws: &std::path::Path, url: &str, window: u32, extra: &str) -> Kernel {
    std::fs::write(
        ws.join("config.toml"),
        format!("[agent]\nmax_queued_per_chat = 100000\n{extra}\n[provider]\nmax_retries = 0\nmax_tokens = 1024\n"),
    )
    .unwrap();
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(homebot::config::EnvOverrides {
                base_url: Some(url.to_string()),
                model: Some("bench".into()),
                context_window: Some(window.to_string()),
                ..Default::default()
            }),
            lock_wait: Some(Duration::from_secs(5)),
            ..Default::default()
        },
    )
    .unwrap()
}

/// One mode session of `turns` turns over loopback HTTP with compaction on: the median
/// kernel cost of the turns around turn 10 and around the last turn.
async fn long_session(turns: usize, window: u32) -> (Duration, Duration, u64, usize) {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = loopback_llm().await;
    let k = http_kernel(dir.path(), &url, window, "");
    k.command("/mode enter cooking").await;
    let mut lat = Vec::with_capacity(turns);
    for i in 0..turns {
        let t0 = Instant::now();
        let r = k
            .handle_turn(Turn::new(
                "voice",
                "kitchen",
                "guest",
                format!("第{i}步之后要做什么？番茄要切成多大的块？"),
            ))
            .await;
        assert!(r.error.is_none(), "{r:?}");
        lat.push(t0.elapsed());
    }
    let median = |xs: &[Duration]| {
        let mut v = xs.to_vec();
        v.sort();
        v[v.len() / 2]
    };
    let early = median(&lat[5.min(turns - 1)..15.min(turns)]);
    let late = median(&lat[turns.saturating_sub(10)..]);
    let sdir = std::path::PathBuf::from(
        homebot::modes::action::ActionDoc::read(
            &dir.path().canonicalize().unwrap().join("modes/action.json"),
        )
        .unwrap()
        .unwrap()
        .session_dir
        .unwrap(),
    );
    let through = std::fs::read_to_string(sdir.join("checkpoint.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["through"].as_u64())
        .unwrap_or(0) as usize;
    let compactions = seen.lock().unwrap().compactions;
    (early, late, compactions, through)
}

/// The prefix-cache hit ratio (cached ÷ prompt bytes of the turn requests, as the
/// loopback server computes it) of a scripted session: a mode session of `turns` turns
/// by three speakers on two channels, or one normal chat of `turns` turns.
async fn cache_ratio(mode: bool, turns: usize) -> (f64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = loopback_llm().await;
    let k = http_kernel(dir.path(), &url, 65_536, "normal_history_turns = 20");
    if mode {
        k.command("/mode enter cooking").await;
    }
    let speakers = [
        ("qq", "group:5550001", "mom"),
        ("voice", "kitchen", "dad"),
        ("qq", "group:5550001", "kid"),
    ];
    for i in 0..turns {
        let (ch, chat, who) = if mode {
            speakers[i % 3]
        } else {
            ("qq", "private:10001", "mom")
        };
        let r = k
            .handle_turn(Turn::new(
                ch,
                chat,
                who,
                format!("第{i}个问题：番茄炒蛋先放什么？"),
            ))
            .await;
        assert!(r.error.is_none(), "{r:?}");
    }
    let s = seen.lock().unwrap();
    (s.ratio(), s.turns)
}

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|a| a == "--bench");
    // `cargo bench --bench kernel -- limit` runs only the tables named
    let only: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| only.is_empty() || only.contains(&name);
    if run("overhead") {
        overhead_table(full).await;
    }
    if run("session") {
        session_table(full).await;
    }
    if run("cache") {
        cache_table(full).await;
    }
    if run("limit") {
        limit::table(full).await;
    }
    match peak_rss_kib() {
        Some(k) => println!("\npeak RSS: {:.1} MiB", k as f64 / 1024.0),
        None => println!("\npeak RSS: unavailable"),
    }
}

async fn overhead_table(full: bool) {
    let total = if full { 2000 } else { 20 };
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
}

async fn session_table(full: bool) {
    let (long, window) = if full { (10_000, 16_384) } else { (60, 16_384) };
    println!("\none mode session over loopback HTTP, compaction on (window {window} tokens)");
    println!(
        "{:>8} {:>16} {:>16} {:>12} {:>12}",
        "turns", "turn ~10 ms", "last turns ms", "compactions", "checkpoint"
    );
    let (early, late, compactions, through) = long_session(long, window).await;
    println!(
        "{:>8} {:>16} {:>16} {:>12} {:>12}",
        long,
        ms(early),
        ms(late),
        compactions,
        through
    );
}

async fn cache_table(full: bool) {
    println!("\nprefix-cache hit ratio (cached ÷ prompt bytes of consecutive turn requests)");
    let (mode_ratio, mode_turns) = cache_ratio(true, 30).await;
    println!(
        "  mode session, 3 speakers, 2 channels: {:>5.1} % over {mode_turns} requests",
        mode_ratio * 100.0
    );
    let normal_turns = if full { 60 } else { 25 };
    let (normal_ratio, n) = cache_ratio(false, normal_turns).await;
    println!(
        "  normal chat (trim at 20 turns):        {:>5.1} % over {n} requests",
        normal_ratio * 100.0
    );
}
