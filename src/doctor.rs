//! `homebot doctor`: probes the configured LLM endpoint without starting a gateway and
//! says, one line each, what it found — the endpoint and model, whether it answers, the
//! models it lists (`GET {base}/models`), the context size where the server reports it
//! (llama.cpp's `/props`), and a hint when the configured model is not among them. Then
//! each `[[provider.fallback]]` endpoint, one line each: its model and address, and
//! whether it answers and lists that model. For the primary and each fallback, one line
//! says how a preset's reasoning depth reaches the model ([`depth_line`]).
//!
//! Everything here talks to a peer we do not control: every probe has a 5 s timeout and
//! reads at most 1 MiB. The key is sent only to the configured endpoint (the same origin)
//! and never printed.

use crate::config::{display_url, endpoint_url, is_deepseek, Config, ConfigError};
use crate::config::{EnvOverrides, ResolvedProvider, DEEPSEEK_BASE_URL};
use crate::provider::{error_chain, read_capped, BodyError};
use crate::workspace::Workspace;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
pub const MAX_PROBE_BYTES: usize = 1024 * 1024;
/// Model ids shown; the rest are counted.
const SHOWN_MODELS: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error("cannot open the workspace {path}: {source}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// What the probes found: the lines to print, and whether the endpoint answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub lines: Vec<String>,
    pub reachable: bool,
}

/// Read the workspace's configuration the way the gateway does (config file, then the
/// environment) and probe the provider it names.
pub async fn run(root: &Path) -> Result<Report, DoctorError> {
    let ws = Workspace::open(root).map_err(|source| DoctorError::Workspace {
        path: root.to_path_buf(),
        source,
    })?;
    let mut cfg = Config::load_or_init(ws.root())?;
    let env = EnvOverrides::from_env();
    cfg.apply_env(&env)?;
    let mut report = diagnose(cfg.resolve_provider(&env).as_ref(), &env).await;
    for (i, f) in cfg.resolve_fallbacks(&env).iter().enumerate() {
        let name = crate::provider::backend::Backend::fallback_name(i + 1);
        let (line, reachable) = fallback_line(&name, f).await;
        report.lines.push(line);
        // under its fallback's line, indented: the line per fallback stays one
        report.lines.push(format!(
            "  {}",
            depth_line(f, "reasoning in its [[provider.fallback]] table")
        ));
        report.reachable &= reachable;
    }
    Ok(report)
}

/// One line about a fallback endpoint (`fallback-1: …`): which model where, whether it
/// answers its model list, and whether the list names the model. Unreachable: `false`.
pub async fn fallback_line(name: &str, p: &ResolvedProvider) -> (String, bool) {
    let base = p.base_url.trim_end_matches('/');
    let what = format!(
        "{name}: {} @ {}, key {}",
        p.model.name().unwrap_or("(endpoint default)"),
        display_url(base),
        p.api_key_source
            .map_or("none".to_string(), |src| format!("set (from {src})"))
    );
    let client = match probe_client() {
        Ok(c) => c,
        Err(e) => {
            return (
                format!("{what} — reachable: no — {}", error_chain(&e)),
                false,
            )
        }
    };
    let probe = Probe { client, p };
    let url = models_url(p);
    let (status, body) = match probe.get(&url).await {
        Ok(answer) => answer,
        Err(e) => return (format!("{what} — reachable: no — {e}"), false),
    };
    let mut found = Vec::new();
    let listed = models_line(status, body, &mut found);
    let models = match (listed, p.model.name()) {
        (Some(ids), Some(m)) if ids.iter().any(|id| id == m) => format!("lists {m}"),
        (Some(ids), Some(m)) if !ids.is_empty() => {
            format!("does not list {m:?} (it has {:?}, …)", ids[0])
        }
        // no list to check against: say what the list probe found
        _ => found.join("; "),
    };
    (
        format!(
            "{what} — reachable: yes (GET {} → HTTP {status}); {models}",
            display_url(&url)
        ),
        true,
    )
}

