//! Prices by the hour: `[[provider.price."<model>".tiers]]`. A vendor that bills some
//! hours dearer (DeepSeek: weekdays 09:00–12:00 and 14:00–18:00 Beijing time at twice the
//! off-peak price) gets tiers of its own prices for given days and hours, read on the
//! vendor's clock (`time_zone` of the price table, not the household's). A call is billed
//! at the first tier whose days and hours hold the moment it was sent; otherwise at the
//! table's own prices.

use super::rates::{micro, Rates};
use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::Deserialize;

/// The most tiers of one price table.
pub const MAX_TIERS: usize = 8;
/// The most spans of hours in one tier.
pub const MAX_SPANS: usize = 8;
const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// One `[[provider.price."<model>".tiers]]` table as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// The days it applies on, on the vendor's clock: `"mon"` … `"sun"`.
    pub days: Vec<String>,
    /// Spans of those days, `"HH:MM-HH:MM"`, the end not included (`"24:00"` ends at
    /// midnight).
    pub hours: Vec<String>,
    /// Prices per million tokens in the table's currency, as the table's own.
    pub input: f64,
    #[serde(default)]
    pub cached_input: Option<f64>,
    pub output: f64,
}

/// A tier in integers: the weekdays (bit 0 Monday), spans in minutes of the day, rates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tier {
    days: u8,
    spans: Vec<(u32, u32)>,
    pub rates: Rates,
}

impl Tier {
    /// Whether it holds the moment `t` (already on the vendor's clock).
    fn holds<T: Datelike + Timelike>(&self, t: &T) -> bool {
        let day = t.weekday().num_days_from_monday();
        let minute = t.hour() * 60 + t.minute();
        self.days & (1 << day) != 0 && self.spans.iter().any(|&(a, b)| a <= minute && minute < b)
    }
}

/// The rates of the first tier holding `sent` on the clock of `zone`; `None`: the base.
pub fn tier_at(tiers: &[Tier], zone: crate::zone::Zone, sent: DateTime<Utc>) -> Option<&Rates> {
    let local = sent.with_timezone(&zone);
    tiers.iter().find(|t| t.holds(&local)).map(|t| &t.rates)
}

/// Parse a tier, or say what is wrong with it (the key it names is under the tier).
pub fn parse(t: &TierConfig) -> Result<Tier, (&'static str, String)> {
    if t.days.is_empty() || t.days.len() > DAYS.len() {
        return Err(("days", "must name 1 to 7 days: \"mon\" … \"sun\"".into()));
    }
    let mut days = 0u8;
    for d in &t.days {
        let Some(i) = DAYS.iter().position(|x| x.eq_ignore_ascii_case(d)) else {
            let shown: String = d.chars().take(20).collect();
            return Err(("days", format!("{shown:?} is not one of \"mon\" … \"sun\"")));
        };
        days |= 1 << i;
    }
    if t.hours.is_empty() || t.hours.len() > MAX_SPANS {
        return Err((
            "hours",
            format!("must give 1 to {MAX_SPANS} spans like \"09:00-12:00\""),
        ));
    }
    let mut spans = Vec::with_capacity(t.hours.len());
    for h in &t.hours {
        let span = h
            .split_once('-')
            .and_then(|(a, b)| Some((minute_of(a)?, minute_of(b)?)))
            .filter(|(a, b)| a < b);
        let Some(span) = span else {
            let shown: String = h.chars().take(20).collect();
            return Err((
                "hours",
                format!("{shown:?} is not a span like \"09:00-12:00\" (start before end, at most 24:00)"),
            ));
        };
        spans.push(span);
    }
    Ok(Tier {
        days,
        spans,
        rates: Rates {
            input: micro(t.input),
            cached_input: micro(t.cached_input.unwrap_or(t.input)),
            output: micro(t.output),
        },
    })
}

/// `HH:MM` as minutes of the day, `24:00` included.
fn minute_of(s: &str) -> Option<u32> {
    let (h, m) = s.trim().split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    let minute = h * 60 + m;
    (m < 60 && minute <= 24 * 60).then_some(minute)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, ConfigError};
    use std::path::Path;

    /// DeepSeek's shape: off-peak the table's prices, weekdays 09–12 and 14–18 Beijing
    /// time twice them.
    const PEAKED: &str = r#"
[provider.price."deepseek-v4-flash"]
input = 1.0
cached_input = 0.1
output = 2.0
currency = "CNY"
time_zone = "Asia/Shanghai"

