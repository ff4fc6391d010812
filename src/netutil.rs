//! Connection limits for every listener, written once for the kernel side (the control
//! socket) and the channels (Wyoming, the voice WebSocket, QQ's reverse WebSocket), which
//! import it — never the other way round.
//!
//! Why: a peer that opens connections and says nothing must not exhaust the process's
//! file descriptors. So each listener has a cap ([`ConnLimit`]), all network listeners
//! together draw from one descriptor budget ([`fd_budget`]: the soft `RLIMIT_NOFILE`
//! minus what is open at start minus [`FD_RESERVE`], kept for the control socket and the
//! workspace files), a connection over either is closed at once, the accept loop
//! ([`accept_loop`]) backs off when `accept` itself fails (EMFILE: 10 ms doubling to 1 s)
//! instead of spinning, and every such warning is rate-limited ([`LogThrottle`]). Reads
//! from a peer get a deadline ([`within`]).

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// Descriptors kept out of the network budget, for the control socket, the workspace
/// files, the provider's connections and the log.
pub const FD_RESERVE: usize = 64;
/// The control socket's own cap (it draws on the reserve, not the network budget).
pub const CONTROL_MAX_CONNECTIONS: usize = 16;
/// A control connection that sends no request for this long is closed (the client
/// reconnects by itself before its next request).
pub const CONTROL_IDLE: Duration = Duration::from_secs(60);
/// At most one warning per listener and kind of trouble in this interval.
pub const LOG_EVERY: Duration = Duration::from_secs(10);
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Raise the soft `RLIMIT_NOFILE` to the hard limit; returns (before, after).
#[cfg(unix)]
pub fn raise_fd_limit() -> io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let before = lim.rlim_cur;
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok((before, lim.rlim_cur))
}

/// The soft descriptor limit, if the platform says.
pub fn soft_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct we pass.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
            return Some(lim.rlim_cur);
        }
    }
    None
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The process-wide budget every network listener's connections also draw from: the
/// soft descriptor limit minus the descriptors open when it is first asked for minus
/// [`FD_RESERVE`]. Unlimited where the limit is unknown.
pub fn fd_budget() -> ConnLimit {
    static BUDGET: OnceLock<ConnLimit> = OnceLock::new();
    BUDGET
        .get_or_init(|| {
            let cap = match soft_fd_limit() {
                Some(soft) => usize::try_from(soft)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(open_fds() + FD_RESERVE)
                    .max(1),
                None => usize::MAX,
            };
            ConnLimit::new("descriptor budget", cap)
        })
        .clone()
}

/// A cap on open connections; optionally inside a parent (the descriptor budget), so a
/// permit needs room in both.
#[derive(Clone)]
pub struct ConnLimit {
    inner: Arc<LimitInner>,
}

struct LimitInner {
    name: &'static str,
    cap: usize,
    open: AtomicUsize,
    parent: Option<ConnLimit>,
}

/// Which limit refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{name}: all {cap} connections in use")]
pub struct Full {
    pub name: &'static str,
    pub cap: usize,
}

/// One admitted connection; frees its place (in every limit) when dropped.
#[must_use = "the connection's place is freed when the permit is dropped"]
pub struct ConnPermit {
    held: Vec<Arc<LimitInner>>,
}

impl Drop for ConnPermit {
    fn drop(&mut self) {
        for l in &self.held {
            l.open.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl ConnLimit {
    pub fn new(name: &'static str, cap: usize) -> Self {
        Self {
            inner: Arc::new(LimitInner {
                name,
                cap,
                open: AtomicUsize::new(0),
                parent: None,
            }),
        }
    }

    /// The same cap, drawing also on `parent`.
    pub fn within(name: &'static str, cap: usize, parent: ConnLimit) -> Self {
        Self {
            inner: Arc::new(LimitInner {
                name,
                cap,
                open: AtomicUsize::new(0),
                parent: Some(parent),
            }),
        }
    }

    pub fn cap(&self) -> usize {
        self.inner.cap
    }

    pub fn open(&self) -> usize {
        self.inner.open.load(Ordering::Acquire)
    }

    /// A place for one more connection, or which limit is full.
    pub fn try_acquire(&self) -> Result<ConnPermit, Full> {
        let mut permit = ConnPermit { held: Vec::new() };
        let mut limit = Some(self);
        while let Some(l) = limit {
            let i = &l.inner;
            let took = i
                .open
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < i.cap).then_some(n + 1)
                })
                .is_ok();
            if !took {
                // the places already taken are given back by the permit's drop
                return Err(Full {
                    name: i.name,
                    cap: i.cap,
                });
            }
            permit.held.push(i.clone());
            limit = i.parent.as_ref();
        }
        Ok(permit)
    }
}

