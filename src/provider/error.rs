//! What can go wrong with a provider call, the sentence the user hears for it, and
//! response bodies read with a cap (their size is the peer's to choose).

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("no LLM provider is configured")]
    NotConfigured,
    #[error("the provider did not answer within {0} s")]
    Timeout(u64),
    /// The request did not get an answer (connect, TLS, reset). `url` is printable: no
    /// credentials, no query.
    #[error("cannot reach the provider at {url}: {}", error_chain(.source))]
    Network {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the provider answered HTTP {status}: {body}")]
    Http {
        status: u16,
        body: String,
        retry_after: Option<Duration>,
    },
    #[error("the provider's answer could not be read: {0}")]
    Malformed(String),
    /// A streamed answer ended before its end was announced (`finish_reason` /
    /// `stop_reason`): a proxy or the server cut it. Retried like a network error.
    #[error("the provider's streamed answer was cut off before its end")]
    Truncated,
    /// The answer body passed `provider.max_response_bytes`; it was dropped unread.
    #[error("the provider's answer is larger than {0} bytes (provider.max_response_bytes)")]
    TooLarge(usize),
    /// The endpoint failed `failures` calls in a row; its circuit is open and no fallback
    /// could take the call, so it fails without a request.
    #[error("the provider failed {failures} calls in a row; calls fail fast for another {retry_in_secs} s (circuit open)")]
    CircuitOpen { failures: u32, retry_in_secs: u64 },
    /// The provider actor is gone (the process is shutting down).
    #[error("the provider has stopped")]
    Stopped,
}

impl ProviderError {
    /// Worth another attempt: network errors, 429 and 5xx. A timeout is not: the model
    /// was reachable but slow, and asking again would only multiply the wait.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Network { .. } | ProviderError::Truncated => true,
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
            ProviderError::Network { .. } => {
                "抱歉，现在连不上模型服务，请稍后再试。(the LLM is unreachable)".into()
            }
            ProviderError::Truncated => {
                "抱歉，模型的回答传到一半断了，请再说一次。(the answer was cut off)".into()
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
            ProviderError::TooLarge(_) => {
                "抱歉，模型这次的回答太长，已拒收，请换个问法再试。(the answer was too large)".into()
            }
            ProviderError::CircuitOpen { retry_in_secs, .. } => format!(
                "抱歉，模型服务接连出错，暂停调用，大约 {} 秒后再试。(the LLM failed repeatedly; calls are paused)",
                retry_in_secs
            ),
            ProviderError::Stopped => "抱歉，homebot 正在停止，这次没能回答。(shutting down)".into(),
        }
    }
}

/// An error and its causes on one line ("error sending request: … : Connection refused");
/// reqwest's top-level message alone rarely says what went wrong.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// Read a response body, refusing more than `cap` bytes: the size is the peer's to choose,
/// the memory is ours.
pub async fn read_capped(resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, BodyError> {
    if resp.content_length().is_some_and(|n| n > cap as u64) {
        return Err(BodyError::TooLarge(cap));
    }
    let mut resp = resp;
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(BodyError::Read)? {
        if buf.len() + chunk.len() > cap {
            return Err(BodyError::TooLarge(cap));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the answer could not be read: {}", error_chain(.0))]
    Read(#[source] reqwest::Error),
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
