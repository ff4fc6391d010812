//! What the soak measures: the gateway's resident memory (as it is at a row, and the
//! median of the last ten seconds) and open descriptors (from `/proc/<pid>`), and per
//! window of turns the latency each turn took minus the time the
//! fake model spent on it (the gateway's own overhead), with the errors seen.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `VmRSS` of a process, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_field(pid, "VmRSS:")
}

/// How far back a row's median resident memory looks: one period of the gateway's heap
/// release (`heap::PERIOD`), over which its RSS swings with the free pages the allocator
/// has not handed back yet.
pub const TRAIL: Duration = Duration::from_secs(10);

/// `VmRSS` of a process sampled once a second, the last [`TRAIL`] of it kept.
pub struct RssTrail(Mutex<VecDeque<(Instant, u64)>>);

impl RssTrail {
    /// Sample `pid` from now on, on a task of the current runtime.
    pub fn start(pid: u32) -> (Arc<Self>, tokio::task::JoinHandle<()>) {
        let trail = Arc::new(Self(Mutex::new(VecDeque::new())));
        let t = trail.clone();
        let task = tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                if let Some(kib) = rss_kib(pid) {
                    let mut q = t.0.lock().unwrap();
                    q.push_back((Instant::now(), kib));
                    while q.front().is_some_and(|(at, _)| at.elapsed() > TRAIL) {
                        q.pop_front();
                    }
                }
            }
        });
        (trail, task)
    }

    /// The median of the samples of the last [`TRAIL`] (`None` before the first).
    pub fn median(&self) -> Option<u64> {
        let mut v: Vec<u64> = self.0.lock().unwrap().iter().map(|(_, k)| *k).collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied()
    }
}

/// `VmHWM` (peak resident memory) of a process, in KiB.
pub fn peak_kib(pid: u32) -> Option<u64> {
    status_field(pid, "VmHWM:")
}

pub fn threads(pid: u32) -> Option<u64> {
    status_field(pid, "Threads:")
}

fn status_field(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time a process has used so far (user + system, all its threads).
pub fn cpu(pid: u32) -> Option<Duration> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the fields after the command name, which is in parentheses and may hold spaces
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(Duration::from_nanos(ticks * 1_000_000_000 / hz))
}

/// The machine's load average over the last minute.
pub fn load() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Open descriptors of a process (entries of `/proc/<pid>/fd`).
pub fn fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// One window's samples.
#[derive(Default)]
pub struct Window {
    /// Latency minus the fake's time, per turn.
    pub overhead: Vec<Duration>,
    /// The fake's time per turn.
    pub fake: Vec<Duration>,
    pub errors: u64,
    /// A few of the errors, to print.
    pub examples: Vec<String>,
}

#[derive(Default)]
pub struct Collector(Mutex<Window>);

impl Collector {
    pub fn turn(&self, latency: Duration, fake: Duration) {
        let mut w = self.0.lock().unwrap();
        w.overhead.push(latency.saturating_sub(fake));
        w.fake.push(fake);
    }

    pub fn error(&self, what: String) {
        let mut w = self.0.lock().unwrap();
        w.errors += 1;
        if w.examples.len() < 3 {
            w.examples.push(what);
        }
    }

    /// The window so far, and a fresh one.
    pub fn take(&self) -> Window {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// The `p`-quantile (0–1) of unsorted samples.
pub fn quantile(xs: &mut [Duration], p: f64) -> Duration {
    if xs.is_empty() {
        return Duration::ZERO;
    }
    xs.sort_unstable();
    let i = ((xs.len() as f64 - 1.0) * p).round() as usize;
    xs[i]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
