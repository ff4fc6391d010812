//! The Wyoming handle service's connections: `describe` → `info`, `transcript` →
//! `handled` / `not-handled`, `ping` → `pong`, anything else ignored.
//!
//! Bounded for peers that owe us nothing (Wyoming has no authentication): a connection
//! that sends no complete event within `voice.wyoming_idle_timeout_secs` is closed; a
//! header line or data section over `voice.max_frame_bytes` is refused; a payload of any
//! size is refused with an `error` event before a byte of it is read (a handle service
//! takes no audio), so a connection never buffers more than two frames' JSON. Over the
//! connection cap, a new connection gets an `error` event and is closed at once.

use super::handle::{fallback_session, Voice};
use super::turn::{HA_PREFIX, WYOMING_TARGET};
use super::wyoming::{self, FrameError, Limits};
use super::wyoming_events::{
    Answer, AnswerContext, Attribution, HandleModel, HandleProgram, Info, Pong, RefusalCode,
    Transcript, WyomingIn, WyomingOut,
};
use crate::channels::contract::StartError;
use crate::channels::net::listener_limit;
use crate::channels::spoken::held::Taken;
use crate::channels::spoken::{or_satellite_member, speaker_member, DialogueState};
use crate::netutil::{within, ConnPermit};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::BufReader;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tracing::{debug, warn};

/// Close a connection over the cap, telling the peer why if its socket takes the bytes
/// now (never waits: the accept loop calls this).
pub(super) fn refuse(stream: TcpStream) {
    let busy = WyomingOut::refusal(
        RefusalCode::Busy,
        "homebot is serving too many Wyoming connections; try again",
    );
    let _ = stream.try_write(&wyoming::encode_event(&busy.to_event()));
}

/// The Wyoming handle service: its server, over the voice channel's handle.
#[derive(Clone)]
pub(super) struct WyomingService {
    voice: Voice,
}

impl WyomingService {
    pub(super) fn new(voice: Voice) -> Self {
        Self { voice }
    }

    /// Serve the Wyoming handle service on `listen` (a task per connection, up to
    /// `voice.wyoming_max_connections`); returns what it bound.
    pub(super) async fn serve(
        &self,
        listen: &str,
    ) -> Result<(&'static str, SocketAddr), StartError> {
        let (listener, addr) = crate::channels::net::bind("wyoming", listen).await?;
        if !addr.ip().is_loopback() {
            warn!(%addr, "Wyoming has no authentication: anyone who can reach this address can talk to homebot as a guest");
        }
        let limit = listener_limit("wyoming", self.voice.shared.cfg.wyoming_max_connections);
        let ch = self.clone();
        let conns = self.voice.shared.ctx.tasks().clone();
        self.voice.shared.ctx.tasks().spawn_in(
            crate::actor::Group::Service,
            crate::netutil::accept_loop(
                "wyoming",
                listener,
                limit,
                self.voice.shared.cancel.clone(),
                move |stream, permit| {
                    let ch = ch.clone();
                    conns.spawn(async move { ch.wyoming_conn(stream, permit).await });
                },
                refuse,
            ),
        );
        Ok(("wyoming", addr))
    }

    fn limits(&self) -> Limits {
        Limits {
            max_json: self.voice.shared.cfg.max_frame_bytes,
            max_payload: 0,
        }
    }

    /// One connection: events answered in order until the peer goes away, stays idle,
    /// or sends a frame that is refused.
    async fn wyoming_conn(&self, stream: TcpStream, permit: ConnPermit) {
        let peer = stream.peer_addr().ok();
        let conn = format!("{:x}", self.voice.conn_id());
        let idle = Duration::from_secs(self.voice.shared.cfg.wyoming_idle_timeout_secs);
        // one voice session per connection when the front end names none
        let fallback = fallback_session("wyoming", &conn);
        let (r, w) = stream.into_split();
        let mut link = Link {
            r: BufReader::new(r),
            w,
            peer,
            idle,
        };
        debug!(?peer, conn, "wyoming connection");
        while let Some(ev) = self.next_event(&mut link).await {
            // a graceful shutdown waits until an answer is written
            let _delivering = self
                .voice
                .shared
                .ctx
                .tasks()
                .guard(crate::actor::Group::Turn);
            let (out, mut held) = match WyomingIn::from_event(ev) {
                WyomingIn::Describe => (self.info(), Taken::default()),
                WyomingIn::Ping(p) => (WyomingOut::Pong(Pong { text: p.text }), Taken::default()),
                WyomingIn::Transcript(t) => self.on_transcript(t, &fallback).await,
                WyomingIn::Other(kind) => {
                    debug!(?peer, kind, "wyoming: event ignored");
                    continue;
                }
            };
            if !link.answer(&out).await {
                break;
            }
            // the held messages the answer began with are said once it is written
            held.said();
        }
        // the place is free before the socket closes (`link` drops after this), so a
        // peer that sees its connection closed can connect again at once
        drop(permit);
    }

