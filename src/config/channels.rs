//! The channel sections of the configuration: `[qq]` (OneBot v11) and `[voice]`.

use super::*;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The voice channel: a Wyoming handle service and a native satellite WebSocket.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VoiceConfig {
    /// Wyoming TCP server, e.g. `127.0.0.1:10700`.
    pub wyoming_listen: Option<String>,
    /// Native satellite WebSocket server, e.g. `127.0.0.1:10800` (path `/voice/ws`).
    pub ws_listen: Option<String>,
    /// Required from native satellites (`Authorization: Bearer` or `?token=`) when set.
    pub token: Option<Secret>,
    /// Languages advertised to Home Assistant.
    pub languages: Vec<String>,
    /// Largest Wyoming header line and data section accepted, in bytes (payloads are
    /// refused: a handle service takes no audio).
    pub max_frame_bytes: usize,
    /// Wyoming connections open at once; more are answered with an `error` and closed.
    pub wyoming_max_connections: usize,
    /// A Wyoming connection that sends no complete event for this long is closed.
    pub wyoming_idle_timeout_secs: u64,
    /// Satellite WebSockets (and handshakes under way) open at once; more are closed.
    pub ws_max_connections: usize,
    /// A satellite WebSocket that sends nothing, not even the answer to the server's
    /// ping (sent every third of this), for this long is closed.
    pub ws_idle_timeout_secs: u64,
    /// An HTTP request on the satellite port must be complete (headers) within this.
    pub handshake_timeout_secs: u64,
    /// Wyoming speaker ids this household trusts, mapped to member ids. Wyoming has no
    /// authentication, so every other speaker id is `guest`.
    pub wyoming_speakers: BTreeMap<String, String>,
    /// Satellites with their own token and speaker mapping (`[[voice.satellites]]`).
    pub satellites: Vec<SatelliteConfig>,
    /// Where a voice reminder goes when nobody heard it: held for the front end's next
    /// turn, and if none comes within `fallback_after_secs`, sent here instead — a
    /// channel's door and target, e.g. `{ channel = "qq", target = "group:5550001" }`.
    pub fallback: Option<FallbackChat>,
    pub fallback_after_secs: u64,
}

/// A chat to deliver to instead (see `voice.fallback`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FallbackChat {
    pub channel: String,
    pub target: String,
}

/// One native satellite: its id, the token that alone may claim the id (else the shared
/// `voice.token`), and which of its speaker ids are which members.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SatelliteConfig {
    pub id: String,
    #[serde(default)]
    pub token: Option<Secret>,
    /// Speaker id as the satellite reports it → member id.
    #[serde(default)]
    pub speakers: BTreeMap<String, String>,
}

impl VoiceConfig {
    pub fn enabled(&self) -> bool {
        self.wyoming_listen.is_some() || self.ws_listen.is_some()
    }

    /// Whether satellites must present a token at all (the shared one or their own).
    pub fn any_token(&self) -> bool {
        self.token.is_some() || self.satellites.iter().any(|s| s.token.is_some())
    }
}

impl Default for VoiceConfig {
    fn default() -> Self {
        Self {
            wyoming_listen: None,
            ws_listen: None,
            token: None,
            languages: vec!["zh".into(), "en".into()],
            max_frame_bytes: 64 * 1024,
            wyoming_max_connections: 64,
            wyoming_idle_timeout_secs: 30,
            ws_max_connections: 64,
            ws_idle_timeout_secs: 90,
            handshake_timeout_secs: 10,
            wyoming_speakers: BTreeMap::new(),
            satellites: Vec::new(),
            fallback: None,
            fallback_after_secs: 300,
        }
    }
}

/// Who may reach the bot through a QQ door.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Open,
    #[default]
    Allowlist,
    Disabled,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct QqPolicy {
    pub policy: Access,
    /// Group ids (for `groups`) or QQ ids (for `private`); household members' QQ ids are
    /// always known private senders under `allowlist`.
    pub allow: Vec<String>,
}

/// Who may switch run modes from a group chat.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum QqSwitchPolicy {
    /// Anyone allowed to talk to the bot.
    #[default]
    Any,
    /// Only household members (`[[members]] qq_ids`).
    Members,
    /// Nobody from a group (private chats still can).
    Nobody,
}

