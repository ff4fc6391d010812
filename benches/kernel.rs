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
//! `limit` table (`BENCH_DIST=1`: their latency percentiles and mean on stderr). Under `cargo test` (no `--bench` argument) it runs a tiny smoke version.

use async_trait::async_trait;
use homebot::channels::voice;
use homebot::kernel::{Kernel, KernelOptions};
use homebot::provider::{ChatModel, ChatRequest, ChatResponse, Provider, ProviderError};
use homebot::turn::Turn;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "kernel/bill.rs"]
mod bill;
#[path = "kernel/limit.rs"]
mod limit;
#[path = "kernel/loopback.rs"]
mod loopback;

use bill::bill_tables;
use loopback::*;

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

/// A turn of the load's own chats: a guest of no channel the kernel knows, each chat its
/// own scene.
fn bench_turn(chat: String, text: String) -> Turn {
    let facts = homebot::turn::Facts {
        memory_peer: Some(chat.clone()),
        ..Default::default()
    };
    Turn::new("bench", chat, "guest", text, facts)
}

/// A turn of the household's cast, as its channel (QQ or voice) builds it.
fn cast_turn(channel: &str, chat: &str, who: &str, text: String) -> Turn {
    use homebot::channels::{qq, voice};
    if channel == voice::CHANNEL {
        voice::turn(chat, who, text)
    } else {
        qq::turn(chat, who, text)
    }
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
                    .handle_turn(bench_turn(format!("chat{c}"), format!("第{i}问")))
                    .await;
                assert!(r.is_answered(), "{r:?}");
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

/// The process's peak resident set (VmHWM), KiB.
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
    if run("bill") {
        bill_tables(full).await;
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
