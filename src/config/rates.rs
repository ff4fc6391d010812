//! Money in integers, for prices and what calls cost: rates are micro-units of a currency
//! per million tokens (= pico-units per token), so the cost of `n` tokens is `n × rate`
//! pico-units exactly. A leaf: [`super::price`] and [`super::price_tiers`] build on it.

/// Prices per million tokens in micro-units (= pico-units per token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates {
    pub input: u64,
    pub cached_input: u64,
    pub output: u64,
}

impl Rates {
    /// What `prompt` input tokens (`cached` of them from the cache) and `completion`
    /// output tokens cost at these rates, and would cost with no cache hits.
    pub fn cost(&self, prompt: u64, cached: u64, completion: u64) -> Cost {
        let cached = cached.min(prompt);
        let (prompt, cached, completion) = (prompt as u128, cached as u128, completion as u128);
        let out = completion * self.output as u128;
        Cost {
            actual: (prompt - cached) * self.input as u128
                + cached * self.cached_input as u128
                + out,
            uncached: prompt * self.input as u128 + out,
        }
    }
}

/// What some calls cost, in pico-units (10⁻¹² of the currency), and what they would have
/// cost had every cached input token been charged as a miss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub actual: u128,
    pub uncached: u128,
}

impl Cost {
    /// What the prefix cache saved (never negative: a cached price above the input price
    /// saves nothing).
    pub fn saving(&self) -> u128 {
        self.uncached.saturating_sub(self.actual)
    }

    pub fn add(&mut self, other: Cost) {
        self.actual = self.actual.saturating_add(other.actual);
        self.uncached = self.uncached.saturating_add(other.uncached);
    }
}

/// Pico-units per unit of currency.
pub const PICO: u128 = 1_000_000_000_000;

/// Micro-units for a price per million as written (rounded to the nearest micro-unit).
pub fn micro(v: f64) -> u64 {
    (v * 1e6).round() as u64
}
