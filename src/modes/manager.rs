//! `ModeManager`: the one actor that owns the global mode state, `action.json` and every
//! mode session file (and normal-operation chat histories). Channels never talk to it
//! directly: the kernel calls [`ModesHandle`] at the start and end of every turn, the
//! `switch_mode` tool and `/mode` commands call it to switch (the tool also to offer a
//! mode, and an accepted offer to enter it), the Cron actor to expire. The messages about
//! learned examples (`/good`, the dashboard's candidates) are in [`super::manager_examples`].
//!
//! Handlers are synchronous (the actor runs on its own thread, `homebot-modes`, so the file I/O
//! of one message — fsync included — blocks only this actor). No handler awaits an LLM:
//! the agent runs between `begin_turn` and `end_turn`, outside the actor, so a slow QQ
//! turn never freezes voice.
//!
//! Supervision: the state is recoverable from disk by design, so a panic inside a handler
//! does not leave a dead mailbox behind. It is caught, the [`ModeCore`] is opened afresh
//! from the workspace (as at start-up), and the request that hit it gets
//! [`ModeError::Restarted`]; every later request is served by the new core. Turns begun
//! before the restart still end correctly (see [`ModeCore::end_turn`]).

use super::durable::Pending;
use super::entered::Entrant;
use super::mode_core::offer::{NoOffer, Offered};
use super::mode_core::{
    EndOutcome, ModeCore, ModeError, ModeStatus, SwitchOrigin, TurnId, TurnMeta, TurnTicket,
};
use super::session::Record;
use super::switch::SwitchAction;
use super::switched::{SwitchError, Switched};
use crate::actor::{Supervised, Unavailable};
use crate::clock::SharedClock;
use actix::prelude::*;
use chrono::{DateTime, Utc};

pub struct ModeManager {
    /// The core, reachable only through its supervised cell: a panic reopens it from disk.
    core: Supervised<ModeCore>,
    clock: SharedClock,
}

impl ModeManager {
    pub fn new(core: ModeCore, clock: SharedClock) -> Self {
        let reopen_clock = clock.clone();
        let core = Supervised::reopened_by("the mode manager", core, move |old, hit| {
            reopen(old, reopen_clock.now(), hit)
        });
        Self { core, clock }
    }

    /// Run `f` on the core at the clock's now, in its supervised cell
    /// ([`crate::actor::Supervised`]).
    pub(super) fn supervised<R>(
        &mut self,
        what: &'static str,
        f: impl FnOnce(&mut ModeCore, DateTime<Utc>) -> R,
    ) -> Result<R, ModeError> {
        let now = self.clock.now();
        self.core
            .run(what, |core| f(core, now))
            .map_err(|e| match e {
                Unavailable::Restarted { .. } => ModeError::Restarted,
                Unavailable::Recovering { secs, .. } => ModeError::Recovering { secs },
            })
    }
}

/// A core opened afresh from the workspace (the same recovery as start-up), carrying over
/// what is not on disk: turn ids, how much chat history is kept, the summarizer's channel.
fn reopen(old: &mut ModeCore, now: DateTime<Utc>, hit: &str) -> Result<ModeCore, ModeError> {
    let mut fresh = ModeCore::open(
        old.workspace().clone(),
        old.registry().clone(),
        old.timezone(),
        now,
        old.frozen_prompt_fn(),
    )?;
    fresh.continue_turn_ids(old.next_turn_id());
    fresh.set_chat_history_kept(old.chat_history_kept());
    fresh.compare_examples_by(old.examples_words());
    fresh.notify_archives(old.archive_notifier());
    fresh.warn(format!(
        "the mode manager failed while handling {hit} and was restarted from disk"
    ));
    Ok(fresh)
}

impl Actor for ModeManager {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "Result<TurnTicket, ModeError>")]
pub struct BeginTurn(pub TurnMeta);

#[derive(Message)]
#[rtype(result = "Result<(EndOutcome, Option<Pending>), ModeError>")]
pub struct EndTurn {
    pub turn_id: TurnId,
    pub record: Record,
    /// The session the turn's ticket named (places it after a restart).
    pub began_in: Option<String>,
    /// Leave the record's fsync to the sender (it waits on the [`Pending`]).
    pub defer_sync: bool,
}

/// A deferred fsync of a turn's record failed: keep it as a recording failure.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SyncFailed {
    pub channel: String,
    pub chat_id: String,
    pub error: ModeError,
}

#[derive(Message)]
#[rtype(result = "Result<Switched, SwitchError>")]
pub struct SwitchMode {
    pub action: SwitchAction,
    pub mode_id: Option<String>,
    pub summary: Option<String>,
    /// `Some((turn, user's words))` from the tool; `None` from a `/mode` command.
    pub from_turn: Option<(TurnId, String)>,
    /// Who sent the `/mode` command (`None` from no chat, and from the tool).
    pub by: Option<Entrant>,
}

