//! `[home_assistant]`: homebot as a client of Home Assistant's WebSocket API (rooms,
//! satellites, announcements). Off until a URL is given (`url` or `HOMEBOT_HA_URL`).
//! The long-lived access token is never in this file: only the name of the variable that
//! holds it (`token_env`, default `HOMEBOT_HA_TOKEN`).

use super::{ConfigError, Path};
use serde::Deserialize;

pub const DEFAULT_TOKEN_ENV: &str = "HOMEBOT_HA_TOKEN";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HomeAssistantConfig {
    /// Base URL, e.g. `http://homeassistant.local:8123` (the WebSocket is `{url}/api/websocket`).
    pub url: Option<String>,
    /// The environment variable holding the long-lived access token.
    pub token_env: String,
    /// One command's answer (and a connection's handshake) must arrive within this.
    pub timeout_secs: u64,
    /// An announcement's answer comes once it was played: how long it may take.
    pub announce_timeout_secs: u64,
    /// Largest message read from Home Assistant (a registry list of a big house is a few MiB).
    pub max_message_bytes: usize,
    /// The satellite a voice turn is from when Home Assistant does not tell (an entity id
    /// like `assist_satellite.kitchen`).
    pub default_satellite: Option<String>,
    /// The TTS entity `tts.speak` uses when a satellite cannot announce (e.g. `tts.piper`).
    pub tts_entity: Option<String>,
    /// Satellites and their rooms, when Home Assistant's registries do not say (or to override).
    pub satellites: Vec<HaSatellite>,
    /// Media players that speak for a room when its satellite cannot.
    pub media_players: Vec<HaMediaPlayer>,
    /// After a reply that needs an answer, make the satellite listen again.
    pub listen_again: bool,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HaSatellite {
    /// `assist_satellite.<name>`
    pub entity_id: String,
    /// An area id or name of Home Assistant (`kitchen`, `厨房`).
    pub area: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HaMediaPlayer {
    /// `media_player.<name>`
    pub entity_id: String,
    pub area: String,
}

impl Default for HomeAssistantConfig {
    fn default() -> Self {
        Self {
            url: None,
            token_env: DEFAULT_TOKEN_ENV.into(),
            timeout_secs: 10,
            announce_timeout_secs: 60,
            max_message_bytes: 16 * 1024 * 1024,
            default_satellite: None,
            tts_entity: None,
            satellites: Vec::new(),
            media_players: Vec::new(),
            listen_again: true,
        }
    }
}

impl HomeAssistantConfig {
    pub fn enabled(&self) -> bool {
        self.url.is_some()
    }

    /// The WebSocket URL (`ws://host:8123/api/websocket`) of an `http://` base URL.
    pub fn websocket_url(&self) -> Option<String> {
        let url = self.url.as_deref()?.trim_end_matches('/');
        let rest = url.strip_prefix("http://")?;
        Some(format!("ws://{rest}/api/websocket"))
    }

    pub(super) fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: format!("home_assistant.{key}"),
            message,
        };
        if let Some(url) = &self.url {
            let host = url
                .strip_prefix("http://")
                .map(|r| r.split('/').next().unwrap_or_default());
            match host {
                Some(h) if !h.is_empty() && !url.contains('?') && !url.contains('#') => {}
                _ if url.starts_with("https://") => {
                    return Err(invalid(
                        "url",
                        format!("{url:?}: https is not supported yet; give Home Assistant's http:// address on the local network (or a local proxy)"),
                    ))
                }
                _ => {
                    return Err(invalid(
                        "url",
                        format!("must be an http:// URL with a host, like http://homeassistant.local:8123, got {url:?}"),
                    ))
                }
            }
        }
        let env_ok = !self.token_env.is_empty()
            && self
                .token_env
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !env_ok {
            return Err(invalid(
                "token_env",
                format!(
                    "must be an environment variable name (letters, digits, _), got {:?}",
                    self.token_env
                ),
            ));
        }
        if !(1..=300).contains(&self.timeout_secs) {
            return Err(invalid(
                "timeout_secs",
                format!("must be 1–300, got {}", self.timeout_secs),
            ));
        }
        if !(1..=600).contains(&self.announce_timeout_secs) {
            return Err(invalid(
                "announce_timeout_secs",
                format!("must be 1–600, got {}", self.announce_timeout_secs),
            ));
        }
        if !(64 * 1024..=256 * 1024 * 1024).contains(&self.max_message_bytes) {
            return Err(invalid(
                "max_message_bytes",
                format!("must be 64 KiB–256 MiB, got {}", self.max_message_bytes),
            ));
        }
        let entity = |key: String, id: &str, domain: &str| {
            let ok = id.strip_prefix(domain).is_some_and(|n| {
                !n.is_empty()
                    && n.len() <= 200
                    && n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            });
            match ok {
                true => Ok(()),
                false => Err(invalid(
                    &key,
                    format!("must be an entity id like {domain}kitchen, got {id:?}"),
                )),
            }
        };
        if let Some(s) = &self.default_satellite {
            entity("default_satellite".into(), s, "assist_satellite.")?;
        }
        if let Some(t) = &self.tts_entity {
            entity("tts_entity".into(), t, "tts.")?;
        }
        for (i, s) in self.satellites.iter().enumerate() {
            entity(
                format!("satellites[{i}].entity_id"),
                &s.entity_id,
                "assist_satellite.",
            )?;
            if s.area.trim().is_empty() {
                return Err(invalid(&format!("satellites[{i}].area"), "is empty".into()));
            }
        }
        for (i, m) in self.media_players.iter().enumerate() {
            entity(
                format!("media_players[{i}].entity_id"),
                &m.entity_id,
                "media_player.",
            )?;
            if m.area.trim().is_empty() {
                return Err(invalid(
                    &format!("media_players[{i}].area"),
                    "is empty".into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    fn parse(s: &str) -> Result<Config, crate::config::ConfigError> {
        Config::parse(s, Path::new("/ws/config.toml"))
    }

    #[test]
    fn home_assistant_section_is_checked() {
        let c = parse(
            "[home_assistant]\nurl = \"http://127.0.0.1:8123/\"\ndefault_satellite = \"assist_satellite.kitchen\"\n\
             [[home_assistant.satellites]]\nentity_id = \"assist_satellite.hall\"\narea = \"hall\"\n",
        )
        .unwrap();
        let ha = &c.home_assistant;
        assert_eq!(ha.token_env, "HOMEBOT_HA_TOKEN");
        assert_eq!(
            ha.websocket_url().as_deref(),
            Some("ws://127.0.0.1:8123/api/websocket")
        );
        for (bad, key) in [
            ("url = \"https://ha.example\"", "url"),
            ("url = \"ftp://x\"", "url"),
            ("url = \"http://\"", "url"),
            ("token_env = \"A B\"", "token_env"),
            ("timeout_secs = 0", "timeout_secs"),
            ("announce_timeout_secs = 601", "announce_timeout_secs"),
            ("max_message_bytes = 10", "max_message_bytes"),
            ("default_satellite = \"light.kitchen\"", "default_satellite"),
            ("tts_entity = \"tts.\"", "tts_entity"),
        ] {
            let e = parse(&format!("[home_assistant]\n{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("key `home_assistant.{key}`")),
                "{bad}: {e}"
            );
        }
        let e = parse(
            "[[home_assistant.media_players]]\nentity_id = \"media_player.k\"\narea = \" \"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("home_assistant.media_players[0].area"), "{e}");
    }
}
