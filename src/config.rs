//! The household's configuration: one TOML file in the workspace (`config.toml`), with
//! environment overrides for the provider. Parsed with `deny_unknown_fields`, validated
//! at start; every error names the file and the key.

use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

pub use crate::workspace::CONFIG_FILE;
pub const DEEPSEEK_BASE_URL: &str = "https://api.deepseek.com";
pub const DEEPSEEK_MODEL: &str = "deepseek-chat";
/// Output cap per call unless configured: household answers are short, and an unbounded
/// runaway reply from a small local model would fill its whole context.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// A loopback endpoint is usually a small model on the CPU of the same box: slower per
/// token, so it gets more time and a smaller output cap unless configured.
pub const LOCAL_TIMEOUT_SECS: u64 = 300;
pub const LOCAL_MAX_TOKENS: u32 = 1024;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: key `{key}`: {message}")]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
}

/// A secret string (API key, access token). `Debug` and `Display` never show it.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub household: Household,
    pub provider: Option<ProviderConfig>,
    pub agent: AgentConfig,
    pub cron: CronConfig,
    pub skills: SkillsConfig,
    pub qq: QqConfig,
    pub voice: VoiceConfig,
    pub members: Vec<Member>,
}

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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Household {
    pub name: String,
    /// IANA time zone name; all recorded times use its offset.
    pub timezone: String,
}

