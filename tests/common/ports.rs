//! Ports for peers, without a window another test can take them in. Binding port 0 and
//! releasing it hands out a port from the kernel's ephemeral range, the very range every
//! outgoing connection of every test takes its source port from: in the seconds until a
//! child process (Home Assistant imports for ~2 s) binds it, a test's `connect` may take
//! it, and the child's bind fails. So:
//!
//! - a peer of ours binds port 0 itself and reports the port ([`reported_port`]);
//! - a port that must refuse connections stays bound, never listening ([`Refusing`]), and
//!   an in-process server that "comes up later" listens on that very socket;
//! - a port for a process we cannot ask to bind 0 (Home Assistant) is taken from below
//!   the ephemeral range ([`for_a_child`]), where no `connect` takes source ports; the
//!   caller still detects a failed bind from the child's log and starts again on another.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout};

/// A loopback port bound and not listening: a connection to it is refused (RST) for as long
/// as this lives, and no one else can bind it meanwhile.
pub struct Refusing {
    socket: tokio::net::TcpSocket,
    pub addr: SocketAddr,
}

impl Refusing {
    pub fn new() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket
            .bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .unwrap();
        let addr = socket.local_addr().unwrap();
        Refusing { socket, addr }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Start listening on the held port (a server that comes up later, in this process).
    pub fn listen(self) -> tokio::net::TcpListener {
        self.socket.listen(128).unwrap()
    }
}

impl Default for Refusing {
    fn default() -> Self {
        Self::new()
    }
}

/// The first port of the kernel's ephemeral range (`ip_local_port_range`), 32768 if it
/// cannot be read.
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// A free loopback port below the ephemeral range, for a child that binds it itself a
/// while later. Outgoing connections never take it; two tests are kept apart by starting
/// at a point drawn from the process id, the clock and a counter, and by the bind check.
pub fn for_a_child() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let high = u32::from(ephemeral_low().max(12_000));
    let low = 10_000u32;
    let span = high - low;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    let start = std::process::id()
        .wrapping_mul(7919)
        .wrapping_add(nanos)
        .wrapping_add(NEXT.fetch_add(4099, Ordering::Relaxed));
    (0..span)
        .map(|i| (low + (start.wrapping_add(i * 613)) % span) as u16)
        .find(|&p| std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, p)).is_ok())
        .expect("a free port below the ephemeral range")
}

/// The port a peer of ours reports once it listens: its first stdout line
/// `listening on 127.0.0.1:PORT`. Fails with the peer's log if it exits first or says
/// nothing within a minute.
pub async fn reported_port(what: &str, child: &mut Child, log: &Path) -> u16 {
    let out: ChildStdout = child
        .stdout
        .take()
        .unwrap_or_else(|| panic!("{what}: its stdout is not piped"));
    let mut lines = BufReader::new(out).lines();
    let line = tokio::select! {
        line = tokio::time::timeout(Duration::from_secs(60), lines.next_line()) => line,
        st = child.wait() => panic!(
            "{what} exited ({st:?}) before listening:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        ),
    };
    let line = match line {
        Ok(Ok(Some(line))) => line,
        other => panic!(
            "{what} did not report its port ({other:?}):\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        ),
    };
    // the rest of its stdout is not read: keep draining it so the peer never blocks
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    line.strip_prefix("listening on 127.0.0.1:")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{what} reported {line:?}, not `listening on 127.0.0.1:PORT`"))
}
