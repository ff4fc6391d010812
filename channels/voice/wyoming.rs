//! Wyoming framing: a JSON header line `{type, data?, data_length?, payload_length?,
//! version?}`, then `data_length` bytes of JSON merged over the header's `data`, then
//! `payload_length` bytes of payload (audio). Sizes are limited; a bad frame is an error
//! for that connection only.

use serde_json::{Map, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub const PROTOCOL_VERSION: &str = "1.10.2";

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: String,
    pub data: Map<String, Value>,
    pub payload: Option<Vec<u8>>,
}

impl Event {
    pub fn new(kind: &str, data: Value) -> Self {
        Self {
            kind: kind.into(),
            data: match data {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            payload: None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Header line and data section, each.
    pub max_json: usize,
    /// Payload; larger ones are refused before a byte of them is read, smaller ones read
    /// (and usually ignored). The handle service sets 0: it takes no audio.
    pub max_payload: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("connection error: {0}")]
    Io(#[from] std::io::Error),
    #[error("header line longer than {0} bytes")]
    HeaderTooLong(usize),
    #[error("{what} of {len} bytes exceeds the limit of {limit}")]
    TooLarge {
        what: &'static str,
        len: u64,
        limit: usize,
    },
    #[error("bad frame: {0}")]
    Bad(String),
}

/// Read one event; `Ok(None)` at a clean end of stream.
pub async fn read_event<R: AsyncBufRead + Unpin>(
    r: &mut R,
    limits: Limits,
) -> Result<Option<Event>, FrameError> {
    let mut line = Vec::new();
    let n = (&mut *r)
        .take(limits.max_json as u64 + 1)
        .read_until(b'\n', &mut line)
        .await?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        if line.len() > limits.max_json {
            return Err(FrameError::HeaderTooLong(limits.max_json));
        }
        return Err(FrameError::Bad("stream ended inside a header line".into()));
    }
    let header: Value = serde_json::from_slice(&line)
        .map_err(|e| FrameError::Bad(format!("header is not JSON: {e}")))?;
    let obj = header
        .as_object()
        .ok_or_else(|| FrameError::Bad("header is not a JSON object".into()))?;
    let kind = obj
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| FrameError::Bad("header without a type".into()))?
        .to_string();
    let mut data = match obj.get("data") {
        Some(Value::Object(m)) => m.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) => return Err(FrameError::Bad("header data is not an object".into())),
    };
    let length = |k: &str| -> Result<u64, FrameError> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(0),
            Some(v) => v
                .as_u64()
                .ok_or_else(|| FrameError::Bad(format!("{k} is not a length"))),
        }
    };
    let data_len = length("data_length")?;
    let payload_len = length("payload_length")?;
    if data_len > limits.max_json as u64 {
        return Err(FrameError::TooLarge {
            what: "data",
            len: data_len,
            limit: limits.max_json,
        });
    }
    if payload_len > limits.max_payload as u64 {
        return Err(FrameError::TooLarge {
            what: "payload",
            len: payload_len,
            limit: limits.max_payload,
        });
    }
    if data_len > 0 {
        let mut buf = vec![0; data_len as usize];
        r.read_exact(&mut buf).await?;
        let extra: Value = serde_json::from_slice(&buf)
            .map_err(|e| FrameError::Bad(format!("data is not JSON: {e}")))?;
        match extra {
            Value::Object(m) => data.extend(m),
            _ => return Err(FrameError::Bad("data section is not a JSON object".into())),
        }
    }
    let payload = if payload_len > 0 {
        let mut buf = vec![0; payload_len as usize];
        r.read_exact(&mut buf).await?;
        Some(buf)
    } else {
        None
    };
    Ok(Some(Event {
        kind,
        data,
        payload,
    }))
}

/// Write one event the way the Python library does: data in its own section.
pub async fn write_event<W: AsyncWrite + Unpin>(w: &mut W, ev: &Event) -> std::io::Result<()> {
    w.write_all(&encode_event(ev)).await?;
    w.flush().await
}

