//! Time, injectable: the kernel asks a [`Clock`] for "now" so tests can move time
//! (mode expiry after midnight) without sleeping.

use chrono::{DateTime, Utc};
use std::sync::{Arc, Mutex};

pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
}

#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to. Cloning shares the same time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Mutex<DateTime<Utc>>>);

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self(Arc::new(Mutex::new(start)))
    }
    pub fn set(&self, t: DateTime<Utc>) {
        *self
            .0
            .lock()
            .expect("clock mutex is never poisoned: no panics while held") = t;
    }
    pub fn advance(&self, d: chrono::Duration) {
        let mut g = self.0.lock().expect("clock mutex is never poisoned");
        *g += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("clock mutex is never poisoned")
    }
}

pub type SharedClock = Arc<dyn Clock>;
