//! Footprint, measured (not asserted): `cargo bench --bench footprint`.
//!
//! What one household's homebot costs the machine it runs on, from outside the process,
//! on the real binary:
//!
//! - the binary's size;
//! - `homebot gateway` with every channel on loopback (QQ reverse WebSocket, Wyoming,
//!   voice WebSocket) and the control socket: VmRSS once it listens and is idle, then
//!   after one real QQ group turn answered by a fake OpenAI-compatible server on
//!   `127.0.0.1:0` (the first turn opens scene memory's database and makes the first call
//!   to the model; its words are segmented with only their own dictionary entries, no
//!   whole dictionary is built), after a turn that commits a memory, and after ten more
//!   turns;
//! - `homebot chat -m /status` as a process of its own on that workspace (history, scene
//!   memory with a memory, no gateway running): median and p90 wall time, and peak RSS
//!   from `wait4`'s `ru_maxrss`.
//!
//! `HOMEBOT_FOOTPRINT_BIN=/path/to/homebot` measures another build (an older one, to
//! compare) with the same steps. Under `cargo test` (no `--bench` argument) it runs a
//! small smoke version on the debug binary. The figures the README cites from it are in
//! docs/operations.md#figures, with the commit they were measured at.

#[path = "../tests/common/mod.rs"]
mod common;

use common::onebot::{self, BOT};
use common::{tool_call, user_words, FakeLlm, FakeReply};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const TOKEN: &str = "footprint-token";
const GROUP: u64 = 5_550_001;
const MOM: u64 = 10_001;
const CHANNELS: [&str; 3] = ["qq", "wyoming", "voice-ws"];

fn binary() -> PathBuf {
    std::env::var_os("HOMEBOT_FOOTPRINT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_homebot")))
}

/// A model that commits what it is asked to remember and otherwise answers in one line.
fn responder(body: &Value, _n: usize) -> FakeReply {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let last = msgs.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        return common::text("记住了。");
    }
    let words = user_words(&last);
    match words.split_once("记住：") {
        Some((_, what)) => tool_call("memory_commit", json!({ "content": what.trim() })),
        None => common::text("好的，三个人煮两杯米，番茄炒蛋用三个鸡蛋两个番茄。"),
    }
}

/// `/proc/<pid>/status` fields in KiB (VmRSS, VmHWM, RssAnon, RssFile) and the threads.
fn status(pid: u32) -> Option<[u64; 5]> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    Some([
        field("VmRSS:"),
        field("VmHWM:"),
        field("RssAnon:"),
        field("RssFile:"),
        field("Threads:"),
    ])
}

/// The status once VmRSS has not moved for three polls 100 ms apart (at most 5 s):
/// what a turn allocated has settled, and the process is idle.
async fn settled(pid: u32) -> [u64; 5] {
    let mut last = status(pid).expect("the gateway runs");
    let mut same = 0;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = status(pid).expect("the gateway runs");
        same = if now[0] == last[0] { same + 1 } else { 0 };
        last = now;
        if same >= 3 {
            break;
        }
    }
    last
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn print_status(what: &str, s: [u64; 5]) {
    println!(
        "  {what:<34} VmRSS {:>10} (anon {}, file {}), VmHWM {}, {} threads",
        mib(s[0]),
        mib(s[2]),
        mib(s[3]),
        mib(s[1]),
        s[4]
    );
}

/// `homebot gateway` with every channel on loopback; waits until all of them listen and
/// the control socket exists.
async fn gateway(ws: &Path, fake: &FakeLlm) -> (Child, String) {
    let mut c = Command::new(binary());
    c.arg("--workspace")
        .arg(ws)
        .arg("gateway")
        .env("HOMEBOT_BASE_URL", &fake.url)
        .env("HOMEBOT_MODEL", "fake-model")
        .env("HOMEBOT_QQ_LISTEN", "127.0.0.1:0")
        .env("HOMEBOT_QQ_ACCESS_TOKEN", TOKEN)
        .env("HOMEBOT_QQ_ALLOW_GROUPS", GROUP.to_string())
        .env("HOMEBOT_WYOMING_LISTEN", "127.0.0.1:0")
        .env("HOMEBOT_VOICE_WS_LISTEN", "127.0.0.1:0")
        .env("RUST_LOG", "info")
        .env_remove("HOMEBOT_FAILPOINT")
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = c.spawn().expect("the homebot binary starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut listening = Vec::new();
    let mut qq = String::new();
    let mut log = String::new();
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while listening.len() < CHANNELS.len() {
            let Ok(Some(l)) = lines.next_line().await else {
                return false;
            };
            log.push_str(&l);
            log.push('\n');
            if let Some(ch) = CHANNELS
                .iter()
                .find(|c| l.contains("channel listening") && l.contains(&format!("\"{c}\"")))
            {
                listening.push(*ch);
                if *ch == "qq" {
                    qq = l.rsplit("addr=").next().unwrap_or("").trim().to_string();
                }
            }
        }
        true
    })
    .await
    .unwrap_or(false);
    assert!(found, "the gateway did not start its channels:\n{log}");
    // the rest of the log is read and dropped, so the pipe never fills
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ws.join("control.sock").exists() {
        assert!(Instant::now() < deadline, "no control socket");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (child, qq)
}