/// The QQ channel (OneBot v11). Enabled when `listen` or `forward_url` is set.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QqConfig {
    /// Reverse WebSocket server address, e.g. `127.0.0.1:6199` (loopback unless you say otherwise).
    pub listen: Option<String>,
    pub path: String,
    pub access_token: Option<Secret>,
    /// Forward WebSocket: homebot connects to the implementation, e.g. `ws://127.0.0.1:6700`.
    pub forward_url: Option<String>,
    pub groups: QqPolicy,
    pub private: QqPolicy,
    pub mode_switch: QqSwitchPolicy,
    /// Longer replies are split into several messages.
    pub max_reply_chars: usize,
    /// Minimum gap between two messages to the same group or person.
    pub send_interval_ms: u64,
    pub action_timeout_secs: u64,
    /// A connection silent this long (or three missed heartbeats) is closed.
    pub heartbeat_timeout_secs: u64,
    /// A reply with no connection waits this long for a reconnect, then is dropped (logged).
    pub reconnect_wait_secs: u64,
    /// Reverse-WebSocket connections (and handshakes under way) open at once.
    pub max_connections: usize,
    /// An HTTP request on the QQ port must be complete (headers) within this.
    pub handshake_timeout_secs: u64,
}

impl Default for QqConfig {
    fn default() -> Self {
        Self {
            listen: None,
            path: "/onebot/v11/ws".into(),
            access_token: None,
            forward_url: None,
            groups: QqPolicy::default(),
            private: QqPolicy::default(),
            mode_switch: QqSwitchPolicy::Any,
            max_reply_chars: 500,
            send_interval_ms: 1000,
            action_timeout_secs: 15,
            heartbeat_timeout_secs: 90,
            reconnect_wait_secs: 60,
            max_connections: 8,
            handshake_timeout_secs: 10,
        }
    }
}

impl QqConfig {
    pub fn enabled(&self) -> bool {
        self.listen.is_some() || self.forward_url.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(s: &str) -> Result<Config, ConfigError> {
        Config::parse(s, Path::new("/ws/config.toml"))
    }

    #[test]
    fn voice_identities_and_limits_are_checked() {
        let ok = parse(
            "[[members]]\nid = \"mom\"\n[voice]\nwyoming_speakers = { \"ha-x\" = \"mom\" }\n\
             [[voice.satellites]]\nid = \"kitchen\"\ntoken = \"k\"\nspeakers = { \"p1\" = \"mom\" }\n",
        )
        .unwrap();
        assert_eq!(ok.voice.satellites[0].speakers["p1"], "mom");
        let ha = parse("[[members]]\nid = \"mom\"\n[home_assistant]\nspeakers = { \"assist_satellite.kitchen\" = \"mom\" }\n").unwrap();
        assert_eq!(
            ha.home_assistant.speakers["assist_satellite.kitchen"],
            "mom"
        );
        assert_eq!(
            (ok.voice.wyoming_max_connections, ok.qq.max_connections),
            (64, 8)
        );
        for (bad, key) in [
            (
                "[voice]\nwyoming_speakers = { \"x\" = \"nobody\" }\n",
                "voice.wyoming_speakers.x",
            ),
            (
                "[voice]\ntoken = \"t\"\n[[voice.satellites]]\nid = \"a\"\ntoken = \"t\"\n",
                "voice.satellites[0].token",
            ),
            (
                "[[voice.satellites]]\nid = \"a\"\n[[voice.satellites]]\nid = \"a\"\n",
                "voice.satellites[1].id",
            ),
            (
                "[[voice.satellites]]\nid = \"../x\"\n",
                "voice.satellites[0].id",
            ),
            (
                "[home_assistant]\nspeakers = { \"assist_satellite.k\" = \"nobody\" }\n",
                "home_assistant.speakers.\"assist_satellite.k\"",
            ),
            (
                "[[members]]\nid = \"mom\"\n[home_assistant]\nspeakers = { \"media_player.k\" = \"mom\" }\n",
                "home_assistant.speakers.\"media_player.k\"",
            ),
            (
                "[voice]\nwyoming_max_connections = 0\n",
                "voice.wyoming_max_connections",
            ),
            (
                "[qq]\nhandshake_timeout_secs = 0\n",
                "qq.handshake_timeout_secs",
            ),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("key `{key}`")), "{bad}: {e}");
        }
        // a satellite's own token is enough to listen beyond loopback
        parse("[voice]\nws_listen = \"192.168.1.5:10800\"\n[[voice.satellites]]\nid = \"k\"\ntoken = \"k\"\n").unwrap();
    }
}
