//! `GET /api/live/events?after=N`: the live conversation pushed to the page as
//! server-sent events instead of asked for every 2 s. Each event is what `/api/live`
//! answers (`{"session_id", "total", "records"}`): one at once, then one whenever the active
//! session changes or its conversation grows. The page falls back to asking `/api/live`
//! when it cannot hold a stream.
//!
//! A stream outlives the server's short request deadline (`auth` lets this path through
//! without it), so it is bounded otherwise: [`PER_ADDRESS`] streams per peer address and
//! [`TOTAL`] in all (beyond them `429`), each ends after [`MAX_STREAM`] (the browser's
//! `EventSource` opens the next by itself) and when the gateway stops. The server looks at
//! the conversation file's length every [`CHECK_EVERY`] — one `stat`, no read — and
//! reads only when it changed.

use super::api::{read_live, LiveQuery};
use super::Dash;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Streams one peer address may hold at once.
pub const PER_ADDRESS: usize = 2;
/// Streams the dashboard holds at once.
pub const TOTAL: usize = 16;
/// How often a stream looks for a new record.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);
/// The longest one stream lasts.
pub const MAX_STREAM: Duration = Duration::from_secs(600);

/// The open streams, by address.
#[derive(Default)]
pub struct Streams(Mutex<HashMap<IpAddr, usize>>);

/// One open stream's place; given back when dropped (the stream ended or its client left).
pub struct Place {
    streams: Arc<Streams>,
    addr: IpAddr,
}

impl Streams {
    /// A place for a stream of `addr`, or `None` past either bound.
    pub fn open(self: &Arc<Self>, addr: IpAddr) -> Option<Place> {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let total: usize = m.values().sum();
        let mine = m.get(&addr).copied().unwrap_or(0);
        if total >= TOTAL || mine >= PER_ADDRESS {
            return None;
        }
        *m.entry(addr).or_default() += 1;
        Some(Place {
            streams: self.clone(),
            addr,
        })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut m = self.streams.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.addr);
            }
        }
    }
}

/// What a stream knows between looks: the records sent so far and what it last saw.
struct Seen {
    after: usize,
    /// The active session and its conversation file's length at the last read.
    mark: Option<(Option<String>, u64)>,
}

pub async fn events(
    State(dash): State<Dash>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    Query(q): Query<LiveQuery>,
) -> Response {
    let Some(kernel) = dash.kernel() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let addr = peer.map_or(IpAddr::from([0, 0, 0, 0]), |Extension(ConnectInfo(a))| {
        a.ip()
    });
    let Some(place) = dash.inner.streams.open(addr) else {
        let mut r = (StatusCode::TOO_MANY_REQUESTS, "too many live streams\n").into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("10"));
        return r;
    };
    let ws = kernel.workspace().clone();
    let stop = kernel.cancel_token();
    drop(kernel);
    let until = tokio::time::Instant::now() + MAX_STREAM;
    let seen = Seen {
        after: q.after,
        mark: None,
    };
    let stream =
        futures_util::stream::unfold((seen, place, true), move |(mut seen, place, first)| {
            let (ws, stop) = (ws.clone(), stop.clone());
            async move {
                loop {
                    if !first {
                        tokio::select! {
                            _ = stop.cancelled() => return None,
                            _ = tokio::time::sleep_until(until) => return None,
                            _ = tokio::time::sleep(CHECK_EVERY) => {}
                        }
                    }
                    let ws2 = ws.clone();
                    let mark = tokio::task::spawn_blocking(move || mark_of(&ws2))
                        .await
                        .ok()?;
                    if !first && seen.mark.as_ref() == Some(&mark) {
                        continue;
                    }
                    let (ws2, after) = (ws.clone(), seen.after);
                    let live = tokio::task::spawn_blocking(move || read_live(&ws2, after))
                        .await
                        .ok()?;
                    let session_changed = seen.mark.as_ref().map(|m| &m.0) != Some(&mark.0);
                    seen.mark = Some(mark);
                    if !first && !session_changed && live.records.is_empty() {
                        continue;
                    }
                    seen.after = live.total;
                    let event = Event::default().json_data(&live).ok()?;
                    return Some((
                        Ok::<_, std::convert::Infallible>(event),
                        (seen, place, false),
                    ));
                }
            }
        });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The active session and the length of its conversation file (a `stat`, no read).
fn mark_of(ws: &crate::workspace::Workspace) -> (Option<String>, u64) {
    let active = super::data::action(ws)
        .ok()
        .flatten()
        .filter(|a| a.active)
        .and_then(|a| a.session_id);
    let len = active
        .as_deref()
        .and_then(|sid| super::data::session_dir(ws, sid).ok())
        .and_then(|d| std::fs::metadata(d.join(crate::modes::session::CONVERSATION_FILE)).ok())
        .map_or(0, |m| m.len());
    (active, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_bounded_per_address_and_in_all() {
        let s = Arc::new(Streams::default());
        let a = IpAddr::from([10, 0, 0, 1]);
        let first = s.open(a).unwrap();
        let _second = s.open(a).unwrap();
        assert!(s.open(a).is_none(), "a third from one address");
        drop(first);
        let _again = s.open(a).expect("a place given back is free again");
        let mut others = Vec::new();
        for i in 0..TOTAL - PER_ADDRESS {
            others.push(s.open(IpAddr::from([10, 0, 1, i as u8])).unwrap());
        }
        assert!(
            s.open(IpAddr::from([10, 0, 2, 1])).is_none(),
            "past the total"
        );
        others.clear();
        assert!(s.open(IpAddr::from([10, 0, 2, 1])).is_some());
    }
}
