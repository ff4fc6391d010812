//! The registry's series as Prometheus families, and [`render`]: what `GET /metrics`
//! serves.

use super::registry::{Counter, Labeled};
use super::series::m;
use super::*;
use std::time::SystemTime;

/// The channel connection states for `homebot_channel_connected` (from the presence
/// registry, which bounds the links and their ids): per channel link — a QQ account, a
/// satellite, Home Assistant (`link=""`) — whether it is connected and since when (Unix
/// seconds). Hand the families to [`render`].
pub fn channel_states<'a>(
    states: impl IntoIterator<Item = (&'a str, &'a str, bool, Option<i64>)>,
) -> Vec<Family> {
    let mut up = Family::new(
        "homebot_channel_connected",
        "Whether a channel's peer is connected (1) or not (0).",
        Kind::Gauge,
    );
    let mut since = Family::new(
        "homebot_channel_state_since_seconds",
        "When a channel's connection state last changed, Unix seconds.",
        Kind::Gauge,
    );
    for (channel, link, connected, at) in states {
        let labels = vec![("channel", channel.to_string()), ("link", link.to_string())];
        up = up.sample(labels.clone(), Value::Int(connected.into()));
        if let Some(at) = at {
            since = since.sample(labels, Value::Int(at));
        }
    }
    vec![up, since]
}

/// Everything in the text format: [`render`] with nothing extra.
pub fn render_text() -> String {
    render(&[])
}

/// Every series of the registry, then `extra` (families kept elsewhere — the channel
/// states, see [`channel_states`]), in the text format.
pub fn render(extra: &[Family]) -> String {
    let mut out = String::with_capacity(8 * 1024);
    for f in families().iter().chain(extra) {
        text::write_family(&mut out, f);
    }
    out
}

fn counters<const N: usize>(
    name: &'static str,
    help: &'static str,
    family: &Labeled<Counter, N>,
) -> Family {
    let mut f = Family::new(name, help, Kind::Counter);
    for (values, c) in family.each() {
        let labels = family.names.iter().copied().zip(values).collect();
        f = f.sample(labels, Value::Int(c.get() as i64));
    }
    f
}

/// Nano-units as a decimal amount.
fn money(nano: u64) -> Value {
    Value::Float(nano as f64 / 1e9)
}

fn families() -> Vec<Family> {
    let m = m();
    let mut out = Vec::new();
    let (started, since_epoch) = match m.started.get() {
        Some((i, s)) => (
            i.elapsed().as_secs_f64(),
            s.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        ),
        None => (0.0, 0.0),
    };
    out.push(
        Family::new(
            "homebot_build_info",
            "The running homebot's version (the value is always 1).",
            Kind::Gauge,
        )
        .sample(
            vec![("version", env!("CARGO_PKG_VERSION").to_string())],
            Value::Int(1),
        ),
    );
    out.push(
        Family::new(
            "homebot_start_time_seconds",
            "When the gateway started, Unix seconds.",
            Kind::Gauge,
        )
        .sample(vec![], Value::Float(since_epoch)),
    );
    out.push(
        Family::new(
            "homebot_uptime_seconds",
            "Seconds since the gateway started.",
            Kind::Gauge,
        )
        .sample(vec![], Value::Float(started)),
    );
    let mut turns = Family::new(
        "homebot_turns_total",
        "Turns by channel and outcome (answered, refused, failed, cancelled).",
        Kind::Counter,
    );
    for ([channel], c) in m.turns.each() {
        for o in TurnOutcome::ALL {
            turns = turns.sample(
                vec![
                    ("channel", channel.clone()),
                    ("outcome", o.label().to_string()),
                ],
                Value::Int(c.0[o as usize].get() as i64),
            );
        }
    }
    out.push(turns);
    out.push(
        Family::new(
            "homebot_turn_duration_seconds",
            "Turn latency from admission to reply (queue wait included), seconds.",
            Kind::Histogram,
        )
        .sample(vec![], Value::Histogram(m.turn_seconds.snapshot())),
    );
    out.push(
        Family::new(
            "homebot_turns_waiting",
            "Turns admitted to their chat's queue and not yet started.",
            Kind::Gauge,
        )
        .sample(vec![], Value::Int(m.turns_waiting.get())),
    );
    out.push(
        Family::new("homebot_turns_running", "Turns running now.", Kind::Gauge)
            .sample(vec![], Value::Int(m.turns_running.get())),
    );
    let mut calls = Family::new(
        "homebot_provider_call_duration_seconds",
        "Provider attempts by endpoint and outcome (ok, error, cancelled), seconds.",
        Kind::Histogram,
    );
    for ([provider, outcome], h) in m.provider_seconds.each() {
        calls = calls.sample(
            vec![("provider", provider), ("outcome", outcome)],
            Value::Histogram(h.snapshot()),
        );
    }
    out.push(calls);
    out.push(
        Family::new(
            "homebot_provider_refused_total",
            "Provider calls refused without a request (every circuit open).",
            Kind::Counter,
        )
        .sample(vec![], Value::Int(m.provider_refused.get() as i64)),
    );
    out.push(counters(
        "homebot_prompt_tokens_total",
        "Prompt tokens of answered provider attempts, by endpoint and model.",
        &m.prompt_tokens,
    ));
    out.push(counters(
        "homebot_cached_tokens_total",
        "Prompt tokens the endpoint's prefix cache served, by endpoint and model.",
        &m.cached_tokens,
    ));
    out.push(counters(
        "homebot_completion_tokens_total",
        "Completion tokens of answered provider attempts, by endpoint and model.",
        &m.completion_tokens,
    ));
    let mut cost = Family::new(
        "homebot_cost_total",
        "What answered provider attempts cost at the configured prices, by currency.",
        Kind::Counter,
    );
    let mut uncached = Family::new(
        "homebot_cost_uncached_total",
        "What the same attempts would have cost with no prefix-cache hits, by currency.",
        Kind::Counter,
    );
    for ([currency], c) in m.cost.each() {
        let labels = vec![("currency", currency)];
        cost = cost.sample(labels.clone(), money(c.actual.get()));
        uncached = uncached.sample(labels, money(c.uncached.get()));
    }
    out.push(cost);
    out.push(uncached);
    out.push(counters(
        "homebot_mode_entries_total",
        "Mode sessions begun, by mode.",
        &m.mode_entries,
    ));
    out.push(counters(
        "homebot_mode_exits_total",
        "Mode sessions archived, by mode and reason (user, expired, recovered).",
        &m.mode_exits,
    ));
    out.push(counters(
        "homebot_actor_state_runs_total",
        "Runs of each actor's handlers on its supervised state (a message handled makes one or a few), by actor.",
        &m.actor_state_runs,
    ));
    out
}
