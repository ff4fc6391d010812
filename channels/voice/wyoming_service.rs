//! The Wyoming handle service's connections: `describe` → `info`, `transcript` →
//! `handled` / `not-handled`, `ping` → `pong`, anything else ignored.
//!
//! Bounded for peers that owe us nothing (Wyoming has no authentication): a connection
//! that sends no complete event within `voice.wyoming_idle_timeout_secs` is closed; a
//! header line or data section over `voice.max_frame_bytes` is refused; a payload of any
//! size is refused with an `error` event before a byte of it is read (a handle service
//! takes no audio), so a connection never buffers more than two frames' JSON. Over the
//! connection cap, a new connection gets an `error` event and is closed at once.

use super::door::{HA_PREFIX, WYOMING_TARGET};
use super::handle::{fallback_session, Voice};
use super::held::Taken;
use super::reply::DialogueState;
use super::speaker::speaker_member;
use super::wyoming::{self, Event, FrameError, Limits};
use crate::channels::contract::StartError;
use crate::channels::net::listener_limit;
use crate::netutil::{within, ConnPermit};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::BufReader;
use tokio::net::TcpStream;
use tracing::{debug, warn};

/// Close a connection over the cap, telling the peer why if its socket takes the bytes
/// now (never waits: the accept loop calls this).
pub(super) fn refuse(stream: TcpStream) {
    let ev = Event::new(
        "error",
        json!({"text": "homebot is serving too many Wyoming connections; try again", "code": "busy"}),
    );
    let _ = stream.try_write(&wyoming::encode_event(&ev));
}

impl Voice {
    /// Serve the Wyoming handle service on `listen` (a task per connection, up to
    /// `voice.wyoming_max_connections`); returns what it bound.
    pub(super) async fn serve_wyoming(
        &self,
        listen: &str,
    ) -> Result<(&'static str, SocketAddr), StartError> {
        let (listener, addr) = crate::channels::net::bind("wyoming", listen).await?;
        if !addr.ip().is_loopback() {
            warn!(%addr, "Wyoming has no authentication: anyone who can reach this address can talk to homebot as a guest");
        }
        let limit = listener_limit("wyoming", self.shared.cfg.wyoming_max_connections);
        let ch = self.clone();
        self.shared
            .kernel
            .spawn_service(crate::netutil::accept_loop(
                "wyoming",
                listener,
                limit,
                self.shared.cancel.clone(),
                move |stream, permit| {
                    let ch = ch.clone();
                    tokio::spawn(async move { ch.wyoming_conn(stream, permit).await });
                },
                refuse,
            ));
        Ok(("wyoming", addr))
    }

    fn limits(&self) -> Limits {
        Limits {
            max_json: self.shared.cfg.max_frame_bytes,
            max_payload: 0,
        }
    }

    async fn wyoming_conn(&self, stream: TcpStream, permit: ConnPermit) {
        let peer = stream.peer_addr().ok();
        let conn = format!("{:x}", self.conn_id());
        let idle = Duration::from_secs(self.shared.cfg.wyoming_idle_timeout_secs);
        // one voice session per connection when the front end names none
        let fallback = fallback_session("wyoming", &conn);
        let (r, mut w) = stream.into_split();
        let mut r = BufReader::new(r);
        debug!(?peer, conn, "wyoming connection");
        loop {
            let ev = match within(idle, wyoming::read_event(&mut r, self.limits())).await {
                Err(e) => {
                    debug!(?peer, error = %e, "wyoming: idle connection closed");
                    break;
                }
                Ok(Ok(Some(ev))) => ev,
                Ok(Ok(None)) => break,
                Ok(Err(FrameError::Io(e))) => {
                    debug!(?peer, error = %e, "wyoming connection ended");
                    break;
                }
                Ok(Err(e)) => {
                    let code = match e {
                        FrameError::TooLarge {
                            what: "payload", ..
                        } => "payload-refused",
                        _ => "bad-frame",
                    };
                    // a peer can send bad frames at will: warn at a bounded rate
                    match self.shared.frame_warnings.hit() {
                        Some(suppressed) => {
                            warn!(?peer, error = %e, code, suppressed, "wyoming: frame refused; closing this connection")
                        }
                        None => {
                            debug!(?peer, error = %e, code, "wyoming: frame refused; closing this connection")
                        }
                    }
                    let text = match code {
                        "payload-refused" => {
                            format!("{e}: this handle service takes no audio or other payloads")
                        }
                        _ => e.to_string(),
                    };
                    let _ = within(
                        idle,
                        wyoming::write_event(
                            &mut w,
                            &Event::new("error", json!({"text": text, "code": code})),
                        ),
                    )
                    .await;
                    break;
                }
            };
            // a graceful shutdown waits until an answer is written
            let _delivering = self.shared.kernel.hold_delivery();
            // the held messages the answer begins with: said once it is written
            let mut held = Taken::default();
            let out = match ev.kind.as_str() {
                "describe" => Some(self.info()),
                "ping" => Some(Event::new("pong", json!({"text": ev.data.get("text")}))),
                "transcript" => {
                    let (answer, said) = self.on_transcript(&ev, &fallback).await;
                    held = said;
                    Some(answer)
                }
                other => {
                    debug!(?peer, kind = other, "wyoming: event ignored");
                    None
                }
            };
            if let Some(out) = out {
                // a peer that stops reading (a zero TCP window) gets the idle deadline for
                // each answer too, so it cannot hold its connection and permit forever
                match within(idle, wyoming::write_event(&mut w, &out)).await {
                    Ok(Ok(())) => held.said(),
                    Ok(Err(e)) => {
                        debug!(?peer, error = %e, "wyoming: peer went away before the answer");
                        break;
                    }
                    Err(_) => {
                        debug!(
                            ?peer,
                            ?idle,
                            "wyoming: an answer could not be sent within the idle timeout; closed"
                        );
                        break;
                    }
                }
            }
        }
        // the place is free before the socket closes (`r` and `w` drop after this), so a
        // peer that sees its connection closed can connect again at once
        drop(permit);
    }

