//! The demo's fresh workspace and what goes in it: `config.toml` with loopback listeners and
//! fresh tokens, and the environment overrides for the chosen model.

use super::{ModelChoice, GROUP, HA_SPEAKER, MOM_QQ, SATELLITE, SATELLITE_SPEAKER};
use crate::config::{EnvOverrides, Secret};
use anyhow::Context;
use std::path::PathBuf;

/// `--workspace DIR` if it is new or empty (the demo writes its own config there, and
/// never over a household's); else a fresh folder under the system's temporary folder.
pub(super) fn prepare_workspace(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let dir = match given {
        Some(d) => {
            if d.exists() && std::fs::read_dir(&d)?.next().is_some() {
                anyhow::bail!(
                    "{} is not empty: the demo writes its own config.toml, so give it a new or empty folder (or none)",
                    d.display()
                );
            }
            std::fs::create_dir_all(&d)?;
            d
        }
        None => {
            let name = format!(
                "homebot-demo-{}-{}",
                chrono::Local::now().format("%Y%m%d-%H%M%S"),
                std::process::id()
            );
            let d = std::env::temp_dir().join(name);
            std::fs::create_dir(&d)
                .with_context(|| format!("cannot make the workspace {}", d.display()))?;
            d
        }
    };
    Ok(dir.canonicalize()?)
}

/// The secrets of this run, fresh each time.
pub(super) struct Tokens {
    pub(super) qq: String,
    pub(super) satellite: String,
    /// The dashboard's owner token (its link carries it, so the buttons work).
    pub(super) http: String,
}

impl Tokens {
    pub(super) fn new() -> Self {
        let t = || format!("{:032x}", rand::random::<u128>());
        Self {
            qq: t(),
            satellite: t(),
            http: t(),
        }
    }
}

/// A TOML string literal.
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

pub(super) fn config_toml(model: &ModelChoice, tokens: &Tokens) -> String {
    format!(
        r#"# Written by `homebot demo`: a household with a QQ group, a kitchen speaker and a terminal.
[household]
name = "演示之家"

[provider]
kind = "openai"
base_url = {url}
model = {model}
stream = true

[qq]
listen = "127.0.0.1:0"
access_token = {qq_token}
groups = {{ policy = "allowlist", allow = ["{GROUP}"] }}
send_interval_ms = 100

[voice]
wyoming_listen = "127.0.0.1:0"
ws_listen = "127.0.0.1:0"
wyoming_speakers = {{ "{HA_SPEAKER}" = "mom" }}

[[voice.satellites]]
id = "{SATELLITE}"
token = {sat_token}
speakers = {{ "{SATELLITE_SPEAKER}" = "mom" }}

[http]
listen = "127.0.0.1:0"
token = {http_token}

[[members]]
id = "mom"
name = "妈妈"
qq_ids = ["{MOM_QQ}"]

[[members]]
id = "dad"
name = "爸爸"
"#,
        url = toml_str(&model.url()),
        model = toml_str(&model.name()),
        qq_token = toml_str(&tokens.qq),
        sat_token = toml_str(&tokens.satellite),
        http_token = toml_str(&tokens.http),
    )
}

/// The environment the demo's kernel sees: not the caller's provider settings (the
/// config names the model), only a key for a real endpoint and the context window.
pub(super) fn env_overrides(model: &ModelChoice) -> EnvOverrides {
    let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    EnvOverrides {
        api_key: match model {
            ModelChoice::Real { .. } => get("HOMEBOT_API_KEY").map(Secret::new),
            ModelChoice::Scripted(_) => None,
        },
        context_window: get("HOMEBOT_CONTEXT_WINDOW"),
        // a fixed address for the dashboard (the config's is a free loopback port)
        http_listen: get("HOMEBOT_HTTP_LISTEN"),
        ..Default::default()
    }
}
