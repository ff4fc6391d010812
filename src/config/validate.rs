//! Validation of the whole configuration: addresses, URLs, secrets, listeners beyond
//! loopback, and the range of every number, each error naming the file and the key.

use super::*;
use std::path::Path;

impl Config {
    pub(super) fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.to_string(),
            message,
        };
        if self
            .household
            .timezone
            .parse::<crate::zone::Zone>()
            .is_err()
        {
            return Err(invalid(
                "household.timezone",
                format!("unknown IANA time zone {:?}", self.household.timezone),
            ));
        }
        self.validate_limits(path)?;
        self.memory.validate(path)?;
        self.strategy.validate(path)?;
        self.home_assistant.validate(path)?;
        self.http.validate(path)?;
        if let Err((key, message)) = self.context.check() {
            return Err(invalid(&key, message));
        }
        if let Some(p) = &self.provider {
            p.validate(path)?;
            if let Some(url) = &p.base_url {
                if !(url.starts_with("http://") || url.starts_with("https://"))
                    || endpoint_url(url).is_none()
                {
                    return Err(invalid(
                        "provider.base_url",
                        format!(
                            "must be an http:// or https:// URL with a host, got {:?}",
                            display_url(url)
                        ),
                    ));
                }
            }
            if let Some(t) = p.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
                return Err(invalid(
                    "provider.temperature",
                    format!("must be between 0 and 2, got {t}"),
                ));
            }
        }
        for (key, addr) in [
            ("qq.listen", &self.qq.listen),
            ("voice.wyoming_listen", &self.voice.wyoming_listen),
            ("voice.ws_listen", &self.voice.ws_listen),
        ] {
            if let Some(a) = addr {
                if a.parse::<std::net::SocketAddr>().is_err() {
                    return Err(invalid(
                        key,
                        format!("{a:?} is not an address like 127.0.0.1:6199"),
                    ));
                }
            }
        }
        for (key, secret) in [
            ("qq.access_token", &self.qq.access_token),
            ("voice.token", &self.voice.token),
            (
                "provider.api_key",
                &self.provider.as_ref().and_then(|p| p.api_key.clone()),
            ),
        ] {
            if secret
                .as_ref()
                .is_some_and(|t| t.expose().trim().is_empty())
            {
                return Err(invalid(
                    key,
                    "is empty; remove the key or give it a value".into(),
                ));
            }
        }
        let exposed = |a: &Option<String>| {
            a.as_deref()
                .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
                .is_some_and(|a| !a.ip().is_loopback())
        };
        if exposed(&self.qq.listen) && self.qq.access_token.is_none() {
            return Err(invalid(
                "qq.listen",
                "listening beyond this machine needs qq.access_token (HOMEBOT_QQ_ACCESS_TOKEN); otherwise anyone on the network could speak as a family member".into(),
            ));
        }
        if exposed(&self.voice.ws_listen) && !self.voice.any_token() {
            return Err(invalid(
                "voice.ws_listen",
                "listening beyond this machine needs voice.token (HOMEBOT_VOICE_TOKEN) or a token for each of voice.satellites".into(),
            ));
        }
        if let Some(u) = &self.qq.forward_url {
            if !(u.starts_with("ws://") || u.starts_with("wss://")) {
                return Err(invalid(
                    "qq.forward_url",
                    format!("must start with ws:// or wss://, got {u:?}"),
                ));
            }
        }
        if !self.qq.path.starts_with('/') {
            return Err(invalid("qq.path", "must start with /".into()));
        }
        if self.qq.max_reply_chars < 20 {
            return Err(invalid("qq.max_reply_chars", "must be at least 20".into()));
        }
        if self.qq.heartbeat_timeout_secs == 0 || self.qq.action_timeout_secs == 0 {
            return Err(invalid(
                "qq.heartbeat_timeout_secs / qq.action_timeout_secs",
                "must be at least 1".into(),
            ));
        }
        self.validate_channel_limits(path)?;
        let mut seen = std::collections::HashSet::new();
        for (i, m) in self.members.iter().enumerate() {
            if !is_safe_id(&m.id) {
                return Err(invalid(
                    &format!("members[{i}].id"),
                    format!("{:?} must be letters, digits, '-', '_' or '.'", m.id),
                ));
            }
            if !seen.insert(m.id.clone()) {
                return Err(invalid(
                    &format!("members[{i}].id"),
                    format!("duplicate member id {:?}", m.id),
                ));
            }
        }
        Ok(())
    }
}