/// One QQ group turn: the bot is mentioned, its reply is sent back through OneBot.
async fn qq_turn(sim: &mut onebot::OneBotSim, id: i64, words: &str) -> String {
    let msg = json!([
        {"type": "at", "data": {"qq": BOT.to_string()}},
        {"type": "text", "data": {"text": format!(" {words}")}}
    ]);
    sim.group_msg(GROUP, MOM, id, msg).await;
    let a = sim.expect_send().await;
    a["params"]["message"].to_string()
}

/// Run `homebot --workspace ws chat -m /status`; wall time and peak RSS (KiB).
#[allow(clippy::zombie_processes)] // reaped by wait4, which also gives its rusage
fn status_once(ws: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let child = std::process::Command::new(binary())
        .arg("--workspace")
        .arg(ws)
        .args(["chat", "-m", "/status"])
        .env_remove("HOMEBOT_BASE_URL")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the homebot binary starts");
    let mut wstatus = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; wait4 reaps our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut wstatus, 0, &mut usage) };
    let elapsed = started.elapsed();
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    assert!(
        libc::WIFEXITED(wstatus) && libc::WEXITSTATUS(wstatus) == 0,
        "chat -m /status failed"
    );
    (elapsed, usage.ru_maxrss as u64)
}

fn pct<T: Copy + Ord>(v: &[T], p: f64) -> T {
    let mut s = v.to_vec();
    s.sort();
    s[((s.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (more_turns, status_runs) = if full { (10, 30) } else { (1, 3) };
    let bin = binary();
    let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
    println!("\nfootprint of {}", bin.display());
    println!(
        "  binary: {:.1} MiB ({size} bytes)",
        size as f64 / 1048576.0
    );

    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("config.toml"),
        "[qq]\nsend_interval_ms = 20\n",
    )
    .unwrap();
    let fake = FakeLlm::start(responder).await;

    println!("\ngateway, every channel on loopback (qq, wyoming, voice-ws, control socket)");
    let (mut gw, qq_addr) = gateway(ws.path(), &fake).await;
    let pid = gw.id().expect("the gateway runs");
    print_status("idle after start", settled(pid).await);
    let mut sim = onebot::connect(&qq_addr, Some(BOT), Some(TOKEN), "Universal")
        .await
        .expect("the QQ channel accepts the simulator");
    sim.lifecycle().await;
    let t0 = Instant::now();
    let reply = qq_turn(&mut sim, 1, "今晚晚饭做番茄炒蛋，三个人吃，米饭要煮多少？").await;
    let first = t0.elapsed();
    assert!(reply.contains("番茄炒蛋"), "{reply}");
    print_status("after the first turn", settled(pid).await);
    println!(
        "  (first turn, QQ in to QQ out: {:.1} ms)",
        first.as_secs_f64() * 1000.0
    );
    let reply = qq_turn(&mut sim, 2, "记住：我们家做饭按三个人的量").await;
    assert!(reply.contains("记住了"), "{reply}");
    print_status("after a turn that commits a memory", settled(pid).await);
    for i in 0..more_turns {
        qq_turn(&mut sim, 10 + i, "明天早饭吃什么？").await;
    }
    print_status(
        &format!("after {more_turns} more turns"),
        settled(pid).await,
    );
    drop(sim);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let _ = tokio::time::timeout(Duration::from_secs(30), gw.wait()).await;

    println!("\n`homebot chat -m /status`, {status_runs} runs on that workspace (no gateway)");
    let mut walls = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..status_runs {
        let (wall, peak) = status_once(ws.path());
        walls.push(wall);
        peaks.push(peak);
    }
    println!(
        "  wall time: median {:.1} ms, p90 {:.1} ms",
        pct(&walls, 0.5).as_secs_f64() * 1000.0,
        pct(&walls, 0.9).as_secs_f64() * 1000.0
    );
    println!(
        "  peak RSS:  median {}, max {}",
        mib(pct(&peaks, 0.5)),
        mib(*peaks.iter().max().unwrap())
    );
}
