//! The provider actor's circuit breaker and fallback, against fake OpenAI-compatible
//! servers on loopback: the circuit opens after `provider.breaker_failures` failed calls
//! in a row, then fails fast without a request (the server counts them) and says so in
//! `status`; a `[[provider.fallback]]` answers meanwhile and the audit names it; after the
//! cool-down one trial call decides. And calls run side by side: slow calls overlap at
//! the server and the actor's mailbox answers while they are in flight.

use crate::common;

use common::*;
use homebot::channels::cli;
use homebot::config::{Config, EnvOverrides};
use homebot::kernel::Kernel;
use homebot::provider::{CallMeta, ChatRequest, Message, Provider, ProviderError};
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn with_config(ws: &Path, toml: &str) {
    std::fs::write(ws.join("config.toml"), toml).unwrap();
}

async fn turn(k: &Kernel, text: &str) -> homebot::turn::Reply {
    k.handle_turn(cli::turn("local", "mom", text)).await
}

/// Every audit record of the household's days (outside a mode), oldest first.
fn audit_records(ws: &Path) -> Vec<Value> {
    let dir = ws.join("logs/audit");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files.iter().flat_map(|f| jsonl(f)).collect()
}

fn down() -> FakeReply {
    FakeReply::Status(503, vec![], "overloaded".into())
}

/// A provider built from `toml` as the kernel builds it, the primary at `primary`.
fn provider_from(toml: &str, primary: &FakeLlm, logs: &Path) -> Provider {
    let cfg = Config::parse(toml, &logs.join("config.toml")).unwrap();
    let env = EnvOverrides {
        base_url: Some(primary.url.clone()),
        model: Some("fake-model".into()),
        ..Default::default()
    };
    let r = cfg.resolve_provider(&env).unwrap();
    Provider::from_setup(
        &r,
        &cfg.resolve_fallbacks(&env),
        cfg.breaker(),
        logs.join("logs/usage.jsonl"),
    )
    .unwrap()
}

fn ask() -> Vec<Message> {
    vec![Message::User {
        content: "番茄炒蛋先放什么？".into(),
    }]
}

async fn call(p: &Provider) -> Result<String, ProviderError> {
    let msgs = ask();
    let req = ChatRequest {
        messages: &msgs,
        tools: &[],
        depth: None,
    };
    p.complete(&req, &CallMeta::default())
        .await
        .map(|r| r.content.unwrap_or_default())
}

/// Wait (polling) until the open circuit of `name` lets a trial through.
async fn until_cooled_down(p: &Provider, name: &str) {
    let what = format!("the circuit of {name} to cool down");
    eventually_async(&what, Duration::from_secs(30), || async {
        let views = p.circuits().await;
        let v = views.iter().find(|v| v.name == name).unwrap();
        match v.state {
            homebot::provider::breaker::State::Open { until } if Instant::now() < until => {
                Err(format!("open for {:?} more", until - Instant::now()))
            }
            _ => Ok(()),
        }
    })
    .await
}

#[tokio::test]
async fn the_circuit_opens_after_n_failed_calls_then_fails_fast_without_a_request() {
    let dir = workspace();
    with_config(
        dir.path(),
        "[provider]\nmax_retries = 0\nbreaker_failures = 3\nbreaker_cooldown_secs = 3600\n",
    );
    let fake = FakeLlm::start(|_, _| down()).await;
    let k = start_kernel(dir.path(), &fake);
    assert!(
        !k.status_text().await.contains("模型线路"),
        "closed: no line"
    );
    for i in 1..=3 {
        let r = turn(&k, "在吗").await;
        assert!(r.text.contains("HTTP 503"), "{}", r.text);
        assert_eq!(fake.calls(), i);
    }
    for _ in 0..4 {
        let r = turn(&k, "在吗").await;
        assert!(r.text.contains("暂停调用"), "{}", r.text);
        let err = r.problem().unwrap();
        assert!(
            err.contains("circuit open") && err.contains("3 calls"),
            "{err}"
        );
    }
    assert_eq!(fake.calls(), 3, "no request reached the server while open");
    let status = k.status_text().await;
    assert!(
        status.contains("模型线路: primary 熔断中 (circuit open)：连续 3 次调用失败")
            && status.contains("调用直接失败，不发请求"),
        "{status}"
    );
    k.provider().flush().await;
    let recs = audit_records(dir.path());
    assert_eq!(recs.len(), 7, "three attempts and four refusals");
    for r in &recs[..3] {
        assert_eq!(r["provider"], "primary", "{r}");
        assert_eq!(r["outcome"], "error");
    }
    for r in &recs[3..] {
        assert!(r.get("provider").is_none(), "no endpoint took it: {r}");
        assert!(r["error"].as_str().unwrap().contains("circuit open"), "{r}");
        assert_eq!(r["latency_ms"], 0);
    }
}

