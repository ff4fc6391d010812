//! One endpoint as the provider runs it: its client (a [`ChatModel`] of either dialect),
//! its concurrency slots, and the names the logs and `status` give it. The primary is
//! `primary`; the `[[provider.fallback]]` tables are `fallback-1`, `fallback-2`, … in
//! the file's order.

use super::anthropic::Anthropic;
use super::error::ProviderError;
use super::model::ChatModel;
use super::openai::OpenAiCompatible;
use super::slots::Slots;
use crate::config::{ProviderKind, ResolvedProvider};
use std::sync::Arc;

/// The name of the primary endpoint in the audit records.
pub const PRIMARY: &str = "primary";

pub struct Backend {
    pub model: Arc<dyn ChatModel>,
    /// The model name configured, if any (`None`: the endpoint's default).
    pub model_label: Option<String>,
    /// Printable base URL (no credentials, no query); `None` for an in-process model.
    pub endpoint: Option<String>,
    /// Calls in flight at once, turns first; a slot is held only while a request is.
    pub slots: Slots,
    /// Whether answers are streamed (for the audit record).
    pub stream: bool,
    /// `primary`, `fallback-1`, …
    pub name: String,
    /// Its series in the metrics (latency, tokens, cost at its model's price).
    pub meter: crate::metrics::ProviderMeter,
}

impl Backend {
    /// The endpoint of `cfg`, its dialect from `kind`.
    pub fn from_config(cfg: &ResolvedProvider, name: String) -> Result<Self, ProviderError> {
        let model: Arc<dyn ChatModel> = match cfg.kind {
            ProviderKind::Openai => Arc::new(OpenAiCompatible::new(cfg)?),
            ProviderKind::Anthropic => Arc::new(Anthropic::new(cfg)?),
        };
        Ok(Self {
            meter: crate::metrics::ProviderMeter::new(&name, cfg.model.name()),
            model,
            model_label: cfg.model.name().map(str::to_string),
            endpoint: Some(crate::config::display_url(&cfg.base_url)),
            slots: Slots::new(cfg.max_concurrent),
            stream: cfg.stream,
            name,
        })
    }

    /// A model in this process (tests, benchmarks).
    pub fn in_process(model: Arc<dyn ChatModel>, max_concurrent: usize, name: String) -> Self {
        Self {
            meter: crate::metrics::ProviderMeter::new(&name, Some(model.model_name())),
            model_label: Some(model.model_name().to_string()),
            model,
            endpoint: None,
            slots: Slots::new(max_concurrent),
            stream: false,
            name,
        }
    }

    /// The name of the `n`th fallback (from 1).
    pub fn fallback_name(n: usize) -> String {
        format!("fallback-{n}")
    }

    pub fn is_primary(&self) -> bool {
        self.name == PRIMARY
    }

    /// Which model, where (never a key).
    pub fn summary(&self) -> String {
        match (&self.model_label, &self.endpoint) {
            (Some(m), Some(url)) => format!("{m} @ {url}"),
            (None, Some(url)) => {
                format!("（端点默认模型）@ {url} — set HOMEBOT_MODEL to choose one")
            }
            (Some(m), None) => m.clone(),
            (None, None) => "（端点默认模型）".into(),
        }
    }
}