/// Make an offer of a mode to a chat, if the backend agrees ([`super::mode_core::offer`]).
#[derive(Message)]
#[rtype(result = "Result<Result<Offered, NoOffer>, ModeError>")]
pub struct OfferMode {
    pub mode_id: String,
    pub chat_key: String,
    /// The speaker's own words of the turn.
    pub words: String,
}

/// Offer a mode after a normal chat's answer that was its work, if the backend agrees
/// ([`ModeCore::offer_after_answer`]).
#[derive(Message)]
#[rtype(result = "Result<Result<Offered, NoOffer>, ModeError>")]
pub struct OfferAfterAnswer {
    pub chat_key: String,
    pub answer: String,
}

/// The asker's yes to an offer: enter the mode with the answering turn in it.
#[derive(Message)]
#[rtype(result = "Result<Switched, SwitchError>")]
pub struct AcceptOffer {
    pub mode_id: String,
    pub turn_id: TurnId,
}

/// The asker's yes to the backend's question about a switch whose words were unsure:
/// the switch as their command, in the answering turn.
#[derive(Message)]
#[rtype(result = "Result<Switched, SwitchError>")]
pub struct ConfirmSwitch {
    pub action: SwitchAction,
    pub mode_id: String,
    pub turn_id: TurnId,
}

#[derive(Message)]
#[rtype(result = "Result<Option<String>, ModeError>")]
pub struct CheckExpiry;

#[derive(Message)]
#[rtype(result = "Result<ModeStatus, ModeError>")]
pub struct GetStatus;

impl Handler<BeginTurn> for ModeManager {
    type Result = Result<TurnTicket, ModeError>;
    fn handle(&mut self, msg: BeginTurn, _: &mut Context<Self>) -> Self::Result {
        self.supervised("begin-turn", |core, now| {
            core.check_recordable()?;
            Ok(core.begin_turn(now, msg.0))
        })?
    }
}

impl Handler<EndTurn> for ModeManager {
    type Result = Result<(EndOutcome, Option<Pending>), ModeError>;
    fn handle(&mut self, msg: EndTurn, _: &mut Context<Self>) -> Self::Result {
        self.supervised("end-turn", |core, now| {
            core.end_turn_deferred(
                now,
                msg.turn_id,
                msg.record,
                msg.began_in.as_deref(),
                msg.defer_sync,
            )
        })?
    }
}

impl Handler<SyncFailed> for ModeManager {
    type Result = ();
    fn handle(&mut self, msg: SyncFailed, _: &mut Context<Self>) {
        let _ = self.supervised("sync-failed", |core, now| {
            core.sync_failed(now, &msg.channel, &msg.chat_id, &msg.error)
        });
    }
}

impl Handler<SwitchMode> for ModeManager {
    type Result = Result<Switched, SwitchError>;
    fn handle(&mut self, msg: SwitchMode, _: &mut Context<Self>) -> Self::Result {
        self.supervised("switch-mode", |core, now| {
            let origin = match &msg.from_turn {
                Some((turn_id, text)) => SwitchOrigin::Tool {
                    turn_id: *turn_id,
                    user_text: text,
                },
                None => SwitchOrigin::Command(msg.by.as_ref()),
            };
            core.switch(now, msg.action, msg.mode_id.as_deref(), msg.summary, origin)
        })?
    }
}

impl Handler<OfferMode> for ModeManager {
    type Result = Result<Result<Offered, NoOffer>, ModeError>;
    fn handle(&mut self, msg: OfferMode, _: &mut Context<Self>) -> Self::Result {
        self.supervised("offer-mode", |core, now| {
            core.offer(now, &msg.mode_id, &msg.chat_key, &msg.words)
        })
    }
}

impl Handler<OfferAfterAnswer> for ModeManager {
    type Result = Result<Result<Offered, NoOffer>, ModeError>;
    fn handle(&mut self, msg: OfferAfterAnswer, _: &mut Context<Self>) -> Self::Result {
        self.supervised("offer-after-answer", |core, now| {
            core.offer_after_answer(now, &msg.chat_key, &msg.answer)
        })
    }
}

impl Handler<AcceptOffer> for ModeManager {
    type Result = Result<Switched, SwitchError>;
    fn handle(&mut self, msg: AcceptOffer, _: &mut Context<Self>) -> Self::Result {
        self.supervised("accept-offer", |core, now| {
            core.accept_offer(now, &msg.mode_id, msg.turn_id)
        })?
    }
}

impl Handler<ConfirmSwitch> for ModeManager {
    type Result = Result<Switched, SwitchError>;
    fn handle(&mut self, msg: ConfirmSwitch, _: &mut Context<Self>) -> Self::Result {
        self.supervised("confirm-switch", |core, now| {
            let origin = SwitchOrigin::Confirmed {
                turn_id: msg.turn_id,
            };
            core.switch(now, msg.action, Some(&msg.mode_id), None, origin)
        })?
    }
}

impl Handler<CheckExpiry> for ModeManager {
    type Result = Result<Option<String>, ModeError>;
    fn handle(&mut self, _: CheckExpiry, _: &mut Context<Self>) -> Self::Result {
        self.supervised("check-expiry", |core, now| core.check_expiry(now))
    }
}

