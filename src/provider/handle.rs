//! [`Provider`]: the handle the kernel, the agent and the summarizer hold — cheap to
//! clone, all clones reaching one provider actor. Without a configured endpoint it is the
//! unconfigured provider, which answers every call with [`ProviderError::NotConfigured`]
//! and starts no actor.

use super::actor::{self, ActorThread, CircuitView, Circuits, GetCircuits, ProviderActor, Shared};
use super::backend::{Backend, PRIMARY};
use super::breaker::State;
use super::call::{backoff, Call};
use super::error::ProviderError;
use super::ledger::Ledger;
use super::logwriter::{LogReader, LogWriter, WriterStats};
use super::model::{Calibrate, CallMeta, ChatModel, DeltaSink};
use super::types::{ChatRequest, ChatResponse};
use crate::config::{BreakerSettings, ResolvedProvider};
use actix::Addr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone)]
pub struct Provider {
    inner: Option<Arc<Handle>>,
    /// The household's zone, for usage-log timestamps.
    tz: crate::zone::Zone,
}

struct Handle {
    addr: Addr<ProviderActor>,
    /// The actor's state, for what the handle answers without asking it (names, flags,
    /// the log writer's counters).
    shared: Arc<Shared>,
    circuits: Circuits,
    /// Last: stopping the actor's thread comes after everything else let go.
    _thread: ActorThread,
}

impl Handle {
    fn start(shared: Shared) -> Self {
        let shared = Arc::new(shared);
        let (addr, circuits, thread) = actor::start(shared.clone());
        Self {
            addr,
            shared,
            circuits,
            _thread: thread,
        }
    }

    fn primary(&self) -> &Backend {
        &self.shared.backends[0]
    }
}

impl Provider {
    /// A provider that answers every call with `NotConfigured`.
    pub fn unconfigured() -> Self {
        Self {
            inner: None,
            tz: crate::zone::Zone::utc(),
        }
    }

    /// The configured endpoint, no fallback, the default breaker; its dialect from
    /// `provider.kind` (or the URL). The audit files go beside `usage_log` (`logs/audit/`).
    pub fn from_config(cfg: &ResolvedProvider, usage_log: PathBuf) -> Result<Self, ProviderError> {
        Self::from_setup(cfg, &[], BreakerSettings::default(), usage_log)
    }

    /// The configured endpoint, the `[[provider.fallback]]` endpoints in order, and the
    /// breaker settings every endpoint's circuit uses. The retry budget is the primary's.
    pub fn from_setup(
        primary: &ResolvedProvider,
        fallbacks: &[ResolvedProvider],
        breaker: BreakerSettings,
        usage_log: PathBuf,
    ) -> Result<Self, ProviderError> {
        let mut backends = vec![Arc::new(Backend::from_config(primary, PRIMARY.into())?)];
        for (i, f) in fallbacks.iter().enumerate() {
            backends.push(Arc::new(Backend::from_config(
                f,
                Backend::fallback_name(i + 1),
            )?));
        }
        Ok(Self::start(Shared {
            backends,
            ledger: Ledger::new(usage_log, LogWriter::start()),
            backoff: backoff(primary.max_retries),
            breaker,
        }))
    }

    /// A model in this process (tests, benchmarks), with the default breaker.
    pub fn with_model(
        model: Arc<dyn ChatModel>,
        max_concurrent: usize,
        max_retries: u32,
        usage_log: PathBuf,
    ) -> Self {
        Self::start(Shared {
            backends: vec![Arc::new(Backend::in_process(
                model,
                max_concurrent,
                PRIMARY.into(),
            ))],
            ledger: Ledger::new(usage_log, LogWriter::start()),
            backoff: backoff(max_retries),
            breaker: BreakerSettings::default(),
        })
    }

    fn start(shared: Shared) -> Self {
        Self {
            inner: Some(Arc::new(Handle::start(shared))),
            tz: crate::zone::Zone::utc(),
        }
    }

    /// Price each endpoint's answers by its model's entry in `prices` (`[provider.price]`)
    /// for the cost metrics; an endpoint whose model has none counts tokens only. Set
    /// once: a second call changes nothing.
    pub fn with_prices(
        self,
        prices: &std::collections::BTreeMap<String, crate::config::Price>,
    ) -> Self {
        if let Some(h) = &self.inner {
            for b in &h.shared.backends {
                b.meter
                    .set_price(b.model_label.as_deref().and_then(|m| prices.get(m)));
            }
        }
        self
    }

    /// Usage-log timestamps in this zone (the household's) instead of UTC.
    pub fn with_timezone(mut self, tz: crate::zone::Zone) -> Self {
        self.tz = tz;
        self
    }

