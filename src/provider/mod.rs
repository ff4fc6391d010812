//! The Provider: the LLM behind the kernel. Owns the HTTP client(s), a concurrency
//! limit, retries with backoff, usage accounting (`logs/usage.jsonl`) and the audit trail.
//! The per-turn agent calls [`Provider::complete`]; no other actor waits on it.
//!
//! - [`openai`] — OpenAI-compatible chat completions (DeepSeek, llama.cpp, Ollama, …),
//!   [`openai_stream`] its streamed answers;
//! - [`anthropic`] — Anthropic Messages with prompt-cache breakpoints,
//!   [`anthropic_stream`] its answers and events;
//! - [`encode`] — request bodies as bytes, old messages' bytes reused; [`sse`] — the
//!   event-stream reader; [`http`] — what both dialects do the same over HTTP;
//! - [`audit`] — the per-attempt audit record; [`logwriter`] — the background thread
//!   that appends (and batches the fsyncs of) the usage and audit lines;
//! - [`types`] — the provider-neutral request and response; [`error`] — what can go
//!   wrong, as the user is told it, and bounded body reads.

pub mod anthropic;
pub mod anthropic_stream;
pub mod audit;
pub mod encode;
pub mod error;
pub mod http;
pub mod logwriter;
pub mod openai;
pub mod openai_stream;
pub mod sse;
pub mod types;

pub use error::*;
pub use types::*;

use crate::config::ResolvedProvider;
use async_trait::async_trait;
use backon::{BackoffBuilder, ExponentialBuilder};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Semaphore;
use tracing::{info, warn};

/// The longest wait between two attempts, whatever a `Retry-After` asks for.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);

/// Where a streamed answer goes as it arrives: its text, and the two things a listener
/// must know to use that text before the answer is complete — that the answer went on to
/// call a tool, and that a failed attempt is being retried (its text starts over).
pub trait DeltaSink: Send + Sync {
    /// A piece of the answer's text.
    fn text(&self, piece: &str);
    /// The answer has begun a tool call.
    fn tool_call(&self) {}
    /// The attempt failed and another one follows: the text so far is void.
    fn retry(&self) {}
}

/// Text only, as it comes.
impl DeltaSink for UnboundedSender<String> {
    fn text(&self, piece: &str) {
        let _ = self.send(piece.to_string());
    }
}

/// One LLM backend.
#[async_trait]
pub trait ChatModel: Send + Sync {
    async fn complete(&self, req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError>;
    /// The same, handing text deltas to `deltas` as they arrive when the model streams
    /// (a model that does not stream answers whole and sends none).
    async fn complete_with(
        &self,
        req: &ChatRequest<'_>,
        deltas: Option<&dyn DeltaSink>,
    ) -> Result<ChatResponse, ProviderError> {
        let _ = deltas;
        self.complete(req).await
    }
    /// The model asked for, as the usage log and `status` should name it.
    fn model_name(&self) -> &str;
}

/// Who a call is for and what it was made of, for the usage log and the audit trail.
#[derive(Debug, Clone, Default)]
pub struct CallMeta {
    pub channel: String,
    pub chat_id: String,
    pub session_id: Option<String>,
    /// The mode session's folder (its `audit.jsonl` lives there); `None` outside a mode.
    pub session_dir: Option<PathBuf>,
    /// Why the call is made: `turn` (empty means the same), `compaction`, `summary`, …
    pub purpose: &'static str,
    /// The request's blocks, history range and prefix hash, when the builder knows them.
    pub shape: Option<Arc<PromptShape>>,
}

#[derive(Clone)]
pub struct Provider {
    inner: Option<Arc<Inner>>,
    /// The household's zone, for usage-log timestamps.
    tz: chrono_tz::Tz,
}

struct Inner {
    model: Arc<dyn ChatModel>,
    /// The model name configured, if any (`None`: the endpoint's default).
    model_label: Option<String>,
    /// Printable base URL (no credentials, no query); `None` for an in-process model.
    endpoint: Option<String>,
    limit: Semaphore,
    /// Delays between attempts; `max_times` is the retry budget.
    backoff: ExponentialBuilder,
    usage_log: PathBuf,
    /// `logs/`: the dated audit files go below it.
    logs_dir: PathBuf,
    /// Whether answers are streamed (for the audit record).
    stream: bool,
    /// Appends the usage and audit lines off the turn's path.
    writer: logwriter::LogWriter,
}

impl Provider {
    /// A provider that answers every call with `NotConfigured`.
    pub fn unconfigured() -> Self {
        Self {
            inner: None,
            tz: chrono_tz::UTC,
        }
    }

