//! The LLM endpoint after environment overrides, and which key goes to which endpoint:
//! a key goes only to the endpoint it was given for.

use super::*;
use serde::Deserialize;
use std::fmt;
use std::path::Path;

pub const DEEPSEEK_BASE_URL: &str = "https://api.deepseek.com";
pub const DEEPSEEK_MODEL: &str = "deepseek-chat";
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The model asked for when `ANTHROPIC_API_KEY` alone selects Anthropic.
pub const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// Output cap per call unless configured: household answers are short, and an unbounded
/// runaway reply from a small local model would fill its whole context.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// A loopback endpoint is usually a small model on the CPU of the same box: slower per
/// token, so it gets more time unless configured.
pub const LOCAL_TIMEOUT_SECS: u64 = 300;
/// Parallel provider calls unless configured. A chat holds at most one slot (its turns run
/// one after another, a turn's calls one after another), so this is how many chats can
/// be waiting on the model at once before the next one queues.
pub const DEFAULT_MAX_CONCURRENT: usize = 8;
/// The smallest answer-body cap: room for a short reply plus a verbose server's envelope.
pub const MIN_RESPONSE_BYTES: usize = 256 * 1024;
/// Answer-body bytes allowed per output token: a token is a few bytes of text, JSON
/// escaping (`\uXXXX` is 6 bytes for one CJK character) and reasoning text can multiply
/// it; 64 leaves room for all of that and still bounds a confused server.
pub const RESPONSE_BYTES_PER_TOKEN: usize = 64;

/// The default answer-body cap for an output cap of `max_tokens`:
/// `max(256 KiB, max_tokens × 64 bytes)`.
pub fn default_max_response_bytes(max_tokens: u32) -> usize {
    (max_tokens as usize)
        .saturating_mul(RESPONSE_BYTES_PER_TOKEN)
        .max(MIN_RESPONSE_BYTES)
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
    /// Largest answer body read, in bytes (default from `max_tokens`).
    pub max_response_bytes: Option<usize>,
    /// Which protocol the endpoint speaks; inferred from `base_url` when absent.
    pub kind: Option<ProviderKind>,
    /// Ask for the answer as server-sent events (default off).
    pub stream: Option<bool>,
    /// How a preset's reasoning depth is sent (default `auto`; see [`reasoning`]).
    pub reasoning: Option<ReasoningSetting>,
    /// Failed calls in a row that open the circuit (default [`DEFAULT_BREAKER_FAILURES`]).
    pub breaker_failures: Option<u32>,
    /// How long an open circuit fails fast before one trial call (default
    /// [`DEFAULT_BREAKER_COOLDOWN_SECS`]).
    pub breaker_cooldown_secs: Option<u64>,
    /// `[[provider.fallback]]`: endpoints that answer, in order, while the circuit of the
    /// ones before them is open.
    pub fallback: Vec<FallbackConfig>,
    /// `[provider.price."<model>"]`: what a model's tokens cost (see [`price`]).
    pub price: std::collections::BTreeMap<String, PriceConfig>,
}

/// The wire protocol of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (DeepSeek, llama.cpp, Ollama, OpenAI).
    #[default]
    Openai,
    /// Anthropic Messages (`POST {base}/v1/messages`).
    Anthropic,
}

impl ProviderKind {
    /// `anthropic` for Anthropic's own endpoint, else OpenAI-compatible.
    pub fn infer(base_url: &str) -> Self {
        if is_anthropic(base_url) {
            ProviderKind::Anthropic
        } else {
            ProviderKind::Openai
        }
    }
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
    /// Largest answer body read; a bigger one is refused, never held.
    pub max_response_bytes: usize,
    pub kind: ProviderKind,
    /// Answers as server-sent events (`provider.stream`).
    pub stream: bool,
    /// How a preset's reasoning depth is sent to this endpoint (`provider.reasoning`,
    /// `auto` decided).
    pub reasoning: Reasoning,
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

pub(super) fn same_endpoint(a: &str, b: &str) -> bool {
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

/// Anthropic's own endpoint, `https://api.anthropic.com` (with or without `/`). Only
/// there does `ANTHROPIC_API_KEY` go.
pub fn is_anthropic(url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(url.trim()) else {
        return false;
    };
    u.scheme() == "https"
        && u.host_str() == Some("api.anthropic.com")
        && u.port().is_none()
        && u.username().is_empty()
        && u.password().is_none()
        && u.query().is_none()
        && u.path().trim_end_matches('/').is_empty()
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

#[path = "provider_fallback.rs"]
pub(super) mod fallback;
pub use fallback::*;

#[path = "reasoning.rs"]
pub mod reasoning;
pub use reasoning::{Reasoning, ReasoningSetting};

#[path = "price.rs"]
pub mod price;
#[path = "price_tiers.rs"]
pub mod price_tiers;
#[path = "rates.rs"]
pub mod rates;
pub use price::{Cost, Price, PriceConfig};

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;
