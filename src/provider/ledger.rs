//! What the provider writes about its calls: a line per call in `logs/usage.jsonl` and an
//! audit record per attempt (see [`super::audit`]), both handed to the background
//! [`LogWriter`] so no call waits for the disk. Each names the endpoint that answered
//! (`provider`: `primary`, `fallback-1`, …).

use super::audit::{audit_path, AuditRecord, AuditUsage};
use super::backend::Backend;
use super::error::ProviderError;
use super::logwriter::LogWriter;
use super::model::CallMeta;
use super::types::ChatResponse;
use std::path::PathBuf;
use std::time::Duration;
use tracing::{info, warn};

/// How an attempt ended, for its audit record.
pub enum Outcome<'a> {
    Ok(&'a ChatResponse),
    Err(&'a ProviderError),
    /// The caller stopped waiting (the turn was cancelled) before the answer came.
    Cancelled,
}

pub struct Ledger {
    pub usage_log: PathBuf,
    /// `logs/`: the dated audit files go below it.
    pub logs_dir: PathBuf,
    pub writer: LogWriter,
}

/// One call's facts common to its lines: who it was for, the zone of its timestamps, and
/// the endpoint it went to (`None`: refused before any endpoint took it).
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub tz: crate::zone::Zone,
    pub meta: &'a CallMeta,
    pub backend: Option<&'a Backend>,
}

impl Ledger {
    pub fn new(usage_log: PathBuf, writer: LogWriter) -> Self {
        let logs_dir = usage_log
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        Self {
            usage_log,
            logs_dir,
            writer,
        }
    }

    /// The usage line of a call that failed.
    pub fn failure(&self, at: Entry<'_>, e: &ProviderError, latency: Duration, retries: u32) {
        let model = at.backend.and_then(|b| b.model_label.as_deref());
        let rec = self.record(at, latency, retries, model);
        self.append(rec, ("error", serde_json::json!(e.to_string())));
    }

    /// The usage line of a call that was answered.
    pub fn usage(&self, at: Entry<'_>, resp: &ChatResponse, latency: Duration, retries: u32) {
        let usage = &resp.usage;
        // with no model configured, the name the server reports is the best we know
        let model = at
            .backend
            .and_then(|b| b.model_label.as_deref())
            .or(resp.model.as_deref());
        info!(
            model = model.unwrap_or("(endpoint default)"),
            provider = at.backend.map_or("-", |b| b.name.as_str()),
            prompt = usage.prompt_tokens,
            completion = usage.completion_tokens,
            reasoning = usage.reasoning_tokens.unwrap_or(0),
            cached = usage.cached(),
            latency_ms = latency.as_millis() as u64,
            "provider call"
        );
        let rec = self.record(at, latency, retries, model);
        self.append(rec, ("usage", serde_json::json!(usage)));
    }

    fn record(
        &self,
        at: Entry<'_>,
        latency: Duration,
        retries: u32,
        model: Option<&str>,
    ) -> serde_json::Value {
        let meta = at.meta;
        serde_json::json!({
            "timestamp": chrono::Utc::now()
                .with_timezone(&at.tz)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "model": model,
            "provider": at.backend.map(|b| b.name.as_str()),
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
    pub fn audit(&self, at: Entry<'_>, outcome: Outcome<'_>, latency: Duration, retries: u32) {
        meter(at, &outcome, latency);
        let meta = at.meta;
        let now = chrono::Utc::now().with_timezone(&at.tz);
        let answer = match &outcome {
            Outcome::Ok(r) => Some(*r),
            _ => None,
        };
        let model = at
            .backend
            .and_then(|b| b.model_label.clone())
            .or_else(|| answer.and_then(|r| r.model.clone()));
        let (word, error) = match &outcome {
            Outcome::Ok(_) => ("ok", None),
            Outcome::Err(e) => ("error", Some(e.to_string())),
            Outcome::Cancelled => (
                "cancelled",
                Some("the turn stopped waiting before the answer came".to_string()),
            ),
        };
        let rec = AuditRecord {
            timestamp: now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            purpose: if meta.purpose.is_empty() {
                "turn".into()
            } else {
                meta.purpose.into()
            },
            model,
            provider: at.backend.map(|b| b.name.clone()),
            channel: meta.channel.clone(),
            chat_id: meta.chat_id.clone(),
            session_id: meta.session_id.clone(),
            shape: meta.shape.as_deref().cloned(),
            usage: answer.map(|r| AuditUsage::from(&r.usage)),
            latency_ms: latency.as_millis() as u64,
            retries,
            outcome: word.into(),
            error,
            stream: at.backend.is_some_and(|b| b.stream),
            turn: meta.turn.clone(),
        };
        let path = audit_path(meta, &self.logs_dir, &now.format("%Y-%m-%d").to_string());
        match serde_json::to_string(&rec) {
            Ok(line) => self.writer.append(path, line),
            Err(e) => warn!(error = %e, "cannot encode an audit record"),
        }
    }
}

/// The attempt in the metrics: its endpoint's latency, tokens and cost, or a refusal.
fn meter(at: Entry<'_>, outcome: &Outcome<'_>, latency: Duration) {
    use crate::metrics::CallEnd;
    let Some(backend) = at.backend else {
        crate::metrics::provider_refused();
        return;
    };
    let end = match outcome {
        Outcome::Ok(r) => CallEnd::Answered {
            prompt: r.usage.prompt_tokens,
            cached: r.usage.cached(),
            completion: r.usage.completion_tokens,
        },
        Outcome::Err(_) => CallEnd::Failed,
        Outcome::Cancelled => CallEnd::Cancelled,
    };
    backend.meter.attempt(end, latency);
}