    /// The configured endpoint; its dialect from `provider.kind` (or the URL). The audit
    /// files go beside `usage_log` (`logs/audit/`).
    pub fn from_config(cfg: &ResolvedProvider, usage_log: PathBuf) -> Result<Self, ProviderError> {
        let model: Arc<dyn ChatModel> = match cfg.kind {
            crate::config::ProviderKind::Openai => Arc::new(openai::OpenAiCompatible::new(cfg)?),
            crate::config::ProviderKind::Anthropic => Arc::new(anthropic::Anthropic::new(cfg)?),
        };
        let mut p = Self::with_model(model, cfg.max_concurrent, cfg.max_retries, usage_log);
        let inner = p
            .inner
            .as_mut()
            .and_then(Arc::get_mut)
            .expect("a provider just built is not shared yet");
        inner.model_label = cfg.model.name().map(str::to_string);
        inner.endpoint = Some(crate::config::display_url(&cfg.base_url));
        inner.stream = cfg.stream;
        Ok(p)
    }

    pub fn with_model(
        model: Arc<dyn ChatModel>,
        max_concurrent: usize,
        max_retries: u32,
        usage_log: PathBuf,
    ) -> Self {
        let backoff = ExponentialBuilder::new()
            .with_min_delay(Duration::from_millis(500))
            .with_max_delay(Duration::from_secs(8))
            .with_factor(2.0)
            .with_jitter()
            // backon without `std` seeds its jitter with a constant; every process would
            // then retry in lockstep
            .with_jitter_seed(rand::random())
            .with_max_times(max_retries as usize);
        let logs_dir = usage_log
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        Self {
            inner: Some(Arc::new(Inner {
                model_label: Some(model.model_name().to_string()),
                model,
                endpoint: None,
                limit: Semaphore::new(max_concurrent.max(1)),
                backoff,
                usage_log,
                logs_dir,
                stream: false,
                writer: logwriter::LogWriter::start(),
            })),
            tz: chrono_tz::UTC,
        }
    }

    /// Usage-log timestamps in this zone (the household's) instead of UTC.
    pub fn with_timezone(mut self, tz: chrono_tz::Tz) -> Self {
        self.tz = tz;
        self
    }

    pub fn is_configured(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether answers are asked for as server-sent events (`provider.stream`).
    pub fn streams(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.stream)
    }

    /// Wait until every usage and audit line of the calls made so far is on disk. The
    /// kernel calls it at shutdown; the writer also drains when the provider is dropped.
    pub async fn flush(&self) {
        if let Some(inner) = &self.inner {
            inner.writer.flush().await;
        }
    }

    /// The same provider with a log writer that holds every line until the returned gate
    /// is opened (dropped): for tests that show calls never wait for the disk.
    #[doc(hidden)]
    pub fn with_gated_logs(mut self) -> (Self, std::sync::mpsc::Sender<()>) {
        let (writer, gate) = logwriter::LogWriter::start_gated();
        if let Some(inner) = self.inner.as_mut().and_then(Arc::get_mut) {
            inner.writer = writer;
        }
        (self, gate)
    }

    /// What the log writer has done (lines, batches, syncs, dropped).
    pub fn log_stats(&self) -> logwriter::WriterStats {
        self.inner
            .as_ref()
            .map(|i| i.writer.stats())
            .unwrap_or_default()
    }

    /// The model configured; `None` when unconfigured or when the endpoint's default is used.
    pub fn model_name(&self) -> Option<&str> {
        self.inner.as_ref().and_then(|i| i.model_label.as_deref())
    }

