//! Watching a socket the server should close: read it to its end (EOF or reset) and say
//! when that came and what the server said first. A socket is closed only when a read
//! sees its end: bytes waiting in it (a 503, a `busy` event) are the server's answer, not
//! a sign that the connection is still open.

use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// How one watched socket ended.
#[derive(Debug)]
pub struct Fate {
    /// From the connect to the end of the stream; `None`: still open at the deadline.
    pub closed_after: Option<Duration>,
    /// The end was a reset (an error), not the end of the stream: a server closing with
    /// bytes of the peer's still unread.
    pub reset: bool,
    /// What the server sent before closing (a 503, a busy event, or nothing; at most
    /// 4 KiB kept).
    pub said: Vec<u8>,
}

/// Read `s` until the server closes it or `deadline` passes.
pub async fn watch(mut s: TcpStream, opened: Instant, deadline: Instant) -> Fate {
    let mut said = Vec::new();
    let mut buf = [0u8; 512];
    let (closed_after, reset) = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Err(_) => break (None, false),
            Ok(Ok(0)) => break (Some(opened.elapsed()), false),
            Ok(Err(_)) => break (Some(opened.elapsed()), true),
            Ok(Ok(n)) if said.len() < 4096 => said.extend_from_slice(&buf[..n]),
            Ok(Ok(_)) => {}
        }
    };
    Fate {
        closed_after,
        reset,
        said,
    }
}