/// How a preset's reasoning depth reaches the endpoint's model (`provider.reasoning`,
/// or what `auto` found): `reasoning depth: …`; `key` is where to override it.
pub fn depth_line(p: &ResolvedProvider, key: &str) -> String {
    match p.reasoning {
        crate::config::Reasoning::None => format!(
            "reasoning depth: not sent: model {} takes none known (set {key} to override)",
            p.model
        ),
        way => format!("reasoning depth: {}", way.describe()),
    }
}

/// The client every probe uses: short timeouts, no redirects (a key never follows one).
fn probe_client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .connect_timeout(PROBE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// Where the endpoint lists its models.
fn models_url(p: &ResolvedProvider) -> String {
    let base = p.base_url.trim_end_matches('/');
    match p.kind {
        crate::config::ProviderKind::Openai => format!("{base}/models"),
        // Anthropic lists its models beside `/v1/messages`, in the same `data[].id` shape
        crate::config::ProviderKind::Anthropic => format!("{base}/v1/models"),
    }
}

pub async fn diagnose(provider: Option<&ResolvedProvider>, env: &EnvOverrides) -> Report {
    let mut lines = Vec::new();
    let Some(p) = provider else {
        lines.push(
            "provider: not configured — set DEEPSEEK_API_KEY, or HOMEBOT_BASE_URL (+ HOMEBOT_MODEL, HOMEBOT_API_KEY), or [provider] in config.toml".into(),
        );
        return Report {
            lines,
            reachable: false,
        };
    };
    let base = p.base_url.trim_end_matches('/');
    lines.push(format!("endpoint: {}", display_url(base)));
    lines.push(match p.model.name() {
        Some(m) => format!("model: {m}"),
        None => "model: (endpoint default) — set HOMEBOT_MODEL to choose one".into(),
    });
    lines.push(match p.api_key_source {
        Some(src) => format!("key: set (from {src})"),
        None => "key: none".into(),
    });
    if env.deepseek_api_key.is_some() && p.api_key.is_none() && !is_deepseek(base) {
        lines.push(format!(
            "note: DEEPSEEK_API_KEY is set but only ever sent to {DEEPSEEK_BASE_URL}, not to this endpoint"
        ));
    }
    lines.push(format!(
        "limits: timeout {} s, max_tokens {}, retries {}, concurrent calls {}",
        p.timeout_secs,
        p.max_tokens.map_or("none".into(), |n| n.to_string()),
        p.max_retries,
        p.max_concurrent
    ));
    lines.push(depth_line(p, "[provider] reasoning"));

    let client = match probe_client() {
        Ok(c) => c,
        Err(e) => {
            lines.push(format!("reachable: no — {}", error_chain(&e)));
            return Report {
                lines,
                reachable: false,
            };
        }
    };
    let probe = Probe { client, p };

    let models_url = models_url(p);
    let models = match probe.get(&models_url).await {
        Err(e) => {
            lines.push(format!("reachable: no — {e}"));
            return Report {
                lines,
                reachable: false,
            };
        }
        Ok((status, body)) => {
            lines.push(format!(
                "reachable: yes (GET {} → HTTP {status})",
                display_url(&models_url)
            ));
            models_line(status, body, &mut lines)
        }
    };

    lines.push(probe.context_size(base).await);

    if let Some(ids) = models.filter(|ids| !ids.is_empty()) {
        match p.model.name() {
            Some(m) if !ids.iter().any(|id| id == m) => lines.push(format!(
                "hint: the server does not list model {m:?}; set HOMEBOT_MODEL (or provider.model) to one it has, e.g. {:?}",
                ids[0]
            )),
            None => lines.push(format!(
                "hint: no model configured, so the endpoint's default answers (llama.cpp accepts that; Ollama and OpenAI need a name) — e.g. HOMEBOT_MODEL={}",
                ids[0]
            )),
            _ => {}
        }
    }
    Report {
        lines,
        reachable: true,
    }
}

struct Probe<'a> {
    client: reqwest::Client,
    p: &'a ResolvedProvider,
}

