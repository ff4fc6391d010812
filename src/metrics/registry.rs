//! The kinds of series: counters, gauges and histograms over atomics, and a family of one
//! kind whose label sets are bounded. Nothing here allocates on an increment; a labelled
//! series is looked up once (or per turn, in a short list under a lock) and held.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The label value a series gets once its family holds its most label sets.
pub const OTHER: &str = "other";

#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.0.fetch_add(1, Relaxed);
    }
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    pub fn inc(&self) {
        self.0.fetch_add(1, Relaxed);
    }
    pub fn dec(&self) {
        self.0.fetch_sub(1, Relaxed);
    }
    pub fn get(&self) -> i64 {
        self.0.load(Relaxed)
    }
}

/// Durations in buckets with fixed upper bounds (seconds). Each observation touches three
/// atomics: its bucket, the count and the sum (kept in microseconds).
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative); the last is above every bound.
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    sum_micros: AtomicU64,
}

/// A histogram read at one moment: cumulative counts per upper bound, then `+Inf`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    pub bounds: &'static [f64],
    pub cumulative: Vec<u64>,
    pub count: u64,
    pub sum_seconds: f64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        Self {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = self
            .bounds
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(self.bounds.len());
        self.buckets[i].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
        self.sum_micros
            .fetch_add(d.as_micros().min(u64::MAX as u128) as u64, Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut acc = 0u64;
        let cumulative: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| {
                acc += b.load(Relaxed);
                acc
            })
            .collect();
        HistogramSnapshot {
            bounds: self.bounds,
            // the buckets' sum, not `count`: read at one moment they must agree with +Inf
            count: acc,
            cumulative,
            sum_seconds: self.sum_micros.load(Relaxed) as f64 / 1e6,
        }
    }
}

/// Series of one kind keyed by `N` label values, at most `cap` label sets: past that, a
/// new set is counted under [`OTHER`] in every label. Label values must come from code or
/// configuration; the cap is the guard should one ever not.
pub struct Labeled<M, const N: usize> {
    pub names: [&'static str; N],
    cap: usize,
    make: fn() -> M,
    series: Mutex<Vec<([String; N], Arc<M>)>>,
}

impl<M, const N: usize> Labeled<M, N> {
    pub const fn new(names: [&'static str; N], cap: usize, make: fn() -> M) -> Self {
        Self {
            names,
            cap,
            make,
            series: Mutex::new(Vec::new()),
        }
    }

    /// The series of `values`, made on first use.
    pub fn get(&self, values: [&str; N]) -> Arc<M> {
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, m)) = series
            .iter()
            .find(|(k, _)| k.iter().zip(values.iter()).all(|(a, b)| a.as_str() == *b))
        {
            return m.clone();
        }
        let key: [String; N] = if series.len() + 1 >= self.cap {
            [OTHER; N].map(String::from)
        } else {
            values.map(String::from)
        };
        if let Some((_, m)) = series.iter().find(|(k, _)| *k == key) {
            return m.clone();
        }
        let m = Arc::new((self.make)());
        series.push((key, m.clone()));
        m
    }

    /// Every series with its label values, in the order they were made.
    pub fn each(&self) -> Vec<([String; N], Arc<M>)> {
        self.series
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
