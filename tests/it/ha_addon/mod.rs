//! homebot as a Home Assistant OS add-on (`config::addon`, `src/addon.rs`), with a
//! Supervisor stand-in on 127.0.0.1 in front of a REAL Home Assistant 2025.4.4
//! (tests/it/real_ha; one HA for the whole test):
//!
//! - the gateway started as the Supervisor starts an add-on (`SUPERVISOR_TOKEN`, the
//!   options file, the data folder) announces itself (`POST /discovery`, service
//!   `homebot`) with its URL — the hostname from `GET /addons/self/info` — and a token;
//!   that token opens `GET /api/ha/info`, which names the household of the options; the
//!   integration's config flow in the real HA accepts the URL and token;
//! - homebot reaches HA through the stand-in's `/core/websocket`, which checks
//!   `SUPERVISOR_TOKEN` and authenticates to HA with HA's own token, as the Supervisor's
//!   proxy does: `homebot status` shows HA connected;
//! - a restart announces the same token again (its file in the data folder, 0600), and
//!   no token or key reaches the log;
//! - a bad option (an unknown provider, a wrong type) ends the start with an error naming
//!   the option, and nothing is written (no workspace, no token file).

use crate::common;
use crate::real_ha;

mod supervisor;

use common::gateway::Gateway;
use common::*;
use real_ha::{RealHa, TOKEN};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use supervisor::{supervisor, Seen, SUPERVISOR_TOKEN};

const API_KEY: &str = "sk-addon-test-key-never-logged";

/// The variables the Supervisor gives an add-on, pointed at the stand-in and temp dirs;
/// the HTTP server on loopback (a test binds nothing beyond it).
fn addon_env(supervisor: &str, dir: &Path) -> Vec<(String, String)> {
    vec![
        ("SUPERVISOR_TOKEN".into(), SUPERVISOR_TOKEN.into()),
        ("HOMEBOT_SUPERVISOR_URL".into(), supervisor.into()),
        (
            "HOMEBOT_ADDON_OPTIONS".into(),
            dir.join("options.json").display().to_string(),
        ),
        (
            "HOMEBOT_ADDON_DATA".into(),
            dir.join("data").display().to_string(),
        ),
        ("HOMEBOT_HTTP_LISTEN".into(), "127.0.0.1:0".into()),
    ]
}

fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The n-th discovery message (1-based), once it came.
async fn discovered(seen: &Arc<Mutex<Seen>>, n: usize) -> Value {
    eventually_some(
        &format!("discovery message {n} at the Supervisor stand-in"),
        Duration::from_secs(60),
        || seen.lock().unwrap().discoveries.get(n - 1).cloned(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_add_on_announces_itself_and_reaches_home_assistant_through_the_supervisor() {
    let python = real_ha::ha_python();
    let ha = RealHa::start(&python).await;
    let (sup, seen) = supervisor(Some(&ha)).await;
    let fake = FakeLlm::start(|_, _| text("好的。")).await;
    let dir = workspace();
    std::fs::write(
        dir.path().join("options.json"),
        json!({"provider": "deepseek", "api_key": API_KEY, "household_name": "Addon Home", "language": "en"}).to_string(),
    )
    .unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let env = addon_env(&sup, dir.path());

    let gw = Gateway::start(&ws, &fake, &pairs(&env), &[]).await;
    let addr = gw.dashboard_addr().await;
    let first = discovered(&seen, 1).await;
    assert_eq!(first["service"], "homebot", "{first}");
    let url = first["config"]["url"].as_str().unwrap().to_string();
    let port = addr.rsplit(':').next().unwrap();
    assert_eq!(url, format!("http://127.0.0.1:{port}"));
    let token = first["config"]["token"].as_str().unwrap().to_string();
    assert!(
        token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()),
        "{token}"
    );
    gw.wait_log("announced to Home Assistant through the Supervisor", 30)
        .await;

    // the announced token opens the integration's endpoint, and nothing else does
    let http = reqwest::Client::new();
    let info = http
        .get(format!("{url}/api/ha/info"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(info.status(), 200);
    let info: Value = info.json().await.unwrap();
    assert_eq!(info["household"], "Addon Home", "{info}");
    let wrong = http
        .get(format!("{url}/api/ha/info"))
        .bearer_auth(SUPERVISOR_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    // the real HA's integration takes what was announced (the `hassio` step checks the
    // same way; HA here has no Supervisor to start that step, so the user step does)
    let flow = ha
        .post(
            "/api/config/config_entries/flow",
            json!({"handler": "homebot"}),
        )
        .await;
    let id = flow["flow_id"].as_str().unwrap().to_string();
    let done = ha
        .post(
            &format!("/api/config/config_entries/flow/{id}"),
            json!({"url": url, "token": token}),
        )
        .await;
    assert_eq!(done["type"], "create_entry", "{done}\n{}", ha.log());

    // HA through the stand-in's proxy, logged in with SUPERVISOR_TOKEN
    gw.wait_log("Home Assistant registries read", 60).await;
    assert!(seen.lock().unwrap().ws_logins >= 1);
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_homebot"))
        .arg("--workspace")
        .arg(&ws)
        .arg("status")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("HOMEBOT_BASE_URL", &fake.url)
        .output()
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(
        out.contains("Home Assistant: connected · 版本 2025.4.4"),
        "{out}\n{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert_eq!(seen.lock().unwrap().refused, 0);

    // a restart announces the same token, kept in the data folder
    gw.stop().await;
    let file = dir.path().join("data").join("addon-agent-token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let gw = Gateway::start(&ws, &fake, &pairs(&env), &[]).await;
    let second = discovered(&seen, 2).await;
    assert_eq!(second["config"]["token"], token.as_str());
    assert_eq!(
        second["config"]["url"],
        format!(
            "http://127.0.0.1:{}",
            gw.dashboard_addr().await.rsplit(':').next().unwrap()
        )
    );
    gw.wait_log("announced to Home Assistant through the Supervisor", 30)
        .await;
    let log = gw.log();
    for secret in [token.as_str(), SUPERVISOR_TOKEN, API_KEY, TOKEN] {
        assert!(!log.contains(secret), "a secret in the log:\n{log}");
    }
}

/// `homebot gateway` as the add-on, with these options: its exit status and stderr.
async fn start_with_options(options: Value) -> (tempfile::TempDir, bool, String) {
    let dir = workspace();
    std::fs::write(dir.path().join("options.json"), options.to_string()).unwrap();
    let env = addon_env("http://127.0.0.1:9", dir.path());
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_homebot"))
            .arg("--workspace")
            .arg(dir.path().join("ws"))
            .arg("gateway")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output(),
    )
    .await
    .expect("a bad option ends the start at once")
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    (dir, out.status.success(), err)
}

#[tokio::test]
async fn a_bad_add_on_option_stops_the_start_naming_it_and_writes_nothing() {
    for (options, named) in [
        (
            json!({"provider": "skynet", "api_key": API_KEY}),
            "add-on option `provider`: \"skynet\" is not one of deepseek, openai, anthropic, openai_compatible",
        ),
        (
            json!({"provider": "deepseek", "api_key": 42}),
            "add-on option `api_key`: must be a string, got a number",
        ),
        (
            json!({"provider": "deepseek", "api_key": API_KEY, "language": "fr"}),
            "add-on option `language`",
        ),
    ] {
        let (dir, ok, err) = start_with_options(options).await;
        assert!(!ok, "{err}");
        assert!(err.contains(named), "{named} not in:\n{err}");
        assert!(!err.contains(API_KEY), "{err}");
        assert!(!dir.path().join("ws").exists(), "no workspace");
        assert!(!dir.path().join("data").exists(), "no token file");
    }
}
