//! `[home_assistant]`: homebot as a client of Home Assistant's WebSocket API (rooms,
//! satellites, announcements). Off until a URL is given (`url` or `HOMEBOT_HA_URL`).
//! The long-lived access token is never in this file: only the name of the variable that
//! holds it (`token_env`, default `HOMEBOT_HA_TOKEN`).

use super::{ConfigError, Secret};
use serde::Deserialize;
use std::path::Path;

pub const DEFAULT_TOKEN_ENV: &str = "HOMEBOT_HA_TOKEN";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HomeAssistantConfig {
    /// Base URL, e.g. `http://homeassistant.local:8123` or `https://…` (the WebSocket is
    /// `{url}/api/websocket`, `ws://` or `wss://`).
    pub url: Option<String>,
    /// The WebSocket URL when it is not `{url}/api/websocket`: the add-on reaches Home
    /// Assistant through the Supervisor's proxy (`ws://supervisor/core/websocket`, see
    /// `config::addon`); never from the file.
    #[serde(skip)]
    pub websocket: Option<String>,
    /// For an `https://` url: a PEM file of the private CA that signed Home Assistant's
    /// certificate, trusted besides the built-in public roots (relative: to the workspace).
    pub ca_file: Option<std::path::PathBuf>,
    /// For an `https://` url: the SHA-256 fingerprint of Home Assistant's own certificate
    /// (`sha256:AB:CD:…`); exactly that certificate is then accepted, self-signed or not,
    /// whatever host name it names (see `ha_tls`).
    pub fingerprint: Option<String>,
    /// The environment variable holding the long-lived access token.
    pub token_env: String,
    /// The token given directly (tests, through `EnvOverrides::ha_token`), never from
    /// the file: when set, `token_env` is not read.
    #[serde(skip)]
    pub token: Option<Secret>,
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
    /// The language of Home Assistant's own agent on the fast path (`zh-cn`, `en`, …).
    pub language: String,
    /// Send a plain sentence to Home Assistant's own agent first (`conversation/process`);
    /// its answer is the reply when it handled the sentence, with no LLM call.
    pub fast_path: bool,
    /// Domains `home_control` may call services in.
    pub allowed_domains: Vec<String>,
    /// Entities whose service calls need the asker's confirmation first (locks, alarm
    /// panels and garage covers always do).
    pub confirm_entities: Vec<String>,
    /// Guests (unmapped voices, unknown QQ users) may control devices, not only read them.
    pub guests_may_control: bool,
    /// Opt-in: a satellite whose every voice is one member (`"assist_satellite.kitchen" =
    /// "mom"`). A satellite's pipeline tells no speaker, so its turns are a guest's unless
    /// listed here; listed, anyone at that speaker speaks as that member.
    pub speakers: std::collections::BTreeMap<String, String>,
    /// State changes that become messages.
    pub watch: Vec<HaWatch>,
}

/// `[[home_assistant.watch]]`: when `entity_id` turns `to`, say `message` through
/// `channel` to `target` (like a reminder).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HaWatch {
    pub entity_id: String,
    pub to: String,
    pub message: String,
    /// `qq`, `voice`, …
    pub channel: String,
    /// The channel's target: `group:<id>`, an area or a satellite, …
    pub target: String,
}

/// At most this many watches.
pub const MAX_WATCHES: usize = 50;

/// The domains `home_control` may call by default.
pub const DEFAULT_ALLOWED_DOMAINS: [&str; 12] = [
    "light",
    "switch",
    "fan",
    "climate",
    "cover",
    "media_player",
    "scene",
    "script",
    "input_boolean",
    "vacuum",
    "humidifier",
    "water_heater",
];

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
            websocket: None,
            ca_file: None,
            fingerprint: None,
            token_env: DEFAULT_TOKEN_ENV.into(),
            token: None,
            timeout_secs: 10,
            announce_timeout_secs: 60,
            max_message_bytes: 16 * 1024 * 1024,
            default_satellite: None,
            tts_entity: None,
            satellites: Vec::new(),
            media_players: Vec::new(),
            listen_again: true,
            language: "zh-cn".into(),
            fast_path: true,
            allowed_domains: DEFAULT_ALLOWED_DOMAINS.map(String::from).to_vec(),
            confirm_entities: Vec::new(),
            guests_may_control: false,
            speakers: Default::default(),
            watch: Vec::new(),
        }
    }
}

impl HomeAssistantConfig {
    pub fn enabled(&self) -> bool {
        self.url.is_some()
    }

