//! `[provider.price."<model>"]`: what a model's tokens cost, per million — input (a
//! cache miss), cached input (a prefix-cache hit) and output — in one currency. Keyed by
//! the model name the endpoint is configured with, so it applies to the primary and to
//! every `[[provider.fallback]]` that names that model.
//!
//! Money is kept in integers: a price is held in micro-units per million tokens, which is
//! pico-units per token, so the cost of `n` tokens is `n × price` pico-units exactly.
//! Rounding happens only where a figure is shown.
//!
//! A table may bill some hours at other prices ([`super::price_tiers`]): a call is then
//! priced by the moment it was sent, on the vendor's clock.

use super::price_tiers::{self, Tier, TierConfig, MAX_TIERS};
use super::rates::micro;
pub use super::rates::{Cost, Rates, PICO};
use super::*;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// The most `[provider.price]` tables (each a label value of the cost metrics).
pub const MAX_PRICES: usize = 32;
/// The highest price per million tokens accepted.
pub const MAX_PRICE_PER_MILLION: f64 = 1_000_000.0;
/// The longest model name a price may be given for.
pub const MAX_PRICE_MODEL_CHARS: usize = 200;

/// One `[provider.price."<model>"]` table as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    /// Per million input tokens that missed the prefix cache.
    pub input: f64,
    /// Per million input tokens the prefix cache served; `input` when absent (no discount).
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Per million output tokens.
    pub output: f64,
    /// An ISO 4217 code: `CNY`, `USD`, …
    pub currency: String,
    /// The vendor's clock its `tiers` are read on (an IANA zone: `Asia/Shanghai`); UTC
    /// when absent.
    #[serde(default)]
    pub time_zone: Option<String>,
    /// Hours billed at other prices; the first that holds a call's moment applies.
    #[serde(default)]
    pub tiers: Vec<TierConfig>,
}

/// A price in integers: micro-units of `currency` per million tokens (= pico-units per
/// token), and its tiers by the hour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Price {
    pub input: u64,
    pub cached_input: u64,
    pub output: u64,
    pub currency: String,
    /// The clock the tiers are read on.
    pub zone: crate::zone::Zone,
    pub tiers: Vec<Tier>,
}

impl Price {
    /// The table's own rates (those of every hour no tier holds).
    pub fn base(&self) -> Rates {
        Rates {
            input: self.input,
            cached_input: self.cached_input,
            output: self.output,
        }
    }

    /// The cost of one call's tokens at the table's own rates. `cached` above `prompt` (a
    /// confused server) counts as `prompt`.
    pub fn cost(&self, prompt: u64, cached: u64, completion: u64) -> Cost {
        self.base().cost(prompt, cached, completion)
    }

    /// The cost of one call's tokens at the rates of the moment it was sent.
    pub fn cost_at(&self, sent: DateTime<Utc>, prompt: u64, cached: u64, completion: u64) -> Cost {
        match price_tiers::tier_at(&self.tiers, self.zone, sent) {
            Some(rates) => rates.cost(prompt, cached, completion),
            None => self.cost(prompt, cached, completion),
        }
    }
}

impl PriceConfig {
    /// In integers. A zone or tier that does not parse is left out (the configuration
    /// refuses both when it is loaded, so only a table built by hand can have one).
    pub fn to_price(&self) -> Price {
        Price {
            input: micro(self.input),
            cached_input: micro(self.cached_input.unwrap_or(self.input)),
            output: micro(self.output),
            currency: self.currency.clone(),
            zone: self
                .time_zone
                .as_deref()
                .and_then(|z| z.parse().ok())
                .unwrap_or(crate::zone::Zone::utc()),
            tiers: self
                .tiers
                .iter()
                .filter_map(|t| price_tiers::parse(t).ok())
                .collect(),
        }
    }
}

/// An amount of pico-units as a decimal with `places` digits after the point, rounded
/// half up: `format_money(1_234_500_000_000, 3)` is `"1.235"`.
pub fn format_money(pico: u128, places: u32) -> String {
    let places = places.min(12);
    let step = 10u128.pow(12 - places);
    let rounded = pico.saturating_add(step / 2) / step;
    if places == 0 {
        return rounded.to_string();
    }
    let scale = 10u128.pow(places);
    format!(
        "{}.{:0width$}",
        rounded / scale,
        rounded % scale,
        width = places as usize
    )
}

