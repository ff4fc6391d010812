//! The voice channel: kitchen speakers and satellites. Every wake is a new voice session
//! (`chat_id` = the session id), so outside a mode a wake starts with no history; inside
//! a run mode the mode's history continues it (the kernel does that, not this file).
//!
//! Two front doors:
//! - a **Wyoming handle service** (TCP) for Home Assistant Assist and Wyoming satellites:
//!   `describe` → `info` (one handle program, languages zh/en), `transcript` → `handled`
//!   or `not-handled`, `ping` → `pong`. Home Assistant opens a connection per utterance;
//!   any number are served at once, and a bad frame closes only its own connection;
//! - a **native WebSocket** (`/voice/ws`, JSON) for custom satellites, token-protected:
//!   `transcript` → `reply` with `dialogue_state`, and server-initiated `announce` to the
//!   satellite a proactive message is for. With `provider.stream = true` the reply is
//!   preceded by `partial` frames of whole sentences as the model writes them, and a
//!   new `transcript` or a `stop` from the satellite cancels its turn in flight (see
//!   `partial`). Wyoming keeps whole replies.
//!
//! Who speaks: a speaker id a front end reports is only a claim. It becomes a member
//! only through a mapping the household configured for that front end —
//! `voice.wyoming_speakers` for Wyoming (which has no authentication), a satellite's
//! `speakers` for a satellite that proved itself with a token — and never by matching a
//! member id; everyone else is `guest`.
//!
//! Layout: this file — the channel, its [`Voice`] handle, speakers, reply shaping and
//! the outbound door; `actor` — the voice actor, the one owner of the channel's state:
//! `satellites` (which connection holds which satellite id) and `held` (messages
//! waiting for a front end's next turn); `wyoming_service` — the Wyoming handle service's
//! connections; `ha_agent` — Home Assistant's conversation agent (the custom
//! integration's turns, served by the HTTP server); `ws` — the satellite WebSocket;
//! `partial` — a satellite's reply
//! delivered sentence by sentence, and its turns in flight; `wyoming` — the framing.
//!
//! `dialogue_state`: the model is told (in the dynamic tail, never the system prompt) to
//! end with a question and the marker `[[继续]]` when it needs an answer. The marker is
//! stripped; a reply ending in a question also counts as `continue`. For Wyoming the
//! state travels in `handled.context.dialogue_state`, but Home Assistant ignores it (and a
//! trailing question mark) for a Wyoming agent: with `[home_assistant]` configured, the
//! satellite is asked to listen again through Home Assistant (see
//! `channels::home_assistant`), which also lets a Wyoming turn know its room and lets a
//! reminder set by voice ring on that room's satellite.

mod actor;
mod door;
pub mod ha_agent;
mod held;
mod partial;
mod satellites;
mod ws;
pub mod wyoming;
mod wyoming_service;

pub use door::{HA_PREFIX, WYOMING_TARGET};

use crate::channels::contract::{Channel, StartError, Started};
use crate::channels::home_assistant::HomeAssistant;
use crate::channels::net::{listener_limit, HttpLimits};
use crate::config::{HomeAssistantConfig, VoiceConfig};
use crate::kernel::{Kernel, PendingReply};
use crate::outbound::{DeliveryError, Outbound};
use crate::turn::{Audience, Facts, Modality, Trust, Turn};
use actix::Addr;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

pub const CHANNEL: &str = "voice";
pub const WS_PATH: &str = "/voice/ws";
/// The speaker id of everyone the configuration does not vouch for.
pub const GUEST: &str = crate::turn::facts::GUEST;
use crate::speech::CONTINUE_MARKERS;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialogueState {
    Continue,
    End,
}

impl DialogueState {
    pub fn as_str(self) -> &'static str {
        match self {
            DialogueState::Continue => "continue",
            DialogueState::End => "end",
        }
    }
}

