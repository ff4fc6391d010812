//! The soak: one `homebot gateway` (the binary cargo built for this bench: the release
//! build under `cargo bench`), a fake OpenAI-compatible model on `127.0.0.1:0`, and
//! turns over QQ (OneBot v11 reverse WebSocket), voice (Wyoming and the satellite
//! WebSocket) and the control socket, all at once — cooking mode entered and left,
//! reminders set and rung, memories committed. Every `--every` turns (and at 10,000 and
//! 100,000) it prints the gateway's resident memory (VmRSS at the row, and the median of
//! the ten seconds before it: one period of the gateway's heap release, over which RSS
//! swings by a few hundred KiB), its open descriptors, and the per-turn overhead (median
//! / p99 of each turn's latency minus the time the fake model spent on it); at the end,
//! how much RSS grew after the first 10,000 turns and after the first 100,000.
//!
//! ```sh
//! cargo bench --bench soak -- --turns 100000          # the full soak (~5 min on 2 cores, build included)
//! cargo bench --bench soak -- --turns 30000 --every 5000
//! cargo bench --bench soak -- --turns 1000000 --every 100000   # the long run
//! ```
//!
//! Options: `--turns N` (100000), `--every N` (10000, or a third of the turns when
//! fewer), `--llm-ms N` (the fake model's latency, 2), `--mode-every N` (cooking mode is
//! entered and left every N turns, 500), `--reminder-every N` (100), `--memory-every N`
//! (50), `--keep` (keep the workspace and print where it is). Under `cargo test` (no
//! `--bench` argument) it runs a 300-turn smoke version.

#[path = "../common/mod.rs"]
mod common;
mod drivers;
mod fake;
mod stats;

use drivers::{Ctx, Plan, QqTarget};
use stats::{cpu, fds, load, mib, ms, peak_kib, quantile, rss_kib, threads, RssTrail};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

const QQ_TOKEN: &str = "soak-qq-token";
const VOICE_TOKEN: &str = "soak-voice-token";
const GROUPS: [u64; 3] = [5_550_001, 5_550_002, 5_550_003];
const MOM: u64 = 10_001;
const DAD: u64 = 10_002;
const KID: u64 = 10_003;

struct Args {
    turns: u64,
    every: u64,
    llm: Duration,
    plan: Plan,
    keep: bool,
}

fn args() -> Args {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let full = argv.iter().any(|a| a == "--bench");
    let num = |name: &str, default: u64| -> u64 {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1))
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("{name} takes a number, got {v:?}"))
            })
            .unwrap_or(default)
    };
    let turns = num("--turns", if full { 100_000 } else { 300 });
    Args {
        turns,
        every: num("--every", 10_000.min((turns / 3).max(1))),
        llm: Duration::from_millis(num("--llm-ms", 2)),
        plan: Plan {
            mode_every: num("--mode-every", if full { 500 } else { 100 }).max(1),
            reminder_every: num("--reminder-every", if full { 100 } else { 20 }).max(8),
            memory_every: num("--memory-every", if full { 50 } else { 10 }).max(4),
        },
        keep: argv.iter().any(|a| a == "--keep"),
    }
}

/// The household: three members with QQ ids, the kitchen satellite's voice profile
/// mapped to mom, replies sent without spacing (the peer is a simulator).
fn config(ws: &std::path::Path) {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!(
            r#"[qq]
send_interval_ms = 0

[[voice.satellites]]
id = "kitchen"
token = "{VOICE_TOKEN}"
speakers = {{ "voice-profile-1" = "mom" }}

[[members]]
id = "mom"
name = "妈妈"
qq_ids = ["{MOM}"]

[[members]]
id = "dad"
name = "爸爸"
qq_ids = ["{DAD}"]

[[members]]
id = "kid"
name = "孩子"
qq_ids = ["{KID}"]
"#
        ),
    )
    .unwrap();
}

/// Rows are printed at these turns too, whatever `--every` is: the first growth figure is
/// taken from 10,000 turns, the long-run one from 100,000.
const FIRST: u64 = 10_000;
const SETTLED: u64 = 100_000;

/// The turns a row is printed at: every `every`, and [`FIRST`] and [`SETTLED`] when the
/// run gets there.
fn marks(turns: u64, every: u64) -> Vec<u64> {
    let mut m: Vec<u64> = (1..=turns / every).map(|i| i * every).collect();
    m.extend(
        [FIRST, SETTLED]
            .into_iter()
            .filter(|&t| t <= turns && turns > 3 * FIRST),
    );
    m.sort_unstable();
    m.dedup();
    m
}

