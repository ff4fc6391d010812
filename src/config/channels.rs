//! The channel sections of the configuration: `[qq]` (OneBot v11) and `[voice]`.

use super::*;

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
    /// Largest Wyoming header line / data / payload accepted, in bytes.
    pub max_frame_bytes: usize,
}

impl VoiceConfig {
    pub fn enabled(&self) -> bool {
        self.wyoming_listen.is_some() || self.ws_listen.is_some()
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
        }
    }
}

impl QqConfig {
    pub fn enabled(&self) -> bool {
        self.listen.is_some() || self.forward_url.is_some()
    }
}