    /// One line for `status`: which model, where (never a key).
    pub fn summary(&self) -> String {
        let Some(inner) = &self.inner else {
            return "未配置 (not configured)".into();
        };
        match (&inner.model_label, &inner.endpoint) {
            (Some(m), Some(url)) => format!("{m} @ {url}"),
            (None, Some(url)) => {
                format!("（端点默认模型）@ {url} — set HOMEBOT_MODEL to choose one")
            }
            (Some(m), None) => m.clone(),
            (None, None) => "（端点默认模型）".into(),
        }
    }

    /// One completion, with bounded retries on network errors, 429 and 5xx: delays from
    /// an exponential backoff with jitter, or the server's `Retry-After`, never more than
    /// [`MAX_RETRY_WAIT`]. The concurrency slot is held only while a request is in flight,
    /// not while waiting to retry. Every attempt's outcome goes to the usage log.
    pub async fn complete(
        &self,
        req: &ChatRequest<'_>,
        meta: &CallMeta,
    ) -> Result<ChatResponse, ProviderError> {
        self.complete_with(req, meta, None).await
    }

    /// [`Provider::complete`], with text deltas handed to `deltas` as they stream in
    /// (when `provider.stream` is on; before a retried attempt, which may repeat some
    /// text, `deltas` is told [`DeltaSink::retry`]).
    pub async fn complete_with(
        &self,
        req: &ChatRequest<'_>,
        meta: &CallMeta,
        deltas: Option<&dyn DeltaSink>,
    ) -> Result<ChatResponse, ProviderError> {
        let inner = self.inner.as_ref().ok_or(ProviderError::NotConfigured)?;
        let mut delays = inner.backoff.build();
        let mut attempt = 0;
        loop {
            let (result, latency) = {
                let _permit = inner
                    .limit
                    .acquire()
                    .await
                    .expect("the provider semaphore is never closed");
                // a turn cancelled mid-call drops this future: the guard records that
                let mut pending = Pending {
                    inner,
                    tz: self.tz,
                    meta,
                    started: Instant::now(),
                    attempt,
                    armed: true,
                };
                let result = inner.model.complete_with(req, deltas).await;
                pending.armed = false;
                (result, pending.started.elapsed())
            };
            match result {
                Ok(resp) => {
                    if resp.finish_reason.as_deref() == Some("length") {
                        warn!(completion = resp.usage.completion_tokens, "the model hit its output limit (finish_reason=length); the reply is cut short");
                    }
                    inner.log_usage(self.tz, meta, &resp, latency, attempt);
                    inner.audit(self.tz, meta, Outcome::Ok(&resp), latency, attempt);
                    return Ok(resp);
                }
                Err(e) => {
                    inner.audit(self.tz, meta, Outcome::Err(&e), latency, attempt);
                    let next = e.is_retryable().then(|| delays.next()).flatten();
                    let Some(computed) = next else {
                        warn!(attempts = attempt + 1, error = %e, "provider call failed");
                        inner.log_failure(self.tz, meta, &e, latency, attempt);
                        return Err(e);
                    };
                    let wait = retry_wait(&e, computed);
                    warn!(attempt = attempt + 1, wait_ms = wait.as_millis() as u64, error = %e, "provider call failed; retrying");
                    tokio::time::sleep(wait).await;
                    if let Some(d) = deltas {
                        d.retry();
                    }
                    attempt += 1;
                }
            }
        }
    }
}

/// How an attempt ended, for its audit record.
enum Outcome<'a> {
    Ok(&'a ChatResponse),
    Err(&'a ProviderError),
    /// The caller stopped waiting (the turn was cancelled) before the answer came.
    Cancelled,
}

/// Records an attempt that never ended because its future was dropped.
struct Pending<'a> {
    inner: &'a Inner,
    tz: chrono_tz::Tz,
    meta: &'a CallMeta,
    started: Instant,
    attempt: u32,
    armed: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.armed {
            let latency = self.started.elapsed();
            self.inner.audit(
                self.tz,
                self.meta,
                Outcome::Cancelled,
                latency,
                self.attempt,
            );
        }
    }
}