// ---- Limits: every duration, count and size a value can set, bounded so that no value
// that passes `config check` can overflow a `Duration`, an `Instant` or a multiplication
// at run time. (Kept as one block apart from the other checks; channel keys are bounded
// here too, their meaning lives in `channels.rs`.)

/// A key's allowed range; `None` when the key is not set (a default applies).
struct Bound {
    key: &'static str,
    value: Option<u64>,
    min: u64,
    max: u64,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

fn b(key: &'static str, value: impl TryInto<u64>, min: u64, max: u64) -> Bound {
    Bound {
        key,
        // a value too big for u64 is out of every range
        value: Some(value.try_into().unwrap_or(u64::MAX)),
        min,
        max,
    }
}

fn opt<T: TryInto<u64>>(key: &'static str, value: Option<T>, min: u64, max: u64) -> Bound {
    Bound {
        key,
        value: value.map(|v| v.try_into().unwrap_or(u64::MAX)),
        min,
        max,
    }
}

impl Config {
    /// The range of every number in the file (docs/configuration.md, "Bounds", lists them).
    fn limits(&self) -> Vec<Bound> {
        let a = &self.agent;
        let t = &self.tools;
        let q = &self.qq;
        let p = self.provider.clone().unwrap_or_default();
        vec![
            b("agent.max_tool_rounds", a.max_tool_rounds, 1, 50),
            b(
                "agent.normal_history_turns",
                a.normal_history_turns,
                0,
                1000,
            ),
            b("agent.turn_timeout_secs", a.turn_timeout_secs, 1, 86_400),
            b("agent.max_message_chars", a.max_message_chars, 1, 1_000_000),
            b(
                "agent.max_queued_per_chat",
                a.max_queued_per_chat,
                1,
                100_000,
            ),
            b("agent.shutdown_grace_secs", a.shutdown_grace_secs, 0, 3600),
            b("agent.max_reply_chars", a.max_reply_chars, 100, 1_000_000),
            b(
                "cron.expiry_check_secs",
                self.cron.expiry_check_secs,
                1,
                86_400,
            ),
            b(
                "tools.max_calls_per_response",
                t.max_calls_per_response,
                1,
                100,
            ),
            b("tools.max_calls_per_turn", t.max_calls_per_turn, 1, 1000),
            b(
                "tools.max_argument_bytes",
                t.max_argument_bytes,
                KIB,
                16 * MIB,
            ),
            b(
                "tools.max_write_bytes_per_turn",
                t.max_write_bytes_per_turn,
                KIB,
                1024 * MIB,
            ),
            b(
                "tools.max_zone_bytes",
                t.max_zone_bytes,
                KIB,
                64 * 1024 * MIB,
            ),
            b("tools.max_zone_files", t.max_zone_files, 1, 100_000),
            opt("provider.max_retries", p.max_retries, 0, 10),
            opt("provider.timeout_secs", p.timeout_secs, 1, 3600),
            opt("provider.max_concurrent", p.max_concurrent, 1, 64),
            opt("provider.max_tokens", p.max_tokens, 1, 1_000_000),
            opt(
                "provider.max_response_bytes",
                p.max_response_bytes,
                64 * KIB,
                64 * MIB,
            ),
            b("qq.max_reply_chars", q.max_reply_chars, 20, 100_000),
            b("qq.send_interval_ms", q.send_interval_ms, 0, 60_000),
            b("qq.action_timeout_secs", q.action_timeout_secs, 1, 600),
            b(
                "qq.heartbeat_timeout_secs",
                q.heartbeat_timeout_secs,
                1,
                3600,
            ),
            b("qq.reconnect_wait_secs", q.reconnect_wait_secs, 0, 3600),
            // one bound per key: `voice.max_frame_bytes` is bounded with the channel limits
            // below (1 KiB–1 MiB: a frame is held per connection, times the connection cap)
        ]
    }

    fn validate_limits(&self, path: &Path) -> Result<(), ConfigError> {
        for l in self.limits() {
            if let Some(v) = l.value.filter(|v| !(l.min..=l.max).contains(v)) {
                return Err(ConfigError::Invalid {
                    path: path.to_path_buf(),
                    key: l.key.to_string(),
                    message: format!("must be between {} and {}, got {v}", l.min, l.max),
                });
            }
        }
        if self.tools.max_calls_per_turn < self.tools.max_calls_per_response {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "tools.max_calls_per_turn".into(),
                message: format!(
                    "must be at least tools.max_calls_per_response ({})",
                    self.tools.max_calls_per_response
                ),
            });
        }
        Ok(())
    }
}