/// Each table: a model name of sane length, prices finite and between 0 and
/// [`MAX_PRICE_PER_MILLION`], a three-letter upper-case currency code.
pub(crate) fn validate(
    prices: &BTreeMap<String, PriceConfig>,
    path: &Path,
) -> Result<(), ConfigError> {
    let invalid = |key: String, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        key,
        message,
    };
    if prices.len() > MAX_PRICES {
        return Err(invalid(
            "provider.price".into(),
            format!("at most {MAX_PRICES} prices, got {}", prices.len()),
        ));
    }
    for (model, p) in prices {
        let shown: String = model.chars().take(40).collect();
        if model.trim().is_empty() || model.chars().count() > MAX_PRICE_MODEL_CHARS {
            return Err(invalid(
                "provider.price".into(),
                format!(
                    "a model name must have 1 to {MAX_PRICE_MODEL_CHARS} characters, got {shown:?}"
                ),
            ));
        }
        let key = |k: &str| format!("provider.price.{shown:?}.{k}");
        let mut rates = vec![(
            String::new(),
            [
                ("input", Some(p.input)),
                ("cached_input", p.cached_input),
                ("output", Some(p.output)),
            ],
        )];
        for (i, t) in p.tiers.iter().enumerate() {
            rates.push((
                format!("tiers[{i}]."),
                [
                    ("input", Some(t.input)),
                    ("cached_input", t.cached_input),
                    ("output", Some(t.output)),
                ],
            ));
        }
        for (prefix, values) in rates {
            for (k, v) in values {
                if let Some(v) =
                    v.filter(|v| !(v.is_finite() && (0.0..=MAX_PRICE_PER_MILLION).contains(v)))
                {
                    return Err(invalid(
                        key(&format!("{prefix}{k}")),
                        format!("must be a price per million tokens between 0 and {MAX_PRICE_PER_MILLION}, got {v}"),
                    ));
                }
            }
        }
        if let Some(z) = p.time_zone.as_deref() {
            if z.parse::<crate::zone::Zone>().is_err() {
                let z: String = z.chars().take(40).collect();
                return Err(invalid(
                    key("time_zone"),
                    format!("must be an IANA time zone like \"Asia/Shanghai\", got {z:?}"),
                ));
            }
        }
        if p.tiers.len() > MAX_TIERS {
            return Err(invalid(
                key("tiers"),
                format!("at most {MAX_TIERS} tiers, got {}", p.tiers.len()),
            ));
        }
        for (i, t) in p.tiers.iter().enumerate() {
            if let Err((k, message)) = price_tiers::parse(t) {
                return Err(invalid(key(&format!("tiers[{i}].{k}")), message));
            }
        }
        if !(p.currency.len() == 3 && p.currency.bytes().all(|b| b.is_ascii_uppercase())) {
            let c: String = p.currency.chars().take(20).collect();
            return Err(invalid(
                key("currency"),
                format!("must be a three-letter ISO 4217 code like \"CNY\" or \"USD\", got {c:?}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(input: f64, cached: f64, output: f64) -> Price {
        PriceConfig {
            input,
            cached_input: Some(cached),
            output,
            currency: "CNY".into(),
            time_zone: None,
            tiers: Vec::new(),
        }
        .to_price()
    }

    #[test]
    fn cost_splits_cached_and_missed_input_exactly() {
        // 2 / 0.5 / 8 per million: 1000 prompt tokens of which 800 cached, 100 output
        let p = price(2.0, 0.5, 8.0);
        let c = p.cost(1000, 800, 100);
        // 200 × 2 + 800 × 0.5 + 100 × 8 = 400 + 400 + 800 = 1600 micro-units
        assert_eq!(c.actual, 1600 * 1_000_000);
        // 1000 × 2 + 800 = 2800 micro-units
        assert_eq!(c.uncached, 2800 * 1_000_000);
        assert_eq!(c.saving(), 1200 * 1_000_000);
        assert_eq!(format_money(c.actual, 4), "0.0016");
        assert_eq!(format_money(c.uncached, 6), "0.002800");
    }

    #[test]
    fn prices_with_fractions_of_a_micro_unit_round_once() {
        // 0.07 / 0.56 / 1.68 USD per million (DeepSeek's published list, docs)
        let p = PriceConfig {
            input: 0.56,
            cached_input: Some(0.07),
            output: 1.68,
            currency: "USD".into(),
            time_zone: None,
            tiers: Vec::new(),
        }
        .to_price();
        assert_eq!(
            (p.input, p.cached_input, p.output),
            (560_000, 70_000, 1_680_000)
        );
        // a million of each: exactly the list price
        let c = p.cost(2_000_000, 1_000_000, 1_000_000);
        assert_eq!(format_money(c.actual, 2), "2.31");
        assert_eq!(format_money(c.uncached, 2), "2.80");
        // summing many small calls loses nothing: 3 tokens × 10⁶ calls = 3 M tokens
        let mut total = Cost::default();
        for _ in 0..1_000_000 {
            total.add(p.cost(3, 0, 0));
        }
        assert_eq!(format_money(total.actual, 6), "1.680000");
    }

    #[test]
    fn cached_above_prompt_and_huge_numbers_do_not_overflow() {
        let p = price(2.0, 0.5, 8.0);
        let c = p.cost(10, 50, 0);
        assert_eq!(c.actual, 10 * 500_000, "cached is capped at prompt");
        let c = p.cost(u64::MAX, u64::MAX, u64::MAX);
        assert!(c.actual > 0 && c.uncached >= c.actual);
    }

    #[test]
    fn no_cached_price_means_no_discount() {
        let p = PriceConfig {
            input: 1.0,
            cached_input: None,
            output: 1.0,
            currency: "EUR".into(),
            time_zone: None,
            tiers: Vec::new(),
        }
        .to_price();
        let c = p.cost(100, 100, 0);
        assert_eq!(c.actual, c.uncached);
        assert_eq!(c.saving(), 0);
    }

    #[test]
    fn format_money_rounds_half_up() {
        assert_eq!(format_money(1_234_500_000_000, 3), "1.235");
        assert_eq!(format_money(1_234_499_999_999, 3), "1.234");
        assert_eq!(format_money(0, 2), "0.00");
        assert_eq!(format_money(999_999_999_999, 0), "1");
    }

    #[test]
    fn the_file_parses_and_bad_prices_are_refused() {
        let p = Path::new("/x/config.toml");
        let c = Config::parse(
            "[provider.price.\"deepseek-chat\"]\ninput = 0.56\ncached_input = 0.07\noutput = 1.68\ncurrency = \"USD\"\n",
            p,
        )
        .unwrap();
        let prices = c.prices();
        assert_eq!(prices["deepseek-chat"].cached_input, 70_000);
        assert_eq!(prices["deepseek-chat"].currency, "USD");
        for (bad, key) in [
            ("input = -1.0\noutput = 1.0\ncurrency = \"CNY\"", "input"),
            ("input = 1.0\noutput = 1e9\ncurrency = \"CNY\"", "output"),
            ("input = 1.0\noutput = nan\ncurrency = \"CNY\"", "output"),
            (
                "input = 1.0\ncached_input = inf\noutput = 1.0\ncurrency = \"CNY\"",
                "cached_input",
            ),
            ("input = 1.0\noutput = 1.0\ncurrency = \"yuan\"", "currency"),
            (
                "input = 1.0\noutput = 1.0\ncurrency = \"C\\\"Y\"",
                "currency",
            ),
        ] {
            let text = format!("[provider.price.\"m\"]\n{bad}\n");
            match Config::parse(&text, p) {
                Err(ConfigError::Invalid { key: k, .. }) => {
                    assert!(k.ends_with(key), "{bad}: {k}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(Config::parse("[provider.price.\"m\"]\ninput = 1.0\n", p).is_err());
        let many: String = (0..=MAX_PRICES)
            .map(|i| {
                format!(
                    "[provider.price.\"m{i}\"]\ninput = 1.0\noutput = 1.0\ncurrency = \"CNY\"\n"
                )
            })
            .collect();
        assert!(Config::parse(&many, p).is_err());
    }
}
