//! The household's configuration: one TOML file in the workspace (`config.toml`), with
//! environment overrides. Parsed with `deny_unknown_fields`, validated at start; every
//! error names the file and the key.
//!
//! - `load` — `Config`, and its methods but validation's: loading, environment overrides,
//!   and what the file resolves to (the provider in effect, its fallbacks, breaker and
//!   prices); `household` — `[household]` and its
//!   members; `sections` — `[agent]`, `[tools]`, `[cron]`, `[skills]`; `secret` — `Secret`;
//!   `error` — `ConfigError`; `env` — the environment overrides read;
//! - `validate` — every value checked and bounded before anything runs (`Config::validate`);
//! - `provider` — the `[provider]` section and its endpoints, and which key goes where
//!   (resolved by `Config::resolve_provider`, in `load`);
//! - `channels` — the QQ and voice sections; `home_assistant` — `[home_assistant]` (`ha_tls`: its https trust); `context` — the context window (`[context]`);
//! - `addon` — homebot as a Home Assistant OS add-on: the add-on's options laid over the
//!   file, Home Assistant through the Supervisor, the agent token kept in `/data`
//!   (`addon_options`: each option checked);
//! - `assets/default-config.toml` — the commented file written on first use.

pub mod addon;
mod addon_options;
mod channels;
mod context;
#[cfg(test)]
mod documented;
mod env;
mod ha_tls;
mod home_assistant;
mod http;
mod memory;
mod provider;
mod strategy;
mod validate;
pub use crate::workspace::CONFIG_FILE;
pub use channels::*;
pub use context::*;
pub use env::EnvOverrides;
pub use ha_tls::{format_fingerprint, parse_fingerprint, read_ca_file, Fingerprint, TrustError};
pub use home_assistant::{
    is_entity_id, HaMediaPlayer, HaSatellite, HaWatch, HomeAssistantConfig, MAX_WATCHES,
};
pub use http::HttpConfig;
pub use memory::{MemoryConfig, ScenePolicy, INTERNAL_CHANNELS};
pub use provider::*;
pub use strategy::{StrategyConfig, StrategyKind};

mod error;
mod household;
mod load;
mod secret;
mod sections;

pub use error::ConfigError;
pub use household::{is_safe_id, Household, Language, Member};
pub use load::{Config, DEFAULT_CONFIG};
pub use secret::Secret;
pub use sections::{AgentConfig, CronConfig, SkillsConfig, ToolsConfig};
