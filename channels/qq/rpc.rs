//! Actions: a request frame with a unique `echo`, matched to the implementation's
//! response by that echo, with a timeout. Who may carry an action: the account's
//! Universal or API connection; with none, a caller waits up to `reconnect_wait_secs` for
//! one to come up (NapCat restarts take a while), then gives up.
//!
//! Called by the delivery queues (`delivery`) and by anyone holding a [`Qq`]; responses
//! arrive through the connection read loop (`mod.rs`), which hands them to
//! [`Qq::resolve`].

use super::events::ActionResponse;
use super::Qq;
use serde::Serialize;
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info};

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
}

#[derive(Serialize)]
struct Request<'a> {
    action: &'a str,
    params: Value,
    echo: &'a str,
}

/// Removes a waiter that got no response (timeout, dropped caller) from the map.
struct Waiter<'a> {
    qq: &'a Qq,
    echo: String,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.qq
            .shared
            .pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&self.echo);
    }
}

impl Qq {
    /// Call an action and wait for its response (matched by `echo`); returns its `data`.
    /// Waits up to `reconnect_wait_secs` for a connection if there is none.
    pub async fn call(
        &self,
        self_id: &str,
        action: &str,
        params: Value,
    ) -> Result<Value, ActionError> {
        let Some(tx) = self
            .wait_for_connection(action, || self.sender_for(self_id))
            .await
        else {
            return Err(ActionError::NotConnected(self_id.to_string()));
        };
        let echo = format!("homebot-{}", self.next_id());
        let (wtx, wrx) = oneshot::channel();
        self.shared
            .pending
            .lock()
            .expect("pending lock is never poisoned")
            .insert(echo.clone(), wtx);
        let _waiter = Waiter {
            qq: self,
            echo: echo.clone(),
        };
        let frame = serde_json::to_string(&Request {
            action,
            params,
            echo: &echo,
        })
        .expect("an action frame is plain JSON");
        if tx.send(frame).await.is_err() {
            return Err(ActionError::NotConnected(self_id.to_string()));
        }
        let secs = self.shared.cfg.action_timeout_secs;
        let resp = match tokio::time::timeout(Duration::from_secs(secs), wrx).await {
            Ok(Ok(r)) => r,
            _ => {
                return Err(ActionError::Timeout {
                    action: action.into(),
                    secs,
                })
            }
        };
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

    /// A response arrived: wake the action waiting for it.
    pub(super) fn resolve(&self, self_id: &str, resp: ActionResponse) {
        let waiter = self
            .shared
            .pending
            .lock()
            .expect("pending lock is never poisoned")
            .remove(resp.echo.as_str());
        match waiter {
            Some(w) => {
                let _ = w.send(resp);
            }
            None => {
                debug!(self_id, echo = %resp.echo, "qq: response to an unknown action ignored")
            }
        }
    }

    /// Wait (up to `reconnect_wait_secs`) until `find` sees a usable connection.
    pub(super) async fn wait_for_connection<T>(
        &self,
        what: &str,
        find: impl Fn() -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now() + Duration::from_secs(self.shared.cfg.reconnect_wait_secs);
        loop {
            // created before the check, so a connection coming up in between still wakes it
            let notified = self.shared.connected.notified();
            if let Some(t) = find() {
                return Some(t);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            info!(
                action = what,
                "qq: no connection; waiting for the implementation to reconnect"
            );
            let _ = tokio::time::timeout(left, notified).await;
        }
    }

    /// The writer of the account's connection that carries actions.
    fn sender_for(&self, self_id: &str) -> Option<mpsc::Sender<String>> {
        let bots = self
            .shared
            .bots
            .lock()
            .expect("bots lock is never poisoned");
        bots.get(self_id)?
            .conns
            .iter()
            .filter(|c| c.role.sends_actions())
            .find_map(|c| c.tx.clone())
    }

    /// The account connected first (lowest connection id) among those that can carry
    /// actions now.
    pub(super) fn first_account(&self) -> Option<String> {
        let bots = self
            .shared
            .bots
            .lock()
            .expect("bots lock is never poisoned");
        bots.iter()
            .flat_map(|(self_id, bot)| {
                bot.conns
                    .iter()
                    .filter(|c| c.role.sends_actions() && c.tx.is_some())
                    .map(move |c| (c.id, self_id))
            })
            .min()
            .map(|(_, self_id)| self_id.clone())
    }
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
