//! [`Qq`], the handle to the QQ actor: what the connections, the delivery workers and
//! the kernel (through the outbound door) use. It hides the actor framework, and it
//! holds the waits the actor must not: for a connection to come up (up to
//! `reconnect_wait_secs`: NapCat restarts take a while), for an action's response (up
//! to `action_timeout_secs`), for an announcement to have gone out.

use super::action::Action;
use super::actor::{
    Announce, FirstAccount, ForgetAction, Found, OpenAction, QqActor, Refused, Route,
};
use super::delivery::Delivery;
use super::inbound::CHANNEL;
use super::rpc::{self, ActionError};
use super::target::Target;
use crate::actor::Unavailable;
use crate::channels::ctx::ChannelCtx;
use crate::config::QqConfig;
use crate::kernel::PendingReply;
use crate::outbound::{DeliveryError, Outbound};
use crate::turn::Reply;
use actix::prelude::*;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// The running QQ channel: the actor's address and what its users need to know.
#[derive(Clone)]
pub struct Qq {
    pub(super) addr: Addr<QqActor>,
    pub(super) cfg: Arc<QqConfig>,
    pub(super) ctx: ChannelCtx,
    /// Fires when the channel stops.
    pub(super) cancel: CancellationToken,
}

/// Why a wait for a connection ended without one.
enum NoConnection {
    /// Nothing came up within `reconnect_wait_secs`.
    TimedOut,
    /// The actor failed, or has stopped.
    Unavailable(Option<Unavailable>),
}

/// Tells the actor when a caller stops waiting for an action's response before it came
/// (a response that came took the waiter off the actor's list already: nothing to say).
struct Waiter<'a> {
    addr: &'a Addr<QqActor>,
    echo: Option<String>,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        if let Some(echo) = self.echo.take() {
            self.addr.do_send(ForgetAction(echo));
        }
    }
}

impl Qq {
    /// Ask the actor for something a connection gives; while there is none, wait (up to
    /// `reconnect_wait_secs`) for one to come up, and ask again.
    async fn when_connected<M, T>(&self, what: &str, ask: impl Fn() -> M) -> Result<T, NoConnection>
    where
        M: Message<Result = Result<Found<T>, Unavailable>> + Send + 'static,
        T: Send + 'static,
        QqActor: Handler<M>,
    {
        let deadline = Instant::now() + Duration::from_secs(self.cfg.reconnect_wait_secs);
        loop {
            let woken = match self.addr.send(ask()).await {
                Ok(Ok(Found::Now(t))) => return Ok(t),
                Ok(Ok(Found::Later(woken))) => woken,
                Ok(Err(e)) => return Err(NoConnection::Unavailable(Some(e))),
                Err(_) => return Err(NoConnection::Unavailable(None)),
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NoConnection::TimedOut);
            }
            info!(
                action = what,
                "qq: no connection; waiting for the implementation to reconnect"
            );
            let _ = tokio::time::timeout(left, woken).await;
        }
    }

    /// Call an action and wait for its response (matched by `echo`); returns its `data`.
    /// Waits up to `reconnect_wait_secs` for a connection if there is none.
    pub async fn call(&self, self_id: &str, action: Action) -> Result<Value, ActionError> {
        self.call_draining(self_id, action, None).await
    }

    /// [`Qq::call`], telling the actor on the way that the delivery queue of `drained`
    /// has no delivery left waiting (the same trip that opens the action).
    pub(super) async fn call_draining(
        &self,
        self_id: &str,
        action: Action,
        drained: Option<&str>,
    ) -> Result<Value, ActionError> {
        let name = action.name();
        let sends_message = action.sends_message();
        let echo = rpc::echo();
        // before asking: dropped at any await below, it takes the waiter back
        let mut waiter = Waiter {
            addr: &self.addr,
            echo: Some(echo.clone()),
        };
        let ask = || OpenAction {
            self_id: self_id.to_string(),
            echo: echo.clone(),
            sends_message,
            drained: drained.map(str::to_string),
        };
        let Route { tx, response } = match self.when_connected(name, ask).await {
            Ok(route) => route,
            Err(NoConnection::Unavailable(Some(e))) => return Err(e.into()),
            Err(_) => return Err(ActionError::NotConnected(self_id.to_string())),
        };
        if tx.send(rpc::frame(&action, &echo)).await.is_err() {
            return Err(ActionError::NotConnected(self_id.to_string()));
        }
        let secs = self.cfg.action_timeout_secs;
        match tokio::time::timeout(Duration::from_secs(secs), response).await {
            Ok(Ok(resp)) => {
                waiter.echo = None;
                rpc::outcome(name, resp)
            }
            _ => Err(ActionError::Timeout {
                action: name.into(),
                secs,
            }),
        }
    }
}

#[async_trait::async_trait]
impl Outbound for Qq {
    /// Send `text` to `group:<id>` or `private:<id>` through that target's queue (after
    /// the replies already waiting there), as the account connected first when several
    /// are (a household runs one). With none connected it waits `reconnect_wait_secs`
    /// for one. The allowlists govern who may reach the bot, not where the household
    /// sends: any group or person the account can reach is a target.
    async fn deliver(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        let parsed = Target::parse(target).map_err(|why| DeliveryError::BadTarget {
            channel: CHANNEL.into(),
            target: target.into(),
            why: why.to_string(),
        })?;
        let shown = format!("{CHANNEL}:{target}");
        if text.trim().is_empty() {
            return Err(DeliveryError::Failed {
                target: shown,
                why: "nothing to say".into(),
            });
        }
        let self_id = match self.when_connected("announce", || FirstAccount).await {
            Ok(self_id) => self_id,
            Err(NoConnection::TimedOut) => {
                return Err(DeliveryError::Unreachable(format!(
                    "{CHANNEL} (no QQ account connected)"
                )))
            }
            Err(NoConnection::Unavailable(e)) => {
                return Err(DeliveryError::Failed {
                    target: shown,
                    why: e.map_or("the QQ channel has stopped".into(), |e| e.to_string()),
                })
            }
        };
        let (done, result) = oneshot::channel();
        let job = Delivery {
            self_id,
            target: parsed.clone(),
            reply: PendingReply::Ready(Reply::ok(text)),
            done: Some(done),
            _guard: self.ctx.tasks().guard(crate::actor::Group::Turn),
        };
        match self
            .addr
            .send(Announce {
                target: parsed,
                job,
            })
            .await
        {
            Ok(Ok(())) => {}
            Ok(Err(Refused::Full)) => return Err(DeliveryError::Busy(shown)),
            Ok(Err(Refused::Unavailable(e))) => {
                return Err(DeliveryError::Failed {
                    target: shown,
                    why: e.to_string(),
                })
            }
            Err(_) => {
                return Err(DeliveryError::Failed {
                    target: shown,
                    why: "the QQ channel has stopped".into(),
                })
            }
        }
        match result.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(ActionError::NotConnected(account))) => {
                Err(DeliveryError::Unreachable(format!("QQ account {account}")))
            }
            Ok(Err(e)) => Err(DeliveryError::Failed {
                target: shown,
                why: e.to_string(),
            }),
            Err(_) => Err(DeliveryError::Failed {
                target: shown,
                why: "the delivery queue stopped".into(),
            }),
        }
    }
}
