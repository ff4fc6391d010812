//! homebot as a Home Assistant OS add-on (a Supervisor add-on): when the Supervisor
//! started it (`SUPERVISOR_TOKEN` is set), the household's choices come from the
//! add-on's options (`/data/options.json`, written by the Supervisor from the add-on's
//! Configuration tab), each checked here with an error naming the option; they are laid
//! over `config.toml`, and the `HOMEBOT_*` variables still win over them.
//!
//! What the add-on mode sets besides the options: the HTTP server on `0.0.0.0:8080`
//! (the Supervisor's network is the boundary; only the agent token opens anything there),
//! Home Assistant through the Supervisor's proxy (`ws://supervisor/core/websocket`, with
//! `SUPERVISOR_TOKEN` as the access token), and the agent token the integration uses:
//! made once, kept in `<data>/addon-agent-token` (0600, written atomically) and reused
//! on every start. `crate::addon` announces the URL and that token to Home Assistant.
//! Read from [`super::EnvOverrides`], applied by `Config::apply_env` (`load`).

pub use super::addon_options::{AddonOptions, AddonProvider, OPTIONS};
use super::provider::{ProviderKind, ANTHROPIC_BASE_URL, DEEPSEEK_BASE_URL};
use super::{Config, ConfigError, Secret};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The Supervisor's own address inside an add-on.
pub const DEFAULT_SUPERVISOR_URL: &str = "http://supervisor";
/// Where the Supervisor keeps the add-on's persistent files.
pub const DEFAULT_DATA_DIR: &str = "/data";
/// The agent token's file in the data folder.
pub const AGENT_TOKEN_FILE: &str = "addon-agent-token";
/// Where the add-on's HTTP server listens (`ports: 8080/tcp` in `config.yaml`).
pub const ADDON_LISTEN: &str = "0.0.0.0:8080";
/// OpenAI's own endpoint (the `openai` provider).
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Random bytes in a new agent token (hex: twice as many characters).
const TOKEN_BYTES: usize = 32;

/// What the environment says of the add-on: present only when `SUPERVISOR_TOKEN` is set.
#[derive(Debug, Clone)]
pub struct AddonSource {
    /// `SUPERVISOR_TOKEN`: the Supervisor's API and Home Assistant's (through its proxy).
    pub supervisor_token: Secret,
    /// `HOMEBOT_SUPERVISOR_URL`, default `http://supervisor` (tests point it at a stand-in).
    pub supervisor_url: String,
    /// `HOMEBOT_ADDON_OPTIONS`, default `<data>/options.json`.
    pub options_path: PathBuf,
    /// `HOMEBOT_ADDON_DATA`, default `/data`: where the agent token is kept.
    pub data_dir: PathBuf,
    /// `TZ`, which the Supervisor sets to the host's zone: the household's zone unless
    /// the `timezone` option names one.
    pub tz: Option<String>,
}

impl AddonSource {
    /// From these variables (`get` returns a non-blank value or `None`).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let token = get("SUPERVISOR_TOKEN")?;
        let data_dir = PathBuf::from(get("HOMEBOT_ADDON_DATA").unwrap_or(DEFAULT_DATA_DIR.into()));
        Some(Self {
            supervisor_token: Secret::new(token.trim()),
            supervisor_url: get("HOMEBOT_SUPERVISOR_URL")
                .unwrap_or(DEFAULT_SUPERVISOR_URL.into())
                .trim_end_matches('/')
                .to_string(),
            options_path: get("HOMEBOT_ADDON_OPTIONS")
                .map(PathBuf::from)
                .unwrap_or_else(|| data_dir.join("options.json")),
            data_dir,
            tz: get("TZ"),
        })
    }

    /// The agent token's file.
    pub fn token_file(&self) -> PathBuf {
        self.data_dir.join(AGENT_TOKEN_FILE)
    }

    /// Read and check the options file; nothing is written.
    pub fn options(&self) -> Result<AddonOptions, ConfigError> {
        let path = &self.options_path;
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.clone(),
            message: format!("not JSON: {e}"),
        })?;
        AddonOptions::parse(&value, path)
    }
}