// Channel limits and voice identities (the `[qq]` / `[voice]` keys added for hostile
// peers), kept in their own block.
impl Config {
    fn validate_channel_limits(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.to_string(),
            message,
        };
        let v = &self.voice;
        if let Some(f) = &v.fallback {
            if f.channel == "voice" || f.channel.trim().is_empty() || f.target.trim().is_empty() {
                return Err(invalid(
                    "voice.fallback",
                    "needs another channel and a target, e.g. { channel = \"qq\", target = \"group:5550001\" }".into(),
                ));
            }
        }
        for (key, value, range) in [
            (
                // within the Cron's ten-minute delivery window
                "voice.fallback_after_secs",
                v.fallback_after_secs,
                1..=540,
            ),
            (
                "voice.wyoming_max_connections",
                v.wyoming_max_connections as u64,
                1..=65_536,
            ),
            (
                "voice.ws_max_connections",
                v.ws_max_connections as u64,
                1..=65_536,
            ),
            (
                "qq.max_connections",
                self.qq.max_connections as u64,
                1..=65_536,
            ),
            (
                "voice.wyoming_idle_timeout_secs",
                v.wyoming_idle_timeout_secs,
                1..=3600,
            ),
            (
                "voice.ws_idle_timeout_secs",
                v.ws_idle_timeout_secs,
                1..=3600,
            ),
            (
                "voice.handshake_timeout_secs",
                v.handshake_timeout_secs,
                1..=3600,
            ),
            (
                "qq.handshake_timeout_secs",
                self.qq.handshake_timeout_secs,
                1..=3600,
            ),
            (
                "voice.max_frame_bytes",
                v.max_frame_bytes as u64,
                1024..=1 << 20,
            ),
        ] {
            if !range.contains(&value) {
                return Err(invalid(
                    key,
                    format!(
                        "must be between {} and {}, got {value}",
                        range.start(),
                        range.end()
                    ),
                ));
            }
        }
        self.validate_speakers(path)
    }

    /// Every speaker mapping names a member; every satellite id is safe and unique, and
    /// each token names one satellite.
    fn validate_speakers(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.to_string(),
            message,
        };
        let v = &self.voice;
        let member = |id: &str| self.members.iter().any(|m| m.id == id);
        for (speaker, m) in &v.wyoming_speakers {
            if !member(m) {
                return Err(invalid(
                    &format!("voice.wyoming_speakers.{speaker}"),
                    format!("{m:?} is not a member id"),
                ));
            }
        }
        for (satellite, m) in &self.home_assistant.speakers {
            let key = format!("home_assistant.speakers.{satellite:?}");
            if !satellite.starts_with("assist_satellite.") {
                return Err(invalid(
                    &key,
                    "must be an assist_satellite entity id".into(),
                ));
            }
            if !member(m) {
                return Err(invalid(&key, format!("{m:?} is not a member id")));
            }
        }
        let mut ids = std::collections::HashSet::new();
        let mut tokens: Vec<&str> = v.token.iter().map(|t| t.expose()).collect();
        for (i, s) in v.satellites.iter().enumerate() {
            let key = |k: &str| format!("voice.satellites[{i}].{k}");
            if !is_safe_id(&s.id) {
                return Err(invalid(
                    &key("id"),
                    format!("{:?} must be letters, digits, '-', '_' or '.'", s.id),
                ));
            }
            if !ids.insert(s.id.as_str()) {
                return Err(invalid(
                    &key("id"),
                    format!("duplicate satellite id {:?}", s.id),
                ));
            }
            if let Some(t) = &s.token {
                if t.expose().trim().is_empty() {
                    return Err(invalid(
                        &key("token"),
                        "is empty; remove the key or give it a value".into(),
                    ));
                }
                // a token names one satellite, or it could not bind the id
                if tokens.contains(&t.expose()) {
                    return Err(invalid(
                        &key("token"),
                        "is already used by voice.token or another satellite".into(),
                    ));
                }
                tokens.push(t.expose());
            }
            for (speaker, m) in &s.speakers {
                if !member(m) {
                    return Err(invalid(
                        &format!("{}.{speaker}", key("speakers")),
                        format!("{m:?} is not a member id"),
                    ));
                }
            }
        }
        Ok(())
    }
}
