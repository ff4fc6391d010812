//! `[http]`: the household dashboard's web server (`dashboard/`). Off unless `listen` is
//! set; beyond loopback it needs `token`, which is a [`Secret`] (never logged, never
//! rendered). Home Assistant's conversation agent (`channels/voice/ha_agent.rs`) is served
//! there too, under a token of its own read from the environment (`ha_agent_token_env`,
//! default `HOMEBOT_HA_AGENT_TOKEN`), which allows conversation turns only.

use super::{ConfigError, Secret};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::Path;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Address to serve the dashboard on, e.g. `127.0.0.1:8080`; unset: no dashboard.
    pub listen: Option<String>,
    /// The owner's token: needed for the actions always, and for everything when
    /// `listen` is beyond loopback.
    pub token: Option<Secret>,
    /// Connections open at once.
    pub max_connections: usize,
    /// The environment variable holding Home Assistant's agent token.
    pub ha_agent_token_env: String,
    /// That token, read from the environment when the configuration is applied; never
    /// in the file.
    #[serde(skip)]
    pub ha_agent_token: Option<Secret>,
}

/// The default of `[http] ha_agent_token_env`.
pub const DEFAULT_HA_AGENT_TOKEN_ENV: &str = "HOMEBOT_HA_AGENT_TOKEN";

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: None,
            token: None,
            max_connections: 64,
            ha_agent_token_env: DEFAULT_HA_AGENT_TOKEN_ENV.into(),
            ha_agent_token: None,
        }
    }
}

impl HttpConfig {
    /// The address to serve on, when the dashboard is on (validated at load).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.listen.as_deref().and_then(|a| a.parse().ok())
    }

    /// Whether the address is reachable from beyond this machine.
    pub fn exposed(&self) -> bool {
        self.addr().is_some_and(|a| !a.ip().is_loopback())
    }

    /// Read the agent token from the environment variable `ha_agent_token_env` (an empty
    /// value counts as unset).
    pub fn read_ha_agent_token(&mut self) {
        self.ha_agent_token = std::env::var(&self.ha_agent_token_env)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(Secret);
    }

    pub(super) fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.to_string(),
            message,
        };
        if let Some(a) = &self.listen {
            if a.parse::<SocketAddr>().is_err() {
                return Err(invalid(
                    "http.listen",
                    format!("{a:?} is not an address like 127.0.0.1:8080"),
                ));
            }
        }
        if self
            .token
            .as_ref()
            .is_some_and(|t| t.expose().trim().is_empty())
        {
            return Err(invalid(
                "http.token",
                "is empty; remove the key or give it a value".into(),
            ));
        }
        let env_ok = !self.ha_agent_token_env.is_empty()
            && self
                .ha_agent_token_env
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !env_ok {
            return Err(invalid(
                "http.ha_agent_token_env",
                format!(
                    "{:?} is not an environment variable name",
                    self.ha_agent_token_env
                ),
            ));
        }
        // the agent token opens only the agent's endpoint: the pages then stay closed
        if let (Some(owner), Some(agent)) = (&self.token, &self.ha_agent_token) {
            if owner.expose() == agent.expose() {
                return Err(invalid(
                    "http.ha_agent_token_env",
                    "Home Assistant's agent token must differ from the owner's http.token: each opens different doors".into(),
                ));
            }
        }
        let agent = self.ha_agent_token.is_some()
            || std::env::var(&self.ha_agent_token_env).is_ok_and(|v| !v.trim().is_empty());
        if self.exposed() && self.token.is_none() && !agent {
            return Err(invalid(
                "http.listen",
                "listening beyond this machine needs http.token (HOMEBOT_HTTP_TOKEN) or Home Assistant's agent token (HOMEBOT_HA_AGENT_TOKEN); otherwise anyone on the network could read the household's conversations".into(),
            ));
        }
        if !(1..=4096).contains(&self.max_connections) {
            return Err(invalid(
                "http.max_connections",
                format!("must be 1..=4096, got {}", self.max_connections),
            ));
        }
        Ok(())
    }
}