/// What the gateway needs of the Supervisor after start (`crate::addon`).
#[derive(Debug, Clone)]
pub struct AddonRuntime {
    pub supervisor_url: String,
    pub supervisor_token: Secret,
}

/// Lay the options over `cfg` and give it the Supervisor's Home Assistant and the agent
/// token (read from its file, or made and written once). The options are checked
/// before anything is written.
pub fn apply(cfg: &mut Config, source: &AddonSource) -> Result<(), ConfigError> {
    let o = source.options()?;
    let mut p = cfg.provider.take().unwrap_or_default();
    let (url, kind) = match o.provider {
        AddonProvider::Deepseek => (DEEPSEEK_BASE_URL, ProviderKind::Openai),
        AddonProvider::Openai => (OPENAI_BASE_URL, ProviderKind::Openai),
        AddonProvider::Anthropic => (ANTHROPIC_BASE_URL, ProviderKind::Anthropic),
        AddonProvider::OpenaiCompatible => ("", ProviderKind::Openai),
    };
    p.base_url = Some(o.base_url.clone().unwrap_or_else(|| url.to_string()));
    p.kind = Some(kind);
    p.api_key = o.api_key.clone();
    p.api_key_env = None;
    if o.model.is_some() {
        p.model = o.model.clone();
    }
    cfg.provider = Some(p);
    if let Some(n) = &o.household_name {
        cfg.household.name = n.clone();
    }
    if !o.members.is_empty() {
        cfg.members = o.members.clone();
    }
    if let Some(l) = o.language {
        cfg.household.language = l;
    }
    let zone = o.timezone.clone().or_else(|| {
        source
            .tz
            .clone()
            .filter(|z| z.parse::<crate::zone::Zone>().is_ok())
    });
    if let Some(z) = zone {
        cfg.household.timezone = z;
    }
    cfg.http.listen = Some(ADDON_LISTEN.into());
    let ha = &mut cfg.home_assistant;
    ha.url = Some(format!("{}/core", source.supervisor_url));
    ha.websocket = Some(websocket_of(&source.supervisor_url));
    ha.token = Some(source.supervisor_token.clone());
    ha.ca_file = None;
    ha.fingerprint = None;
    cfg.http.ha_agent_token = Some(agent_token(&source.token_file())?);
    cfg.addon = Some(AddonRuntime {
        supervisor_url: source.supervisor_url.clone(),
        supervisor_token: source.supervisor_token.clone(),
    });
    Ok(())
}

/// The Supervisor's WebSocket proxy to Home Assistant (`ws://supervisor/core/websocket`).
pub fn websocket_of(supervisor_url: &str) -> String {
    match supervisor_url.strip_prefix("https://") {
        Some(rest) => format!("wss://{rest}/core/websocket"),
        None => format!(
            "ws://{}/core/websocket",
            supervisor_url
                .strip_prefix("http://")
                .unwrap_or(supervisor_url)
        ),
    }
}

/// The agent token in `file`, or a new one (32 random bytes, hex) written there (0600,
/// atomically) when the file is missing or does not hold a token.
pub fn agent_token(file: &Path) -> Result<Secret, ConfigError> {
    match std::fs::read_to_string(file) {
        Ok(t) if is_token(t.trim()) => return Ok(Secret::new(t.trim())),
        Ok(_) => {
            tracing::warn!(file = %file.display(), "the add-on's agent token file holds no token; a new one is made (Home Assistant is told it)")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(ConfigError::Read {
                path: file.to_path_buf(),
                source,
            })
        }
    }
    let mut bytes = [0u8; TOKEN_BYTES];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).map_err(|_| {
        ConfigError::Read {
            path: file.to_path_buf(),
            source: std::io::Error::other("the system's random source failed"),
        }
    })?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    crate::fsutil::write_atomic(file, token.as_bytes()).map_err(|source| ConfigError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    Ok(Secret::new(token))
}

/// A token this module made: 64 hex digits.
fn is_token(t: &str) -> bool {
    t.len() == TOKEN_BYTES * 2 && t.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
#[path = "addon_tests.rs"]
mod tests;