impl Default for Household {
    fn default() -> Self {
        Self {
            name: "家".into(),
            timezone: "Asia/Shanghai".into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    /// OpenAI-compatible base URL (the part before `/chat/completions`).
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<Secret>,
    /// Name of an environment variable holding the API key.
    pub api_key_env: Option<String>,
    pub timeout_secs: Option<u64>,
    pub max_retries: Option<u32>,
    pub max_concurrent: Option<usize>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Provider round trips with tool calls allowed in one turn.
    pub max_tool_rounds: u32,
    /// Earlier turns of the same chat sent along outside a mode.
    pub normal_history_turns: usize,
    /// A turn that has not finished after this long is ended with an error reply.
    pub turn_timeout_secs: u64,
    /// Longest user message accepted, in characters.
    pub max_message_chars: usize,
    /// Messages of one chat that may wait behind the one being answered.
    pub max_queued_per_chat: usize,
    /// On shutdown, how long admitted turns get to finish and be recorded.
    pub shutdown_grace_secs: u64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_tool_rounds: 6,
            normal_history_turns: 20,
            turn_timeout_secs: 300,
            max_message_chars: 8000,
            max_queued_per_chat: 16,
            shutdown_grace_secs: 30,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CronConfig {
    /// How often the mode-expiry job runs.
    pub expiry_check_secs: u64,
}

impl Default for CronConfig {
    fn default() -> Self {
        Self {
            expiry_check_secs: 30,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsConfig {
    /// Extra skill folders, scanned after `<workspace>/skills` and before the built-in ones.
    pub dirs: Vec<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Member {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub qq_ids: Vec<String>,
    #[serde(default)]
    pub speaker_ids: Vec<String>,
}

/// The model a request names: a configured name, or none — then the request carries no
/// `model` and the endpoint answers with its default (llama.cpp's server does; Ollama and
/// OpenAI refuse, which `homebot doctor` points out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelChoice(pub Option<String>);

impl ModelChoice {
    pub fn name(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().unwrap_or("(endpoint default)"))
    }
}

/// The provider settings after environment overrides: what the Provider will use.
#[derive(Debug, Clone)]
pub struct ResolvedProvider {
    pub base_url: String,
    pub model: ModelChoice,
    /// Only ever a key meant for `base_url` (see [`Config::resolve_provider`]).
    pub api_key: Option<Secret>,
    /// Where the key came from (a variable or config key name), for `doctor`; never the key.
    pub api_key_source: Option<&'static str>,
    pub timeout_secs: u64,
    pub max_retries: u32,
    pub max_concurrent: usize,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
}

/// What the environment contributes; separate from `std::env` so tests can drive it.
#[derive(Debug, Clone, Default)]
pub struct EnvOverrides {
    pub base_url: Option<String>,
    pub api_key: Option<Secret>,
    pub model: Option<String>,
    pub deepseek_api_key: Option<Secret>,
    pub qq_listen: Option<String>,
    pub qq_access_token: Option<Secret>,
    pub qq_allow_groups: Option<String>,
    pub qq_allow_users: Option<String>,
    pub wyoming_listen: Option<String>,
    pub voice_ws_listen: Option<String>,
    pub voice_token: Option<Secret>,
}

impl EnvOverrides {
    pub fn from_env() -> Self {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Self {
            base_url: get("HOMEBOT_BASE_URL"),
            api_key: get("HOMEBOT_API_KEY").map(Secret),
            model: get("HOMEBOT_MODEL"),
            deepseek_api_key: get("DEEPSEEK_API_KEY").map(Secret),
            qq_listen: get("HOMEBOT_QQ_LISTEN"),
            qq_access_token: get("HOMEBOT_QQ_ACCESS_TOKEN").map(Secret),
            qq_allow_groups: get("HOMEBOT_QQ_ALLOW_GROUPS"),
            qq_allow_users: get("HOMEBOT_QQ_ALLOW_USERS"),
            wyoming_listen: get("HOMEBOT_WYOMING_LISTEN"),
            voice_ws_listen: get("HOMEBOT_VOICE_WS_LISTEN"),
            voice_token: get("HOMEBOT_VOICE_TOKEN").map(Secret),
        }
    }
}

fn id_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

pub const DEFAULT_CONFIG: &str = r#"# homebot configuration. Every key is optional; defaults are shown commented out.

[household]
name = "家"
# IANA time zone; recorded times and mode expiry (00:10 after the start day) use it.
timezone = "Asia/Shanghai"

# The LLM. Environment variables override this section:
#   HOMEBOT_BASE_URL, HOMEBOT_API_KEY, HOMEBOT_MODEL; DEEPSEEK_API_KEY alone selects DeepSeek.
# A key is only sent to the endpoint it was given for: DEEPSEEK_API_KEY only to DeepSeek.
# [provider]
# base_url = "https://api.deepseek.com"      # any OpenAI-compatible base, e.g. http://127.0.0.1:8080/v1
# model = "deepseek-chat"                    # DeepSeek's default; other endpoints: their own default
# api_key_env = "DEEPSEEK_API_KEY"           # or api_key = "sk-..." (kept out of logs)
# timeout_secs = 60                          # 300 for a loopback endpoint (a local CPU model); 1..=3600
# max_retries = 2                            # 0..=10
# max_concurrent = 4                         # 1..=64
# max_tokens = 4096                          # output cap per call (tool arguments count too);
#                                            # 1024 for a loopback endpoint

# [agent]
# max_tool_rounds = 6
# normal_history_turns = 20
# turn_timeout_secs = 300
# max_message_chars = 8000
# max_queued_per_chat = 16
# shutdown_grace_secs = 30

# [cron]
# expiry_check_secs = 30

# [skills]
# dirs = ["/srv/homebot/skills"]

# QQ through OneBot v11 (NapCat, Lagrange.OneBot, LLOneBot). Environment overrides:
#   HOMEBOT_QQ_LISTEN, HOMEBOT_QQ_ACCESS_TOKEN, HOMEBOT_QQ_ALLOW_GROUPS, HOMEBOT_QQ_ALLOW_USERS.
# [qq]
# listen = "127.0.0.1:6199"                  # reverse WebSocket: ws://127.0.0.1:6199/onebot/v11/ws
# access_token = "a-long-random-string"
# forward_url = "ws://127.0.0.1:6700"        # or: homebot connects to the implementation
# groups = { policy = "allowlist", allow = ["5550001"] }   # open | allowlist | disabled
# private = { policy = "allowlist", allow = [] }          # members' qq_ids are always allowed
# mode_switch = "any"                        # any | members | nobody (from groups)
# max_reply_chars = 500
# send_interval_ms = 1000

# Voice. Environment overrides: HOMEBOT_WYOMING_LISTEN, HOMEBOT_VOICE_WS_LISTEN, HOMEBOT_VOICE_TOKEN.
# [voice]
# wyoming_listen = "127.0.0.1:10700"         # Wyoming handle service (Home Assistant)
# ws_listen = "127.0.0.1:10800"              # native satellite WebSocket at /voice/ws
# token = "another-long-random-string"

# Household members: `id` is the speaker id; USER.md lives in members/<id>/USER.md.
# [[members]]
# id = "mom"
# name = "妈妈"
# qq_ids = ["10001"]
# speaker_ids = ["kitchen-mom"]
"#;

impl Config {
    /// Load `<workspace>/config.toml`, writing the commented default if it is missing.
    pub fn load_or_init(workspace: &Path) -> Result<Self, ConfigError> {
        let path = workspace.join(CONFIG_FILE);
        if !path.exists() {
            crate::fsutil::write_atomic(&path, DEFAULT_CONFIG.as_bytes()).map_err(|source| {
                ConfigError::Read {
                    path: path.clone(),
                    source,
                }
            })?;
        }
        Self::load(&path)
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// Apply the channel environment overrides (the provider ones are applied by
    /// [`Config::resolve_provider`]), then re-check what they touched.
    pub fn apply_env(&mut self, env: &EnvOverrides) -> Result<(), ConfigError> {
        if let Some(l) = &env.qq_listen {
            self.qq.listen = Some(l.clone());
        }
        if let Some(t) = &env.qq_access_token {
            self.qq.access_token = Some(t.clone());
        }
        if let Some(g) = &env.qq_allow_groups {
            self.qq.groups = QqPolicy {
                policy: Access::Allowlist,
                allow: id_list(g),
            };
        }
        if let Some(u) = &env.qq_allow_users {
            self.qq.private = QqPolicy {
                policy: Access::Allowlist,
                allow: id_list(u),
            };
        }
        if let Some(l) = &env.wyoming_listen {
            self.voice.wyoming_listen = Some(l.clone());
        }
        if let Some(l) = &env.voice_ws_listen {
            self.voice.ws_listen = Some(l.clone());
        }
        if let Some(t) = &env.voice_token {
            self.voice.token = Some(t.clone());
        }
        self.validate(Path::new("environment (HOMEBOT_*)"))
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.to_string(),
            message,
        };
        if self.household.timezone.parse::<chrono_tz::Tz>().is_err() {
            return Err(invalid(
                "household.timezone",
                format!("unknown IANA time zone {:?}", self.household.timezone),
            ));
        }
        if self.agent.max_tool_rounds == 0 {
            return Err(invalid(
                "agent.max_tool_rounds",
                "must be at least 1".into(),
            ));
        }
        if self.agent.max_queued_per_chat == 0 {
            return Err(invalid(
                "agent.max_queued_per_chat",
                "must be at least 1".into(),
            ));
        }
        if self.agent.turn_timeout_secs == 0 {
            return Err(invalid(
                "agent.turn_timeout_secs",
                "must be at least 1".into(),
            ));
        }
        if self.cron.expiry_check_secs == 0 {
            return Err(invalid(
                "cron.expiry_check_secs",
                "must be at least 1".into(),
            ));
        }
        if let Some(p) = &self.provider {
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
            for (key, value, range) in [
                ("provider.max_retries", p.max_retries.map(u64::from), 0..=10),
                ("provider.timeout_secs", p.timeout_secs, 1..=3600),
                (
                    "provider.max_concurrent",
                    p.max_concurrent.map(|n| n as u64),
                    1..=64,
                ),
                (
                    "provider.max_tokens",
                    p.max_tokens.map(u64::from),
                    1..=1_000_000,
                ),
            ] {
                if let Some(v) = value.filter(|v| !range.contains(v)) {
                    return Err(invalid(
                        key,
                        format!(
                            "must be between {} and {}, got {v}",
                            range.start(),
                            range.end()
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
        if exposed(&self.voice.ws_listen) && self.voice.token.is_none() {
            return Err(invalid(
                "voice.ws_listen",
                "listening beyond this machine needs voice.token (HOMEBOT_VOICE_TOKEN)".into(),
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

    pub fn timezone(&self) -> chrono_tz::Tz {
        self.household
            .timezone
            .parse()
            .expect("timezone was validated when the config was loaded")
    }

    /// The provider after environment overrides, or `None` when nothing is configured.
    ///
    /// A key goes only to the endpoint it was given for: `HOMEBOT_API_KEY` to the endpoint
    /// in effect; `provider.api_key` / `api_key_env` to `provider.base_url` (or, when the
    /// file names no URL, to the endpoint in effect); `DEEPSEEK_API_KEY` only to DeepSeek.
    /// A custom URL with no key of its own gets none.
    pub fn resolve_provider(&self, env: &EnvOverrides) -> Option<ResolvedProvider> {
        let file = self.provider.clone().unwrap_or_default();
        let file_key = match (&file.api_key, &file.api_key_env) {
            (Some(k), _) => Some((k.clone(), "provider.api_key")),
            (None, Some(var)) => std::env::var(var)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .map(|v| (Secret(v), "provider.api_key_env")),
            (None, None) => None,
        };
        let deepseek_key = env
            .deepseek_api_key
            .clone()
            .map(|k| (k, "DEEPSEEK_API_KEY"));
        let base_url = env
            .base_url
            .clone()
            .or(file.base_url.clone())
            .map(|u| u.trim_end_matches('/').to_string());
        let (base_url, key) = match base_url {
            Some(url) => {
                // the file's key belongs to the file's URL, not to one the environment
                // swapped in
                let file_key = file_key.filter(|_| {
                    file.base_url
                        .as_deref()
                        .is_none_or(|f| same_endpoint(f, &url))
                });
                let key = env
                    .api_key
                    .clone()
                    .map(|k| (k, "HOMEBOT_API_KEY"))
                    .or(file_key)
                    .or(deepseek_key.filter(|_| is_deepseek(&url)));
                (url, key)
            }
            None => {
                let key = env
                    .api_key
                    .clone()
                    .map(|k| (k, "HOMEBOT_API_KEY"))
                    .or(file_key)
                    .or(deepseek_key);
                (DEEPSEEK_BASE_URL.to_string(), Some(key?))
            }
        };
        let model = env
            .model
            .clone()
            .or(file.model.clone())
            .or_else(|| is_deepseek(&base_url).then(|| DEEPSEEK_MODEL.to_string()));
        let local = is_loopback(&base_url);
        Some(ResolvedProvider {
            model: ModelChoice(model),
            api_key_source: key.as_ref().map(|(_, src)| *src),
            api_key: key.map(|(k, _)| k),
            timeout_secs: file.timeout_secs.unwrap_or(if local {
                LOCAL_TIMEOUT_SECS
            } else {
                DEFAULT_TIMEOUT_SECS
            }),
            max_retries: file.max_retries.unwrap_or(2),
            max_concurrent: file.max_concurrent.unwrap_or(4),
            temperature: file.temperature,
            max_tokens: Some(file.max_tokens.unwrap_or(if local {
                LOCAL_MAX_TOKENS
            } else {
                DEFAULT_MAX_TOKENS
            })),
            base_url,
        })
    }

    /// The member a channel identity belongs to: by member id, speaker id or QQ id.
    pub fn member_for(&self, speaker_id: &str) -> Option<&Member> {
        self.members.iter().find(|m| {
            m.id == speaker_id
                || m.speaker_ids.iter().any(|s| s == speaker_id)
                || m.qq_ids.iter().any(|q| q == speaker_id)
        })
    }
}

/// A base URL parsed, without credentials, query or fragment; `None` unless it is http(s)
/// with a host.
pub fn endpoint_url(url: &str) -> Option<reqwest::Url> {
    let mut u = reqwest::Url::parse(url.trim()).ok()?;
    if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
        return None;
    }
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    Some(u)
}

/// A base URL fit to print: no user name or password, no query string (either may carry
/// a key), no trailing `/`.
pub fn display_url(url: &str) -> String {
    match endpoint_url(url) {
        Some(u) => u.as_str().trim_end_matches('/').to_string(),
        // not a URL: show only what precedes anything that could be a credential
        None => url
            .split(['?', '#', '@'])
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

fn same_endpoint(a: &str, b: &str) -> bool {
    match (endpoint_url(a), endpoint_url(b)) {
        (Some(a), Some(b)) => {
            a.scheme() == b.scheme()
                && a.host() == b.host()
                && a.port_or_known_default() == b.port_or_known_default()
                && a.path().trim_end_matches('/') == b.path().trim_end_matches('/')
        }
        _ => false,
    }
}

/// DeepSeek's own endpoint: `https://api.deepseek.com`, with or without `/` or `/v1`.
/// Only there does `DEEPSEEK_API_KEY` go.
pub fn is_deepseek(url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(url.trim()) else {
        return false;
    };
    u.scheme() == "https"
        && u.host_str() == Some("api.deepseek.com")
        && u.port().is_none()
        && u.username().is_empty()
        && u.password().is_none()
        && u.query().is_none()
        && matches!(u.path().trim_end_matches('/'), "" | "/v1")
}

/// The endpoint is on this machine (127.0.0.0/8, ::1, localhost).
pub fn is_loopback(url: &str) -> bool {
    let Some(u) = endpoint_url(url) else {
        return false;
    };
    let host = u.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Ids used in file names: no separators, no `..`.
pub fn is_safe_id(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> PathBuf {
        PathBuf::from("/ws/config.toml")
    }

    #[test]
    fn default_config_parses() {
        let c = Config::parse(DEFAULT_CONFIG, &p()).unwrap();
        assert_eq!(c.household.timezone, "Asia/Shanghai");
        assert!(c.provider.is_none());
    }

    #[test]
    fn unknown_key_names_file_and_key() {
        let err = Config::parse("[household]\ntimezon = \"UTC\"\n", &p()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("/ws/config.toml"), "{msg}");
        assert!(msg.contains("timezon"), "{msg}");
    }

    #[test]
    fn bad_timezone_names_key() {
        let err = Config::parse("[household]\ntimezone = \"Mars/Base\"\n", &p()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/ws/config.toml: key `household.timezone`: unknown IANA time zone \"Mars/Base\""
        );
    }

    #[test]
    fn duplicate_member_is_refused() {
        let err =
            Config::parse("[[members]]\nid=\"a\"\n[[members]]\nid=\"a\"\n", &p()).unwrap_err();
        assert!(err.to_string().contains("members[1].id"), "{err}");
    }

    #[test]
    fn provider_resolution_order() {
        let c = Config::default();
        assert!(c.resolve_provider(&EnvOverrides::default()).is_none());
        let ds = EnvOverrides {
            deepseek_api_key: Some(Secret::new("k")),
            ..Default::default()
        };
        let r = c.resolve_provider(&ds).unwrap();
        assert_eq!(r.base_url, DEEPSEEK_BASE_URL);
        assert_eq!(r.model.name(), Some(DEEPSEEK_MODEL));
        assert_eq!((r.timeout_secs, r.max_tokens), (60, Some(4096)));
        let local = EnvOverrides {
            base_url: Some("http://127.0.0.1:8080/v1/".into()),
            model: Some("smol".into()),
            ..Default::default()
        };
        let r = c.resolve_provider(&local).unwrap();
        assert_eq!(r.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(r.model.name(), Some("smol"));
        assert!(r.api_key.is_none());
    }

    fn key_of(r: &ResolvedProvider) -> Option<&str> {
        r.api_key.as_ref().map(Secret::expose)
    }

    #[test]
    fn keys_go_only_to_their_endpoint() {
        let c = Config::default();
        let ds = |url: &str| EnvOverrides {
            base_url: Some(url.into()),
            deepseek_api_key: Some(Secret::new("sk-deepseek")),
            ..Default::default()
        };
        // DeepSeek's key to DeepSeek, however the URL is spelled
        for url in [
            "https://api.deepseek.com",
            "https://api.deepseek.com/",
            "https://api.deepseek.com/v1",
            "https://api.deepseek.com/v1/",
        ] {
            let r = c.resolve_provider(&ds(url)).unwrap();
            assert_eq!(key_of(&r), Some("sk-deepseek"), "{url}");
            assert_eq!(r.api_key_source, Some("DEEPSEEK_API_KEY"));
            assert_eq!(r.model.name(), Some(DEEPSEEK_MODEL), "{url}");
        }
        // …and to nothing else, look-alikes included
        for url in [
            "http://127.0.0.1:8080/v1",
            "https://example.com/v1",
            "http://api.deepseek.com",
            "https://api.deepseek.com.evil.example",
            "https://api.deepseek.com:8443",
            "https://api.deepseek.com/proxy",
        ] {
            let r = c.resolve_provider(&ds(url)).unwrap();
            assert_eq!(key_of(&r), None, "{url}");
            assert_eq!(r.api_key_source, None, "{url}");
        }
        // a key given for the custom endpoint goes there
        let mut own = ds("http://127.0.0.1:8080/v1");
        own.api_key = Some(Secret::new("sk-local"));
        let r = c.resolve_provider(&own).unwrap();
        assert_eq!(key_of(&r), Some("sk-local"));
        assert_eq!(r.api_key_source, Some("HOMEBOT_API_KEY"));
        // the file's key belongs to the file's URL, not to one the environment swapped in
        let file = Config::parse(
            "[provider]\nbase_url = \"https://llm.example/v1\"\napi_key = \"sk-file\"\n",
            &p(),
        )
        .unwrap();
        let r = file.resolve_provider(&EnvOverrides::default()).unwrap();
        assert_eq!(key_of(&r), Some("sk-file"));
        let r = file
            .resolve_provider(&EnvOverrides {
                base_url: Some("https://llm.example/v1/".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(
            key_of(&r),
            Some("sk-file"),
            "same endpoint, spelled with a /"
        );
        let r = file
            .resolve_provider(&EnvOverrides {
                base_url: Some("http://10.0.0.9:8080/v1".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(key_of(&r), None);
        // a file key with no file URL follows the endpoint in effect; none means DeepSeek
        let keyonly = Config::parse("[provider]\napi_key = \"sk-file\"\n", &p()).unwrap();
        let r = keyonly.resolve_provider(&EnvOverrides::default()).unwrap();
        assert_eq!(
            (r.base_url.as_str(), key_of(&r)),
            (DEEPSEEK_BASE_URL, Some("sk-file"))
        );
        // DEEPSEEK_API_KEY alone still selects DeepSeek
        let r = c
            .resolve_provider(&EnvOverrides {
                deepseek_api_key: Some(Secret::new("sk-deepseek")),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(
            (r.base_url.as_str(), key_of(&r)),
            (DEEPSEEK_BASE_URL, Some("sk-deepseek"))
        );
    }

    #[test]
    fn custom_endpoints_have_no_default_model_and_local_ones_more_time() {
        let c = Config::default();
        let env = |url: &str| EnvOverrides {
            base_url: Some(url.into()),
            ..Default::default()
        };
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8080/v1",
            "http://127.0.0.2:8080",
        ] {
            let r = c.resolve_provider(&env(url)).unwrap();
            assert_eq!(r.model, ModelChoice(None), "{url}");
            assert_eq!(r.model.to_string(), "(endpoint default)");
            assert_eq!(
                (r.timeout_secs, r.max_tokens),
                (LOCAL_TIMEOUT_SECS, Some(LOCAL_MAX_TOKENS)),
                "{url}"
            );
        }
        for url in ["https://llm.example/v1", "http://192.168.1.5:8080/v1"] {
            let r = c.resolve_provider(&env(url)).unwrap();
            assert_eq!(r.model, ModelChoice(None), "{url}");
            assert_eq!((r.timeout_secs, r.max_tokens), (60, Some(4096)), "{url}");
        }
        // configured values win over the local defaults
        let cfg = Config::parse("[provider]\ntimeout_secs = 20\nmax_tokens = 300\n", &p()).unwrap();
        let r = cfg
            .resolve_provider(&env("http://127.0.0.1:8080/v1"))
            .unwrap();
        assert_eq!((r.timeout_secs, r.max_tokens), (20, Some(300)));
    }

    #[test]
    fn provider_numbers_are_bounded_and_name_their_key() {
        for (toml, key, msg) in [
            (
                "max_retries = 11",
                "provider.max_retries",
                "must be between 0 and 10, got 11",
            ),
            (
                "timeout_secs = 0",
                "provider.timeout_secs",
                "must be between 1 and 3600, got 0",
            ),
            ("timeout_secs = 3601", "provider.timeout_secs", "got 3601"),
            (
                "max_concurrent = 0",
                "provider.max_concurrent",
                "must be between 1 and 64, got 0",
            ),
            ("max_concurrent = 65", "provider.max_concurrent", "got 65"),
            (
                "max_tokens = 0",
                "provider.max_tokens",
                "must be between 1 and 1000000, got 0",
            ),
            ("max_tokens = 1000001", "provider.max_tokens", "got 1000001"),
            (
                "base_url = \"ftp://x\"",
                "provider.base_url",
                "must be an http",
            ),
            ("base_url = \"http://\"", "provider.base_url", "with a host"),
        ] {
            let err = Config::parse(&format!("[provider]\n{toml}\n"), &p()).unwrap_err();
            let s = err.to_string();
            assert!(
                s.starts_with(&format!("/ws/config.toml: key `{key}`: ")),
                "{s}"
            );
            assert!(s.contains(msg), "{s}");
        }
        Config::parse(
            "[provider]\nmax_retries = 10\ntimeout_secs = 3600\nmax_concurrent = 64\nmax_tokens = 1000000\n",
            &p(),
        )
        .unwrap();
        Config::parse(
            "[provider]\nmax_retries = 0\ntimeout_secs = 1\nmax_concurrent = 1\nmax_tokens = 1\n",
            &p(),
        )
        .unwrap();
    }

    #[test]
    fn printed_urls_carry_no_credentials() {
        assert_eq!(
            display_url("https://user:sk-secret@llm.example/v1/?key=sk-secret#x"),
            "https://llm.example/v1"
        );
        assert_eq!(
            display_url("https://api.deepseek.com/"),
            "https://api.deepseek.com"
        );
        assert!(!display_url("not a url?key=sk-secret").contains("secret"));
    }

    #[test]
    fn exposed_listeners_need_a_token() {
        let err = Config::parse("[qq]\nlisten = \"0.0.0.0:6199\"\n", &p()).unwrap_err();
        assert!(err.to_string().contains("key `qq.listen`"), "{err}");
        Config::parse(
            "[qq]\nlisten = \"0.0.0.0:6199\"\naccess_token = \"t\"\n",
            &p(),
        )
        .unwrap();
        Config::parse("[qq]\nlisten = \"127.0.0.1:6199\"\n", &p()).unwrap();
        let err = Config::parse("[voice]\nws_listen = \"192.168.1.5:10800\"\n", &p()).unwrap_err();
        assert!(err.to_string().contains("voice.ws_listen"), "{err}");
        let err = Config::parse(
            "[qq]\nlisten = \"0.0.0.0:6199\"\naccess_token = \"\"\n",
            &p(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("key `qq.access_token`: is empty"),
            "{err}"
        );
    }

    #[test]
    fn secret_is_redacted() {
        let s = Secret::new("sk-very-secret");
        assert!(!format!("{s:?}").contains("very"));
        let c = Config::parse("[provider]\napi_key = \"sk-very-secret\"\n", &p()).unwrap();
        assert!(!format!("{c:?}").contains("very-secret"));
    }
}