    pub fn is_configured(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether answers are asked for as server-sent events (`provider.stream`).
    pub fn streams(&self) -> bool {
        self.inner.as_ref().is_some_and(|h| h.primary().stream)
    }

    /// Wait until every usage and audit line of the calls made so far is on disk. The
    /// kernel calls it at shutdown; the writer also drains when the provider is dropped.
    pub async fn flush(&self) {
        if let Some(h) = &self.inner {
            h.shared.ledger.writer.flush().await;
        }
    }

    /// The same provider (a new actor over the same endpoints) with a log writer that
    /// holds every line until the returned gate is opened (dropped): for tests that show
    /// calls never wait for the disk.
    #[doc(hidden)]
    pub fn with_gated_logs(self) -> (Self, std::sync::mpsc::Sender<()>) {
        let (writer, gate) = LogWriter::start_gated();
        let Some(h) = &self.inner else {
            return (self, gate);
        };
        let s = &h.shared;
        let gated = Self::start(Shared {
            backends: s.backends.clone(),
            ledger: Ledger::new(s.ledger.usage_log.clone(), writer),
            backoff: s.backoff,
            breaker: s.breaker,
        });
        (gated.with_timezone(self.tz), gate)
    }

    /// A reader of the usage and audit logs that sees the lines still on their way to
    /// the disk too (the dashboard's figures include a call as soon as it is answered).
    pub fn log_reader(&self) -> Option<LogReader> {
        self.inner.as_ref().map(|h| h.shared.ledger.writer.reader())
    }

    /// What the log writer has done (lines, batches, syncs, dropped).
    pub fn log_stats(&self) -> WriterStats {
        self.inner
            .as_ref()
            .map(|h| h.shared.ledger.writer.stats())
            .unwrap_or_default()
    }

    /// The model configured; `None` when unconfigured or when the endpoint's default is used.
    pub fn model_name(&self) -> Option<&str> {
        self.inner
            .as_ref()
            .and_then(|h| h.primary().model_label.as_deref())
    }

    /// One line for `status`: which model, where (never a key).
    pub fn summary(&self) -> String {
        match &self.inner {
            None => "未配置 (not configured)".into(),
            Some(h) => h.primary().summary(),
        }
    }

    /// The circuits now, as the actor has them (after every call reported so far by this
    /// task).
    pub async fn circuits(&self) -> Vec<CircuitView> {
        match &self.inner {
            None => Vec::new(),
            Some(h) => h.addr.send(GetCircuits).await.unwrap_or_default(),
        }
    }

    /// One line for `status` while a circuit is not closed (`None` while all are): which
    /// endpoint failed, for how much longer calls skip it, and who answers meanwhile.
    pub fn circuit_line(&self) -> Option<String> {
        let h = self.inner.as_ref()?;
        circuit_line(&h.circuits.views(), Instant::now())
    }

    /// One completion from the endpoint the provider actor admits: the primary, or while
    /// its circuit is open the first fallback whose circuit is closed; with neither, a
    /// fast [`ProviderError::CircuitOpen`]. Retries and logging: see
    /// [`super::call`].
    pub async fn complete(
        &self,
        req: &ChatRequest<'_>,
        meta: &CallMeta,
    ) -> Result<ChatResponse, ProviderError> {
        self.complete_and_calibrate(req, meta, None, None).await
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
        self.complete_and_calibrate(req, meta, deltas, None).await
    }

    /// [`Provider::complete_with`], handing the reported prompt tokens to `calibrate`
    /// when the primary endpoint answered (see [`Calibrate`]).
    pub async fn complete_and_calibrate(
        &self,
        req: &ChatRequest<'_>,
        meta: &CallMeta,
        deltas: Option<&dyn DeltaSink>,
        calibrate: Option<Calibrate<'_>>,
    ) -> Result<ChatResponse, ProviderError> {
        let h = self.inner.as_ref().ok_or(ProviderError::NotConfigured)?;
        Call {
            addr: &h.addr,
            shared: &h.shared,
            circuits: &h.circuits,
            tz: self.tz,
            meta,
            deltas,
            calibrate,
        }
        .run(req)
        .await
    }
}

/// The `status` line of the circuits, `None` while every one is closed.
pub fn circuit_line(views: &[CircuitView], now: Instant) -> Option<String> {
    if views
        .iter()
        .all(|v| matches!(v.state, State::Closed { .. }))
    {
        return None;
    }
    let mut parts = Vec::new();
    for v in views {
        match v.state {
            State::Closed { .. } => {}
            State::Open { until } if until <= now => parts.push(format!(
                "{} 半开 (half-open)：冷却已过，下一次调用试探恢复",
                v.name
            )),
            State::Open { .. } => parts.push(format!(
                "{} 熔断中 (circuit open)：连续 {} 次调用失败，{} 秒后试探恢复",
                v.name,
                v.failures,
                actor::retry_in(v.state, now).as_secs_f64().ceil() as u64
            )),
            State::HalfOpen { trial_running } => parts.push(format!(
                "{} 半开 (half-open)：{}",
                v.name,
                if trial_running {
                    "一次试探调用进行中"
                } else {
                    "下一次调用试探恢复"
                }
            )),
        }
    }
    let answering = views
        .iter()
        .find(|v| matches!(v.state, State::Closed { .. }));
    let may_try = views.iter().any(|v| match v.state {
        State::Open { until } => until <= now,
        State::HalfOpen { trial_running } => !trial_running,
        State::Closed { .. } => false,
    });
    let meanwhile = match answering {
        Some(v) if v.name == PRIMARY => String::new(),
        Some(v) => format!("；现由 {}（{}）回答", v.name, v.summary),
        None if may_try => String::new(),
        None => "；调用直接失败，不发请求".into(),
    };
    Some(format!("模型线路: {}{meanwhile}", parts.join("；")))
}