#[tokio::test]
async fn a_fallback_answers_while_the_circuit_is_open_and_the_audit_names_it() {
    let dir = workspace();
    let fallback = FakeLlm::start(|_, _| text("本地模型：先炒蛋。")).await;
    with_config(
        dir.path(),
        &format!(
            "[provider]\nmax_retries = 0\nbreaker_failures = 2\nbreaker_cooldown_secs = 3600\n\n\
             [[provider.fallback]]\nbase_url = \"{}\"\nmodel = \"local-model\"\n",
            fallback.url
        ),
    );
    let primary = FakeLlm::start(|_, _| down()).await;
    let k = start_kernel(dir.path(), &primary);
    for _ in 0..2 {
        assert!(turn(&k, "在吗").await.text.contains("HTTP 503"));
    }
    assert_eq!(fallback.calls(), 0, "the fallback waits for the circuit");
    for i in 1..=3 {
        let r = turn(&k, "番茄炒蛋先放什么？").await;
        assert_eq!(r.text, "本地模型：先炒蛋。");
        assert!(r.is_answered());
        assert_eq!(fallback.calls(), i);
    }
    assert_eq!(primary.calls(), 2, "the open primary got no request");
    assert_eq!(fallback.requests()[0]["model"], "local-model");
    let status = k.status_text().await;
    assert!(
        status.contains("primary 熔断中 (circuit open)")
            && status.contains(&format!(
                "现由 fallback-1（local-model @ {}）回答",
                fallback.url
            )),
        "{status}"
    );
    k.provider().flush().await;
    let recs = audit_records(dir.path());
    let names: Vec<&str> = recs
        .iter()
        .map(|r| r["provider"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "primary",
            "primary",
            "fallback-1",
            "fallback-1",
            "fallback-1"
        ]
    );
    let last = recs.last().unwrap();
    assert_eq!(last["model"], "local-model");
    assert_eq!(last["outcome"], "ok");
    let usage = jsonl(&dir.path().join("logs/usage.jsonl"));
    assert_eq!(usage.last().unwrap()["provider"], "fallback-1");
}

#[tokio::test]
async fn after_the_cool_down_one_trial_call_decides() {
    let dir = tempfile::tempdir().unwrap();
    let healthy = Arc::new(AtomicBool::new(false));
    let h = healthy.clone();
    // answers slowly when healthy, so a trial is still in flight while others arrive
    let primary = FakeLlm::start(move |_, _| {
        if h.load(Ordering::SeqCst) {
            FakeReply::Delay(Duration::from_millis(1500), Box::new(text("主模型回来了")))
        } else {
            down()
        }
    })
    .await;
    let p = provider_from(
        "[provider]\nmax_retries = 0\nbreaker_failures = 2\nbreaker_cooldown_secs = 1\n",
        &primary,
        dir.path(),
    );
    for _ in 0..2 {
        assert!(matches!(
            call(&p).await,
            Err(ProviderError::Http { status: 503, .. })
        ));
    }
    assert!(matches!(
        call(&p).await,
        Err(ProviderError::CircuitOpen { .. })
    ));
    assert_eq!(primary.calls(), 2);

    // a failed trial opens it for another cool-down
    until_cooled_down(&p, "primary").await;
    assert!(matches!(
        call(&p).await,
        Err(ProviderError::Http { status: 503, .. })
    ));
    assert_eq!(primary.calls(), 3, "one trial request");
    assert!(matches!(
        call(&p).await,
        Err(ProviderError::CircuitOpen { .. })
    ));
    assert_eq!(primary.calls(), 3);
    assert!(p.circuit_line().unwrap().contains("熔断中"));

    // a successful trial closes it; while it runs, other calls do not reach the server
    until_cooled_down(&p, "primary").await;
    healthy.store(true, Ordering::SeqCst);
    let trial = tokio::spawn({
        let p = p.clone();
        async move { call(&p).await }
    });
    until(|| primary.in_flight() == 1).await;
    assert!(
        p.circuit_line().unwrap().contains("一次试探调用进行中"),
        "{:?}",
        p.circuit_line()
    );
    assert!(matches!(
        call(&p).await,
        Err(ProviderError::CircuitOpen { .. })
    ));
    assert_eq!(primary.calls(), 4, "only the trial reached the server");
    assert_eq!(trial.await.unwrap().unwrap(), "主模型回来了");
    assert_eq!(call(&p).await.unwrap(), "主模型回来了");
    assert_eq!(primary.calls(), 5);
    assert_eq!(p.circuit_line(), None, "closed again");
    let opened: Vec<u64> = p.circuits().await.iter().map(|v| v.opened).collect();
    assert_eq!(opened, [2]);
}