/// One event's bytes on the wire (header line, data, payload).
pub fn encode_event(ev: &Event) -> Vec<u8> {
    let mut header = Map::new();
    header.insert("type".into(), Value::String(ev.kind.clone()));
    header.insert("version".into(), Value::String(PROTOCOL_VERSION.into()));
    let data = if ev.data.is_empty() {
        None
    } else {
        Some(serde_json::to_vec(&ev.data).expect("a JSON map always serializes"))
    };
    if let Some(d) = &data {
        header.insert("data_length".into(), Value::from(d.len()));
    }
    if let Some(p) = &ev.payload {
        header.insert("payload_length".into(), Value::from(p.len()));
    }
    let mut out = serde_json::to_vec(&header).expect("a JSON map always serializes");
    out.push(b'\n');
    if let Some(d) = data {
        out.extend(d);
    }
    if let Some(p) = &ev.payload {
        out.extend_from_slice(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    const L: Limits = Limits {
        max_json: 1024,
        max_payload: 4096,
    };

    async fn read_all(bytes: &[u8]) -> Vec<Result<Option<Event>, FrameError>> {
        let mut r = BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            let e = read_event(&mut r, L).await;
            let stop = !matches!(e, Ok(Some(_)));
            out.push(e);
            if stop {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn data_is_merged_over_header_data_and_payload_skipped() {
        let data = br#"{"text":"from data","language":"zh"}"#;
        let mut bytes = format!(
            "{{\"type\":\"transcript\",\"data\":{{\"text\":\"from header\",\"context\":{{\"conversation_id\":\"c1\"}}}},\"data_length\":{},\"payload_length\":3}}\n",
            data.len()
        )
        .into_bytes();
        bytes.extend_from_slice(data);
        bytes.extend_from_slice(b"\x00\x01\x02");
        bytes.extend_from_slice(b"{\"type\":\"describe\"}\n");
        let evs = read_all(&bytes).await;
        let t = evs[0].as_ref().unwrap().as_ref().unwrap();
        assert_eq!(t.kind, "transcript");
        assert_eq!(t.data["text"], "from data", "data section wins");
        assert_eq!(t.data["language"], "zh");
        assert_eq!(
            t.data["context"]["conversation_id"], "c1",
            "header-only keys stay"
        );
        assert_eq!(t.payload.as_deref(), Some(&b"\x00\x01\x02"[..]));
        let d = evs[1].as_ref().unwrap().as_ref().unwrap();
        assert_eq!(
            d.kind, "describe",
            "the payload bytes were consumed, not parsed"
        );
        assert!(matches!(evs[2], Ok(None)));
    }

    #[tokio::test]
    async fn oversize_and_garbage_are_refused() {
        let long = format!(
            "{{\"type\":\"x\",\"data\":{{\"t\":\"{}\"}}}}\n",
            "a".repeat(2000)
        );
        assert!(read_all(long.as_bytes()).await[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("longer than 1024"));
        let big = "{\"type\":\"x\",\"data_length\":999999}\n";
        assert!(read_all(big.as_bytes()).await[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("exceeds the limit"));
        let payload = "{\"type\":\"audio-chunk\",\"payload_length\":10000}\n";
        assert!(read_all(payload.as_bytes()).await[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("payload of 10000"));
        assert!(read_all(b"not json\n").await[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("not JSON"));
        assert!(read_all(b"{\"data\":{}}\n").await[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("without a type"));
        assert!(
            read_all(b"{\"type\":\"x\",\"data_length\":50}\n{}").await[0].is_err(),
            "truncated data"
        );
    }

    #[tokio::test]
    async fn write_then_read_round_trips() {
        let mut buf = Vec::new();
        let mut ev = Event::new(
            "handled",
            serde_json::json!({"text": "两百克，中火三分钟。"}),
        );
        ev.payload = Some(vec![7, 8]);
        write_event(&mut buf, &ev).await.unwrap();
        let first_line = buf.split(|b| *b == b'\n').next().unwrap();
        let header: Value = serde_json::from_slice(first_line).unwrap();
        assert!(
            header.get("data").is_none(),
            "data travels in its own section"
        );
        let evs = read_all(&buf).await;
        assert_eq!(evs[0].as_ref().unwrap().as_ref().unwrap(), &ev);
    }
}
