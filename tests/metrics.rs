//! The Prometheus metrics move with real turns through a kernel and the fake model: turns
//! by channel and outcome (answered, refused, failed with the provider answering 500,
//! cancelled mid-call), tokens as the fake reports them, the cost at a configured price,
//! mode entries and exits; the page stays strictly parseable throughout. Then `homebot
//! stats` prices the same calls from the audit trail and agrees with the counters.
//!
//! The registry is the process's: the tests of this file compare before and after.

mod common;

use common::*;
use homebot::channels::cli;
use homebot::metrics::parse::{parse_strict, value, Parsed};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn page() -> Vec<Parsed> {
    let text = homebot::metrics::render_text();
    parse_strict(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn get(p: &[Parsed], name: &str, labels: &[(&str, &str)]) -> f64 {
    value(p, name, labels).unwrap_or(0.0)
}

fn turns(p: &[Parsed], outcome: &str) -> f64 {
    get(
        p,
        "homebot_turns_total",
        &[("channel", "cli"), ("outcome", outcome)],
    )
}

/// The tests of this file one at a time: they read the same process-wide counters.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const FAKE: [(&str, &str); 2] = [("provider", "primary"), ("model", "fake-model")];

fn config(ws: &std::path::Path) {
    std::fs::write(
        ws.join("config.toml"),
        "[agent]\nmax_message_chars = 50\n\n[provider]\nmax_retries = 0\n\n\
         [provider.price.\"fake-model\"]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\ncurrency = \"XTS\"\n",
    )
    .unwrap();
}

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_tokens_money_and_modes_move_the_counters() {
    let _one = SERIAL.lock().await;
    let dir = workspace();
    let ws = dir.path();
    config(ws);
    let fake = FakeLlm::start(|body, _| {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let words = msgs.last().map(user_words).unwrap_or_default();
        if words.contains("坏了") {
            return FakeReply::Status(500, vec![], "down".into());
        }
        if words.contains("慢慢") {
            return FakeReply::Delay(Duration::from_secs(60), Box::new(text("太晚了")));
        }
        scripted(body)
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    let p0 = page();

    // answered: one call, 120 prompt (64 cached), 12 out
    let r = kernel.handle_turn(cli::turn("local", "mom", "你好")).await;
    assert!(r.is_answered(), "{r:?}");
    let p1 = page();
    assert_eq!(turns(&p1, "answered") - turns(&p0, "answered"), 1.0);
    let d = |name: &str| get(&p1, name, &FAKE) - get(&p0, name, &FAKE);
    assert_eq!(d("homebot_prompt_tokens_total"), 120.0);
    assert_eq!(d("homebot_cached_tokens_total"), 64.0);
    assert_eq!(d("homebot_completion_tokens_total"), 12.0);
    // 56 × 2 + 64 × 0.5 + 12 × 8 = 240 micro-units; uncached 120 × 2 + 96 = 336
    let cost = |p: &[Parsed]| get(p, "homebot_cost_total", &[("currency", "XTS")]);
    let uncached = |p: &[Parsed]| get(p, "homebot_cost_uncached_total", &[("currency", "XTS")]);
    assert!(
        (cost(&p1) - cost(&p0) - 0.000240).abs() < 1e-12,
        "{}",
        cost(&p1)
    );
    assert!((uncached(&p1) - uncached(&p0) - 0.000336).abs() < 1e-12);
    let calls = |p: &[Parsed], o: &str| {
        get(
            p,
            "homebot_provider_call_duration_seconds_count",
            &[("provider", "primary"), ("outcome", o)],
        )
    };
    assert_eq!(calls(&p1, "ok") - calls(&p0, "ok"), 1.0);
    let turn_count = |p: &[Parsed]| get(p, "homebot_turn_duration_seconds_count", &[]);
    assert_eq!(turn_count(&p1) - turn_count(&p0), 1.0);

    // refused: too long for agent.max_message_chars, no call made
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "长".repeat(60)))
        .await;
    assert!(!r.is_answered());
    let p2 = page();
    assert_eq!(turns(&p2, "refused") - turns(&p1, "refused"), 1.0);
    assert_eq!(calls(&p2, "ok"), calls(&p1, "ok"));

    // failed: the provider answers 500 (no retry configured)
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "坏了吗"))
        .await;
    assert!(!r.is_answered(), "{r:?}");
    let p3 = page();
    assert_eq!(turns(&p3, "failed") - turns(&p2, "failed"), 1.0);
    assert_eq!(calls(&p3, "error") - calls(&p2, "error"), 1.0);
    assert_eq!(
        d("homebot_prompt_tokens_total"),
        120.0,
        "a failed call adds no tokens"
    );

    // cancelled mid-call: the turn waits on the model, is gauged running, then cancelled
    let running = |p: &[Parsed]| get(p, "homebot_turns_running", &[]);
    let cancel = CancellationToken::new();
    let pending = kernel.submit_cancellable(cli::turn("local", "mom", "慢慢想"), cancel.clone());
    within("the slow call to start", until(|| fake.in_flight() == 1)).await;
    assert!(running(&page()) >= 1.0);
    cancel.cancel();
    let r = within("the cancelled reply", pending.reply()).await;
    assert_eq!(r.outcome, homebot::turn::Outcome::Cancelled);
    let p4 = page();
    assert_eq!(turns(&p4, "cancelled") - turns(&p3, "cancelled"), 1.0);
    assert_eq!(calls(&p4, "cancelled") - calls(&p3, "cancelled"), 1.0);

    // a mode entered and exited by the user
    let mode = |p: &[Parsed]| get(p, "homebot_mode_entries_total", &[("mode", "cooking")]);
    let exits = |p: &[Parsed]| {
        get(
            p,
            "homebot_mode_exits_total",
            &[("mode", "cooking"), ("reason", "user")],
        )
    };
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    assert!(r.text.contains("已进入做饭模式"), "{r:?}");
    assert_eq!(mode(&page()) - mode(&p4), 1.0);
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "退出做饭模式"))
        .await;
    assert!(r.is_answered(), "{r:?}");
    within(
        "the session to be archived",
        until(|| exits(&page()) - exits(&p4) == 1.0),
    )
    .await;
    let p5 = page();
    assert_eq!(turns(&p5, "answered") - turns(&p0, "answered"), 3.0);
    assert_eq!(
        turn_count(&p5) - turn_count(&p0),
        6.0,
        "every turn run is timed"
    );
    // nothing left waiting or running from these turns
    assert_eq!(
        get(&p5, "homebot_turns_waiting", &[]),
        get(&p0, "homebot_turns_waiting", &[])
    );
    assert_eq!(running(&p5), running(&p0));

    // `homebot stats` prices the same calls from the audit trail, to the same figure
    assert!(kernel.shutdown_gracefully(Duration::from_secs(10)).await);
    drop(kernel);
    let out = homebot(ws, None).arg("stats").output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    let total: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("total") && l.contains("XTS"))
        .unwrap_or_else(|| panic!("no cost total:\n{text}"))
        .split_whitespace()
        .collect();
    let spent = cost(&p5) - cost(&p0);
    let would = uncached(&p5) - uncached(&p0);
    assert_eq!(total[2], format!("{spent:.6}"), "{text}");
    assert_eq!(total[3], format!("{would:.6}"), "{text}");
    assert!(
        spent > 0.0 && would > spent,
        "the fake's cache hits saved something"
    );
}

