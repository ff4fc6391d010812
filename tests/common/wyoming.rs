//! A bare Wyoming peer speaking the framing by hand (header line, data, payload), for
//! tests that need what the Python library will not do: idle connections, oversized
//! headers, payloads a handle service must refuse.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

pub struct WyPeer {
    pub r: BufReader<tokio::net::tcp::OwnedReadHalf>,
    pub w: tokio::net::tcp::OwnedWriteHalf,
}

/// What reading gave within the time allowed.
#[derive(Debug, PartialEq)]
pub enum Got {
    Event(Value),
    /// The server closed the connection (EOF or reset).
    Closed,
    /// Nothing within the time: the connection is still open.
    Nothing,
}

impl WyPeer {
    pub async fn connect(addr: &str) -> Self {
        let s = TcpStream::connect(addr).await.unwrap();
        let (r, w) = s.into_split();
        Self {
            r: BufReader::new(r),
            w,
        }
    }

    /// Send an event; `data` travels in its own section as the Python library does.
    pub async fn send(&mut self, kind: &str, data: Value) {
        let body = data.to_string();
        let header = json!({"type": kind, "data_length": body.len()}).to_string();
        self.send_raw(format!("{header}\n{body}").as_bytes()).await;
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).await.unwrap();
    }

    /// Read one event (header + data merged; payload skipped), or see the end.
    pub async fn read(&mut self, within: Duration) -> Got {
        match tokio::time::timeout(within, self.read_event()).await {
            Err(_) => Got::Nothing,
            Ok(None) => Got::Closed,
            Ok(Some(v)) => Got::Event(v),
        }
    }

    async fn read_event(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.r.read_line(&mut line).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        let mut header: Value = serde_json::from_str(&line).ok()?;
        let len = |k: &str| header[k].as_u64().unwrap_or(0) as usize;
        let (dl, pl) = (len("data_length"), len("payload_length"));
        if dl > 0 {
            let mut buf = vec![0; dl];
            self.r.read_exact(&mut buf).await.ok()?;
            let extra: Value = serde_json::from_slice(&buf).ok()?;
            header["data"] = extra;
        }
        if pl > 0 {
            let mut buf = vec![0; pl];
            self.r.read_exact(&mut buf).await.ok()?;
        }
        Some(header)
    }

    /// Read events until the connection closes; what came before the close.
    pub async fn until_closed(&mut self, within: Duration) -> Result<Vec<Value>, Vec<Value>> {
        let deadline = tokio::time::Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.read(left).await {
                Got::Event(v) => seen.push(v),
                Got::Closed => return Ok(seen),
                Got::Nothing => return Err(seen),
            }
        }
    }
}
