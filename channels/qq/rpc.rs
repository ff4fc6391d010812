//! Actions: a request frame with a unique `echo`, matched to the implementation's
//! response by that echo. This file holds the actions waiting for their response
//! ([`Actions`], owned by the QQ actor) and what a response means; the call itself —
//! waiting for a connection, the timeout — is the handle's (`handle`).

use super::action::{Action, Request, Sent};
use super::events::ActionResponse;
use super::id::Id;
use crate::actor::Unavailable;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::oneshot;
use tracing::debug;

/// Longest error text from the implementation kept in an [`ActionError`].
const MAX_PEER_MESSAGE: usize = 200;

/// Why an action failed.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no connection to QQ account {0} (waited for a reconnect)")]
    NotConnected(String),
    #[error("action {action} timed out after {secs} s")]
    Timeout { action: String, secs: u64 },
    #[error("action {action} failed: status {status}, retcode {retcode}{}", msg.as_ref().map(|m| format!(", {m}")).unwrap_or_default())]
    Failed {
        action: String,
        status: String,
        retcode: i64,
        msg: Option<String>,
    },
    #[error("the QQ channel cannot take actions now: {0}")]
    Unavailable(#[from] Unavailable),
}

/// A fresh echo, unique in this process. Made by the caller, before it asks the actor,
/// so a caller dropped while it asks still takes its waiter back (see `handle`).
pub fn echo() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("homebot-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The request frame of `action`.
pub fn frame(action: &Action, echo: &str) -> String {
    serde_json::to_string(&Request { action, echo }).expect("an action frame is plain JSON")
}

/// An action waiting for its response.
struct Waiting {
    self_id: String,
    /// A message send: its message id is remembered as the bot's.
    sends_message: bool,
    reply: oneshot::Sender<ActionResponse>,
}

/// The actions waiting for their response, by echo.
#[derive(Default)]
pub struct Actions {
    waiting: HashMap<String, Waiting>,
}

/// A response matched to its action.
pub struct Matched {
    pub self_id: String,
    /// The message id a message send got, to remember as the bot's.
    pub sent: Option<Id>,
}

impl Actions {
    /// Wait for the response to the action of `self_id` sent with `echo` (unique: see
    /// [`echo`]); returns its receiver.
    pub fn open(
        &mut self,
        echo: &str,
        self_id: &str,
        sends_message: bool,
    ) -> oneshot::Receiver<ActionResponse> {
        let (reply, rx) = oneshot::channel();
        self.waiting.insert(
            echo.to_string(),
            Waiting {
                self_id: self_id.to_string(),
                sends_message,
                reply,
            },
        );
        rx
    }

    /// The caller stopped waiting (timeout, dropped).
    pub fn forget(&mut self, echo: &str) {
        self.waiting.remove(echo);
    }

    /// A response arrived: wake the action waiting for it. `None`: nobody waits for it.
    pub fn resolve(&mut self, resp: ActionResponse) -> Option<Matched> {
        let w = self.waiting.remove(resp.echo.as_str())?;
        let sent = (w.sends_message && resp.succeeded())
            .then(|| match Option::<Sent>::deserialize(&resp.data) {
                Ok(Some(Sent {
                    message_id: Some(id),
                })) => Some(id),
                Ok(_) => None,
                Err(e) => {
                    debug!(self_id = %w.self_id, error = %e, "qq: send response without a usable message id");
                    None
                }
            })
            .flatten();
        let self_id = w.self_id;
        let _ = w.reply.send(resp);
        Some(Matched { self_id, sent })
    }
}

/// What a response says: its `data`, or why the action failed.
pub fn outcome(action: &str, resp: ActionResponse) -> Result<Value, ActionError> {
    if resp.succeeded() {
        return Ok(resp.data);
    }
    Err(ActionError::Failed {
        action: action.into(),
        status: resp
            .status
            .map(|s| format!("{s:?}").to_lowercase())
            .unwrap_or_default(),
        retcode: resp.retcode,
        msg: resp.wording.or(resp.msg).map(shorten),
    })
}

/// A peer's error text, cut to a log-friendly length.
fn shorten(mut s: String) -> String {
    if s.len() > MAX_PEER_MESSAGE {
        let cut = (0..=MAX_PEER_MESSAGE)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        s.truncate(cut);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_messages_are_shortened_on_a_char_boundary() {
        assert_eq!(shorten("风控".into()), "风控");
        let long = shorten("风".repeat(300));
        assert!(long.len() <= MAX_PEER_MESSAGE + '…'.len_utf8());
        assert!(long.ends_with('…'));
    }
}
