//! [`Dash`]: what every handler of the dashboard shares — the kernel (weakly), the
//! tokens, the login limits and logins, the live streams.

use super::{live_events, logins};
use crate::channels::login_limit::{LoginLimit, SharedLimit};
use crate::config::{Language, Secret};
use crate::kernel::{Kernel, KernelInner};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

/// The label of its listener (logs, the connection cap).
pub const LABEL: &str = "dashboard";

/// What every handler shares. Holds the kernel weakly: a request that arrives while the
/// gateway is going away is answered 503, and the dashboard never keeps it alive.
#[derive(Clone)]
pub struct Dash {
    kernel: Weak<KernelInner>,
    pub(super) inner: Arc<DashInner>,
}

pub(super) struct DashInner {
    pub(super) token: Option<Secret>,
    /// Bound beyond loopback: every request needs the token.
    pub(super) exposed: bool,
    pub(super) started: Instant,
    pub(super) lang: Language,
    /// Wrong tokens per address (a few a minute): at `/login`, and at the routes channels
    /// provide (handed to them as an extension, see `server`).
    pub(super) login_limit: SharedLimit,
    /// The logins' ids (the cookie) → their expiry; in memory, so a restart ends them.
    pub(super) logins: Mutex<logins::Logins>,
    /// The live streams open, per address.
    pub(super) streams: Arc<live_events::Streams>,
}

impl Dash {
    pub fn new(kernel: &Kernel) -> Self {
        let http = &kernel.config().http;
        Self {
            kernel: kernel.downgrade(),
            inner: Arc::new(DashInner {
                token: http.token.clone(),
                exposed: http.exposed(),
                started: Instant::now(),
                lang: kernel.config().household.language,
                login_limit: SharedLimit::default(),
                logins: Mutex::default(),
                streams: Arc::default(),
            }),
        }
    }

    /// The kernel, while the gateway runs.
    pub fn kernel(&self) -> Option<Kernel> {
        Kernel::upgrade(&self.kernel)
    }

    pub fn lang(&self) -> Language {
        self.inner.lang
    }

    pub fn uptime_secs(&self) -> u64 {
        self.inner.started.elapsed().as_secs()
    }

    /// The wrong-token table (logins, and the routes channels provide).
    pub(super) fn login_limit(&self) -> std::sync::MutexGuard<'_, LoginLimit> {
        self.inner.login_limit.lock()
    }

    /// The same table, for the routes channels provide.
    pub(super) fn shared_limit(&self) -> SharedLimit {
        self.inner.login_limit.clone()
    }
}
