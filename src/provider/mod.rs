//! The Provider: the LLM behind the kernel. Owns the HTTP client(s), a concurrency
//! limit, retries with backoff, and usage accounting (`logs/usage.jsonl`). The per-turn
//! agent calls [`Provider::complete`]; no other actor waits on it.
//!
//! - [`openai`] — OpenAI-compatible chat completions (DeepSeek, llama.cpp, Ollama, …).

pub mod openai;

use crate::config::ResolvedProvider;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tracing::{info, warn};

/// A chat message in the provider-neutral form the agent builds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// DeepSeek thinking models need their reasoning replayed within a turn.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The raw JSON arguments string, as the model produced it.
    pub arguments: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// One request: borrowed, so a long mode history is not copied per round trip.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [ToolDef],
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// OpenAI / llama.cpp `prompt_tokens_details.cached_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// DeepSeek `prompt_cache_hit_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_hit_tokens: Option<u64>,
    /// DeepSeek `prompt_cache_miss_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_miss_tokens: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct ChatResponse {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub reasoning_content: Option<String>,
    pub usage: Usage,
    pub finish_reason: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("no LLM provider is configured")]
    NotConfigured,
    #[error("the provider did not answer within {0} s")]
    Timeout(u64),
    #[error("cannot reach the provider: {0}")]
    Network(String),
    #[error("the provider answered HTTP {status}: {body}")]
    Http {
        status: u16,
        body: String,
        retry_after: Option<Duration>,
    },
    #[error("the provider's answer could not be read: {0}")]
    Malformed(String),
}

impl ProviderError {
    /// Worth another attempt: network errors, 429 and 5xx. A timeout is not: the model
    /// was reachable but slow, and asking again would only multiply the wait.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Network(_) => true,
            ProviderError::Http { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }

    /// A short sentence for the user (Chinese first, the household's language).
    pub fn user_message(&self) -> String {
        match self {
            ProviderError::NotConfigured => NOT_CONFIGURED_REPLY.to_string(),
            ProviderError::Timeout(_) => {
                "抱歉，模型服务超时没有回应，请稍后再说一次。(the LLM timed out)".into()
            }
            ProviderError::Network(_) => {
                "抱歉，现在连不上模型服务，请稍后再试。(the LLM is unreachable)".into()
            }
            ProviderError::Http { status: 429, .. } => {
                "抱歉，模型服务现在太忙（限流），请过一会儿再试。(rate limited)".into()
            }
            ProviderError::Http { status, .. } if *status >= 500 => {
                format!("抱歉，模型服务出错了（HTTP {status}），请稍后再试。")
            }
            ProviderError::Http { status, body, .. } if is_context_overflow(body) => format!(
                "抱歉，这段对话太长，超出了模型能读的长度（HTTP {status}）。如果在模式中，可以结束当前模式再开始新的会话。(the conversation exceeds the model's context)"
            ),
            ProviderError::Http { status, .. } => {
                format!("抱歉，模型服务拒绝了请求（HTTP {status}），请检查配置。")
            }
            ProviderError::Malformed(_) => {
                "抱歉，模型服务返回了无法解析的内容，请稍后再试。".into()
            }
        }
    }
}

/// Servers word it differently: llama.cpp "exceeds the available context size", OpenAI
/// "maximum context length", DeepSeek "context length".
fn is_context_overflow(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    b.contains("context size") || b.contains("context length") || b.contains("context_length")
}

pub const NOT_CONFIGURED_REPLY: &str = "还没有配置大模型，所以暂时只能执行 /mode 和 /status 命令。\
配置方法：设置环境变量 DEEPSEEK_API_KEY（使用 DeepSeek），或 HOMEBOT_BASE_URL（任意 OpenAI 兼容地址，例如 http://127.0.0.1:8080/v1）加 HOMEBOT_API_KEY / HOMEBOT_MODEL；\
也可以编辑工作区里的 config.toml 的 [provider] 一节。\
(No LLM provider is configured: set DEEPSEEK_API_KEY, or HOMEBOT_BASE_URL [+ HOMEBOT_API_KEY, HOMEBOT_MODEL], or [provider] in config.toml.)";

/// One LLM backend.
#[async_trait]
pub trait ChatModel: Send + Sync {
    async fn complete(&self, req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError>;
    fn model_name(&self) -> &str;
}

/// Who a call is for, for the usage log.
#[derive(Debug, Clone, Default)]
pub struct CallMeta {
    pub channel: String,
    pub chat_id: String,
    pub session_id: Option<String>,
}

#[derive(Clone)]
pub struct Provider {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    model: Arc<dyn ChatModel>,
    limit: Semaphore,
    max_retries: u32,
    base_backoff: Duration,
    usage_log: PathBuf,
}

impl Provider {
    /// A provider that answers every call with `NotConfigured`.
    pub fn unconfigured() -> Self {
        Self { inner: None }
    }