    /// The answer to a transcript, and the held messages it begins with.
    async fn on_transcript(&self, ev: &Event, fallback: &str) -> (Event, Taken) {
        let Some(text) = ev.data.get("text").and_then(Value::as_str) else {
            let again = json!({"text": "没有听清楚，请再说一次。"});
            return (Event::new("not-handled", again), Taken::default());
        };
        let ctx = ev.data.get("context").cloned().unwrap_or(Value::Null);
        let get = |k: &str| {
            ctx.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let session = get("conversation_id").unwrap_or_else(|| fallback.to_string());
        let reported = get("speaker_id").or_else(|| get("speaker"));
        // unauthenticated: only the household's own mapping for Wyoming makes a member
        let speaker = speaker_member(Some(&self.shared.cfg.wyoming_speakers), reported.as_deref());
        // which Home Assistant satellite spoke (and so the room), when HA is configured
        let located = match &self.shared.ha {
            Some(ha) => ha.locate(get("satellite_id"), get("device_id")).await,
            None => None,
        };
        let front = located.as_ref().map_or_else(
            || WYOMING_TARGET.to_string(),
            |l| format!("{}{}", HA_PREFIX, l.entity_id),
        );
        let room = located.as_ref().and_then(|l| l.room.clone());
        let pending = self.submit_in(&session, &speaker, text, &front, room);
        let mut reply = self.finish(pending, &front).await;
        if front != WYOMING_TARGET {
            // what waits for any Wyoming speaker is said here too
            let held = self.take_held(WYOMING_TARGET).await;
            if !held.is_empty() {
                reply.text = format!("{} {}", held.joined(), reply.text);
                reply.held.extend(held);
            }
        }
        if let (Some(ha), Some(l)) = (&self.shared.ha, &located) {
            if reply.state == DialogueState::Continue && !reply.failed {
                ha.listen_again(l.entity_id.clone());
            }
        }
        let context = json!({"conversation_id": session, "dialogue_state": reply.state.as_str()});
        let kind = if reply.failed {
            "not-handled"
        } else {
            "handled"
        };
        (
            Event::new(kind, json!({"text": reply.text, "context": context})),
            reply.held,
        )
    }

    fn info(&self) -> Event {
        let attribution = json!({"name": "homebot", "url": "https://github.com/homebot"});
        let version = env!("CARGO_PKG_VERSION");
        Event::new(
            "info",
            json!({
                "handle": [{
                    "name": "homebot",
                    "attribution": attribution,
                    "installed": true,
                    "description": "homebot household assistant (run modes, LLM)",
                    "version": version,
                    "models": [{
                        "name": "homebot",
                        "attribution": attribution,
                        "installed": true,
                        "description": "household assistant",
                        "version": version,
                        "languages": self.shared.cfg.languages,
                    }],
                    "supports_handled_streaming": false,
                }]
            }),
        )
    }
}