#[tokio::test]
async fn stats_without_a_price_say_so() {
    let _one = SERIAL.lock().await;
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    let r = kernel.handle_turn(cli::turn("local", "mom", "你好")).await;
    assert!(r.is_answered());
    assert!(kernel.shutdown_gracefully(Duration::from_secs(10)).await);
    drop(kernel);
    let out = homebot(ws, None).arg("stats").output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("no price configured: tokens only"), "{text}");
    assert!(
        text.contains("fake-model: no price configured; its 1 answered call(s)"),
        "{text}"
    );
}

/// A `[[provider.fallback]]` model is priced by its own table, in its own currency; a call
/// refused with every circuit open is counted as refused.
#[tokio::test]
async fn a_fallback_is_priced_by_its_own_model_and_refusals_are_counted() {
    use homebot::config::{Config, EnvOverrides};
    use homebot::provider::{CallMeta, ChatRequest, Message, Provider};
    let _one = SERIAL.lock().await;
    let dir = workspace();
    let primary = FakeLlm::start(|_, _| FakeReply::Status(503, vec![], "overloaded".into())).await;
    let fallback = FakeLlm::start(|_, n| {
        if n == 0 {
            text("先炒蛋。")
        } else {
            FakeReply::Status(503, vec![], "overloaded".into())
        }
    })
    .await;
    let toml = format!(
        "[provider]\nmax_retries = 0\nbreaker_failures = 1\nbreaker_cooldown_secs = 3600\n\n\
         [[provider.fallback]]\nbase_url = \"{}\"\nmodel = \"fb-model\"\n\n\
         [provider.price.\"fake-model\"]\ninput = 1.0\noutput = 1.0\ncurrency = \"XTS\"\n\n\
         [provider.price.\"fb-model\"]\ninput = 4.0\ncached_input = 1.0\noutput = 10.0\ncurrency = \"XXX\"\n",
        fallback.url
    );
    let cfg = Config::parse(&toml, &dir.path().join("config.toml")).unwrap();
    let env = EnvOverrides {
        base_url: Some(primary.url.clone()),
        model: Some("fake-model".into()),
        ..Default::default()
    };
    let p = Provider::from_setup(
        &cfg.resolve_provider(&env).unwrap(),
        &cfg.resolve_fallbacks(&env),
        cfg.breaker(),
        dir.path().join("logs/usage.jsonl"),
    )
    .unwrap()
    .with_prices(&cfg.prices());
    let msgs = vec![Message::User {
        content: "番茄炒蛋先放什么？".into(),
    }];
    let req = ChatRequest {
        messages: &msgs,
        tools: &[],
        depth: None,
    };
    let p0 = page();
    // the primary fails and its circuit opens; the fallback answers; then it fails too;
    // then every circuit is open and the call is refused without a request
    assert!(p.complete(&req, &CallMeta::default()).await.is_err());
    assert!(p.complete(&req, &CallMeta::default()).await.is_ok());
    assert!(p.complete(&req, &CallMeta::default()).await.is_err());
    assert!(p.complete(&req, &CallMeta::default()).await.is_err());
    assert_eq!((primary.calls(), fallback.calls()), (1, 2));
    let p1 = page();
    let d = |name: &str, labels: &[(&str, &str)]| get(&p1, name, labels) - get(&p0, name, labels);
    let fb = [("provider", "fallback-1"), ("model", "fb-model")];
    assert_eq!(d("homebot_prompt_tokens_total", &fb), 120.0);
    assert_eq!(d("homebot_cached_tokens_total", &fb), 64.0);
    assert_eq!(
        d("homebot_prompt_tokens_total", &FAKE),
        0.0,
        "the primary never answered"
    );
    // 56 × 4 + 64 × 1 + 12 × 10 = 408 micro-units; uncached 120 × 4 + 120 = 600
    let xxx = [("currency", "XXX")];
    assert!((d("homebot_cost_total", &xxx) - 0.000408).abs() < 1e-12);
    assert!((d("homebot_cost_uncached_total", &xxx) - 0.000600).abs() < 1e-12);
    assert_eq!(d("homebot_cost_total", &[("currency", "XTS")]), 0.0);
    let calls = |provider: &str, outcome: &str| {
        d(
            "homebot_provider_call_duration_seconds_count",
            &[("provider", provider), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("primary", "error"), 1.0);
    assert_eq!(calls("fallback-1", "ok"), 1.0);
    assert_eq!(calls("fallback-1", "error"), 1.0);
    assert_eq!(d("homebot_provider_refused_total", &[]), 1.0);
}