    pub fn from_config(cfg: &ResolvedProvider, usage_log: PathBuf) -> Result<Self, ProviderError> {
        let model = openai::OpenAiCompatible::new(cfg)?;
        Ok(Self::with_model(
            Arc::new(model),
            cfg.max_concurrent,
            cfg.max_retries,
            usage_log,
        ))
    }

    pub fn with_model(
        model: Arc<dyn ChatModel>,
        max_concurrent: usize,
        max_retries: u32,
        usage_log: PathBuf,
    ) -> Self {
        Self {
            inner: Some(Arc::new(Inner {
                model,
                limit: Semaphore::new(max_concurrent.max(1)),
                max_retries,
                base_backoff: Duration::from_millis(500),
                usage_log,
            })),
        }
    }

    pub fn is_configured(&self) -> bool {
        self.inner.is_some()
    }

    pub fn model_name(&self) -> Option<&str> {
        self.inner.as_ref().map(|i| i.model.model_name())
    }

    /// One line for `status`: which model, where.
    pub fn summary(&self) -> String {
        self.model_name()
            .unwrap_or("未配置 (not configured)")
            .to_string()
    }

    /// One completion, with bounded retries (backoff, `Retry-After` honoured up to 30 s)
    /// on timeouts, network errors, 429 and 5xx. Usage is appended to the usage log.
    pub async fn complete(
        &self,
        req: &ChatRequest<'_>,
        meta: &CallMeta,
    ) -> Result<ChatResponse, ProviderError> {
        let inner = self.inner.as_ref().ok_or(ProviderError::NotConfigured)?;
        let _permit = inner
            .limit
            .acquire()
            .await
            .expect("the provider semaphore is never closed");
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            let result = inner.model.complete(req).await;
            let latency = started.elapsed();
            match result {
                Ok(resp) => {
                    if resp.finish_reason.as_deref() == Some("length") {
                        warn!(completion = resp.usage.completion_tokens, "the model hit its output limit (finish_reason=length); the reply is cut short");
                    }
                    inner.log_usage(meta, &resp.usage, latency, attempt);
                    return Ok(resp);
                }
                Err(e) if e.is_retryable() && attempt < inner.max_retries => {
                    let backoff = match &e {
                        ProviderError::Http {
                            retry_after: Some(d),
                            ..
                        } => (*d).min(Duration::from_secs(30)),
                        _ => {
                            let exp = inner.base_backoff * 2u32.pow(attempt);
                            exp + Duration::from_millis(rand::random::<u64>() % 250)
                        }
                    };
                    warn!(attempt = attempt + 1, backoff_ms = backoff.as_millis() as u64, error = %e, "provider call failed; retrying");
                    tokio::time::sleep(backoff).await;
                    attempt += 1;
                }
                Err(e) => {
                    warn!(attempts = attempt + 1, error = %e, "provider call failed");
                    inner.log_failure(meta, &e, latency, attempt);
                    return Err(e);
                }
            }
        }
    }
}

impl Inner {
    fn log_failure(&self, meta: &CallMeta, e: &ProviderError, latency: Duration, retries: u32) {
        self.append(
            meta,
            latency,
            retries,
            ("error", serde_json::json!(e.to_string())),
        );
    }

    /// One line per call in `logs/usage.jsonl`.
    fn append(
        &self,
        meta: &CallMeta,
        latency: Duration,
        retries: u32,
        outcome: (&str, serde_json::Value),
    ) {
        let mut rec = serde_json::json!({
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "model": self.model.model_name(),
            "channel": meta.channel,
            "chat_id": meta.chat_id,
            "session_id": meta.session_id,
            "latency_ms": latency.as_millis() as u64,
            "retries": retries,
        });
        rec[outcome.0] = outcome.1;
        if let Err(err) = crate::fsutil::append_line(&self.usage_log, &rec.to_string()) {
            warn!(path = %self.usage_log.display(), error = %err, "cannot append to the usage log");
        }
    }

    fn log_usage(&self, meta: &CallMeta, usage: &Usage, latency: Duration, retries: u32) {
        info!(
            model = self.model.model_name(),
            prompt = usage.prompt_tokens,
            completion = usage.completion_tokens,
            cached = usage.cached_tokens.or(usage.cache_hit_tokens).unwrap_or(0),
            latency_ms = latency.as_millis() as u64,
            "provider call"
        );
        self.append(meta, latency, retries, ("usage", serde_json::json!(usage)));
    }
}