/// At most one log line per interval; the lines in between are counted, and the count
/// goes out with the next one.
pub struct LogThrottle {
    every: Duration,
    state: Mutex<(Option<Instant>, u64)>,
}

impl LogThrottle {
    pub fn new(every: Duration) -> Self {
        Self {
            every,
            state: Mutex::new((None, 0)),
        }
    }

    /// `Some(suppressed since the last line)` when a line may be written now.
    pub fn hit(&self) -> Option<u64> {
        let mut s = self
            .state
            .lock()
            .expect("log throttle lock is never poisoned: no panics while held");
        let now = Instant::now();
        match s.0 {
            Some(last) if now.duration_since(last) < self.every => {
                s.1 += 1;
                None
            }
            _ => {
                let suppressed = s.1;
                *s = (Some(now), 0);
                Some(suppressed)
            }
        }
    }
}

/// A peer said nothing within its deadline.
#[derive(Debug, thiserror::Error)]
#[error("nothing received for {0:?}")]
pub struct Idle(pub Duration);

/// Await a read from a peer for at most `limit`.
pub async fn within<T>(limit: Duration, read: impl Future<Output = T>) -> Result<T, Idle> {
    tokio::time::timeout(limit, read)
        .await
        .map_err(|_| Idle(limit))
}

/// A listener the accept loop can drive (TCP and Unix sockets).
pub trait Acceptor: Send + 'static {
    type Stream: Send + 'static;
    fn accept(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

impl Acceptor for tokio::net::TcpListener {
    type Stream = tokio::net::TcpStream;
    async fn accept(&self) -> io::Result<Self::Stream> {
        tokio::net::TcpListener::accept(self).await.map(|(s, _)| s)
    }
}

#[cfg(unix)]
impl Acceptor for tokio::net::UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn accept(&self) -> io::Result<Self::Stream> {
        tokio::net::UnixListener::accept(self).await.map(|(s, _)| s)
    }
}

/// Accept connections until `cancel` fires. Each admitted one goes to `serve` with its
/// permit (spawn there; this loop must not wait); one over `limit` goes to `refuse`
/// (which must not block: a `try_write` at most) and is closed. A failing `accept` (out
/// of descriptors) is retried after 10 ms, doubling to 1 s, until one succeeds. Warnings
/// name `label` and come at most once per [`LOG_EVERY`] with a count of the ones left out.
pub async fn accept_loop<A: Acceptor>(
    label: &'static str,
    listener: A,
    limit: ConnLimit,
    cancel: CancellationToken,
    mut serve: impl FnMut(A::Stream, ConnPermit) + Send,
    refuse: impl Fn(A::Stream) + Send,
) {
    let over_cap = LogThrottle::new(LOG_EVERY);
    let failing = LogThrottle::new(LOG_EVERY);
    let mut backoff = FIRST_BACKOFF;
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok(stream) => {
                backoff = FIRST_BACKOFF;
                match limit.try_acquire() {
                    Ok(permit) => serve(stream, permit),
                    Err(full) => {
                        refuse(stream);
                        if let Some(suppressed) = over_cap.hit() {
                            warn!(
                                listener = label,
                                limit = full.name,
                                cap = full.cap,
                                suppressed,
                                "connection refused: over the cap"
                            );
                        }
                    }
                }
            }
            Err(e) => {
                if let Some(suppressed) = failing.hit() {
                    warn!(listener = label, error = %e, retry_ms = backoff.as_millis() as u64, suppressed, "accept failed; backing off");
                }
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permit_needs_room_in_the_cap_and_the_budget() {
        let budget = ConnLimit::new("budget", 3);
        let a = ConnLimit::within("a", 2, budget.clone());
        let b = ConnLimit::within("b", 5, budget.clone());
        let a1 = a.try_acquire().unwrap();
        let _a2 = a.try_acquire().unwrap();
        assert_eq!(a.try_acquire().err().map(|f| f.name), Some("a"));
        let _b1 = b.try_acquire().unwrap();
        assert_eq!(b.try_acquire().err().map(|f| f.name), Some("budget"));
        assert_eq!(b.open(), 1, "a refused permit gives back what it took");
        drop(a1);
        assert_eq!((a.open(), budget.open()), (1, 2));
        assert!(b.try_acquire().is_ok());
    }

    #[test]
    fn the_throttle_counts_what_it_suppresses() {
        let t = LogThrottle::new(Duration::from_secs(3600));
        assert_eq!(t.hit(), Some(0));
        assert_eq!((t.hit(), t.hit()), (None, None));
        let t = LogThrottle::new(Duration::ZERO);
        assert_eq!((t.hit(), t.hit()), (Some(0), Some(0)));
    }
}
