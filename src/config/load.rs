//! The whole configuration (`Config`): read from `config.toml` (the commented default
//! written on first use), the environment overrides applied and checked again; and what
//! it resolves to — the provider in effect and which key it gets, its fallbacks, the
//! breaker and the prices. Every method of `Config` is here but validation's (`validate`).

use super::channels::*;
use super::context::*;
use super::env::EnvOverrides;
use super::home_assistant::HomeAssistantConfig;
use super::http::HttpConfig;
use super::memory::MemoryConfig;
use super::provider::fallback::resolve_fallback;
use super::provider::same_endpoint;
use super::provider::*;
use super::strategy::StrategyConfig;
use super::Secret;
use super::{AgentConfig, ConfigError, CronConfig, Household, Member, SkillsConfig, ToolsConfig};
use crate::workspace::CONFIG_FILE;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub household: Household,
    pub provider: Option<ProviderConfig>,
    pub agent: AgentConfig,
    pub cron: CronConfig,
    pub tools: ToolsConfig,
    pub skills: SkillsConfig,
    pub qq: QqConfig,
    pub voice: VoiceConfig,
    pub home_assistant: HomeAssistantConfig,
    pub memory: MemoryConfig,
    pub strategy: StrategyConfig,
    pub members: Vec<Member>,
    pub context: ContextConfig,
    pub http: HttpConfig,
    /// Set when homebot runs as a Home Assistant add-on (`addon`): how to reach the
    /// Supervisor once the gateway listens. Never from the file.
    #[serde(skip)]
    pub addon: Option<super::addon::AddonRuntime>,
}

