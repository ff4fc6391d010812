//! `[http]`: the household dashboard's web server (`dashboard/`). Off unless `listen` is
//! set; beyond loopback it needs `token`, which is a [`Secret`] (never logged, never
//! rendered).

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
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: None,
            token: None,
            max_connections: 64,
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
        if self.exposed() && self.token.is_none() {
            return Err(invalid(
                "http.listen",
                "listening beyond this machine needs http.token (HOMEBOT_HTTP_TOKEN); otherwise anyone on the network could read the household's conversations".into(),
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
