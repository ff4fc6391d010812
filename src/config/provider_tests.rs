//! Tests of the provider resolution: order, keys per endpoint, defaults, bounds, kinds.

use super::*;
use std::path::PathBuf;

fn p() -> PathBuf {
    PathBuf::from("/ws/config.toml")
}

#[test]
fn provider_resolution_order() {
    let c = Config::default();
    assert!(c.resolve_provider(&EnvOverrides::default()).is_none());
    let ds = EnvOverrides {
        deepseek_api_key: Some(Secret::new("k")),
        ..Default::default()
    };
    let r = c.resolve_provider(&ds).unwrap();
    assert_eq!(r.base_url, DEEPSEEK_BASE_URL);
    assert_eq!(r.model.name(), Some(DEEPSEEK_MODEL));
    assert_eq!((r.timeout_secs, r.max_tokens), (60, Some(4096)));
    let local = EnvOverrides {
        base_url: Some("http://127.0.0.1:8080/v1/".into()),
        model: Some("smol".into()),
        ..Default::default()
    };
    let r = c.resolve_provider(&local).unwrap();
    assert_eq!(r.base_url, "http://127.0.0.1:8080/v1");
    assert_eq!(r.model.name(), Some("smol"));
    assert!(r.api_key.is_none());
}

fn key_of(r: &ResolvedProvider) -> Option<&str> {
    r.api_key.as_ref().map(Secret::expose)
}