#[derive(Debug, thiserror::Error)]
enum ProbeError {
    #[error("GET {url} timed out after {} s", PROBE_TIMEOUT.as_secs())]
    Timeout { url: String },
    #[error("cannot connect to {url}: {detail}")]
    Connect { url: String, detail: String },
}

/// A body, or why it was not read.
type Body = Result<Vec<u8>, BodyError>;

impl Probe<'_> {
    /// GET `url` with the endpoint's key; the status and at most [`MAX_PROBE_BYTES`].
    async fn get(&self, url: &str) -> Result<(u16, Body), ProbeError> {
        let mut req = self.client.get(url);
        if let Some(k) = &self.p.api_key {
            req = match self.p.kind {
                crate::config::ProviderKind::Openai => req.bearer_auth(k.expose()),
                crate::config::ProviderKind::Anthropic => req
                    .header("x-api-key", k.expose())
                    .header("anthropic-version", crate::provider::anthropic::API_VERSION),
            };
        }
        let shown = display_url(url);
        let resp = req.send().await.map_err(|e| {
            if e.is_timeout() {
                ProbeError::Timeout { url: shown.clone() }
            } else {
                ProbeError::Connect {
                    url: shown.clone(),
                    detail: error_chain(&e.without_url()),
                }
            }
        })?;
        let status = resp.status().as_u16();
        let body = read_capped(resp, MAX_PROBE_BYTES).await;
        Ok((status, body))
    }

    /// llama.cpp reports its context at `/props` on the server's root; `base` often ends
    /// in `/v1`, so the root is tried first, then `{base}/props`.
    async fn context_size(&self, base: &str) -> String {
        let mut urls = Vec::new();
        if let Some(u) = endpoint_url(base) {
            urls.push(format!("{}/props", u.origin().ascii_serialization()));
        }
        let under_base = format!("{base}/props");
        if !urls.contains(&under_base) {
            urls.push(under_base);
        }
        for url in &urls {
            let Ok((200, Ok(body))) = self.get(url).await else {
                continue;
            };
            if let Some(n) = serde_json::from_slice::<Props>(&body)
                .ok()
                .and_then(|p| p.n_ctx())
            {
                return format!("context: {n} tokens (GET {})", display_url(url));
            }
        }
        "context: not reported by the server (no llama.cpp /props)".into()
    }
}

/// One line about `GET /models`; the ids when the list could be read.
fn models_line(status: u16, body: Body, lines: &mut Vec<String>) -> Option<Vec<String>> {
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            lines.push(format!("models: not read — {e}"));
            return None;
        }
    };
    if !(200..300).contains(&status) {
        let why = match status {
            401 | 403 => " (the key is missing or refused)",
            404 => " (the server has no model list)",
            _ => "",
        };
        lines.push(format!("models: HTTP {status}{why}"));
        return None;
    }
    let Ok(list) = serde_json::from_slice::<ModelList>(&body) else {
        lines.push("models: the answer is not an OpenAI model list".into());
        return None;
    };
    let ids: Vec<String> = list
        .data
        .into_iter()
        .map(|m| m.id.chars().take(200).collect())
        .collect();
    let shown = ids
        .iter()
        .take(SHOWN_MODELS)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    lines.push(match ids.len() {
        0 => "models: none listed".into(),
        n if n > SHOWN_MODELS => format!("models: {shown} … and {} more", n - SHOWN_MODELS),
        _ => format!("models: {shown}"),
    });
    Some(ids)
}

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
}

#[derive(Deserialize)]
struct Props {
    #[serde(default)]
    default_generation_settings: Option<GenerationSettings>,
    #[serde(default)]
    n_ctx: Option<u64>,
}

#[derive(Deserialize)]
struct GenerationSettings {
    #[serde(default)]
    n_ctx: Option<u64>,
}

impl Props {
    fn n_ctx(&self) -> Option<u64> {
        self.default_generation_settings
            .as_ref()
            .and_then(|g| g.n_ctx)
            .or(self.n_ctx)
    }
}
