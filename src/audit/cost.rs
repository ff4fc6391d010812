//! What the provider calls cost, for `homebot stats` (and the dashboard): each answered
//! attempt's tokens at its model's `[provider.price]`, per household day and per mode
//! session, beside what the same calls would have cost with no prefix-cache hits — the
//! frozen prefix's saving, as a figure and a percentage. A model without a price is
//! counted in tokens only (the table above) and named as having none.
//!
//! Money is summed in integer pico-units ([`crate::config::Cost`]) and rounded only
//! when printed.

use crate::config::price::{format_money, Cost, Price};
use crate::provider::audit::AuditRecord;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The model name a record without one is priced and reported under.
pub const NO_MODEL: &str = "(endpoint default)";
/// Digits after the point in the printed amounts.
pub const PLACES: u32 = 6;

/// The cost of some calls: per currency, and the answered calls no price covers, by model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spend {
    pub cost: BTreeMap<String, Cost>,
    pub unpriced: BTreeMap<String, u64>,
}

impl Spend {
    /// Add one audit record (one with no usage — failed or cancelled — costs nothing),
    /// at the price of the hour it was sent.
    pub fn add(&mut self, r: &AuditRecord, prices: &BTreeMap<String, Price>) {
        let Some(u) = &r.usage else { return };
        let model = r.model.as_deref().unwrap_or(NO_MODEL);
        match prices.get(model) {
            Some(p) => {
                let cost = match sent_at(r) {
                    Some(t) => p.cost_at(t, u.prompt, u.cached, u.completion),
                    None => p.cost(u.prompt, u.cached, u.completion),
                };
                self.cost.entry(p.currency.clone()).or_default().add(cost)
            }
            None => *self.unpriced.entry(model.to_string()).or_default() += 1,
        }
    }
}

/// When a recorded attempt was sent: its record is written when it ended, `latency_ms`
/// after. `None` for a timestamp that does not parse (then the table's own price).
pub fn sent_at(r: &AuditRecord) -> Option<chrono::DateTime<chrono::Utc>> {
    let ended = chrono::DateTime::parse_from_rfc3339(&r.timestamp).ok()?;
    let took = chrono::Duration::milliseconds(i64::try_from(r.latency_ms).ok()?);
    Some(ended.with_timezone(&chrono::Utc) - took)
}

/// The household day of a record (its timestamp is in the household's zone).
fn day(r: &AuditRecord) -> &str {
    r.timestamp.get(..10).unwrap_or("?")
}

/// Records that are provider calls (not Home Assistant's fast path).
fn calls(records: &[AuditRecord]) -> impl Iterator<Item = &AuditRecord> {
    records
        .iter()
        .filter(|r| r.purpose != crate::home::FAST_PATH)
}

/// The cost per household day.
pub fn cost_by_day(
    records: &[AuditRecord],
    prices: &BTreeMap<String, Price>,
) -> BTreeMap<String, Spend> {
    let mut out: BTreeMap<String, Spend> = BTreeMap::new();
    for r in calls(records) {
        out.entry(day(r).to_string()).or_default().add(r, prices);
    }
    out
}

/// The cost per mode session (calls outside a mode are in no session).
pub fn cost_by_session(
    records: &[AuditRecord],
    prices: &BTreeMap<String, Price>,
) -> BTreeMap<String, Spend> {
    let mut out: BTreeMap<String, Spend> = BTreeMap::new();
    for r in calls(records) {
        if let Some(id) = &r.session_id {
            out.entry(id.clone()).or_default().add(r, prices);
        }
    }
    out
}

/// The cost of every call.
pub fn cost_total(records: &[AuditRecord], prices: &BTreeMap<String, Price>) -> Spend {
    let mut s = Spend::default();
    for r in calls(records) {
        s.add(r, prices);
    }
    s
}

/// The saving as a percentage of the uncached cost, one decimal (`-` when that is 0).
pub fn saved_percent(c: &Cost) -> String {
    if c.uncached == 0 {
        return "-".into();
    }
    // tenths of a percent, rounded half up, in integers; sums of numbers a server
    // reported may be huge: both halved until the products fit (the ratio barely moves)
    let (mut saved, mut uncached) = (c.saving(), c.uncached);
    while saved > u128::MAX / 2001 || uncached > u128::MAX / 2 {
        saved >>= 1;
        uncached >>= 1;
    }
    let tenths = (saved * 2000 + uncached) / (2 * uncached);
    format!("{}.{}%", tenths / 10, tenths % 10)
}

fn header(out: &mut String, first: &str) {
    let _ = writeln!(
        out,
        "{first:<30} {:>8} {:>12} {:>12} {:>12} {:>7}",
        "currency", "cost", "uncached", "saved", "saved%"
    );
}