    /// The WebSocket URL (`ws://host:8123/api/websocket`) of an `http://` base URL,
    /// `wss://…` of an `https://` one; `websocket` when it is set.
    pub fn websocket_url(&self) -> Option<String> {
        if let Some(ws) = &self.websocket {
            return Some(ws.clone());
        }
        let url = self.url.as_deref()?.trim_end_matches('/');
        match url.strip_prefix("https://") {
            Some(rest) => Some(format!("wss://{rest}/api/websocket")),
            None => Some(format!(
                "ws://{}/api/websocket",
                url.strip_prefix("http://")?
            )),
        }
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
                .or_else(|| url.strip_prefix("https://"))
                .map(|r| r.split('/').next().unwrap_or_default());
            match host {
                Some(h) if !h.is_empty() && !url.contains('?') && !url.contains('#') => {}
                _ => {
                    return Err(invalid(
                        "url",
                        format!("must be an http:// or https:// URL with a host, like http://homeassistant.local:8123, got {url:?}"),
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
        self.validate_tls(path)?;
        self.validate_home(path)
    }

    /// The keys of part 2: language, domains, confirmations, watches.
    fn validate_home(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: String, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: format!("home_assistant.{key}"),
            message,
        };
        let word = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        };
        let lang_ok = !self.language.is_empty()
            && self.language.len() <= 16
            && self
                .language
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !lang_ok {
            return Err(invalid(
                "language".into(),
                format!("must be a language tag like zh-cn, got {:?}", self.language),
            ));
        }
        for (i, d) in self.allowed_domains.iter().enumerate() {
            if !word(d) {
                return Err(invalid(
                    format!("allowed_domains[{i}]"),
                    format!("must be a domain like light, got {d:?}"),
                ));
            }
        }
        for (i, e) in self.confirm_entities.iter().enumerate() {
            if !is_entity_id(e) {
                return Err(invalid(
                    format!("confirm_entities[{i}]"),
                    format!("must be an entity id like lock.front_door, got {e:?}"),
                ));
            }
        }
        if self.watch.len() > MAX_WATCHES {
            return Err(invalid(
                "watch".into(),
                format!("at most {MAX_WATCHES} watches, got {}", self.watch.len()),
            ));
        }
        for (i, w) in self.watch.iter().enumerate() {
            let key = |k: &str| format!("watch[{i}].{k}");
            if !is_entity_id(&w.entity_id) {
                return Err(invalid(
                    key("entity_id"),
                    format!(
                        "must be an entity id like sensor.washer_power, got {:?}",
                        w.entity_id
                    ),
                ));
            }
            for (k, v, max) in [
                ("to", &w.to, 255),
                ("message", &w.message, 500),
                ("channel", &w.channel, 32),
                ("target", &w.target, 200),
            ] {
                if v.trim().is_empty() || v.chars().count() > max {
                    return Err(invalid(
                        key(k),
                        format!(
                            "must be 1–{max} characters, got {:?}",
                            v.chars().take(40).collect::<String>()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `domain.object_id`: lowercase letters, digits and `_`, at most 255 bytes.
pub fn is_entity_id(s: &str) -> bool {
    let Some((d, o)) = s.split_once('.') else {
        return false;
    };
    let part = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    s.len() <= 255 && part(d) && part(o)
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
        let c = parse("[home_assistant]\nurl = \"http://h:8123\"\n[[home_assistant.watch]]\nentity_id = \"sensor.washer\"\nto = \"off\"\nmessage = \"洗衣机洗好了\"\nchannel = \"qq\"\ntarget = \"group:1\"\n").unwrap();
        let ha = &c.home_assistant;
        assert!(ha.fast_path && !ha.guests_may_control && ha.language == "zh-cn");
        assert!(ha.allowed_domains.iter().any(|d| d == "light"));
        assert!(!ha.allowed_domains.iter().any(|d| d == "lock"));
        assert_eq!(ha.watch[0].message, "洗衣机洗好了");
        for (bad, key) in [
            ("allowed_domains = [\"Light\"]", "allowed_domains[0]"),
            ("confirm_entities = [\"front door\"]", "confirm_entities[0]"),
            ("language = \"zh cn\"", "language"),
            ("[[home_assistant.watch]]\nentity_id = \"x\"\nto = \"off\"\nmessage = \"m\"\nchannel = \"qq\"\ntarget = \"t\"", "watch[0].entity_id"),
            ("[[home_assistant.watch]]\nentity_id = \"a.b\"\nto = \"\"\nmessage = \"m\"\nchannel = \"qq\"\ntarget = \"t\"", "watch[0].to"),
        ] {
            let e = parse(&format!("[home_assistant]\n{bad}\n")).unwrap_err().to_string();
            assert!(e.contains(&format!("key `home_assistant.{key}`")), "{bad}: {e}");
        }
        let many: String = (0..51)
            .map(|i| format!("[[home_assistant.watch]]\nentity_id = \"sensor.s{i}\"\nto = \"on\"\nmessage = \"m\"\nchannel = \"qq\"\ntarget = \"group:1\"\n"))
            .collect();
        let e = parse(&many).unwrap_err().to_string();
        assert!(e.contains("at most 50 watches"), "{e}");
    }
}
