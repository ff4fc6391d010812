//! What instruments a provider's calls (`ProviderMeter`): latency by outcome, tokens and
//! money by endpoint and model, and the calls refused before they were made.

use super::registry::{Counter, Histogram};
use super::series::{m, MAX_TOKENS_PER_CALL};
use crate::config::Price;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// What a priced answer cost, in nano-units of its currency.
#[derive(Debug, Default)]
pub struct CostCounters {
    pub(super) actual: Counter,
    pub(super) uncached: Counter,
}

/// The series of one provider endpoint, looked up when the provider is made.
pub struct ProviderMeter {
    /// Answered, failed, cancelled.
    pub(super) latency: [Arc<Histogram>; 3],
    pub(super) prompt: Arc<Counter>,
    pub(super) cached: Arc<Counter>,
    pub(super) completion: Arc<Counter>,
    pub(super) price: OnceLock<Option<(Price, Arc<CostCounters>)>>,
}

/// How a provider attempt ended, for [`ProviderMeter::attempt`].
#[derive(Debug, Clone, Copy)]
pub enum CallEnd {
    /// Answered, with prompt, cached and completion tokens as the server reported them.
    Answered {
        prompt: u64,
        cached: u64,
        completion: u64,
    },
    Failed,
    Cancelled,
}

impl ProviderMeter {
    /// `provider`: the endpoint's name; `model`: its configured model (`None`: the
    /// endpoint's default, labelled `default`).
    pub fn new(provider: &str, model: Option<&str>) -> Self {
        let model = model.unwrap_or("default");
        let lat = |o: &str| m().provider_seconds.get([provider, o]);
        Self {
            latency: [lat("ok"), lat("error"), lat("cancelled")],
            prompt: m().prompt_tokens.get([provider, model]),
            cached: m().cached_tokens.get([provider, model]),
            completion: m().completion_tokens.get([provider, model]),
            price: OnceLock::new(),
        }
    }

    /// The endpoint model's price (`None`: no price configured); the first call wins.
    pub fn set_price(&self, price: Option<&Price>) {
        let priced = price.map(|p| (p.clone(), m().cost.get([p.currency.as_str()])));
        let _ = self.price.set(priced);
    }

    /// One attempt of a call, and how long it took.
    pub fn attempt(&self, end: CallEnd, latency: Duration) {
        let i = match end {
            CallEnd::Answered { .. } => 0,
            CallEnd::Failed => 1,
            CallEnd::Cancelled => 2,
        };
        self.latency[i].observe(latency);
        let CallEnd::Answered {
            prompt,
            cached,
            completion,
        } = end
        else {
            return;
        };
        let (prompt, completion) = (
            prompt.min(MAX_TOKENS_PER_CALL),
            completion.min(MAX_TOKENS_PER_CALL),
        );
        let cached = cached.min(prompt);
        self.prompt.add(prompt);
        self.cached.add(cached);
        self.completion.add(completion);
        if let Some(Some((price, cost))) = self.price.get() {
            // billed at the hour it was sent (a price may have tiers by the hour)
            let sent = chrono::Utc::now()
                - chrono::Duration::from_std(latency).unwrap_or(chrono::Duration::zero());
            let c = price.cost_at(sent, prompt, cached, completion);
            // nano-units (rounded per answer: at most half a nano-unit off each)
            let nano = |pico: u128| ((pico + 500) / 1000).min(u64::MAX as u128) as u64;
            cost.actual.add(nano(c.actual));
            cost.uncached.add(nano(c.uncached));
        }
    }
}

/// A call refused without a request (every circuit open).
pub fn provider_refused() {
    m().provider_refused.inc();
}
