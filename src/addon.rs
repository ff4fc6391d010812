//! The add-on announces itself to Home Assistant through the Supervisor's discovery
//! (`POST {supervisor}/discovery`, service `homebot`), once the gateway's HTTP server
//! listens: its URL on the add-on network (`http://<the add-on's hostname>:<port>`) and
//! its agent token. Home Assistant hands that to the integration's `hassio` step
//! (`custom_components/homebot/config_flow.py`), which offers homebot under Discovered,
//! or updates the token of the entry it made before.
//!
//! The hostname is the one the Supervisor gave the container (`GET
//! {supervisor}/addons/self/info` → `hostname`; `HOSTNAME` if that call fails). Failures
//! are retried with a capped backoff (logged once, then quietly) until it worked or the
//! gateway stops; success is logged once. Neither token is ever logged. The settings come
//! from `config::addon`; `main` starts this after the HTTP server is up.

use crate::config::{addon::AddonRuntime, Secret};
use crate::kernel::Kernel;
use serde_json::{json, Value};
use std::time::Duration;
use tracing::{debug, info, warn};

/// The discovery service's name (`discovery: [homebot]` in `config.yaml`; the
/// integration's `hassio` step).
pub const SERVICE: &str = "homebot";
/// One request to the Supervisor must answer within this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The first pause after a failure; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What is announced, and to whom.
#[derive(Debug, Clone)]
pub struct Announcement {
    pub supervisor: AddonRuntime,
    /// The integration's token (`[http]`'s agent token).
    pub agent_token: Secret,
    /// The HTTP server's bound port.
    pub port: u16,
    /// `HOSTNAME`, when the Supervisor's answer names none.
    pub hostname_fallback: Option<String>,
}

/// As an add-on whose HTTP server listens at `http_addr`: announce in the background
/// (retried until it worked or the gateway stops). Anything else: nothing.
pub fn start(kernel: &Kernel, http_addr: Option<std::net::SocketAddr>) {
    let cfg = kernel.config();
    let (Some(supervisor), Some(addr), Some(agent_token)) = (
        cfg.addon.clone(),
        http_addr,
        cfg.http.ha_agent_token.clone(),
    ) else {
        return;
    };
    let a = Announcement {
        supervisor,
        agent_token,
        port: addr.port(),
        hostname_fallback: std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()),
    };
    kernel
        .tasks()
        .spawn_in(crate::actor::Group::Background, async move {
            announce(a).await;
        });
}

/// Announce until the Supervisor took it; returns the URL announced.
pub async fn announce(a: Announcement) -> String {
    let http = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .unwrap_or_default();
    let mut pause = FIRST_BACKOFF;
    let mut failed_before = false;
    loop {
        match announce_once(&http, &a).await {
            Ok((url, uuid)) => {
                info!(url = %url, uuid = %uuid, "announced to Home Assistant through the Supervisor (discovery `homebot`)");
                return url;
            }
            Err(why) if !failed_before => {
                warn!(error = %why, retry_secs = pause.as_secs(), "cannot announce homebot to Home Assistant through the Supervisor; retrying with backoff (logged once)");
                failed_before = true;
            }
            Err(why) => debug!(error = %why, "announcing to the Supervisor failed again"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}

/// Why one announcement did not go through (never with a token in it).
#[derive(Debug, thiserror::Error)]
enum AnnounceError {
    #[error("no hostname: the Supervisor's add-on info names none and HOSTNAME is unset")]
    NoHostname,
    #[error("the Supervisor cannot be reached: {0}")]
    Unreachable(String),
    #[error("the Supervisor answered {status}: {message}")]
    Refused {
        status: reqwest::StatusCode,
        message: String,
    },
}

/// One attempt: the hostname, then the discovery message; the URL and the message's id.
async fn announce_once(
    http: &reqwest::Client,
    a: &Announcement,
) -> Result<(String, String), AnnounceError> {
    let base = &a.supervisor.supervisor_url;
    let info = call(a, http.get(format!("{base}/addons/self/info"))).await;
    let host = match info {
        Ok(data) => data["hostname"].as_str().map(str::to_string),
        Err(why) => {
            debug!(error = %why, "the Supervisor did not tell the add-on's hostname");
            None
        }
    };
    let host = host
        .filter(|h| !h.is_empty())
        .or_else(|| a.hostname_fallback.clone())
        .ok_or(AnnounceError::NoHostname)?;
    let url = format!("http://{host}:{}", a.port);
    let body = json!({
        "service": SERVICE,
        "config": {"url": url, "token": a.agent_token.expose()},
    });
    let data = call(a, http.post(format!("{base}/discovery")).json(&body)).await?;
    let uuid = data["uuid"].as_str().unwrap_or("?").to_string();
    Ok((url, uuid))
}

/// A Supervisor call: `{"result": "ok", "data": …}` → the data; anything else an error
/// (its status and message, never a token).
async fn call(a: &Announcement, req: reqwest::RequestBuilder) -> Result<Value, AnnounceError> {
    let r = req
        .bearer_auth(a.supervisor.supervisor_token.expose())
        .send()
        .await
        .map_err(|e| AnnounceError::Unreachable(e.without_url().to_string()))?;
    let status = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    if status.is_success() && v["result"] == "ok" {
        return Ok(v["data"].clone());
    }
    let message: String = v["message"]
        .as_str()
        .unwrap_or("no message")
        .chars()
        .take(200)
        .collect();
    Err(AnnounceError::Refused { status, message })
}
