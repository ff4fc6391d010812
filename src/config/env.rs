//! [`EnvOverrides`]: what the environment contributes to the configuration (the
//! `HOMEBOT_*` variables and the providers' own keys), read in one place and kept apart
//! from `std::env`, so tests can drive it.

use super::Secret;

/// What the environment contributes; separate from `std::env` so tests can drive it.
#[derive(Debug, Clone, Default)]
pub struct EnvOverrides {
    pub base_url: Option<String>,
    pub api_key: Option<Secret>,
    pub model: Option<String>,
    pub deepseek_api_key: Option<Secret>,
    pub anthropic_api_key: Option<Secret>,
    pub qq_listen: Option<String>,
    pub qq_access_token: Option<Secret>,
    pub qq_allow_groups: Option<String>,
    pub qq_allow_users: Option<String>,
    pub wyoming_listen: Option<String>,
    pub voice_ws_listen: Option<String>,
    pub voice_token: Option<Secret>,
    /// `HOMEBOT_HA_URL`: Home Assistant's base URL (`[home_assistant] url`).
    pub ha_url: Option<String>,
    /// `HOMEBOT_CONTEXT_WINDOW`: the whole context window in tokens (checked at start).
    pub context_window: Option<String>,
    /// `HOMEBOT_HTTP_LISTEN`: the dashboard's address (`[http] listen`).
    pub http_listen: Option<String>,
    /// `HOMEBOT_HTTP_TOKEN`: the dashboard owner's token (`[http] token`).
    pub http_token: Option<Secret>,
    /// Home Assistant's agent token, given directly (tests); `None`: read from the
    /// variable `[http] ha_agent_token_env` names when the configuration is applied.
    pub ha_agent_token: Option<Secret>,
    /// Home Assistant's access token, given directly (tests); `None`: read from the
    /// variable `[home_assistant] token_env` names when the channel starts.
    pub ha_token: Option<Secret>,
    /// Set when the Supervisor started homebot as an add-on (`SUPERVISOR_TOKEN`): where
    /// its options and data are (`addon`).
    pub addon: Option<super::addon::AddonSource>,
}

impl EnvOverrides {
    pub fn from_env() -> Self {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Self {
            base_url: get("HOMEBOT_BASE_URL"),
            api_key: get("HOMEBOT_API_KEY").map(Secret),
            model: get("HOMEBOT_MODEL"),
            deepseek_api_key: get("DEEPSEEK_API_KEY").map(Secret),
            anthropic_api_key: get("ANTHROPIC_API_KEY").map(Secret),
            qq_listen: get("HOMEBOT_QQ_LISTEN"),
            qq_access_token: get("HOMEBOT_QQ_ACCESS_TOKEN").map(Secret),
            qq_allow_groups: get("HOMEBOT_QQ_ALLOW_GROUPS"),
            qq_allow_users: get("HOMEBOT_QQ_ALLOW_USERS"),
            wyoming_listen: get("HOMEBOT_WYOMING_LISTEN"),
            voice_ws_listen: get("HOMEBOT_VOICE_WS_LISTEN"),
            voice_token: get("HOMEBOT_VOICE_TOKEN").map(Secret),
            ha_url: get("HOMEBOT_HA_URL"),
            context_window: get("HOMEBOT_CONTEXT_WINDOW"),
            http_listen: get("HOMEBOT_HTTP_LISTEN"),
            http_token: get("HOMEBOT_HTTP_TOKEN").map(Secret),
            ha_agent_token: None,
            ha_token: None,
            addon: super::addon::AddonSource::from_vars(get),
        }
    }
}
