//! The `limit` table of the kernel bench: 50 chats at once against a loopback
//! OpenAI-compatible server that takes 50 ms per request, through the real client, at
//! `provider.max_concurrent = 64` and at the default (8 slots); turns/s, latency and the
//! process's CPU time per turn (the server included).

use super::{ms, pct};
use homebot::channels::qq;
use homebot::kernel::{Kernel, KernelOptions};
use std::time::{Duration, Instant};

/// A loopback OpenAI-compatible server that reads and parses each request body (as a real
/// one must) and answers `delay` after the request arrived, a provider's latency. It runs
/// on a thread and runtime of its own, as a provider runs on its own machine: on the
/// bench's runtime its timers were looked at only when one of homebot's two workers
/// was free (1–2 % fewer turns/s in three runs each). Returns its base URL and the
/// sender whose drop stops it.
///
/// The body is parsed in full — every token read and checked — into a struct that keeps
/// only the number of messages, not into a `serde_json::Value` tree: the server shares the
/// two cores with homebot here, and a tree's allocations and their freeing were a quarter
/// of the process's CPU (perf), a cost of the stand-in, not of homebot.
fn slow_llm(delay: Duration) -> (String, tokio::sync::oneshot::Sender<()>) {
    use axum::routing::post;
    #[derive(serde::Deserialize)]
    struct Request {
        messages: Vec<serde::de::IgnoredAny>,
    }
    async fn answer(
        axum::extract::State(delay): axum::extract::State<Duration>,
        body: axum::body::Bytes,
    ) -> axum::Json<serde_json::Value> {
        let arrived = tokio::time::Instant::now();
        let v: Request = serde_json::from_slice(&body).expect("a JSON request");
        let n = v.messages.len();
        tokio::time::sleep_until(arrived + delay).await;
        axum::Json(serde_json::json!({
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                "content": format!("好的，两个人放两个番茄，约一百五十克。（{n}）")}}],
            "usage": {"prompt_tokens": body.len() / 4, "completion_tokens": 10}
        }))
    }
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(answer))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(delay);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("fake-llm".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap()
            })
        })
        .unwrap();
    (format!("http://{addr}/v1"), stop)
}

/// `chats` chats, each sending `turns` turns one after another (each waits for its
/// reply), through the kernel and the OpenAI-compatible client against a server that
/// takes `delay` per request; `max_concurrent` provider slots (`None`: the default).
/// One warm-up turn per chat is not counted. Turns/s over the measured turns, p50, p99.
async fn at_the_limit(
    chats: usize,
    turns: usize,
    delay: Duration,
    max_concurrent: Option<usize>,
    mode: bool,
) -> (f64, Duration, Duration, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (url, _server) = slow_llm(delay);
    let slots = max_concurrent
        .map(|n| format!("max_concurrent = {n}\n"))
        .unwrap_or_default();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[provider]\nmax_retries = 0\nmax_tokens = 1024\n{slots}"),
    )
    .unwrap();
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
    if mode {
        k.command("/mode enter cooking").await;
    }
    let turn = |c: usize, i: usize| {
        qq::turn(
            format!("group:{}", 5_550_000 + c),
            "guest",
            format!("第{i}个问题：番茄炒蛋先放什么？"),
        )
    };
    let warm: Vec<_> = (0..chats)
        .map(|c| {
            let k = k.clone();
            let t = turn(c, 0);
            tokio::spawn(async move { k.handle_turn(t).await })
        })
        .collect();
    for w in warm {
        let r = w.await.unwrap();
        assert!(r.is_answered(), "{r:?}");
    }
    let started = Instant::now();
    let cpu0 = cpu_time();
    let mut tasks = Vec::new();
    for c in 0..chats {
        let k = k.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(turns);
            for i in 1..=turns {
                let t0 = Instant::now();
                let r = k.handle_turn(turn(c, i)).await;
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
    let cpu = (cpu_time() - cpu0) / all.len() as u32;
    all.sort();
    if std::env::var("BENCH_DIST").is_ok() {
        let mean = all.iter().sum::<Duration>() / all.len() as u32;
        let ps: Vec<String> = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.999]
            .iter()
            .map(|&q| format!("p{}={}", q * 100.0, ms(pct(&all, q))))
            .collect();
        eprintln!("mean {} {}", ms(mean), ps.join(" "));
    }
    (
        all.len() as f64 / wall.as_secs_f64(),
        pct(&all, 0.5),
        pct(&all, 0.99),
        cpu,
    )
}

/// CPU time this process has used (user + system, every thread).
fn cpu_time() -> Duration {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let u = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr());
        u.assume_init()
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Throughput at the limit: 50 chats at once against a 50 ms provider.
pub async fn table(full: bool) {
    let delay = Duration::from_millis(50);
    let (per_chat, per_chat_default) = if full { (100, 10) } else { (2, 1) };
    println!("\n50 concurrent chats against a provider that answers in 50 ms (loopback HTTP)");
    println!(
        "{:>36} {:>8} {:>10} {:>10} {:>10} {:>12}",
        "", "turns", "turns/s", "p50 ms", "p99 ms", "CPU ms/turn"
    );
    for (label, slots, mode, per) in [
        ("max_concurrent 64, 50 chats", Some(64), false, per_chat),
        (
            "max_concurrent 64, one mode session",
            Some(64),
            true,
            per_chat,
        ),
        ("defaults (max_concurrent 8)", None, false, per_chat_default),
    ] {
        if std::env::var("BENCH_ROW").is_ok_and(|r| !label.contains(&r)) {
            continue;
        }
        let (tps, p50, p99, cpu) = at_the_limit(50, per, delay, slots, mode).await;
        println!(
            "{:>36} {:>8} {:>10.0} {:>10} {:>10} {:>12}",
            label,
            50 * per,
            tps,
            ms(p50),
            ms(p99),
            ms(cpu)
        );
    }
}
