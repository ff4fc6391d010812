//! Money on the dashboard: with `[provider.price]` configured, the page shows what the
//! active session's calls cost, what they would have cost with no cache hits, and the
//! household's cost per day — the same figures `homebot stats` prints.

mod common;

use common::gateway::Gateway;
use common::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_sessions_cost_and_the_cost_per_day() {
    let ws = workspace();
    let ws = ws.path();
    std::fs::write(
        ws.join("config.toml"),
        "[provider.price.\"fake-model\"]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\ncurrency = \"XTS\"\n",
    )
    .unwrap();
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
    // 56 × 2.0 + 64 × 0.5 + 12 × 8.0 = 240 per million; with no cache 120 × 2.0 + 96 = 336
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    // the call's audit line is written off the turn's path, a few milliseconds after the
    // reply: poll the page until it is counted
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (html, cost) = loop {
        let html = client
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
        if cost.contains("0.000240 XTS") || std::time::Instant::now() >= deadline {
            break (html, cost);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(cost.contains("0.000240 XTS"), "{cost}");
    assert!(cost.contains("没有缓存时 0.000336"), "{cost}");
    let spend = html
        .split("<section id=\"spend\">")
        .nth(1)
        .and_then(|s| s.split("</section>").next())
        .unwrap();
    let today = chrono::Utc::now()
        .with_timezone(&chrono_tz::Asia::Shanghai)
        .format("%Y-%m-%d")
        .to_string();
    assert!(
        spend.contains(&format!("<td>{today}</td><td>0.000240 XTS")),
        "{spend}"
    );
}