fn rows(out: &mut String, name: &str, s: &Spend) {
    for (currency, c) in &s.cost {
        let _ = writeln!(
            out,
            "{name:<30} {currency:>8} {:>12} {:>12} {:>12} {:>7}",
            format_money(c.actual, PLACES),
            format_money(c.uncached, PLACES),
            format_money(c.saving(), PLACES),
            saved_percent(c)
        );
    }
}

/// The cost tables of `homebot stats`: per day, per mode session, the total, then the
/// models without a price. Empty when no call was answered.
pub fn render(records: &[AuditRecord], prices: &BTreeMap<String, Price>) -> String {
    let total = cost_total(records, prices);
    let mut out = String::new();
    if total.cost.is_empty() && total.unpriced.is_empty() {
        return out;
    }
    out.push_str(
        "\ncost at [provider.price] (uncached: the same calls with no prefix-cache hits)\n",
    );
    if total.cost.is_empty() {
        out.push_str(
            "no price configured: tokens only (set [provider.price.\"<model>\"], see docs/configuration.md)\n",
        );
    } else {
        header(&mut out, "day");
        for (d, s) in cost_by_day(records, prices) {
            rows(&mut out, &d, &s);
        }
        out.push('\n');
        header(&mut out, "mode session");
        let sessions = cost_by_session(records, prices);
        let priced: Vec<_> = sessions
            .iter()
            .filter(|(_, s)| !s.cost.is_empty())
            .collect();
        for (id, s) in &priced {
            rows(&mut out, id, s);
        }
        if priced.is_empty() {
            out.push_str("(none)\n");
        }
        out.push('\n');
        rows(&mut out, "total", &total);
    }
    for (model, n) in &total.unpriced {
        let _ = writeln!(
            out,
            "{model}: no price configured; its {n} answered call(s) are counted in tokens only"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PriceConfig;
    use crate::provider::audit::AuditUsage;

    fn rec(
        ts: &str,
        model: Option<&str>,
        session: Option<&str>,
        usage: Option<(u64, u64, u64)>,
    ) -> AuditRecord {
        AuditRecord {
            timestamp: ts.into(),
            purpose: "turn".into(),
            model: model.map(str::to_string),
            provider: Some("primary".into()),
            channel: "cli".into(),
            chat_id: "local".into(),
            session_id: session.map(str::to_string),
            shape: None,
            usage: usage.map(|(prompt, cached, completion)| AuditUsage {
                prompt,
                cached,
                completion,
                reasoning: 0,
            }),
            latency_ms: 10,
            retries: 0,
            outcome: if usage.is_some() { "ok" } else { "error" }.into(),
            error: None,
            stream: false,
            turn: None,
        }
    }

    fn prices() -> BTreeMap<String, Price> {
        let p = |input, cached, output, currency: &str| {
            PriceConfig {
                input,
                cached_input: Some(cached),
                output,
                currency: currency.into(),
                time_zone: None,
                tiers: Vec::new(),
            }
            .to_price()
        };
        BTreeMap::from([
            ("deepseek-chat".to_string(), p(2.0, 0.5, 8.0, "CNY")),
            ("claude-x".to_string(), p(3.0, 0.3, 15.0, "USD")),
        ])
    }

    const S: &str = "cook-20261130-190000-abcdef";

    fn records() -> Vec<AuditRecord> {
        vec![
            // in the cooking session: 100 000 prompt of which 90 000 cached, 1 000 out
            rec(
                "2026-11-30T19:00:01.000+08:00",
                Some("deepseek-chat"),
                Some(S),
                Some((100_000, 90_000, 1_000)),
            ),
            rec(
                "2026-11-30T19:01:01.000+08:00",
                Some("deepseek-chat"),
                Some(S),
                Some((100_000, 90_000, 1_000)),
            ),
            // a failed attempt costs nothing
            rec(
                "2026-11-30T19:02:01.000+08:00",
                Some("deepseek-chat"),
                Some(S),
                None,
            ),
            // the next day, outside a mode, a fallback in dollars and a model with no price
            rec(
                "2026-12-01T08:00:00.000+08:00",
                Some("claude-x"),
                None,
                Some((10_000, 0, 500)),
            ),
            rec(
                "2026-12-01T08:00:05.000+08:00",
                Some("qwen-local"),
                None,
                Some((5_000, 0, 100)),
            ),
            rec(
                "2026-12-01T08:00:09.000+08:00",
                None,
                None,
                Some((5_000, 0, 100)),
            ),
        ]
    }

    #[test]
    fn cost_per_session_counts_cached_and_uncached() {
        let by_session = cost_by_session(&records(), &prices());
        let c = by_session[S].cost["CNY"];
        // per call: 10 000 × 2 + 90 000 × 0.5 + 1 000 × 8 = 73 000 micro-units; ×2
        assert_eq!(c.actual, 146_000 * 1_000_000);
        // uncached: 100 000 × 2 + 8 000 = 208 000; ×2
        assert_eq!(c.uncached, 416_000 * 1_000_000);
        assert_eq!(format_money(c.actual, 4), "0.1460");
        assert_eq!(format_money(c.saving(), 4), "0.2700");
        assert_eq!(saved_percent(&c), "64.9%");
        assert!(by_session[S].unpriced.is_empty());
    }

    #[test]
    fn days_keep_currencies_apart_and_name_unpriced_models() {
        let days = cost_by_day(&records(), &prices());
        let second = &days["2026-12-01"];
        assert_eq!(second.cost.keys().collect::<Vec<_>>(), ["USD"]);
        // 10 000 × 3 + 500 × 15 = 37 500 micro-dollars; nothing cached, nothing saved
        assert_eq!(second.cost["USD"].actual, 37_500 * 1_000_000);
        assert_eq!(saved_percent(&second.cost["USD"]), "0.0%");
        assert_eq!(
            second.unpriced,
            BTreeMap::from([("qwen-local".to_string(), 1), (NO_MODEL.to_string(), 1)])
        );
        let total = cost_total(&records(), &prices());
        assert_eq!(total.cost.len(), 2);
    }

    #[test]
    fn the_table_shows_cost_saving_and_missing_prices() {
        let text = render(&records(), &prices());
        let line = |first: &str, currency: &str| -> Vec<String> {
            text.lines()
                .find(|l| l.starts_with(first) && l.contains(currency))
                .unwrap_or_else(|| panic!("no {first} {currency}:\n{text}"))
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        assert_eq!(
            line("2026-11-30", "CNY"),
            [
                "2026-11-30",
                "CNY",
                "0.146000",
                "0.416000",
                "0.270000",
                "64.9%"
            ]
        );
        assert_eq!(
            line(S, "CNY"),
            [S, "CNY", "0.146000", "0.416000", "0.270000", "64.9%"]
        );
        assert_eq!(
            line("total", "USD"),
            ["total", "USD", "0.037500", "0.037500", "0.000000", "0.0%"]
        );
        assert!(
            text.contains("qwen-local: no price configured; its 1 answered call(s)"),
            "{text}"
        );
        assert!(
            text.contains("(endpoint default): no price configured"),
            "{text}"
        );
    }

    #[test]
    fn the_saved_percentage_rounds_half_up_in_integers() {
        let pct = |actual, uncached| saved_percent(&Cost { actual, uncached });
        assert_eq!(pct(1, 8), "87.5%");
        assert_eq!(pct(2, 3), "33.3%");
        assert_eq!(pct(1, 3), "66.7%");
        assert_eq!(pct(1999, 2000), "0.1%", "0.05 % rounds up");
        assert_eq!(pct(5, 5), "0.0%");
        assert_eq!(pct(0, 0), "-");
        assert_eq!(pct(0, u128::MAX), "100.0%", "no overflow near the top");
    }

    #[test]
    fn without_any_price_the_table_says_so() {
        let text = render(&records(), &BTreeMap::new());
        assert!(text.contains("no price configured: tokens only"), "{text}");
        assert!(!text.contains("CNY"));
        assert_eq!(render(&[], &prices()), "");
    }

    #[test]
    fn each_call_is_billed_at_the_tier_of_the_moment_it_was_sent() {
        let text = r#"
[provider.price."deepseek-v4-flash"]
input = 1.0
output = 1.0
currency = "CNY"
time_zone = "Asia/Shanghai"

[[provider.price."deepseek-v4-flash".tiers]]
days = ["mon", "tue", "wed", "thu", "fri"]
hours = ["09:00-12:00", "14:00-18:00"]
input = 2.0
output = 2.0
"#;
        let prices = crate::config::Config::parse(text, std::path::Path::new("/x/c.toml"))
            .unwrap()
            .prices();
        let m = Some("deepseek-v4-flash");
        let call = |ts: &str, latency_ms: u64| {
            let mut r = rec(ts, m, None, Some((1_000_000, 0, 0)));
            r.latency_ms = latency_ms;
            cost_total(&[r], &prices).cost["CNY"].actual / crate::config::price::PICO
        };
        // Wednesday: 10:00 peak, 20:00 off-peak (the household's dinner)
        assert_eq!(call("2026-12-02T10:00:00.000+08:00", 10), 2);
        assert_eq!(call("2026-12-02T20:00:00.000+08:00", 10), 1);
        // recorded at 12:00:00.5 after 1 s: sent at 11:59:59.5, billed at the peak
        assert_eq!(call("2026-12-02T12:00:00.500+08:00", 1000), 2);
        // the vendor's clock, not the household's: 03:00 in London is 11:00 in Beijing
        assert_eq!(call("2026-12-02T03:00:00.000+00:00", 10), 2);
        // Saturday
        assert_eq!(call("2026-12-05T10:00:00.000+08:00", 10), 1);
    }
}
