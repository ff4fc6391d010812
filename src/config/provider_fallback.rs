//! `[[provider.fallback]]` and the circuit breaker's keys: the endpoints that answer
//! while the primary's circuit is open, resolved like the primary (a key goes only to the
//! endpoint it was given for), and the bounds of their keys.

use super::*;

/// One `[[provider.fallback]]` table: the keys of `[provider]` that describe an endpoint.
/// The retry budget (`max_retries`) and the breaker settings are the provider's own.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct FallbackConfig {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<Secret>,
    pub api_key_env: Option<String>,
    pub timeout_secs: Option<u64>,
    pub max_concurrent: Option<usize>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub max_response_bytes: Option<usize>,
    pub kind: Option<ProviderKind>,
    pub stream: Option<bool>,
    pub reasoning: Option<ReasoningSetting>,
}

pub const DEFAULT_BREAKER_FAILURES: u32 = 5;
pub const DEFAULT_BREAKER_COOLDOWN_SECS: u64 = 30;
/// The most `[[provider.fallback]]` tables.
pub const MAX_FALLBACKS: usize = 4;

/// The circuit breaker of each endpoint: after `failures` failed calls in a row it opens,
/// and calls fail fast (or go to a fallback) for `cooldown`; then one trial call decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerSettings {
    pub failures: u32,
    pub cooldown: std::time::Duration,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        Self {
            failures: DEFAULT_BREAKER_FAILURES,
            cooldown: std::time::Duration::from_secs(DEFAULT_BREAKER_COOLDOWN_SECS),
        }
    }
}

pub(in crate::config) fn resolve_fallback(
    f: &FallbackConfig,
    env: &EnvOverrides,
    retries: u32,
) -> Option<ResolvedProvider> {
    let base_url = f.base_url.as_deref()?.trim_end_matches('/').to_string();
    let own = match (&f.api_key, &f.api_key_env) {
        (Some(k), _) => Some((k.clone(), "provider.fallback.api_key")),
        (None, Some(var)) => std::env::var(var)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (Secret(v), "provider.fallback.api_key_env")),
        (None, None) => None,
    };
    let key = own
        .or_else(|| {
            env.deepseek_api_key
                .clone()
                .filter(|_| is_deepseek(&base_url))
                .map(|k| (k, "DEEPSEEK_API_KEY"))
        })
        .or_else(|| {
            env.anthropic_api_key
                .clone()
                .filter(|_| is_anthropic(&base_url))
                .map(|k| (k, "ANTHROPIC_API_KEY"))
        });
    let model = f
        .model
        .clone()
        .or_else(|| is_deepseek(&base_url).then(|| DEEPSEEK_MODEL.to_string()))
        .or_else(|| is_anthropic(&base_url).then(|| ANTHROPIC_MODEL.to_string()));
    let max_tokens = f.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let kind = f.kind.unwrap_or_else(|| ProviderKind::infer(&base_url));
    let model = ModelChoice(model);
    Some(ResolvedProvider {
        reasoning: Reasoning::resolve(f.reasoning, &base_url, kind, &model),
        model,
        api_key_source: key.as_ref().map(|(_, src)| *src),
        api_key: key.map(|(k, _)| k),
        timeout_secs: f.timeout_secs.unwrap_or(if is_loopback(&base_url) {
            LOCAL_TIMEOUT_SECS
        } else {
            DEFAULT_TIMEOUT_SECS
        }),
        max_retries: retries,
        max_concurrent: f.max_concurrent.unwrap_or(DEFAULT_MAX_CONCURRENT),
        temperature: f.temperature,
        max_tokens: Some(max_tokens),
        max_response_bytes: f
            .max_response_bytes
            .unwrap_or_else(|| default_max_response_bytes(max_tokens)),
        kind,
        stream: f.stream.unwrap_or(false),
        base_url,
    })
}

impl ProviderConfig {
    /// The breaker keys and every `[[provider.fallback]]` table: a URL each, numbers in
    /// the ranges of the same keys of `[provider]`, no empty key.
    pub(crate) fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: String, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key,
            message,
        };
        let range = |key: String, v: Option<u64>, min: u64, max: u64| match v {
            Some(v) if !(min..=max).contains(&v) => Err(invalid(
                key,
                format!("must be between {min} and {max}, got {v}"),
            )),
            _ => Ok(()),
        };
        range(
            "provider.breaker_failures".into(),
            self.breaker_failures.map(u64::from),
            1,
            1000,
        )?;
        range(
            "provider.breaker_cooldown_secs".into(),
            self.breaker_cooldown_secs,
            1,
            86_400,
        )?;
        super::price::validate(&self.price, path)?;
        if self.fallback.len() > MAX_FALLBACKS {
            return Err(invalid(
                "provider.fallback".into(),
                format!(
                    "at most {MAX_FALLBACKS} fallback endpoints, got {}",
                    self.fallback.len()
                ),
            ));
        }
        for (i, f) in self.fallback.iter().enumerate() {
            let key = |k: &str| format!("provider.fallback[{}].{k}", i + 1);
            match f.base_url.as_deref() {
                None => return Err(invalid(key("base_url"), "is required".into())),
                Some(url)
                    if !(url.starts_with("http://") || url.starts_with("https://"))
                        || endpoint_url(url).is_none() =>
                {
                    return Err(invalid(
                        key("base_url"),
                        format!(
                            "must be an http:// or https:// URL with a host, got {:?}",
                            display_url(url)
                        ),
                    ))
                }
                Some(_) => {}
            }
            if let Some(t) = f.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
                return Err(invalid(
                    key("temperature"),
                    format!("must be between 0 and 2, got {t}"),
                ));
            }
            if f.api_key
                .as_ref()
                .is_some_and(|k| k.expose().trim().is_empty())
            {
                return Err(invalid(
                    key("api_key"),
                    "is empty; remove the key or give it a value".into(),
                ));
            }
            range(key("timeout_secs"), f.timeout_secs, 1, 3600)?;
            range(
                key("max_concurrent"),
                f.max_concurrent.map(|n| n as u64),
                1,
                64,
            )?;
            range(key("max_tokens"), f.max_tokens.map(u64::from), 1, 1_000_000)?;
            range(
                key("max_response_bytes"),
                f.max_response_bytes.map(|n| n as u64),
                64 * 1024,
                64 * 1024 * 1024,
            )?;
        }
        Ok(())
    }
}
