//! The text format, read back by the strict reader; the series; the bounds. The registry
//! is the process's: other tests in this binary move it too, so these compare before and
//! after, on label values no other test uses.

use super::parse::{parse_strict, value};
use super::registry::{Histogram, Labeled, OTHER};
use super::*;
use std::time::Duration;

fn parsed() -> Vec<super::parse::Parsed> {
    let text = render_text();
    parse_strict(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn the_whole_page_parses_strictly_and_has_every_family() {
    mark_start();
    turns_of("metrics-test-page").count(TurnOutcome::Answered);
    let text = render_text();
    let samples = parse_strict(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    for family in [
        "homebot_build_info",
        "homebot_start_time_seconds",
        "homebot_uptime_seconds",
        "homebot_turns_total",
        "homebot_turn_duration_seconds",
        "homebot_turns_waiting",
        "homebot_turns_running",
        "homebot_provider_call_duration_seconds",
        "homebot_provider_refused_total",
        "homebot_prompt_tokens_total",
        "homebot_cached_tokens_total",
        "homebot_completion_tokens_total",
        "homebot_cost_total",
        "homebot_cost_uncached_total",
        "homebot_mode_entries_total",
        "homebot_mode_exits_total",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{family} missing:\n{text}"
        );
        assert!(
            text.contains(&format!("# HELP {family} ")),
            "{family} has no help"
        );
    }
    assert_eq!(
        value(
            &samples,
            "homebot_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0)
    );
    // every outcome of a channel is written, zeros too
    for o in ["answered", "refused", "failed", "cancelled"] {
        assert!(value(
            &samples,
            "homebot_turns_total",
            &[("channel", "metrics-test-page"), ("outcome", o)]
        )
        .is_some());
    }
    assert!(value(&samples, "homebot_uptime_seconds", &[]).unwrap() >= 0.0);
    let started = value(&samples, "homebot_start_time_seconds", &[]).unwrap();
    assert!(started > 1.7e9, "a Unix time: {started}");
}

#[test]
fn label_values_are_escaped_and_read_back() {
    let nasty = "a\"b\\c\nd}e,f=g";
    let f = Family::new(
        "homebot_test_escape",
        "help with \\ and\nnewline",
        Kind::Gauge,
    )
    .sample(vec![("who", nasty.to_string())], Value::Int(-3))
    .sample(vec![("who", "plain".into())], Value::Float(0.25));
    let text = render(&[f]);
    assert!(
        text.contains("homebot_test_escape{who=\"a\\\"b\\\\c\\nd}e,f=g\"} -3\n"),
        "{text}"
    );
    assert!(text.contains("# HELP homebot_test_escape help with \\\\ and\\nnewline\n"));
    let samples = parse_strict(&text).unwrap();
    assert_eq!(
        value(&samples, "homebot_test_escape", &[("who", nasty)]),
        Some(-3.0)
    );
    assert_eq!(
        value(&samples, "homebot_test_escape", &[("who", "plain")]),
        Some(0.25)
    );
}

#[test]
fn a_family_with_a_bad_name_is_skipped_not_written() {
    let bad = Family::new("homebot bad", "x", Kind::Gauge).sample(vec![], Value::Int(1));
    let bad_label =
        Family::new("homebot_ok", "x", Kind::Gauge).sample(vec![("le", "1".into())], Value::Int(1));
    let text = render(&[bad, bad_label]);
    assert!(!text.contains("homebot bad") && !text.contains("homebot_ok"));
    parse_strict(&text).unwrap();
}

#[test]
fn histograms_are_cumulative_with_inf_sum_and_count() {
    static BOUNDS: &[f64] = &[0.1, 1.0, 10.0];
    let h = Histogram::new(BOUNDS);
    for ms in [50, 100, 150, 2_000, 60_000] {
        h.observe(Duration::from_millis(ms));
    }
    let f = Family::new("homebot_test_seconds", "t", Kind::Histogram)
        .sample(vec![("x", "y".into())], Value::Histogram(h.snapshot()));
    let text = render(&[f]);
    let expected = "homebot_test_seconds_bucket{x=\"y\",le=\"0.1\"} 2\n\
                    homebot_test_seconds_bucket{x=\"y\",le=\"1\"} 3\n\
                    homebot_test_seconds_bucket{x=\"y\",le=\"10\"} 4\n\
                    homebot_test_seconds_bucket{x=\"y\",le=\"+Inf\"} 5\n\
                    homebot_test_seconds_sum{x=\"y\"} 62.3\n\
                    homebot_test_seconds_count{x=\"y\"} 5\n";
    assert!(text.ends_with(expected), "{text}");
    parse_strict(&text).unwrap();
}

#[test]
fn the_strict_reader_refuses_what_the_format_does_not_allow() {
    let ok = "# HELP a_total x\n# TYPE a_total counter\na_total{b=\"c\"} 1\n";
    parse_strict(ok).unwrap();
    for bad in [
        "a_total 1",                                                // no final newline
        "# TYPE a_total counter\na_total{b=c} 1\n",                 // unquoted
        "# TYPE a_total counter\na_total{b=\"c\",} 1\n",            // trailing comma
        "# TYPE a_total counter\na_total{b=\"c\\x\"} 1\n",          // bad escape
        "# TYPE a_total counter\na_total{1b=\"c\"} 1\n",            // bad label name
        "# TYPE a_total counter\na_total one\n",                    // not a number
        "# TYPE a_total counter\na_total 1 2 3\n",                  // extra fields
        "# TYPE a_total counter\na_total -1\n",                     // negative counter
        "# TYPE a_total counter\na_total 1\na_total 2\n",           // twice
        "# TYPE a_total counter\n# TYPE a_total counter\na_total 1\n", // two TYPEs
        "a_total 1\n",                                              // no TYPE before it
        "# TYPE a counter\n# TYPE b counter\na 1\n",                // outside its block
        "# TYPE 1a counter\n",                                      // bad name
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", // no +Inf
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n", // count differs
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",       // no sum
        "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
    ] {
        assert!(parse_strict(bad).is_err(), "accepted: {bad:?}");
    }
}

#[test]
fn provider_series_count_tokens_and_money_with_the_bounds() {
    let meter = ProviderMeter::new("metrics-test-ep", Some("metrics-test-model"));
    let price = crate::config::PriceConfig {
        input: 2.0,
        cached_input: Some(0.5),
        output: 8.0,
        currency: "XTS".into(), // the ISO code reserved for tests: no other test uses it
        time_zone: None,
        tiers: Vec::new(),
    }
    .to_price();
    meter.set_price(Some(&price));
    let before = parsed();
    let labels = [
        ("provider", "metrics-test-ep"),
        ("model", "metrics-test-model"),
    ];
    assert_eq!(
        value(&before, "homebot_prompt_tokens_total", &labels),
        Some(0.0)
    );
    // 1000 prompt (800 cached), 100 out: 0.0016 actual, 0.0028 uncached
    meter.attempt(
        CallEnd::Answered {
            prompt: 1000,
            cached: 800,
            completion: 100,
        },
        Duration::from_millis(300),
    );
    meter.attempt(CallEnd::Failed, Duration::from_millis(20));
    meter.attempt(CallEnd::Cancelled, Duration::from_secs(500));
    // a hostile server's numbers are capped: no wrap-around
    meter.attempt(
        CallEnd::Answered {
            prompt: u64::MAX,
            cached: u64::MAX,
            completion: u64::MAX,
        },
        Duration::ZERO,
    );
    let after = parsed();
    let v = |name: &str, l: &[(&str, &str)]| value(&after, name, l).unwrap();
    assert_eq!(
        v("homebot_prompt_tokens_total", &labels),
        1000.0 + MAX_TOKENS_PER_CALL as f64
    );
    assert_eq!(
        v("homebot_cached_tokens_total", &labels),
        800.0 + MAX_TOKENS_PER_CALL as f64
    );
    assert_eq!(
        v("homebot_completion_tokens_total", &labels),
        100.0 + MAX_TOKENS_PER_CALL as f64
    );
    let cost = v("homebot_cost_total", &[("currency", "XTS")]);
    let uncached = v("homebot_cost_uncached_total", &[("currency", "XTS")]);
    // the capped call: 1e8 cached × 0.5 + 1e8 × 8 per million = 850; uncached 1000
    assert!((cost - (0.0016 + 850.0)).abs() < 1e-9, "{cost}");
    assert!((uncached - (0.0028 + 1000.0)).abs() < 1e-9, "{uncached}");
    let call = |o: &str, suffix: &str, le: Option<&str>| {
        let mut l = vec![("provider", "metrics-test-ep"), ("outcome", o)];
        if let Some(le) = le {
            l.push(("le", le));
        }
        v(
            &format!("homebot_provider_call_duration_seconds{suffix}"),
            &l,
        )
    };
    assert_eq!(call("ok", "_count", None), 2.0);
    assert_eq!(
        call("ok", "_bucket", Some("0.25")),
        1.0,
        "the zero-latency one"
    );
    assert_eq!(call("ok", "_bucket", Some("0.5")), 2.0);
    assert_eq!(call("error", "_count", None), 1.0);
    assert_eq!(call("cancelled", "_bucket", Some("120")), 0.0);
    assert_eq!(call("cancelled", "_bucket", Some("+Inf")), 1.0);
    assert!((call("ok", "_sum", None) - 0.3).abs() < 1e-9);
}

#[test]
fn an_unpriced_model_counts_tokens_and_no_money() {
    let meter = ProviderMeter::new("metrics-test-unpriced", None);
    meter.set_price(None);
    meter.attempt(
        CallEnd::Answered {
            prompt: 10,
            cached: 0,
            completion: 1,
        },
        Duration::from_millis(1),
    );
    let s = parsed();
    let labels = [("provider", "metrics-test-unpriced"), ("model", "default")];
    assert_eq!(
        value(&s, "homebot_prompt_tokens_total", &labels),
        Some(10.0)
    );
}

#[test]
fn queued_and_running_turns_are_gauged_and_dropped_ones_undone() {
    // other tests run turns in this process too; compare with what this test holds
    let waiting = || value(&parsed(), "homebot_turns_waiting", &[]).unwrap();
    let q1 = Queued::new();
    let q2 = Queued::new();
    assert!(waiting() >= 2.0);
    drop(q2); // a job dropped from its queue without running
    let running = q1.start();
    let counters = turns_of("metrics-test-gauge");
    running.finish(&counters, TurnOutcome::Failed);
    let s = parsed();
    assert_eq!(
        value(
            &s,
            "homebot_turns_total",
            &[("channel", "metrics-test-gauge"), ("outcome", "failed")]
        ),
        Some(1.0)
    );
}

#[test]
fn label_families_are_capped() {
    let f: Labeled<registry::Counter, 1> = Labeled::new(["x"], 4, registry::Counter::default);
    for i in 0..10 {
        f.get([&format!("v{i}")]).inc();
    }
    let each = f.each();
    assert_eq!(each.len(), 4, "three values, then `other`");
    let other = each.iter().find(|(k, _)| k[0] == OTHER).unwrap();
    assert_eq!(other.1.get(), 7);
    // a known value keeps its own series after the cap
    f.get(["v0"]).inc();
    assert_eq!(f.get(["v0"]).get(), 2);
}

#[test]
fn mode_exits_name_a_known_reason_or_other() {
    mode_entered("metrics-test-mode");
    mode_exited("metrics-test-mode", "expired");
    mode_exited("metrics-test-mode", "a reason nobody wrote");
    let s = parsed();
    assert_eq!(
        value(
            &s,
            "homebot_mode_entries_total",
            &[("mode", "metrics-test-mode")]
        ),
        Some(1.0)
    );
    for reason in ["expired", OTHER] {
        assert_eq!(
            value(
                &s,
                "homebot_mode_exits_total",
                &[("mode", "metrics-test-mode"), ("reason", reason)]
            ),
            Some(1.0)
        );
    }
}

#[test]
fn channel_states_render_through_the_hook() {
    let extra = channel_states([
        ("qq", "10001", true, Some(1_790_000_000)),
        ("voice", "kitchen", false, None),
        ("voice", "study", true, None),
    ]);
    let text = render(&extra);
    let s = parse_strict(&text).unwrap();
    assert_eq!(
        value(
            &s,
            "homebot_channel_connected",
            &[("channel", "qq"), ("link", "10001")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &s,
            "homebot_channel_connected",
            &[("channel", "voice"), ("link", "kitchen")]
        ),
        Some(0.0)
    );
    assert_eq!(
        value(
            &s,
            "homebot_channel_state_since_seconds",
            &[("channel", "qq"), ("link", "10001")]
        ),
        Some(1_790_000_000.0)
    );
    assert_eq!(
        value(
            &s,
            "homebot_channel_connected",
            &[("channel", "voice"), ("link", "study")]
        ),
        Some(1.0)
    );
}

#[test]
fn a_call_is_metered_at_the_price_of_the_hour_it_was_sent() {
    let meter = ProviderMeter::new("metrics-tier-ep", Some("metrics-tier-model"));
    // a tier that holds every hour of every day, at three times the table's price
    let price = crate::config::PriceConfig {
        input: 1.0,
        cached_input: None,
        output: 1.0,
        currency: "XXX".into(), // "no currency": only this test's series
        time_zone: Some("Asia/Shanghai".into()),
        tiers: vec![crate::config::price_tiers::TierConfig {
            days: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
                .map(String::from)
                .to_vec(),
            hours: vec!["00:00-24:00".into()],
            input: 3.0,
            cached_input: None,
            output: 3.0,
        }],
    }
    .to_price();
    meter.set_price(Some(&price));
    meter.attempt(
        CallEnd::Answered {
            prompt: 1000,
            cached: 0,
            completion: 1000,
        },
        Duration::from_millis(40),
    );
    let cost = value(&parsed(), "homebot_cost_total", &[("currency", "XXX")]).unwrap();
    // 2000 tokens × 3 per million at the tier (0.002 at the table's own price)
    assert!((cost - 0.006).abs() < 1e-9, "{cost}");
}
