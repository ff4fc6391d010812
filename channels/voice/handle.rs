//! [`Voice`], the running voice channel's handle: what the front doors (the Wyoming
//! service, the satellite WebSocket, Home Assistant's agent) and the kernel (through the
//! outbound door, `door`) hold. It admits utterances as turns, waits for their replies,
//! and reaches the voice actor for what the channel keeps (satellites, held messages).

use super::actor::VoiceActor;
use super::turn::{CHANNEL, WYOMING_TARGET};
use crate::channels::ctx::ChannelCtx;
use crate::channels::spoken::{held, Satellites, Spoken, VoiceReply};
use crate::config::VoiceConfig;
use crate::kernel::PendingReply;
use crate::outbound::DeliveryError;
use crate::turn::{Partial, Partials, Turn};
use actix::Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub(super) struct Shared {
    pub(super) ctx: ChannelCtx,
    pub(super) cfg: Arc<VoiceConfig>,
    pub(super) cancel: CancellationToken,
    /// The voice actor: which connection holds which satellite id.
    pub(super) actor: Addr<VoiceActor>,
    /// The spoken kit: the proactive messages for a front end that cannot be spoken to
    /// now (a satellite not connected, Wyoming), said before the reply of its next turn;
    /// the answer's frames; Home Assistant's satellites when its channel provides them.
    pub(super) spoken: Spoken,
    /// Refused frames and refused satellites are logged at most once per interval.
    pub(super) frame_warnings: crate::netutil::LogThrottle,
    /// The provider streams its answers: satellites get partial replies.
    pub(super) streams: bool,
}

/// The running voice channel (cloneable handle); also its outbound door.
#[derive(Clone)]
pub struct Voice {
    pub(super) shared: Arc<Shared>,
}

impl Voice {
    pub(super) fn new(shared: Shared) -> Self {
        Self {
            shared: Arc::new(shared),
        }
    }

    /// Admit one utterance to its voice session's FIFO now (call at arrival). `speaker`
    /// is already resolved: a member id or [`GUEST`](crate::channels::spoken::GUEST).
    /// `front` is where proactive messages for this speaker go: the satellite id, or
    /// [`super::WYOMING_TARGET`].
    pub fn submit(&self, session_id: &str, speaker: &str, text: &str, front: &str) -> PendingReply {
        self.submit_in(session_id, speaker, text, front, None)
    }

    /// [`Voice::submit`] for a speaker in a known room (said in the dynamic tail, and the
    /// room's scene key beside the speaker's).
    pub fn submit_in(
        &self,
        session_id: &str,
        speaker: &str,
        text: &str,
        front: &str,
        room: Option<String>,
    ) -> PendingReply {
        let mut turn = voice_turn(session_id, speaker, text, front);
        // whoever is in the room hears it: the room's scene too
        turn.facts.scenes.extend(
            room.as_deref()
                .and_then(crate::memory::SceneKey::room)
                .map(|k| k.to_string()),
        );
        turn.room = room;
        self.shared.ctx.submit(turn)
    }

    /// Wait for a submitted utterance's reply and shape it for speech; anything held for
    /// this front end (a reminder that rang while it could not be spoken to) comes first,
    /// and counts as said once the caller calls `held.said()` on the reply it sent.
    pub async fn finish(&self, pending: PendingReply, front: &str) -> VoiceReply {
        self.shared.spoken.finish(pending, front).await
    }

    /// What is held for `front`; it counts as said when [`held::Taken::said`] is called.
    pub(super) async fn take_held(&self, front: &str) -> held::Taken {
        self.shared.spoken.take_held(front).await
    }

    /// Home Assistant's satellites (rooms, listening again, announcing), when its channel
    /// runs.
    pub(super) fn satellites(&self) -> Option<std::sync::Arc<dyn Satellites>> {
        self.shared.spoken.satellites()
    }

    /// A fresh connection id, unique in this process.
    pub(super) fn conn_id(&self) -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

/// A voice utterance as a turn; proactive messages for its speaker go to `front`.
pub(super) fn voice_turn(session_id: &str, speaker: &str, text: &str, front: &str) -> Turn {
    let mut turn = super::turn::turn(session_id, speaker, text);
    turn.reply_to = Some(front.to_string());
    // a known satellite is the place the next wake in that room comes from
    if front != WYOMING_TARGET {
        turn.facts.place = Some(front.to_string());
    }
    turn
}

/// A session id for a front end that sent none: unique across restarts, so a new wake
/// never inherits an old conversation stored under the same id.
pub(super) fn fallback_session(front: &str, conn: &str) -> String {
    format!("{front}-{conn}-{:08x}", rand::random::<u32>())
}

impl Voice {
    /// Announce through Home Assistant; delivered only when Home Assistant said success.
    pub(super) async fn say_in_home_assistant(
        &self,
        target: &str,
        text: &str,
    ) -> Result<(), DeliveryError> {
        let Some(satellites) = self.satellites() else {
            return Err(DeliveryError::Unreachable(format!("satellite {target:?}")));
        };
        match satellites.say(target, text).await {
            Err(DeliveryError::BadTarget { target, .. }) => Err(DeliveryError::BadTarget {
                channel: CHANNEL.into(),
                target,
                why: "neither a connected satellite nor an area or satellite of Home Assistant"
                    .into(),
            }),
            other => other,
        }
    }
}

impl Voice {
    /// Admit a satellite's utterance; with a streaming provider it carries a partial-text
    /// sink, bounded by the reply cap, whose receiver is returned.
    pub(super) fn submit_satellite(
        &self,
        session: &str,
        speaker: &str,
        words: &str,
        front: &str,
        cancel: CancellationToken,
    ) -> (PendingReply, Option<mpsc::UnboundedReceiver<Partial>>) {
        let mut turn = voice_turn(session, speaker, words, front);
        let rx = self.shared.streams.then(|| {
            let cap = self.shared.ctx.config().agent.max_reply_chars;
            // room for the mark a cut reply ends with, so what was said stays its beginning
            let (p, rx) =
                Partials::new(cap.saturating_sub(crate::agent::TRUNCATION_MARK.chars().count()));
            turn.partials = Some(p);
            rx
        });
        (self.shared.ctx.submit_cancellable(turn, cancel), rx)
    }
}