impl Handler<GetStatus> for ModeManager {
    type Result = Result<ModeStatus, ModeError>;
    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> Self::Result {
        self.supervised("status", |core, _| core.status())
    }
}

/// The cloneable handle everything else uses; hides the actor framework.
#[derive(Clone)]
pub struct ModesHandle {
    pub(super) addr: Addr<ModeManager>,
}

impl ModesHandle {
    pub fn new(addr: Addr<ModeManager>) -> Self {
        Self { addr }
    }

    pub async fn begin_turn(&self, meta: TurnMeta) -> Result<TurnTicket, ModeError> {
        self.addr
            .send(BeginTurn(meta))
            .await
            .map_err(|_| ModeError::Gone)?
    }

    /// End a turn: its record is written by the actor and on disk when this returns
    /// `Ok` (the fsync runs here, shared with the other turns that wrote to the same file
    /// meanwhile — see [`super::durable`]).
    pub async fn end_turn(
        &self,
        turn_id: TurnId,
        record: Record,
        began_in: Option<String>,
    ) -> Result<EndOutcome, ModeError> {
        let (channel, chat_id) = (record.channel.clone(), record.chat_id.clone());
        let (out, pending) = self
            .addr
            .send(EndTurn {
                turn_id,
                record,
                began_in,
                defer_sync: true,
            })
            .await
            .map_err(|_| ModeError::Gone)??;
        if let Some(p) = pending {
            let path = p.path.clone();
            if let Err(source) = p.wait().await {
                let error = |source| ModeError::Io {
                    what: "fsync",
                    path: path.clone(),
                    source,
                };
                let copy = std::io::Error::new(source.kind(), source.to_string());
                self.addr.do_send(SyncFailed {
                    channel,
                    chat_id,
                    error: error(copy),
                });
                return Err(error(source));
            }
        }
        Ok(out)
    }

    /// End a turn without waiting (from a drop guard, when the turn's task died); its
    /// record is synced by the actor.
    pub fn end_turn_detached(&self, turn_id: TurnId, record: Record, began_in: Option<String>) {
        self.addr.do_send(EndTurn {
            turn_id,
            record,
            began_in,
            defer_sync: false,
        });
    }

    pub async fn switch(
        &self,
        action: SwitchAction,
        mode_id: Option<String>,
        summary: Option<String>,
        from_turn: Option<(TurnId, String)>,
        by: Option<Entrant>,
    ) -> Result<Switched, SwitchError> {
        self.addr
            .send(SwitchMode {
                action,
                mode_id,
                summary,
                from_turn,
                by,
            })
            .await
            .map_err(|_| SwitchError::Failed(ModeError::Gone))?
    }

    /// Ask the manager to offer `mode_id` in `chat_key` (see [`super::mode_core::offer`]).
    pub async fn offer(
        &self,
        mode_id: String,
        chat_key: String,
        words: String,
    ) -> Result<Result<Offered, NoOffer>, ModeError> {
        self.addr
            .send(OfferMode {
                mode_id,
                chat_key,
                words,
            })
            .await
            .map_err(|_| ModeError::Gone)?
    }

    /// Offer the mode whose work `answer` was, to `chat_key`, if the backend agrees.
    pub async fn offer_after_answer(
        &self,
        chat_key: String,
        answer: String,
    ) -> Result<Result<Offered, NoOffer>, ModeError> {
        self.addr
            .send(OfferAfterAnswer { chat_key, answer })
            .await
            .map_err(|_| ModeError::Gone)?
    }

    /// The asker said yes to an offer in turn `turn_id`: enter the mode.
    pub async fn accept_offer(
        &self,
        mode_id: String,
        turn_id: TurnId,
    ) -> Result<Switched, SwitchError> {
        self.addr
            .send(AcceptOffer { mode_id, turn_id })
            .await
            .map_err(|_| SwitchError::Failed(ModeError::Gone))?
    }

    /// The asker said yes, in turn `turn_id`, to the backend's question about a switch
    /// whose words were unsure: do it as their command (that turn the session's first
    /// record on enter, its last before the archive on exit).
    pub async fn confirm_switch(
        &self,
        action: SwitchAction,
        mode_id: String,
        turn_id: TurnId,
    ) -> Result<Switched, SwitchError> {
        self.addr
            .send(ConfirmSwitch {
                action,
                mode_id,
                turn_id,
            })
            .await
            .map_err(|_| SwitchError::Failed(ModeError::Gone))?
    }

    pub async fn check_expiry(&self) -> Result<Option<String>, ModeError> {
        self.addr
            .send(CheckExpiry)
            .await
            .map_err(|_| ModeError::Gone)?
    }

    /// Fire-and-forget expiry check (used by the Cron actor's timer).
    pub fn nudge_expiry(&self) {
        self.addr.do_send(CheckExpiry);
    }

    pub async fn status(&self) -> Result<ModeStatus, ModeError> {
        self.addr
            .send(GetStatus)
            .await
            .map_err(|_| ModeError::Gone)?
    }
}