    /// The next event; `None` when the connection is done: the peer went away or stayed
    /// idle, or its frame was refused (the peer is told why).
    async fn next_event(&self, link: &mut Link) -> Option<wyoming::Event> {
        let peer = link.peer;
        let e = match within(link.idle, wyoming::read_event(&mut link.r, self.limits())).await {
            Err(e) => {
                debug!(?peer, error = %e, "wyoming: idle connection closed");
                return None;
            }
            Ok(Ok(Some(ev))) => return Some(ev),
            Ok(Ok(None)) => return None,
            Ok(Err(FrameError::Io(e))) => {
                debug!(?peer, error = %e, "wyoming connection ended");
                return None;
            }
            Ok(Err(e)) => e,
        };
        let (code, text) = match e {
            FrameError::TooLarge {
                what: "payload", ..
            } => (
                RefusalCode::PayloadRefused,
                format!("{e}: this handle service takes no audio or other payloads"),
            ),
            _ => (RefusalCode::BadFrame, e.to_string()),
        };
        // a peer can send bad frames at will: warn at a bounded rate
        match self.voice.shared.frame_warnings.hit() {
            Some(suppressed) => {
                warn!(?peer, error = %e, code = code.as_str(), suppressed, "wyoming: frame refused; closing this connection")
            }
            None => {
                debug!(?peer, error = %e, code = code.as_str(), "wyoming: frame refused; closing this connection")
            }
        }
        let refusal = WyomingOut::refusal(code, text).to_event();
        let _ = within(link.idle, wyoming::write_event(&mut link.w, &refusal)).await;
        None
    }

    /// The answer to a transcript, and the held messages it begins with.
    async fn on_transcript(&self, t: Transcript, fallback: &str) -> (WyomingOut, Taken) {
        let Some(text) = t.text else {
            let again = Answer {
                text: "没有听清楚，请再说一次。".into(),
                context: None,
            };
            return (WyomingOut::NotHandled(again), Taken::default());
        };
        let ctx = t.context.unwrap_or_default();
        let session = ctx.conversation_id.unwrap_or_else(|| fallback.to_string());
        let reported = ctx.speaker_id.or(ctx.speaker);
        // unauthenticated: only the household's own mapping for Wyoming makes a member
        let speaker = speaker_member(
            Some(&self.voice.shared.cfg.wyoming_speakers),
            reported.as_deref(),
        );
        // which Home Assistant satellite spoke (and so the room), when HA is configured
        let satellites = self.voice.satellites();
        let located = match &satellites {
            Some(s) => s.locate(ctx.satellite_id, ctx.device_id).await,
            None => None,
        };
        let speaker = or_satellite_member(
            speaker,
            &self.voice.shared.ctx.config().home_assistant.speakers,
            located.as_ref().map(|l| l.entity_id.as_str()),
        );
        let front = located.as_ref().map_or_else(
            || WYOMING_TARGET.to_string(),
            |l| format!("{HA_PREFIX}{}", l.entity_id),
        );
        let room = located.as_ref().and_then(|l| l.room.clone());
        let pending = self
            .voice
            .submit_in(&session, &speaker, &text, &front, room);
        let mut reply = self.voice.finish(pending, &front).await;
        if front != WYOMING_TARGET {
            // what waits for any Wyoming speaker is said here too
            let held = self.voice.take_held(WYOMING_TARGET).await;
            if !held.is_empty() {
                reply.text = format!("{} {}", held.joined(), reply.text);
                reply.held.extend(held);
            }
        }
        if let (Some(s), Some(l)) = (&satellites, &located) {
            if reply.state == DialogueState::Continue && !reply.failed {
                s.listen_again(l.entity_id.clone());
            }
        }
        let answer = Answer {
            text: reply.text,
            context: Some(AnswerContext {
                conversation_id: session,
                dialogue_state: reply.state,
            }),
        };
        let out = match reply.failed {
            true => WyomingOut::NotHandled(answer),
            false => WyomingOut::Handled(answer),
        };
        (out, reply.held)
    }

    /// The answer to `describe`: one handle program, homebot, in the configured
    /// languages.
    fn info(&self) -> WyomingOut {
        let attribution = Attribution {
            name: "homebot".into(),
            url: "https://github.com/homebot".into(),
        };
        let version = env!("CARGO_PKG_VERSION");
        WyomingOut::Info(Info {
            handle: vec![HandleProgram {
                name: "homebot".into(),
                attribution: attribution.clone(),
                installed: true,
                description: "homebot household assistant (run modes, LLM)".into(),
                version: version.into(),
                models: vec![HandleModel {
                    name: "homebot".into(),
                    attribution,
                    installed: true,
                    description: "household assistant".into(),
                    version: version.into(),
                    languages: self.voice.shared.cfg.languages.clone(),
                }],
                supports_handled_streaming: false,
            }],
        })
    }
}

/// A connection's two halves, as its loop uses them.
struct Link {
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
    peer: Option<SocketAddr>,
    /// How long a peer may take for a whole event, and to take each answer.
    idle: Duration,
}

impl Link {
    /// Write an answer; `false` when the connection is done (the peer went away, or did
    /// not take the answer within the idle timeout).
    async fn answer(&mut self, out: &WyomingOut) -> bool {
        let peer = self.peer;
        // a peer that stops reading (a zero TCP window) gets the idle deadline for each
        // answer too, so it cannot hold its connection and permit forever
        match within(
            self.idle,
            wyoming::write_event(&mut self.w, &out.to_event()),
        )
        .await
        {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                debug!(?peer, error = %e, "wyoming: peer went away before the answer");
                false
            }
            Err(_) => {
                let idle = self.idle;
                debug!(
                    ?peer,
                    ?idle,
                    "wyoming: an answer could not be sent within the idle timeout; closed"
                );
                false
            }
        }
    }
}
