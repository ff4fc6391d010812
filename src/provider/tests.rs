//! Unit tests of the Provider: retry waits, backoff, the status summary; `test_cfg` for
//! the dialects' tests.

use super::*;

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
        let p = Provider::with_model(
            Arc::new(openai::OpenAiCompatible::new(&test_cfg()).unwrap()),
            1,
            retries,
            PathBuf::from("/nonexistent/usage.jsonl"),
        );
        let inner = p.inner.as_ref().unwrap();
        let delays: Vec<Duration> = inner.backoff.build().collect();
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
}