[[provider.price."deepseek-v4-flash".tiers]]
days = ["mon", "tue", "wed", "thu", "fri"]
hours = ["09:00-12:00", "14:00-18:00"]
input = 2.0
cached_input = 0.2
output = 4.0
"#;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_call_is_billed_at_the_tier_of_the_vendors_clock_when_it_was_sent() {
        let c = Config::parse(PEAKED, Path::new("/x/config.toml")).unwrap();
        let p = &c.prices()["deepseek-v4-flash"];
        // 1000 input tokens missed, 1000 output: 1000 + 2000 micro off-peak, twice at peak
        let at = |t: &str| p.cost_at(utc(t), 1000, 0, 1000).actual / 1_000_000;
        // Wednesday 2026-12-02
        assert_eq!(at("2026-12-02T01:30:00Z"), 6000, "09:30 in Beijing: peak");
        assert_eq!(at("2026-12-02T00:59:59Z"), 3000, "08:59 in Beijing");
        assert_eq!(
            at("2026-12-02T04:00:00Z"),
            3000,
            "12:00 in Beijing: the end is out"
        );
        assert_eq!(at("2026-12-02T09:59:00Z"), 6000, "17:59 in Beijing");
        assert_eq!(
            at("2026-12-02T12:00:00Z"),
            3000,
            "20:00: a household's dinner"
        );
        // Saturday 10:00 in Beijing, and Friday 10:00 in Beijing that is Thursday in UTC
        assert_eq!(at("2026-12-05T02:00:00Z"), 3000, "weekends are off-peak");
        assert_eq!(at("2026-12-04T02:00:00Z"), 6000);
        // Monday 08:30 in Beijing is Sunday 00:30 UTC: the vendor's clock decides
        assert_eq!(at("2026-12-07T00:30:00Z"), 3000);
        assert_eq!(at("2026-12-07T01:30:00Z"), 6000, "Monday 09:30 in Beijing");
        // the cached part at its tier's cached price
        let c = p.cost_at(utc("2026-12-02T01:30:00Z"), 1000, 1000, 0);
        assert_eq!(c.actual, 200 * 1_000_000);
        assert_eq!(c.uncached, 2000 * 1_000_000);
    }

    #[test]
    fn without_tiers_a_price_is_the_same_at_every_hour_and_its_zone_is_utc() {
        let c = Config::parse(
            "[provider.price.\"m\"]\ninput = 1.0\noutput = 1.0\ncurrency = \"EUR\"\n",
            Path::new("/x/config.toml"),
        )
        .unwrap();
        let p = &c.prices()["m"];
        assert_eq!(p.zone, crate::zone::Zone::utc());
        for t in ["2026-12-02T01:30:00Z", "2026-12-05T13:00:00Z"] {
            assert_eq!(p.cost_at(utc(t), 10, 0, 10), p.cost(10, 0, 10));
        }
    }

    #[test]
    fn bad_tiers_are_refused_with_the_key_named() {
        let p = Path::new("/x/config.toml");
        let head = "[provider.price.\"m\"]\ninput = 1.0\noutput = 1.0\ncurrency = \"CNY\"\n";
        let tier = |body: &str| format!("{head}[[provider.price.\"m\".tiers]]\n{body}\n");
        for (text, key) in [
            (format!("{head}time_zone = \"Mars/Olympus\"\n"), "time_zone"),
            (
                tier("days = [\"mon\"]\nhours = [\"09:00-12:00\"]\ninput = -1.0\noutput = 1.0"),
                "tiers[0].input",
            ),
            (
                tier("days = [\"funday\"]\nhours = [\"09:00-12:00\"]\ninput = 1.0\noutput = 1.0"),
                "tiers[0].days",
            ),
            (
                tier("days = []\nhours = [\"09:00-12:00\"]\ninput = 1.0\noutput = 1.0"),
                "tiers[0].days",
            ),
            (
                tier("days = [\"mon\"]\nhours = [\"12:00-09:00\"]\ninput = 1.0\noutput = 1.0"),
                "tiers[0].hours",
            ),
            (
                tier("days = [\"mon\"]\nhours = [\"09:00-25:00\"]\ninput = 1.0\noutput = 1.0"),
                "tiers[0].hours",
            ),
            (
                tier("days = [\"mon\"]\nhours = [\"9-12\"]\ninput = 1.0\noutput = 1.0"),
                "tiers[0].hours",
            ),
        ] {
            match Config::parse(&text, p) {
                Err(ConfigError::Invalid { key: k, .. }) => {
                    assert!(k.ends_with(key), "{text}: {k}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let many: String = (0..=MAX_TIERS)
            .map(|_| "[[provider.price.\"m\".tiers]]\ndays = [\"mon\"]\nhours = [\"09:00-10:00\"]\ninput = 1.0\noutput = 1.0\n".to_string())
            .collect();
        assert!(Config::parse(&format!("{head}{many}"), p).is_err());
        // 24:00 ends a span at midnight
        let ok = tier("days = [\"sun\"]\nhours = [\"18:00-24:00\"]\ninput = 1.0\noutput = 1.0");
        assert!(Config::parse(&ok, p).is_ok());
    }
}
