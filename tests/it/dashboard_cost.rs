//! Money on the dashboard: with `[provider.price]` configured, the page shows what the
//! active session's calls cost, what they would have cost with no cache hits, and the
//! household's cost per day — the same figures `homebot stats` prints — read right after
//! the turn, including calls whose audit lines the log writer has not written yet.

use crate::common;

use common::gateway::Gateway;
use common::*;
use homebot::channels::cli;
use homebot::kernel::{Kernel, KernelOptions};
use homebot::provider::Provider;
use std::time::Duration;

const PRICE: &str = "[provider.price.\"fake-model\"]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\ncurrency = \"XTS\"\n";

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// The page's cost line (`<p id="cost">…</p>`) and its per-day section.
async fn figures(addr: &str) -> (String, String) {
    let html = client()
        .get(format!("http://{addr}/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let cost = html
        .split("<p id=\"cost\">")
        .nth(1)
        .and_then(|s| s.split("</p>").next())
        .unwrap_or_else(|| panic!("no cost line:\n{html}"))
        .to_string();
    let spend = html
        .split("<section id=\"spend\">")
        .nth(1)
        .and_then(|s| s.split("</section>").next())
        .unwrap()
        .to_string();
    (cost, spend)
}

fn today() -> String {
    chrono::Utc::now()
        .with_timezone(&"Asia/Shanghai".parse::<homebot::zone::Zone>().unwrap())
        .format("%Y-%m-%d")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_sessions_cost_and_the_cost_per_day() {
    let ws = workspace();
    let ws = ws.path();
    std::fs::write(ws.join("config.toml"), PRICE).unwrap();
    let fake = FakeLlm::scripted().await;
    let gw = Gateway::start(
        ws,
        &fake,
        &[
            ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_MODEL", "fake-model"),
        ],
        &[],
    )
    .await;
    let addr = gw.dashboard_addr().await;
    for words in ["/mode enter cooking", "番茄炒蛋放几个蛋？"] {
        let o = homebot(ws, Some(&fake))
            .args(["chat", "-m", words])
            .output()
            .await
            .unwrap();
        assert!(o.status.success(), "{o:?}");
    }
    assert_eq!(fake.calls(), 1, "one model call in the session");
    // the fake reports 120 prompt tokens, 64 of them cached, and 12 completion tokens:
    // 56 × 2.0 + 64 × 0.5 + 12 × 8.0 = 240 per million; with no cache 120 × 2.0 + 96 = 336.
    // Read once, right after the turn: the call's audit line counts written or not.
    let (cost, spend) = figures(&addr).await;
    assert!(cost.contains("0.000240 XTS"), "{cost}");
    assert!(cost.contains("没有缓存时 0.000336"), "{cost}");
    assert!(
        spend.contains(&format!("<td>{}</td><td>0.000240 XTS", today())),
        "{spend}"
    );
}

/// The log writer held back (a stalled disk): the page shown right after the turn
/// counts its call all the same, in the session's figure and the day's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_audit_line_is_not_on_disk_yet_is_in_the_figures() {
    let dir = workspace();
    let ws = dir.path();
    std::fs::write(
        ws.join("config.toml"),
        format!("{PRICE}\n[http]\nlisten = \"127.0.0.1:0\"\n"),
    )
    .unwrap();
    let fake = FakeLlm::scripted().await;
    let cfg = homebot::config::Config::default()
        .resolve_provider(&fake.env())
        .unwrap();
    let (provider, gate) = Provider::from_config(&cfg, ws.join("logs/usage.jsonl"))
        .unwrap()
        .with_gated_logs();
    let k = Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            provider: Some(provider),
            ..Default::default()
        },
    )
    .unwrap();
    // dropped before the kernel even when an assertion fails: the kernel's writer waits
    // for it when it is dropped
    let gate = gate;
    let addr = homebot::dashboard::start(&k, None)
        .await
        .unwrap()
        .expect("[http] listen is set")
        .to_string();
    for words in ["/mode enter cooking", "番茄炒蛋放几个蛋？"] {
        let r = k.handle_turn(cli::turn("local", "mom", words)).await;
        assert!(r.is_answered(), "{}", r.text);
    }
    assert_eq!(fake.calls(), 1);
    let audit = session_dir(ws).join("audit.jsonl");
    assert!(!audit.exists(), "the writer holds the call's lines");
    let (cost, spend) = figures(&addr).await;
    assert!(cost.contains("0.000240 XTS"), "{cost}");
    assert!(
        spend.contains(&format!("<td>{}</td><td>0.000240 XTS", today())),
        "{spend}"
    );
    // once written, counted once
    drop(gate);
    k.provider().flush().await;
    assert_eq!(jsonl(&audit).len(), 1);
    let (cost, spend) = figures(&addr).await;
    assert!(cost.contains("0.000240 XTS"), "{cost}");
    assert!(
        spend.contains(&format!("<td>{}</td><td>0.000240 XTS", today())),
        "{spend}"
    );
}