/// Strip the model's continue marker and markdown; decide whether to keep listening.
pub fn shape_reply(reply: &str) -> (String, DialogueState) {
    let mut text = reply.to_string();
    let mut marked = false;
    for m in CONTINUE_MARKERS {
        if text.contains(m) {
            marked = true;
            text = text.replace(m, "");
        }
    }
    let text = crate::channels::text::flatten_markdown(&text).replace('\n', " ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let asks = text.ends_with('？') || text.ends_with('?');
    let state = if marked || asks {
        DialogueState::Continue
    } else {
        DialogueState::End
    };
    (text, state)
}

/// The member a reported speaker id is, by a mapping the household trusts for that
/// front end; anything else (no id, an unmapped id, a member's own id) is [`GUEST`].
pub fn speaker_member(
    trusted: Option<&BTreeMap<String, String>>,
    reported: Option<&str>,
) -> String {
    reported
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .and_then(|s| trusted?.get(s))
        .cloned()
        .unwrap_or_else(|| GUEST.to_string())
}

struct Shared {
    kernel: Kernel,
    cfg: Arc<VoiceConfig>,
    cancel: CancellationToken,
    /// The voice actor: which connection holds which satellite id, and the proactive
    /// messages for a front end that cannot be spoken to now (a satellite not connected,
    /// Wyoming), said before the reply of its next turn.
    actor: Addr<actor::VoiceActor>,
    /// Refused frames and refused satellites are logged at most once per interval.
    frame_warnings: crate::netutil::LogThrottle,
    /// The provider streams its answers: satellites get partial replies.
    streams: bool,
    /// Home Assistant, when `[home_assistant]` is configured: rooms, satellites, announce.
    ha: Option<HomeAssistant>,
}

/// The voice channel before it starts: its configuration.
pub struct VoiceChannel {
    cfg: VoiceConfig,
    ha: HomeAssistantConfig,
}

impl VoiceChannel {
    pub fn new(cfg: VoiceConfig) -> Self {
        Self {
            cfg,
            ha: HomeAssistantConfig::default(),
        }
    }

    /// Speak through Home Assistant too (when `ha` has a URL).
    pub fn with_home_assistant(mut self, ha: HomeAssistantConfig) -> Self {
        self.ha = ha;
        self
    }
}

/// The running voice channel (cloneable handle); also its outbound door.
#[derive(Clone)]
pub struct Voice {
    shared: Arc<Shared>,
}

/// A voice turn's outcome, ready for either front door.
pub struct VoiceReply {
    pub text: String,
    pub state: DialogueState,
    pub failed: bool,
    /// The held messages `text` begins with: said once the door sent it.
    held: held::Taken,
}

#[async_trait::async_trait]
impl Channel for VoiceChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    /// Start the configured servers: Wyoming (`wyoming`) and the native WebSocket
    /// (`voice-ws`), each with its connection cap inside the descriptor budget.
    async fn start(
        self: Box<Self>,
        kernel: Kernel,
        cancel: CancellationToken,
    ) -> Result<Started, StartError> {
        let cfg = Arc::new(self.cfg);
        let actor = {
            let cfg = cfg.clone();
            let presence = kernel.presence().clone();
            crate::channels::arbiter::start_actor("homebot-voice", cancel.clone(), move || {
                actor::VoiceActor::new(cfg, presence)
            })
            .map_err(|e| StartError::new(CHANNEL, "-", e))?
        };
        // Home Assistant connects (and reconnects) by itself: its being down delays nothing
        let ha = match self.ha.enabled() {
            true => Some(
                HomeAssistant::start(self.ha, cancel.child_token(), kernel.presence().clone())
                    .map_err(|e| StartError::new("home_assistant", "-", e))?,
            ),
            false => None,
        };
        if let Some(rx) = ha.as_ref().and_then(HomeAssistant::take_watches) {
            let deliver =
                crate::channels::home_assistant::watch::deliver(rx, kernel.clone(), cancel.clone());
            kernel.spawn_service(deliver);
        }
        let ch = Voice {
            shared: Arc::new(Shared {
                kernel: kernel.clone(),
                cfg: cfg.clone(),
                cancel: cancel.clone(),
                actor,
                frame_warnings: crate::netutil::LogThrottle::new(crate::netutil::LOG_EVERY),
                streams: kernel.provider().streams(),
                ha,
            }),
        };
        let budget = crate::netutil::fd_budget();
        let caps = cfg
            .wyoming_listen
            .as_ref()
            .map_or(0, |_| cfg.wyoming_max_connections)
            + cfg.ws_listen.as_ref().map_or(0, |_| cfg.ws_max_connections);
        if caps > budget.cap() {
            warn!(caps, budget = budget.cap(), "voice connection caps exceed the descriptor budget; connections beyond it are refused");
        }
        let mut started = Started::default();
        if let Some(listen) = &cfg.wyoming_listen {
            let (listener, addr) = crate::channels::net::bind("wyoming", listen).await?;
            if !addr.ip().is_loopback() {
                warn!(%addr, "Wyoming has no authentication: anyone who can reach this address can talk to homebot as a guest");
            }
            started.bound.push(("wyoming", addr));
            let limit = listener_limit("wyoming", cfg.wyoming_max_connections);
            let ch2 = ch.clone();
            let cancel = cancel.clone();
            kernel.spawn_service(crate::netutil::accept_loop(
                "wyoming",
                listener,
                limit,
                cancel,
                move |stream, permit| {
                    let ch3 = ch2.clone();
                    tokio::spawn(async move { ch3.wyoming_conn(stream, permit).await });
                },
                wyoming_service::refuse,
            ));
        }
        if let Some(listen) = &cfg.ws_listen {
            let (listener, addr) = crate::channels::net::bind("voice-ws", listen).await?;
            started.bound.push(("voice-ws", addr));
            let app = axum::Router::new()
                .route(WS_PATH, axum::routing::get(ws::ws_handler))
                .with_state(ch.clone());
            let limits = HttpLimits {
                conns: listener_limit("voice-ws", cfg.ws_max_connections),
                handshake: Duration::from_secs(cfg.handshake_timeout_secs),
            };
            crate::channels::net::serve_http(
                &kernel,
                "voice-ws",
                listener,
                app,
                cancel.clone(),
                limits,
            );
        }
        started.outbound = Some(Arc::new(ch));
        Ok(started)
    }
}

