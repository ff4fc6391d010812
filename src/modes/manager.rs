//! `ModeManager`: the one actor that owns the global mode state, `action.json` and every
//! mode session file (and normal-operation chat histories). Channels never talk to it
//! directly: the kernel calls [`ModesHandle`] at the start and end of every turn, the
//! `switch_mode` tool and `/mode` commands call it to switch, the Cron actor to expire.
//!
//! Handlers are synchronous (the actor runs on its own arbiter thread, so the file I/O
//! of one message — fsync included — blocks only this actor). No handler awaits an LLM:
//! the agent runs between `begin_turn` and `end_turn`, outside the actor, so a slow QQ
//! turn never freezes voice.

use super::core::{
    EndOutcome, ModeCore, ModeError, ModeStatus, SwitchOrigin, TurnId, TurnMeta, TurnTicket,
};
use super::session::Record;
use super::switch::SwitchAction;
use crate::clock::SharedClock;
use actix::prelude::*;

pub struct ModeManager {
    core: ModeCore,
    clock: SharedClock,
}

impl ModeManager {
    pub fn new(core: ModeCore, clock: SharedClock) -> Self {
        Self { core, clock }
    }
}

impl Actor for ModeManager {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "TurnTicket")]
pub struct BeginTurn(pub TurnMeta);

#[derive(Message)]
#[rtype(result = "Result<EndOutcome, String>")]
pub struct EndTurn {
    pub turn_id: TurnId,
    pub record: Record,
}

#[derive(Message)]
#[rtype(result = "Result<String, String>")]
pub struct SwitchMode {
    pub action: SwitchAction,
    pub mode_id: Option<String>,
    pub summary: Option<String>,
    /// `Some((turn, user's words))` from the tool; `None` from a `/mode` command.
    pub from_turn: Option<(TurnId, String)>,
}

#[derive(Message)]
#[rtype(result = "Option<String>")]
pub struct CheckExpiry;

#[derive(Message)]
#[rtype(result = "ModeStatus")]
pub struct GetStatus;

impl Handler<BeginTurn> for ModeManager {
    type Result = MessageResult<BeginTurn>;
    fn handle(&mut self, msg: BeginTurn, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.core.begin_turn(self.clock.now(), msg.0))
    }
}

impl Handler<EndTurn> for ModeManager {
    type Result = Result<EndOutcome, String>;
    fn handle(&mut self, msg: EndTurn, _: &mut Context<Self>) -> Self::Result {
        self.core
            .end_turn(msg.turn_id, msg.record)
            .map_err(|e: ModeError| e.to_string())
    }
}

impl Handler<SwitchMode> for ModeManager {
    type Result = Result<String, String>;
    fn handle(&mut self, msg: SwitchMode, _: &mut Context<Self>) -> Self::Result {
        let origin = match &msg.from_turn {
            Some((turn_id, text)) => SwitchOrigin::Tool {
                turn_id: *turn_id,
                user_text: text,
            },
            None => SwitchOrigin::Command,
        };
        self.core.switch(
            self.clock.now(),
            msg.action,
            msg.mode_id.as_deref(),
            msg.summary,
            origin,
        )
    }
}

impl Handler<CheckExpiry> for ModeManager {
    type Result = Option<String>;
    fn handle(&mut self, _: CheckExpiry, _: &mut Context<Self>) -> Self::Result {
        self.core.check_expiry(self.clock.now())
    }
}

impl Handler<GetStatus> for ModeManager {
    type Result = MessageResult<GetStatus>;
    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.core.status())
    }
}

/// The cloneable handle everything else uses; hides the actor framework.
#[derive(Clone)]
pub struct ModesHandle {
    addr: Addr<ModeManager>,
}

impl ModesHandle {
    pub fn new(addr: Addr<ModeManager>) -> Self {
        Self { addr }
    }

    pub async fn begin_turn(&self, meta: TurnMeta) -> Result<TurnTicket, ModeError> {
        self.addr
            .send(BeginTurn(meta))
            .await
            .map_err(|_| ModeError::Gone)
    }

    pub async fn end_turn(&self, turn_id: TurnId, record: Record) -> Result<EndOutcome, String> {
        self.addr
            .send(EndTurn { turn_id, record })
            .await
            .map_err(|_| ModeError::Gone.to_string())?
    }

    /// End a turn without waiting (from a drop guard, when the turn's task died).
    pub fn end_turn_detached(&self, turn_id: TurnId, record: Record) {
        self.addr.do_send(EndTurn { turn_id, record });
    }

    pub async fn switch(
        &self,
        action: SwitchAction,
        mode_id: Option<String>,
        summary: Option<String>,
        from_turn: Option<(TurnId, String)>,
    ) -> Result<String, String> {
        self.addr
            .send(SwitchMode {
                action,
                mode_id,
                summary,
                from_turn,
            })
            .await
            .map_err(|_| ModeError::Gone.to_string())?
    }

    pub async fn check_expiry(&self) -> Result<Option<String>, ModeError> {
        self.addr
            .send(CheckExpiry)
            .await
            .map_err(|_| ModeError::Gone)
    }

    /// Fire-and-forget expiry check (used by the Cron actor's timer).
    pub fn nudge_expiry(&self) {
        self.addr.do_send(CheckExpiry);
    }

    pub async fn status(&self) -> Result<ModeStatus, ModeError> {
        self.addr.send(GetStatus).await.map_err(|_| ModeError::Gone)
    }
}