#[tokio::test]
async fn the_calibration_learns_only_from_the_primary() {
    let dir = tempfile::tempdir().unwrap();
    let usage = |n: u64| {
        FakeReply::Json(serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": "好"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": n, "completion_tokens": 1}
        }))
    };
    let fallback = FakeLlm::start(move |_, _| usage(222)).await;
    let up = Arc::new(AtomicBool::new(true));
    let u = up.clone();
    let primary = FakeLlm::start(move |_, _| {
        if u.load(Ordering::SeqCst) {
            usage(111)
        } else {
            down()
        }
    })
    .await;
    let p = provider_from(
        &format!(
            "[provider]\nmax_retries = 0\nbreaker_failures = 1\nbreaker_cooldown_secs = 3600\n\
             [[provider.fallback]]\nbase_url = \"{}\"\n",
            fallback.url
        ),
        &primary,
        dir.path(),
    );
    let seen = AtomicU64::new(0);
    let calibrate = |n: u64| {
        seen.store(n, Ordering::SeqCst);
    };
    let msgs = ask();
    let req = ChatRequest {
        messages: &msgs,
        tools: &[],
        depth: None,
    };
    let meta = CallMeta::default();
    p.complete_and_calibrate(&req, &meta, None, Some(&calibrate))
        .await
        .unwrap();
    assert_eq!(seen.swap(0, Ordering::SeqCst), 111);
    up.store(false, Ordering::SeqCst);
    assert!(p.complete(&req, &meta).await.is_err());
    let r = p
        .complete_and_calibrate(&req, &meta, None, Some(&calibrate))
        .await
        .unwrap();
    assert_eq!(r.usage.prompt_tokens, 222, "the fallback answered");
    assert_eq!(fallback.calls(), 1);
    assert_eq!(
        seen.load(Ordering::SeqCst),
        0,
        "its count was not handed over"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_calls_overlap_and_the_mailbox_answers_while_they_run() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start(|_, _| {
        FakeReply::Delay(Duration::from_millis(300), Box::new(text("慢慢来")))
    })
    .await;
    let p = provider_from("[provider]\nmax_concurrent = 10\n", &fake, dir.path());
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let p = p.clone();
            tokio::spawn(async move { call(&p).await })
        })
        .collect();
    until(|| fake.in_flight() >= 2).await;
    // the actor answers a message while the calls it admitted are at the server
    let views = p.circuits().await;
    assert_eq!(views.len(), 1);
    assert!(fake.in_flight() >= 1, "answered before the calls ended");
    for c in calls {
        assert_eq!(c.await.unwrap().unwrap(), "慢慢来");
    }
    assert_eq!(fake.calls(), 10);
    let overlap = fake.max_in_flight();
    println!("at most {overlap} of 10 calls in flight at once");
    assert!(overlap >= 2, "the calls ran one after another: {overlap}");
}