/// How long to wait before the next attempt: the server's `Retry-After` if it sent one,
/// else the backoff's delay — either way at most [`MAX_RETRY_WAIT`].
fn retry_wait(e: &ProviderError, computed: Duration) -> Duration {
    match e {
        ProviderError::Http {
            retry_after: Some(d),
            ..
        } => *d,
        _ => computed,
    }
    .min(MAX_RETRY_WAIT)
}

impl Inner {
    fn log_failure(
        &self,
        tz: chrono_tz::Tz,
        meta: &CallMeta,
        e: &ProviderError,
        latency: Duration,
        retries: u32,
    ) {
        let rec = self.record(tz, meta, latency, retries, self.model_label.as_deref());
        self.append(rec, ("error", serde_json::json!(e.to_string())));
    }

    fn log_usage(
        &self,
        tz: chrono_tz::Tz,
        meta: &CallMeta,
        resp: &ChatResponse,
        latency: Duration,
        retries: u32,
    ) {
        let usage = &resp.usage;
        // with no model configured, the name the server reports is the best we know
        let model = self.model_label.as_deref().or(resp.model.as_deref());
        info!(
            model = model.unwrap_or("(endpoint default)"),
            prompt = usage.prompt_tokens,
            completion = usage.completion_tokens,
            cached = usage.cached(),
            latency_ms = latency.as_millis() as u64,
            "provider call"
        );
        let rec = self.record(tz, meta, latency, retries, model);
        self.append(rec, ("usage", serde_json::json!(usage)));
    }

    fn record(
        &self,
        tz: chrono_tz::Tz,
        meta: &CallMeta,
        latency: Duration,
        retries: u32,
        model: Option<&str>,
    ) -> serde_json::Value {
        serde_json::json!({
            "timestamp": chrono::Utc::now()
                .with_timezone(&tz)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "model": model,
            "channel": meta.channel,
            "chat_id": meta.chat_id,
            "session_id": meta.session_id,
            "latency_ms": latency.as_millis() as u64,
            "retries": retries,
        })
    }

    /// One line per call in `logs/usage.jsonl`, through the background writer.
    fn append(&self, mut rec: serde_json::Value, outcome: (&str, serde_json::Value)) {
        rec[outcome.0] = outcome.1;
        self.writer.append(self.usage_log.clone(), rec.to_string());
    }

    /// One audit record per attempt: in the session's `audit.jsonl` in a mode, else in
    /// the household day's `logs/audit/YYYY-MM-DD.jsonl`.
    fn audit(
        &self,
        tz: chrono_tz::Tz,
        meta: &CallMeta,
        outcome: Outcome<'_>,
        latency: Duration,
        retries: u32,
    ) {
        let now = chrono::Utc::now().with_timezone(&tz);
        let answer = match &outcome {
            Outcome::Ok(r) => Some(*r),
            _ => None,
        };
        let model = self
            .model_label
            .clone()
            .or_else(|| answer.and_then(|r| r.model.clone()));
        let (word, error) = match &outcome {
            Outcome::Ok(_) => ("ok", None),
            Outcome::Err(e) => ("error", Some(e.to_string())),
            Outcome::Cancelled => (
                "cancelled",
                Some("the turn stopped waiting before the answer came".to_string()),
            ),
        };
        let rec = audit::AuditRecord {
            timestamp: now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            purpose: if meta.purpose.is_empty() {
                "turn".into()
            } else {
                meta.purpose.into()
            },
            model,
            channel: meta.channel.clone(),
            chat_id: meta.chat_id.clone(),
            session_id: meta.session_id.clone(),
            shape: meta.shape.as_deref().cloned(),
            usage: answer.map(|r| audit::AuditUsage::from(&r.usage)),
            latency_ms: latency.as_millis() as u64,
            retries,
            outcome: word.into(),
            error,
            stream: self.stream,
        };
        let path = audit::audit_path(meta, &self.logs_dir, &now.format("%Y-%m-%d").to_string());
        match serde_json::to_string(&rec) {
            Ok(line) => self.writer.append(path, line),
            Err(e) => warn!(error = %e, "cannot encode an audit record"),
        }
    }
}

#[cfg(test)]
mod tests;