impl Voice {
    /// Admit one utterance to its voice session's FIFO now (call at arrival). `speaker`
    /// is already resolved: a member id or [`GUEST`].
    /// `front` is where proactive messages for this speaker go: the satellite id, or
    /// [`WYOMING_TARGET`].
    pub fn submit(&self, session_id: &str, speaker: &str, text: &str, front: &str) -> PendingReply {
        self.submit_in(session_id, speaker, text, front, None)
    }

    /// [`Voice::submit`] for a speaker in a known room (said in the dynamic tail).
    pub fn submit_in(
        &self,
        session_id: &str,
        speaker: &str,
        text: &str,
        front: &str,
        room: Option<String>,
    ) -> PendingReply {
        let mut turn = voice_turn(session_id, speaker, text, front);
        turn.room = room;
        self.shared.kernel.submit(turn)
    }

    /// Wait for a submitted utterance's reply and shape it for speech; anything held for
    /// this front end (a reminder that rang while it could not be spoken to) comes first,
    /// and counts as said once the caller calls `held.said()` on the reply it sent.
    pub async fn finish(&self, pending: PendingReply, front: &str) -> VoiceReply {
        let reply = pending.reply().await;
        let held = self.take_held(front).await;
        compose(&reply, held)
    }

    /// What is held for `front`; it counts as said when [`held::Taken::said`] is called.
    async fn take_held(&self, front: &str) -> held::Taken {
        self.shared
            .actor
            .send(actor::TakeHeld(front.to_string()))
            .await
            .unwrap_or_default()
    }

    /// A fresh connection id, unique in this process.
    fn conn_id(&self) -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

/// A voice utterance as a turn: its session is the chat; proactive messages for its
/// speaker go to `front`.
fn voice_turn(session_id: &str, speaker: &str, text: &str, front: &str) -> Turn {
    let mut turn = Turn::new(CHANNEL, session_id, speaker, text);
    // every wake is a new session: the speaker the household mapped is the identity
    let guest = speaker.is_empty() || speaker == GUEST;
    turn.facts = Some(Facts {
        audience: Audience::Room,
        modality: Modality::Speech,
        trust: if guest { Trust::Guest } else { Trust::Member },
        memory_peer: Some(if guest { GUEST } else { speaker }.to_string()),
    });
    turn.reply_to = Some(front.to_string());
    turn
}

/// A reply shaped for speech, with what was held for its front end said first.
fn compose(reply: &crate::turn::Reply, held: held::Taken) -> VoiceReply {
    let (text, mut state) = shape_reply(&reply.text);
    if reply.awaits_answer {
        // a question with options or a plan to confirm: keep listening for the answer
        state = DialogueState::Continue;
    }
    VoiceReply {
        text: if held.is_empty() {
            text
        } else {
            format!("{} {text}", held.joined())
        },
        state,
        failed: !reply.is_answered(),
        held,
    }
}

/// A session id for a front end that sent none: unique across restarts, so a new wake
/// never inherits an old conversation stored under the same id.
fn fallback_session(front: &str, conn: &str) -> String {
    format!("{front}-{conn}-{:08x}", rand::random::<u32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_trusted_mapping_makes_a_member() {
        let map = BTreeMap::from([("voice-profile-1".to_string(), "mom".to_string())]);
        assert_eq!(speaker_member(Some(&map), Some("voice-profile-1")), "mom");
        assert_eq!(
            speaker_member(Some(&map), Some("mom")),
            GUEST,
            "a member id is no credential"
        );
        assert_eq!(speaker_member(None, Some("voice-profile-1")), GUEST);
        assert_eq!(speaker_member(Some(&map), None), GUEST);
    }

    #[test]
    fn dialogue_state_from_the_reply() {
        assert_eq!(
            shape_reply("蛋液打好了吗？[[继续]]"),
            ("蛋液打好了吗？".into(), DialogueState::Continue)
        );
        assert_eq!(shape_reply("要放几个番茄？").1, DialogueState::Continue);
        assert_eq!(
            shape_reply("好的，中火三分钟。[[continue]]").1,
            DialogueState::Continue
        );
        assert_eq!(
            shape_reply("好的，**中火**三分钟。"),
            ("好的，中火三分钟。".into(), DialogueState::End)
        );
        assert_eq!(
            shape_reply("第一步：\n- 打蛋\n- 切番茄").0,
            "第一步： · 打蛋 · 切番茄"
        );
    }
}