struct Row {
    turns: u64,
    rss_kib: u64,
    /// The median of the last ten seconds' samples.
    med_kib: u64,
    fds: usize,
}

/// How much RSS grew from `from` to `to`: as sampled at the rows, and as the medians.
fn growth(from: &Row, to: &Row) -> String {
    let pct = |a: u64, b: u64| (b as f64 / a as f64 - 1.0) * 100.0;
    format!(
        "RSS {:+.1} % ({:.1} → {:.1} MiB; medians of the 10 s before {:+.1} %, {:.1} → {:.1} MiB), descriptors {} → {}",
        pct(from.rss_kib, to.rss_kib),
        mib(from.rss_kib),
        mib(to.rss_kib),
        pct(from.med_kib, to.med_kib),
        mib(from.med_kib),
        mib(to.med_kib),
        from.fds,
        to.fds
    )
}

#[tokio::main]
async fn main() {
    let a = args();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("workspace");
    config(&ws);
    let fake = Arc::new(fake::Fake::start(a.llm).await);
    let groups = GROUPS.map(|g| g.to_string()).join(",");
    let gw = common::gateway::Gateway::start(
        &ws,
        &fake.llm,
        &[
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", QQ_TOKEN),
            ("HOMEBOT_QQ_ALLOW_GROUPS", &groups),
            ("HOMEBOT_WYOMING_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_VOICE_WS_LISTEN", "127.0.0.1:0"),
        ],
        &["qq", "wyoming", "voice-ws"],
    )
    .await;
    let pid = gw.pid();
    let (trail, trail_task) = RssTrail::start(pid);
    println!(
        "\nsoak: {} turns, a row every {}; fake model latency {} ms; cooking mode every {} turns, \
         a reminder every {} and a memory every {} turns (where the peer can take them)",
        a.turns,
        a.every,
        a.llm.as_millis(),
        a.plan.mode_every,
        a.plan.reminder_every,
        a.plan.memory_every
    );
    println!("gateway: {} (pid {pid})", env!("CARGO_BIN_EXE_homebot"));
    let idle_rss = rss_kib(pid).unwrap_or(0);
    let idle_fds = fds(pid).unwrap_or(0);
    println!(
        "idle: RSS {:.1} MiB, {} descriptors, {} threads",
        mib(idle_rss),
        idle_fds,
        threads(pid).unwrap_or(0)
    );

    let ctx = Arc::new(Ctx::new(fake.clone(), a.turns, a.plan));
    let sim = common::onebot::connect(
        gw.addr("qq"),
        Some(common::onebot::BOT),
        Some(QQ_TOKEN),
        "Universal",
    )
    .await
    .expect("the QQ simulator connects");
    let mut sim = sim;
    sim.lifecycle().await;
    let (hub, hub_task) = drivers::qq_hub(sim, ctx.clone());
    let mut peers = Vec::new();
    for g in GROUPS {
        peers.push(tokio::spawn(drivers::qq_chat(
            ctx.clone(),
            hub.clone(),
            QqTarget::Group {
                group: g,
                users: [MOM, DAD, KID],
            },
        )));
    }
    peers.push(tokio::spawn(drivers::qq_chat(
        ctx.clone(),
        hub.clone(),
        QqTarget::Private { user: MOM },
    )));
    peers.push(tokio::spawn(drivers::wyoming(
        ctx.clone(),
        gw.addr("wyoming").to_string(),
    )));
    peers.push(tokio::spawn(drivers::satellite(
        ctx.clone(),
        gw.addr("voice-ws").to_string(),
        VOICE_TOKEN.to_string(),
    )));
    peers.push(tokio::spawn(drivers::control(
        ctx.clone(),
        ws.join("control.sock"),
    )));

    println!(
        "\n{:>8} {:>9} {:>8} {:>9} {:>8} {:>8} {:>5} {:>8} {:>12} {:>12} {:>10} {:>11} {:>7} {:>5}",
        "turns",
        "elapsed s",
        "turns/s",
        "RSS MiB",
        "vs first",
        "RSS med",
        "fds",
        "threads",
        "overhead p50",
        "overhead p99",
        "model p50",
        "CPU ms/turn",
        "errors",
        "load"
    );
    let started = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    let mut last = (Instant::now(), 0u64, cpu(pid).unwrap_or_default());
    let mut examples = Vec::new();
    for mark in marks(a.turns, a.every) {
        let mut done = ctx.done.load(Ordering::SeqCst);
        while done < mark {
            tokio::time::sleep(Duration::from_millis(20)).await;
            done = ctx.done.load(Ordering::SeqCst);
        }
        let mut w = ctx.stats.take();
        let rss = rss_kib(pid).unwrap_or(0);
        let med = trail.median().unwrap_or(rss);
        let fd = fds(pid).unwrap_or(0);
        let base = rows.first().map_or(rss, |r| r.rss_kib);
        let rate = (done - last.1) as f64 / last.0.elapsed().as_secs_f64();
        let used = cpu(pid).unwrap_or_default();
        let per_turn = used.saturating_sub(last.2) / (done - last.1).max(1) as u32;
        last = (Instant::now(), done, used);
        println!(
            "{:>8} {:>9.0} {:>8.0} {:>9.1} {:>7.1}% {:>8.1} {:>5} {:>8} {:>12.3} {:>12.3} {:>10.3} {:>11.3} {:>7} {:>5.1}",
            mark,
            started.elapsed().as_secs_f64(),
            rate,
            mib(rss),
            (rss as f64 / base as f64 - 1.0) * 100.0,
            mib(med),
            fd,
            threads(pid).unwrap_or(0),
            ms(quantile(&mut w.overhead, 0.5)),
            ms(quantile(&mut w.overhead, 0.99)),
            ms(quantile(&mut w.fake, 0.5)),
            ms(per_turn),
            w.errors,
            load()
        );
        examples.extend(w.examples);
        rows.push(Row {
            turns: mark,
            rss_kib: rss,
            med_kib: med,
            fds: fd,
        });
    }
    for p in peers {
        p.await.unwrap();
    }
    let late = ctx.stats.take();
    examples.extend(late.examples);

    // reminders set near the end ring within a second or two
    let c = fake.counts();
    let set = c.reminders_ok.load(Ordering::SeqCst);
    let rung = || ctx.rings_qq.load(Ordering::SeqCst) + ctx.rings_voice.load(Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(30);
    while rung() < set && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    hub_task.abort();

    println!("\nturns by channel: {:?}", {
        let mut v: Vec<_> = ctx
            .turns_by_channel
            .lock()
            .unwrap()
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect();
        v.sort();
        v
    });
    println!(
        "model requests: {} ({} in turns, {} compaction or summary, {} unparsable), {:.1} MiB of request bodies",
        fake.llm.calls(),
        c.turn_requests.load(Ordering::SeqCst),
        c.housekeeping.load(Ordering::SeqCst),
        c.unparsable.load(Ordering::SeqCst),
        mib(fake.llm.bytes() / 1024)
    );
    println!(
        "reminders: {set} set ({} refused), {} rang (QQ {}, satellite {})",
        c.reminders_refused.load(Ordering::SeqCst),
        rung(),
        ctx.rings_qq.load(Ordering::SeqCst),
        ctx.rings_voice.load(Ordering::SeqCst)
    );
    println!(
        "memories: {} committed, {} refused; mode switches: {} done, {} refused",
        c.commits_ok.load(Ordering::SeqCst),
        c.commits_refused.load(Ordering::SeqCst),
        c.switches_ok.load(Ordering::SeqCst),
        c.switches_refused.load(Ordering::SeqCst)
    );
    for e in examples.iter().take(5) {
        println!("error: {e}");
    }
    trail_task.abort();
    if let (Some(first), Some(end)) = (rows.first(), rows.last()) {
        println!(
            "after the first {} turns: {}; peak RSS {:.1} MiB",
            first.turns,
            growth(first, end),
            mib(peak_kib(pid).unwrap_or(0))
        );
        // the long-run figure: caches have filled by then, what grows after is growth
        let settled = rows.iter().find(|r| r.turns == SETTLED);
        if let Some(s) = settled.filter(|s| s.turns > first.turns && s.turns < end.turns) {
            println!("after the first {} turns: {}", s.turns, growth(s, end));
        }
    }
    let log = gw.log();
    let warnings = log.lines().filter(|l| l.contains(" WARN ")).count();
    let errors = log.lines().filter(|l| l.contains(" ERROR ")).count();
    println!("gateway log: {warnings} warnings, {errors} errors");
    for l in log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .take(5)
    {
        println!("  {l}");
    }

    // a graceful stop: SIGTERM, admitted turns finish, exit 0
    let mut gw = gw;
    // SAFETY: kill(2) on the child's own pid.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let stopped = tokio::time::timeout(Duration::from_secs(60), gw.child.wait()).await;
    match stopped {
        Ok(Ok(s)) => println!("gateway stopped: {s}"),
        other => println!("gateway did not stop within 60 s: {other:?}"),
    }
    if a.keep {
        let kept = dir.keep();
        println!("workspace kept: {}", kept.join("workspace").display());
    }
}