fn id_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// The commented configuration written on first use (every key optional).
pub const DEFAULT_CONFIG: &str = include_str!("../../assets/default-config.toml");

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
        let mut cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        cfg.home_assistant.resolve_paths(path);
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// Apply the channel environment overrides (the provider ones are applied by
    /// [`Config::resolve_provider`]), then re-check what they touched.
    pub fn apply_env(&mut self, env: &EnvOverrides) -> Result<(), ConfigError> {
        // the add-on's options lie over the file; the variables below still win
        if let Some(source) = &env.addon {
            super::addon::apply(self, source)?;
        }
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
        if let Some(t) = &env.ha_token {
            self.home_assistant.token = Some(t.clone());
        }
        if let Some(u) = &env.ha_url {
            self.home_assistant.url = Some(u.clone());
            self.home_assistant.websocket = None;
        }
        if let Some(l) = &env.http_listen {
            self.http.listen = Some(l.clone());
        }
        if let Some(t) = &env.http_token {
            self.http.token = Some(t.clone());
        }
        match &env.ha_agent_token {
            Some(t) => self.http.ha_agent_token = Some(t.clone()),
            // the add-on's own token, unless the variable names another
            None if self.addon.is_some() => {
                let kept = self.http.ha_agent_token.take();
                self.http.read_ha_agent_token();
                if self.http.ha_agent_token.is_none() {
                    self.http.ha_agent_token = kept;
                }
            }
            None => self.http.read_ha_agent_token(),
        }
        self.validate(Path::new("environment (HOMEBOT_*)"))
    }

    pub fn timezone(&self) -> crate::zone::Zone {
        self.household
            .timezone
            .parse()
            .expect("timezone was validated when the config was loaded")
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

impl Config {
    /// The `[provider.price]` tables, by model name.
    pub fn prices(&self) -> BTreeMap<String, Price> {
        self.provider
            .as_ref()
            .map(|p| {
                p.price
                    .iter()
                    .map(|(model, c)| (model.clone(), c.to_price()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Config {
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
        let anthropic_key = env
            .anthropic_api_key
            .clone()
            .map(|k| (k, "ANTHROPIC_API_KEY"));
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
                    .or(deepseek_key.filter(|_| is_deepseek(&url)))
                    .or(anthropic_key.filter(|_| is_anthropic(&url)));
                (url, key)
            }
            None => {
                let own = env
                    .api_key
                    .clone()
                    .map(|k| (k, "HOMEBOT_API_KEY"))
                    .or(file_key);
                // with no URL anywhere, a vendor's key selects the vendor (DeepSeek first)
                match (own, deepseek_key, anthropic_key) {
                    (Some(k), _, _) => (DEEPSEEK_BASE_URL.to_string(), Some(k)),
                    (None, Some(k), _) => (DEEPSEEK_BASE_URL.to_string(), Some(k)),
                    (None, None, Some(k)) => (ANTHROPIC_BASE_URL.to_string(), Some(k)),
                    (None, None, None) => return None,
                }
            }
        };
        let model = env
            .model
            .clone()
            .or(file.model.clone())
            .or_else(|| is_deepseek(&base_url).then(|| DEEPSEEK_MODEL.to_string()))
            .or_else(|| is_anthropic(&base_url).then(|| ANTHROPIC_MODEL.to_string()));
        let local = is_loopback(&base_url);
        // the same output cap everywhere: a slow local model is given time instead
        // (`timeout_secs`), and its owner may lower `max_tokens` (docs/providers.md)
        let max_tokens = file.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let kind = file.kind.unwrap_or_else(|| ProviderKind::infer(&base_url));
        let model = ModelChoice(model);
        Some(ResolvedProvider {
            reasoning: Reasoning::resolve(file.reasoning, &base_url, kind, &model),
            model,
            api_key_source: key.as_ref().map(|(_, src)| *src),
            api_key: key.map(|(k, _)| k),
            timeout_secs: file.timeout_secs.unwrap_or(if local {
                LOCAL_TIMEOUT_SECS
            } else {
                DEFAULT_TIMEOUT_SECS
            }),
            max_retries: file.max_retries.unwrap_or(2),
            max_concurrent: file.max_concurrent.unwrap_or(DEFAULT_MAX_CONCURRENT),
            temperature: file.temperature,
            max_tokens: Some(max_tokens),
            max_response_bytes: file
                .max_response_bytes
                .unwrap_or_else(|| default_max_response_bytes(max_tokens)),
            kind,
            stream: file.stream.unwrap_or(false),
            base_url,
        })
    }
}

impl Config {
    /// The breaker settings of `[provider]`.
    pub fn breaker(&self) -> BreakerSettings {
        let p = self.provider.clone().unwrap_or_default();
        BreakerSettings {
            failures: p.breaker_failures.unwrap_or(DEFAULT_BREAKER_FAILURES),
            cooldown: std::time::Duration::from_secs(
                p.breaker_cooldown_secs
                    .unwrap_or(DEFAULT_BREAKER_COOLDOWN_SECS),
            ),
        }
    }

    /// The `[[provider.fallback]]` endpoints, in order. Each gets only its own key
    /// (`api_key` / `api_key_env`), or the vendor's variable when it is that vendor's
    /// endpoint; the environment's `HOMEBOT_*` overrides are the primary's alone. Its
    /// retry budget is the primary's. A table without `base_url` is refused when the
    /// file is loaded, so every table here has one.
    pub fn resolve_fallbacks(&self, env: &EnvOverrides) -> Vec<ResolvedProvider> {
        let Some(p) = &self.provider else {
            return Vec::new();
        };
        let retries = p.max_retries.unwrap_or(2);
        p.fallback
            .iter()
            .filter_map(|f| resolve_fallback(f, env, retries))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Language, Secret};
    use std::path::PathBuf;

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
    fn the_agent_token_alone_opens_a_listener_beyond_loopback_and_differs_from_the_owners() {
        let mut c = Config::parse(
            "[http]\nlisten = \"127.0.0.1:8080\"\ntoken = \"same\"\n",
            &p(),
        )
        .unwrap();
        c.http.listen = Some("0.0.0.0:8080".into());
        c.http.token = None;
        c.http.ha_agent_token = Some(Secret::new("agent"));
        c.validate(&p()).unwrap();
        c.http.token = Some(Secret::new("agent"));
        let err = c.validate(&p()).unwrap_err();
        assert!(err.to_string().contains("must differ"), "{err}");
        let err = Config::parse("[http]\nha_agent_token_env = \"A B\"\n", &p()).unwrap_err();
        assert!(err.to_string().contains("http.ha_agent_token_env"), "{err}");
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
    fn the_dashboard_beyond_loopback_needs_a_token() {
        assert!(Config::parse("", &p()).unwrap().http.listen.is_none());
        let err = Config::parse("[http]\nlisten = \"0.0.0.0:8080\"\n", &p()).unwrap_err();
        assert!(err.to_string().contains("key `http.listen`"), "{err}");
        assert!(err.to_string().contains("HOMEBOT_HTTP_TOKEN"), "{err}");
        Config::parse("[http]\nlisten = \"127.0.0.1:8080\"\n", &p()).unwrap();
        let c = Config::parse(
            "[http]\nlisten = \"0.0.0.0:8080\"\ntoken = \"tok-secret\"\n",
            &p(),
        )
        .unwrap();
        assert!(c.http.exposed());
        assert!(!format!("{c:?}").contains("tok-secret"));
        let err = Config::parse("[http]\nlisten = \"localhost:80\"\n", &p()).unwrap_err();
        assert!(err.to_string().contains("http.listen"), "{err}");
        let mut c = Config::default();
        let env = EnvOverrides {
            http_listen: Some("[::]:0".into()),
            ..Default::default()
        };
        assert!(c.apply_env(&env).is_err());
        let c = Config::parse("[household]\nlanguage = \"en\"\n", &p()).unwrap();
        assert_eq!(c.household.language, Language::En);
        assert!(Config::parse("[household]\nlanguage = \"fr\"\n", &p()).is_err());
    }

    #[test]
    fn secret_is_redacted() {
        let s = Secret::new("sk-very-secret");
        assert!(!format!("{s:?}").contains("very"));
        let c = Config::parse("[provider]\napi_key = \"sk-very-secret\"\n", &p()).unwrap();
        assert!(!format!("{c:?}").contains("very-secret"));
    }
}
