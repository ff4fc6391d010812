//! The [`ModeManager`]'s messages about learned examples ([`super::mode_core::examples`]):
//! `/good` in a chat keeps that chat's candidate; the dashboard lists the active
//! session's shared candidates and keeps one on the owner's word. Each is a map lookup
//! and at most one small file replace on the actor.

use super::examples::Judged;
use super::manager::{ModeManager, ModesHandle};
use super::mode_core::examples::{CandidateView, Good};
use super::mode_core::ModeError;
use actix::prelude::*;

/// Keep chat `channel`/`chat_id`'s last answered turn of the active session as an
/// example, as `judged` (`/good` in that chat, or the owner's keep from the dashboard).
#[derive(Message)]
#[rtype(result = "Result<Good, ModeError>")]
pub struct KeepCandidate {
    pub channel: String,
    pub chat_id: String,
    pub judged: Judged,
}

impl Handler<KeepCandidate> for ModeManager {
    type Result = Result<Good, ModeError>;
    fn handle(&mut self, msg: KeepCandidate, _: &mut Context<Self>) -> Self::Result {
        self.supervised("good", |core, _| {
            core.keep_candidate(&msg.channel, &msg.chat_id, msg.judged)
        })
    }
}

/// The active session's candidates that others heard, shortened (the dashboard).
#[derive(Message)]
#[rtype(result = "Result<Vec<CandidateView>, ModeError>")]
pub struct ListCandidates;

impl Handler<ListCandidates> for ModeManager {
    type Result = Result<Vec<CandidateView>, ModeError>;
    fn handle(&mut self, _: ListCandidates, _: &mut Context<Self>) -> Self::Result {
        self.supervised("candidates", |core, _| core.shared_candidates())
    }
}

impl ModesHandle {
    /// `/good`: keep chat `channel`/`chat_id`'s last answered turn of the active session
    /// as an example of its mode.
    pub async fn mark_good(&self, channel: &str, chat_id: &str) -> Result<Good, ModeError> {
        self.keep_candidate(channel, chat_id, Judged::Good).await
    }

    /// Keep chat `channel`/`chat_id`'s last answered turn of the active session, as
    /// `judged`. A private chat's is never kept ([`Good::Private`]).
    pub async fn keep_candidate(
        &self,
        channel: &str,
        chat_id: &str,
        judged: Judged,
    ) -> Result<Good, ModeError> {
        let msg = KeepCandidate {
            channel: channel.to_string(),
            chat_id: chat_id.to_string(),
            judged,
        };
        self.addr.send(msg).await.map_err(|_| ModeError::Gone)?
    }

    /// The active session's candidates that others heard (what the owner may keep).
    pub async fn shared_candidates(&self) -> Result<Vec<CandidateView>, ModeError> {
        self.addr
            .send(ListCandidates)
            .await
            .map_err(|_| ModeError::Gone)?
    }
}