#[test]
fn keys_go_only_to_their_endpoint() {
    let c = Config::default();
    let ds = |url: &str| EnvOverrides {
        base_url: Some(url.into()),
        deepseek_api_key: Some(Secret::new("sk-deepseek")),
        ..Default::default()
    };
    // DeepSeek's key to DeepSeek, however the URL is spelled
    for url in [
        "https://api.deepseek.com",
        "https://api.deepseek.com/",
        "https://api.deepseek.com/v1",
        "https://api.deepseek.com/v1/",
    ] {
        let r = c.resolve_provider(&ds(url)).unwrap();
        assert_eq!(key_of(&r), Some("sk-deepseek"), "{url}");
        assert_eq!(r.api_key_source, Some("DEEPSEEK_API_KEY"));
        assert_eq!(r.model.name(), Some(DEEPSEEK_MODEL), "{url}");
    }
    // …and to nothing else, look-alikes included
    for url in [
        "http://127.0.0.1:8080/v1",
        "https://example.com/v1",
        "http://api.deepseek.com",
        "https://api.deepseek.com.evil.example",
        "https://api.deepseek.com:8443",
        "https://api.deepseek.com/proxy",
    ] {
        let r = c.resolve_provider(&ds(url)).unwrap();
        assert_eq!(key_of(&r), None, "{url}");
        assert_eq!(r.api_key_source, None, "{url}");
    }
    // a key given for the custom endpoint goes there
    let mut own = ds("http://127.0.0.1:8080/v1");
    own.api_key = Some(Secret::new("sk-local"));
    let r = c.resolve_provider(&own).unwrap();
    assert_eq!(key_of(&r), Some("sk-local"));
    assert_eq!(r.api_key_source, Some("HOMEBOT_API_KEY"));
    // the file's key belongs to the file's URL, not to one the environment swapped in
    let file = Config::parse(
        "[provider]\nbase_url = \"https://llm.example/v1\"\napi_key = \"sk-file\"\n",
        &p(),
    )
    .unwrap();
    let r = file.resolve_provider(&EnvOverrides::default()).unwrap();
    assert_eq!(key_of(&r), Some("sk-file"));
    let r = file
        .resolve_provider(&EnvOverrides {
            base_url: Some("https://llm.example/v1/".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        key_of(&r),
        Some("sk-file"),
        "same endpoint, spelled with a /"
    );
    let r = file
        .resolve_provider(&EnvOverrides {
            base_url: Some("http://10.0.0.9:8080/v1".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(key_of(&r), None);
    // a file key with no file URL follows the endpoint in effect; none means DeepSeek
    let keyonly = Config::parse("[provider]\napi_key = \"sk-file\"\n", &p()).unwrap();
    let r = keyonly.resolve_provider(&EnvOverrides::default()).unwrap();
    assert_eq!(
        (r.base_url.as_str(), key_of(&r)),
        (DEEPSEEK_BASE_URL, Some("sk-file"))
    );
    // DEEPSEEK_API_KEY alone still selects DeepSeek
    let r = c
        .resolve_provider(&EnvOverrides {
            deepseek_api_key: Some(Secret::new("sk-deepseek")),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        (r.base_url.as_str(), key_of(&r)),
        (DEEPSEEK_BASE_URL, Some("sk-deepseek"))
    );
}

#[test]
fn custom_endpoints_have_no_default_model_and_local_ones_more_time() {
    let c = Config::default();
    let env = |url: &str| EnvOverrides {
        base_url: Some(url.into()),
        ..Default::default()
    };
    for url in [
        "http://127.0.0.1:8080/v1",
        "http://localhost:11434/v1",
        "http://[::1]:8080/v1",
        "http://127.0.0.2:8080",
    ] {
        let r = c.resolve_provider(&env(url)).unwrap();
        assert_eq!(r.model, ModelChoice(None), "{url}");
        assert_eq!(r.model.to_string(), "(endpoint default)");
        assert_eq!(
            (r.timeout_secs, r.max_tokens),
            (LOCAL_TIMEOUT_SECS, Some(DEFAULT_MAX_TOKENS)),
            "{url}"
        );
    }
    for url in ["https://llm.example/v1", "http://192.168.1.5:8080/v1"] {
        let r = c.resolve_provider(&env(url)).unwrap();
        assert_eq!(r.model, ModelChoice(None), "{url}");
        assert_eq!((r.timeout_secs, r.max_tokens), (60, Some(4096)), "{url}");
    }
    // configured values win over the local defaults
    let cfg = Config::parse("[provider]\ntimeout_secs = 20\nmax_tokens = 300\n", &p()).unwrap();
    let r = cfg
        .resolve_provider(&env("http://127.0.0.1:8080/v1"))
        .unwrap();
    assert_eq!((r.timeout_secs, r.max_tokens), (20, Some(300)));
}

#[test]
fn provider_numbers_are_bounded_and_name_their_key() {
    for (toml, key, msg) in [
        (
            "max_retries = 11",
            "provider.max_retries",
            "must be between 0 and 10, got 11",
        ),
        (
            "timeout_secs = 0",
            "provider.timeout_secs",
            "must be between 1 and 3600, got 0",
        ),
        ("timeout_secs = 3601", "provider.timeout_secs", "got 3601"),
        (
            "max_concurrent = 0",
            "provider.max_concurrent",
            "must be between 1 and 64, got 0",
        ),
        ("max_concurrent = 65", "provider.max_concurrent", "got 65"),
        (
            "max_tokens = 0",
            "provider.max_tokens",
            "must be between 1 and 1000000, got 0",
        ),
        ("max_tokens = 1000001", "provider.max_tokens", "got 1000001"),
        (
            "base_url = \"ftp://x\"",
            "provider.base_url",
            "must be an http",
        ),
        ("base_url = \"http://\"", "provider.base_url", "with a host"),
    ] {
        let err = Config::parse(&format!("[provider]\n{toml}\n"), &p()).unwrap_err();
        let s = err.to_string();
        assert!(
            s.starts_with(&format!("/ws/config.toml: key `{key}`: ")),
            "{s}"
        );
        assert!(s.contains(msg), "{s}");
    }
    Config::parse(
        "[provider]\nmax_retries = 10\ntimeout_secs = 3600\nmax_concurrent = 64\nmax_tokens = 1000000\n",
        &p(),
    )
    .unwrap();
    Config::parse(
        "[provider]\nmax_retries = 0\ntimeout_secs = 1\nmax_concurrent = 1\nmax_tokens = 1\n",
        &p(),
    )
    .unwrap();
}

#[test]
fn household_defaults_for_slots_and_the_answer_cap() {
    let c = Config::default();
    let env = |url: &str| EnvOverrides {
        base_url: Some(url.into()),
        ..Default::default()
    };
    let remote = c.resolve_provider(&env("https://llm.example/v1")).unwrap();
    assert_eq!(remote.max_concurrent, 8);
    // 4096 tokens × 64 bytes
    assert_eq!(remote.max_response_bytes, 256 * 1024);
    let cfg = Config::parse("[provider]\nmax_tokens = 100000\n", &p()).unwrap();
    let r = cfg
        .resolve_provider(&env("https://llm.example/v1"))
        .unwrap();
    assert_eq!(r.max_response_bytes, 6_400_000);
    let cfg = Config::parse(
        "[provider]\nmax_tokens = 100000\nmax_response_bytes = 70000\n",
        &p(),
    )
    .unwrap();
    let r = cfg
        .resolve_provider(&env("https://llm.example/v1"))
        .unwrap();
    assert_eq!(r.max_response_bytes, 70_000, "configured wins");
    assert_eq!(default_max_response_bytes(1), MIN_RESPONSE_BYTES);
    assert_eq!(default_max_response_bytes(u32::MAX), u32::MAX as usize * 64);
}

#[test]
fn printed_urls_carry_no_credentials() {
    assert_eq!(
        display_url("https://user:sk-secret@llm.example/v1/?key=sk-secret#x"),
        "https://llm.example/v1"
    );
    assert_eq!(
        display_url("https://api.deepseek.com/"),
        "https://api.deepseek.com"
    );
    assert!(!display_url("not a url?key=sk-secret").contains("secret"));
}

#[test]
fn the_kind_is_configured_or_inferred_and_streaming_is_off_by_default() {
    let env = |url: &str| EnvOverrides {
        base_url: Some(url.into()),
        ..Default::default()
    };
    let c = Config::default();
    let r = c
        .resolve_provider(&env("https://api.anthropic.com"))
        .unwrap();
    assert_eq!((r.kind, r.stream), (ProviderKind::Anthropic, false));
    assert_eq!(r.model.name(), Some(ANTHROPIC_MODEL));
    let r = c
        .resolve_provider(&env("http://127.0.0.1:8080/v1"))
        .unwrap();
    assert_eq!(r.kind, ProviderKind::Openai);
    let cfg = Config::parse("[provider]\nkind = \"anthropic\"\nstream = true\n", &p()).unwrap();
    let r = cfg.resolve_provider(&env("http://127.0.0.1:9000")).unwrap();
    assert_eq!((r.kind, r.stream), (ProviderKind::Anthropic, true));
    let err = Config::parse("[provider]\nkind = \"gemini\"\n", &p()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("/ws/config.toml") && msg.contains("gemini"),
        "{msg}"
    );
    assert!(msg.contains("anthropic"), "says what is allowed: {msg}");
    for url in [
        "https://api.anthropic.com.evil.example",
        "http://api.anthropic.com",
        "https://api.anthropic.com/proxy",
    ] {
        assert!(!is_anthropic(url), "{url}");
    }
}

#[test]
fn breaker_keys_default_and_are_bounded() {
    let c = Config::default();
    assert_eq!(c.breaker(), BreakerSettings::default());
    assert_eq!(
        (c.breaker().failures, c.breaker().cooldown.as_secs()),
        (5, 30)
    );
    let c = Config::parse(
        "[provider]\nbreaker_failures = 2\nbreaker_cooldown_secs = 7\n",
        &p(),
    )
    .unwrap();
    assert_eq!(
        c.breaker(),
        BreakerSettings {
            failures: 2,
            cooldown: std::time::Duration::from_secs(7)
        }
    );
    for (text, key) in [
        (
            "[provider]\nbreaker_failures = 0\n",
            "provider.breaker_failures",
        ),
        (
            "[provider]\nbreaker_cooldown_secs = 0\n",
            "provider.breaker_cooldown_secs",
        ),
        (
            "[provider]\nbreaker_cooldown_secs = 86401\n",
            "provider.breaker_cooldown_secs",
        ),
    ] {
        let e = Config::parse(text, &p()).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains("between"), "{e}");
    }
}

#[test]
fn fallbacks_resolve_in_order_with_only_their_own_keys() {
    let text = r#"
[provider]
base_url = "https://api.deepseek.com"
api_key = "sk-primary"
max_retries = 1

[[provider.fallback]]
base_url = "http://127.0.0.1:8080/v1/"

[[provider.fallback]]
base_url = "https://api.deepseek.com"
model = "deepseek-reasoner"
max_concurrent = 2
stream = true
"#;
    let c = Config::parse(text, &p()).unwrap();
    let env = EnvOverrides {
        api_key: Some(Secret::new("sk-homebot")),
        deepseek_api_key: Some(Secret::new("sk-deepseek")),
        model: Some("env-model".into()),
        ..Default::default()
    };
    let f = c.resolve_fallbacks(&env);
    assert_eq!(f.len(), 2);
    // the local server: its URL, no key at all (neither the primary's nor HOMEBOT_*),
    // no model (the endpoint's default), the loopback timeout, the primary's retries
    assert_eq!(f[0].base_url, "http://127.0.0.1:8080/v1");
    assert!(f[0].api_key.is_none());
    assert_eq!(f[0].model.name(), None);
    assert_eq!(f[0].timeout_secs, LOCAL_TIMEOUT_SECS);
    assert_eq!(f[0].max_retries, 1);
    assert_eq!(f[0].kind, ProviderKind::Openai);
    // DeepSeek's endpoint gets DeepSeek's key
    assert_eq!(key_of(&f[1]), Some("sk-deepseek"));
    assert_eq!(f[1].model.name(), Some("deepseek-reasoner"));
    assert_eq!((f[1].max_concurrent, f[1].stream), (2, true));
    assert!(Config::default().resolve_fallbacks(&env).is_empty());
}

#[test]
fn fallback_tables_are_checked_like_the_provider() {
    for (text, key) in [
        ("[[provider.fallback]]\nmodel = \"m\"\n", "provider.fallback[1].base_url"),
        (
            "[[provider.fallback]]\nbase_url = \"http://a/v1\"\n[[provider.fallback]]\nbase_url = \"ftp://b\"\n",
            "provider.fallback[2].base_url",
        ),
        (
            "[[provider.fallback]]\nbase_url = \"http://a/v1\"\ntimeout_secs = 0\n",
            "provider.fallback[1].timeout_secs",
        ),
        (
            "[[provider.fallback]]\nbase_url = \"http://a/v1\"\nmax_concurrent = 65\n",
            "provider.fallback[1].max_concurrent",
        ),
        (
            "[[provider.fallback]]\nbase_url = \"http://a/v1\"\ntemperature = 3.0\n",
            "provider.fallback[1].temperature",
        ),
        (
            "[[provider.fallback]]\nbase_url = \"http://a/v1\"\napi_key = \" \"\n",
            "provider.fallback[1].api_key",
        ),
    ] {
        let e = Config::parse(text, &p()).unwrap_err().to_string();
        assert!(e.contains(key), "{key}: {e}");
    }
    let five = "[[provider.fallback]]\nbase_url = \"http://a/v1\"\n".repeat(5);
    let e = Config::parse(&five, &p()).unwrap_err().to_string();
    assert!(e.contains("at most 4"), "{e}");
    // the retry budget and the breaker are the provider's, not a fallback's
    let e = Config::parse(
        "[[provider.fallback]]\nbase_url = \"http://a/v1\"\nmax_retries = 3\n",
        &p(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("max_retries"), "{e}");
}

#[test]
fn the_reasoning_way_is_configured_per_endpoint_or_found_by_auto() {
    let env = EnvOverrides {
        base_url: Some("http://127.0.0.1:8080/v1".into()),
        model: Some("qwen2.5-7b-instruct".into()),
        ..Default::default()
    };
    let r = Config::default().resolve_provider(&env).unwrap();
    assert_eq!(
        r.reasoning,
        Reasoning::None,
        "auto: a local qwen takes none"
    );
    let cfg = Config::parse(
        "[provider]\nreasoning = \"deepseek\"\n\n\
         [[provider.fallback]]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"o3-mini\"\n\n\
         [[provider.fallback]]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"deepseek-chat\"\nreasoning = \"none\"\n",
        &p(),
    )
    .unwrap();
    assert_eq!(
        cfg.resolve_provider(&env).unwrap().reasoning,
        Reasoning::Deepseek
    );
    let f = cfg.resolve_fallbacks(&env);
    assert_eq!(
        (f[0].reasoning, f[1].reasoning),
        (Reasoning::Openai, Reasoning::None),
        "each endpoint its own"
    );
    for text in [
        "[provider]\nreasoning = \"max\"\n",
        "[[provider.fallback]]\nbase_url = \"http://a/v1\"\nreasoning = \"max\"\n",
    ] {
        let msg = Config::parse(text, &p()).unwrap_err().to_string();
        assert!(
            msg.contains("/ws/config.toml") && msg.contains("reasoning") && msg.contains("max"),
            "{msg}"
        );
        assert!(
            msg.contains("deepseek") && msg.contains("anthropic"),
            "says what is allowed: {msg}"
        );
    }
}
