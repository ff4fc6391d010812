//! Server-sent events as the streaming dialects send them: `event:` and `data:` lines,
//! `:` comment lines (keep-alives, ignored), an empty line ending each event, `\n` or
//! `\r\n`. Bounded: the whole stream counts against the same byte cap as an unstreamed
//! answer, so a server that never stops (or never sends a newline) is cut off, not held.

use super::error::{BodyError, ProviderError};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, empty when none was given.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// An incremental parser: feed it bytes as they arrive, take the complete events.
pub struct SseParser {
    buf: Vec<u8>,
    cur: SseEvent,
    has_data: bool,
    total: usize,
    cap: usize,
    /// `buf[..scanned]` holds no newline: a long line arriving in small chunks is
    /// scanned once, not once per chunk.
    scanned: usize,
}

impl SseParser {
    pub fn new(cap: usize) -> Self {
        Self {
            buf: Vec::new(),
            cur: SseEvent::default(),
            has_data: false,
            total: 0,
            cap,
            scanned: 0,
        }
    }

    /// Feed a chunk; the events it completed are appended to `out`. Errors once the
    /// stream passes the cap.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        self.total += chunk.len();
        if self.total > self.cap {
            return Err(ProviderError::TooLarge(self.cap));
        }
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        let mut search = self.scanned;
        while let Some(nl) = self.buf[search..].iter().position(|&b| b == b'\n') {
            let end = search + nl;
            let line = &self.buf[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = String::from_utf8_lossy(line).into_owned();
            self.line(&line, out);
            start = end + 1;
            search = start;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        Ok(())
    }

    /// The stream ended: an event not closed by an empty line still counts.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.buf.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned();
            self.scanned = 0;
            self.line(rest.trim_end_matches('\r'), out);
        }
        self.dispatch(out);
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return; // a comment: keep-alive or processing note
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.cur.data.push('\n');
                }
                self.cur.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.cur.event = value.to_string(),
            _ => {} // id, retry: nothing to do for a one-shot answer
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(std::mem::take(&mut self.cur));
        }
        self.cur = SseEvent::default();
        self.has_data = false;
    }
}

/// Read `resp` as events, handing each to `on_event` until it returns `Ok(true)` (the
/// stream is done) or the body ends.
pub async fn read_events(
    mut resp: reqwest::Response,
    cap: usize,
    classify: impl Fn(BodyError) -> ProviderError,
    mut on_event: impl FnMut(SseEvent) -> Result<bool, ProviderError>,
) -> Result<(), ProviderError> {
    let mut parser = SseParser::new(cap);
    let mut events = Vec::new();
    loop {
        let chunk = resp
            .chunk()
            .await
            .map_err(|e| classify(BodyError::Read(e)))?;
        let ended = chunk.is_none();
        match chunk {
            Some(c) => parser.feed(&c, &mut events)?,
            None => parser.finish(&mut events),
        }
        for ev in events.drain(..) {
            if on_event(ev)? {
                return Ok(());
            }
        }
        if ended {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&str]) -> Vec<SseEvent> {
        let mut p = SseParser::new(1 << 20);
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c.as_bytes(), &mut out).unwrap();
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn events_split_anywhere_comments_and_crlf() {
        let evs = parse_all(&[
            ": keep-alive\n\nda",
            "ta: {\"a\":1}\r\n\r\nevent: ping\ndata: x\ndata: y\n",
            "\n: OPENROUTER PROCESSING\n\ndata: [DONE]",
        ]);
        assert_eq!(
            evs,
            vec![
                SseEvent {
                    event: "".into(),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: "ping".into(),
                    data: "x\ny".into()
                },
                SseEvent {
                    event: "".into(),
                    data: "[DONE]".into()
                },
            ]
        );
    }

    #[test]
    fn the_cap_counts_the_whole_stream() {
        let mut p = SseParser::new(100);
        let mut out = Vec::new();
        p.feed(&[b'x'; 60], &mut out).unwrap();
        assert!(matches!(
            p.feed(&[b'x'; 60], &mut out),
            Err(ProviderError::TooLarge(100))
        ));
    }

    #[test]
    fn a_long_line_in_small_chunks_is_scanned_once() {
        let mut p = SseParser::new(1 << 22);
        let mut out = Vec::new();
        p.feed(b"data: ", &mut out).unwrap();
        for _ in 0..100_000 {
            p.feed(b"x", &mut out).unwrap();
            assert_eq!(p.scanned, p.buf.len());
        }
        p.feed(b"\n\n", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data.len(), 100_000);
        assert_eq!((p.buf.len(), p.scanned), (0, 0));
    }
}
