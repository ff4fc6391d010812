//! Unit tests of the Provider: retry waits, backoff, the status summary and circuit line;
//! `test_cfg` for the dialects' tests.

use super::actor::CircuitView;
use super::breaker::State;
use super::call::{backoff, retry_wait};
use super::handle::circuit_line;
use super::*;
use crate::config::ResolvedProvider;
use backon::{BackoffBuilder, ExponentialBuilder};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn http(status: u16, retry_after: Option<u64>) -> ProviderError {
    ProviderError::Http {
        status,
        body: String::new(),
        retry_after: retry_after.map(Duration::from_secs),
    }
}

#[test]
fn retry_after_is_honoured_but_capped() {
    let backoff = Duration::from_millis(700);
    assert_eq!(
        retry_wait(&http(429, Some(1)), backoff),
        Duration::from_secs(1)
    );
    assert_eq!(retry_wait(&http(429, Some(3600)), backoff), MAX_RETRY_WAIT);
    assert_eq!(retry_wait(&http(503, None), backoff), backoff);
    assert_eq!(
        retry_wait(&http(503, None), Duration::from_secs(99)),
        MAX_RETRY_WAIT
    );
}

#[test]
fn backoff_grows_with_jitter_within_bounds_and_counts_the_retries() {
    for retries in [0u32, 1, 2, 10] {
        let delays: Vec<Duration> = backoff(retries).build().collect();
        assert_eq!(delays.len(), retries as usize);
        for (i, d) in delays.iter().enumerate() {
            let base = Duration::from_millis(500 * 2u64.pow(i as u32)).min(Duration::from_secs(8));
            assert!(
                *d >= base && *d <= base * 2,
                "retry {i}: {d:?} (base {base:?})"
            );
        }
    }
    // two providers do not retry in lockstep
    let a: Vec<_> = ExponentialBuilder::new()
        .with_jitter()
        .with_jitter_seed(rand::random())
        .with_max_times(8)
        .build()
        .collect();
    let b: Vec<_> = ExponentialBuilder::new()
        .with_jitter()
        .with_jitter_seed(rand::random())
        .with_max_times(8)
        .build()
        .collect();
    assert_ne!(a, b);
}

/// A provider configuration for unit tests: an unreachable loopback endpoint.
pub(crate) fn test_cfg() -> ResolvedProvider {
    ResolvedProvider {
        base_url: "http://127.0.0.1:9/v1".into(),
        model: crate::config::ModelChoice(None),
        api_key: None,
        api_key_source: None,
        timeout_secs: 5,
        max_retries: 0,
        max_concurrent: 1,
        temperature: None,
        max_tokens: None,
        max_response_bytes: 1 << 20,
        kind: crate::config::ProviderKind::Openai,
        stream: false,
        reasoning: Default::default(),
    }
}

#[test]
fn summary_names_model_and_endpoint_never_the_key() {
    assert_eq!(
        Provider::unconfigured().summary(),
        "未配置 (not configured)"
    );
    let mut cfg = test_cfg();
    cfg.base_url = "https://user:pw@llm.example/v1?key=sk-secret".into();
    cfg.api_key = Some(crate::config::Secret::new("sk-secret"));
    let p = Provider::from_config(&cfg, PathBuf::from("/nonexistent")).unwrap();
    assert_eq!(
        p.summary(),
        "（端点默认模型）@ https://llm.example/v1 — set HOMEBOT_MODEL to choose one"
    );
    assert_eq!(p.model_name(), None);
    cfg.model = crate::config::ModelChoice(Some("deepseek-chat".into()));
    cfg.base_url = crate::config::DEEPSEEK_BASE_URL.into();
    let p = Provider::from_config(&cfg, PathBuf::from("/nonexistent")).unwrap();
    assert_eq!(p.summary(), "deepseek-chat @ https://api.deepseek.com");
    assert_eq!(p.model_name(), Some("deepseek-chat"));
    assert_eq!(
        p.circuit_line(),
        None,
        "a closed circuit adds no status line"
    );
}

#[test]
fn the_circuit_line_says_what_is_open_for_how_long_and_who_answers() {
    let now = Instant::now();
    let view = |name: &str, state| CircuitView {
        name: name.into(),
        summary: format!("{name}-model @ http://127.0.0.1:8080/v1"),
        state,
        failures: 5,
        opened: 1,
    };
    let closed = State::Closed { failures: 2 };
    let open = State::Open {
        until: now + Duration::from_millis(12_300),
    };
    assert_eq!(circuit_line(&[view("primary", closed)], now), None);
    assert_eq!(
        circuit_line(&[view("primary", open)], now).unwrap(),
        "模型线路: primary 熔断中 (circuit open)：连续 5 次调用失败，13 秒后试探恢复；调用直接失败，不发请求"
    );
    assert_eq!(
        circuit_line(&[view("primary", open), view("fallback-1", closed)], now).unwrap(),
        "模型线路: primary 熔断中 (circuit open)：连续 5 次调用失败，13 秒后试探恢复；现由 fallback-1（fallback-1-model @ http://127.0.0.1:8080/v1）回答"
    );
    let half = State::HalfOpen {
        trial_running: true,
    };
    assert_eq!(
        circuit_line(&[view("primary", half), view("fallback-1", closed)], now).unwrap(),
        "模型线路: primary 半开 (half-open)：一次试探调用进行中；现由 fallback-1（fallback-1-model @ http://127.0.0.1:8080/v1）回答"
    );
    // past its cool-down an open circuit waits for the next call to try
    let cooled = State::Open {
        until: now - Duration::from_millis(1),
    };
    assert_eq!(
        circuit_line(&[view("primary", cooled)], now).unwrap(),
        "模型线路: primary 半开 (half-open)：冷却已过，下一次调用试探恢复"
    );
    // a fallback's open circuit is shown while the primary answers
    assert_eq!(
        circuit_line(&[view("primary", closed), view("fallback-1", open)], now).unwrap(),
        "模型线路: fallback-1 熔断中 (circuit open)：连续 5 次调用失败，13 秒后试探恢复"
    );
}
