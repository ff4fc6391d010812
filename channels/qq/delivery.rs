//! Getting text to a group or a person: one ordered delivery queue per target, so
//! replies go out in arrival order, each completely (all its parts) before the next;
//! markdown flattened, long text split, sends to one target spaced out by
//! `send_interval_ms`; in groups the first part quotes the message and @s its sender.
//!
//! Bounded: a target's queue holds at most [`queue_cap`] deliveries (when full, a reply
//! is dropped with a warning, an announcement refused as busy), and a chat gets one
//! "please wait" refusal per burst ([`RefusalLimiter`]) — a flood of messages into a
//! full chat queue must not turn into minutes of refusals. A queue retires after
//! [`DELIVERY_IDLE`].
//!
//! Fed by message events (`events`) and by the outbound door ([`Outbound`] for [`Qq`]:
//! `homebot announce --channel qq --to group:<id>`, the Cron).

use super::events::Sent;
use super::id::Id;
use super::message::Segment;
use super::rpc::ActionError;
use super::{Qq, CHANNEL};
use crate::kernel::{DeliveryGuard, PendingReply};
use crate::outbound::{DeliveryError, Outbound};
use crate::turn::Reply;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

/// A target's delivery queue retires after this long without deliveries.
const DELIVERY_IDLE: Duration = Duration::from_secs(300);
/// Message ids of the bot's own messages remembered per account.
const SENT_IDS_KEPT: usize = 512;
/// Room for announcements beside the replies.
const OUTBOUND_ROOM: usize = 4;

/// How many deliveries may wait in one target's queue: the chat's turns the kernel admits
/// (`max_queued_per_chat` waiting plus one running), twice over for answered turns whose
/// replies still wait for the throttle, plus the refusal and some announcements.
pub fn queue_cap(max_queued_per_chat: usize) -> usize {
    (max_queued_per_chat + 1) * 2 + 1 + OUTBOUND_ROOM
}

/// Where a delivery goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Group {
        group_id: Id,
        /// The message to quote (first part only).
        reply_to: Option<Id>,
        /// Who to @ (first part only).
        mention: Option<Id>,
    },
    Private {
        user_id: Id,
    },
}

impl Target {
    /// The chat key: `group:<id>` or `private:<id>`.
    pub fn key(&self) -> String {
        match self {
            Target::Group { group_id, .. } => format!("group:{group_id}"),
            Target::Private { user_id } => format!("private:{user_id}"),
        }
    }

    /// An outbound door's target: `group:<id>`, `group:<id>@<qq>` (that member is @-ed,
    /// as a reminder to the one who set it) or `private:<id>`, ids QQ numbers.
    pub fn parse(s: &str) -> Result<Self, String> {
        let (kind, rest) = s
            .split_once(':')
            .ok_or("expected group:<id>, group:<id>@<qq> or private:<id>")?;
        let number = |id: &str| -> Result<Id, String> {
            if id.is_empty() || id.len() > 20 || !id.bytes().all(|b| b.is_ascii_digit()) {
                return Err("the id must be a QQ number (1 to 20 digits)".into());
            }
            Id::new(id).map_err(|e| e.to_string())
        };
        match kind {
            "group" => {
                let (group, mention) = match rest.split_once('@') {
                    Some((g, who)) => (g, Some(number(who)?)),
                    None => (rest, None),
                };
                Ok(Target::Group {
                    group_id: number(group)?,
                    reply_to: None,
                    mention,
                })
            }
            "private" => Ok(Target::Private {
                user_id: number(rest)?,
            }),
            _ => Err("expected group:<id>, group:<id>@<qq> or private:<id>".into()),
        }
    }

    /// Where a proactive message for this chat goes later (a reminder): the group with
    /// the asker @-ed, or the private chat.
    pub fn outbound(&self) -> String {
        match self {
            Target::Group {
                group_id,
                mention: Some(user),
                ..
            } => format!("group:{group_id}@{user}"),
            other => other.key(),
        }
    }
}

pub struct Delivery {
    self_id: String,
    target: Target,
    reply: PendingReply,
    /// Told how it went (the outbound door waits for it).
    done: Option<oneshot::Sender<Result<(), ActionError>>>,
    /// Keeps a graceful shutdown waiting until this has gone out.
    _guard: DeliveryGuard,
}

/// One "please wait" refusal per burst. A burst starts with a chat's first refused
/// message, which gets the refusal; the chat's later refused messages get none, until its
/// delivery queue drains (the reply to every message it accepted has been taken up for
/// sending, the refusal included); the next refused message starts a new burst. A
/// sustained flood that never lets the queue drain gets one refusal in all.
#[derive(Default)]
pub struct RefusalLimiter {
    /// Chats refused in their current burst. A chat leaves when its queue drains, and it
    /// has one while it is here (the refusal itself is a delivery): bounded by the queues.
    refused: HashSet<String>,
}

impl RefusalLimiter {
    /// Whether `chat` may get a refusal now (if so, its burst counts as refused).
    pub fn allow(&mut self, chat: &str) -> bool {
        if self.refused.contains(chat) {
            return false;
        }
        self.refused.insert(chat.to_string());
        true
    }

    /// `chat`'s delivery queue drained: its burst, if any, is over.
    pub fn drained(&mut self, chat: &str) {
        self.refused.remove(chat);
    }
}

/// Why a delivery did not join its queue.
#[derive(Debug)]
struct QueueFull;

impl Qq {
    /// Queue the reply to a message (refusals limited to one per burst).
    pub(super) fn enqueue_reply(&self, self_id: &str, target: Target, reply: PendingReply) {
        let key = target.key();
        if reply.is_refusal() {
            let allowed = self
                .shared
                .refusals
                .lock()
                .expect("refusals lock is never poisoned")
                .allow(&key);
            if !allowed {
                debug!(self_id, target = %key, "qq: refusal dropped (one per burst)");
                return;
            }
        }
        let job = Delivery {
            self_id: self_id.to_string(),
            target,
            reply,
            done: None,
            _guard: self.shared.kernel.hold_delivery(),
        };
        if self.enqueue(key.clone(), job).is_err() {
            warn!(self_id, target = %key, "qq: delivery queue full; reply dropped");
        }
    }

    /// Put a delivery on its target's queue, starting the queue's worker if needed.
    fn enqueue(&self, key: String, job: Delivery) -> Result<(), QueueFull> {
        let mut queues = self
            .shared
            .deliveries
            .lock()
            .expect("deliveries lock is never poisoned");
        let job = match queues.get(&key) {
            Some(tx) => match tx.try_send(job) {
                Ok(()) => return Ok(()),
                Err(mpsc::error::TrySendError::Full(_)) => return Err(QueueFull),
                // its worker retired: start a new one
                Err(mpsc::error::TrySendError::Closed(job)) => job,
            },
            None => job,
        };
        let cap = queue_cap(self.shared.kernel.config().agent.max_queued_per_chat);
        let (tx, rx) = mpsc::channel::<Delivery>(cap);
        tx.try_send(job)
            .expect("a new queue has room: its capacity is at least one");
        queues.insert(key.clone(), tx.clone());
        let this = self.clone();
        tokio::spawn(async move { this.run_queue(key, tx, rx).await });
        Ok(())
    }

    /// A target's worker: one delivery at a time, in order.
    async fn run_queue(
        self,
        key: String,
        tx: mpsc::Sender<Delivery>,
        mut rx: mpsc::Receiver<Delivery>,
    ) {
        loop {
            match tokio::time::timeout(DELIVERY_IDLE, rx.recv()).await {
                Ok(Some(d)) => {
                    let reply = d.reply.reply().await;
                    if rx.is_empty() {
                        // the last accepted message is answered: a burst of refusals is
                        // over, and the next refusal starts a new one (marked before the
                        // send, so a peer that sees this reply can rely on it)
                        self.shared
                            .refusals
                            .lock()
                            .expect("refusals lock is never poisoned")
                            .drained(&key);
                    }
                    let result = self.send_text(&d.self_id, &d.target, &reply.text).await;
                    if let Err(e) = &result {
                        warn!(self_id = %d.self_id, target = %key, error = %e, "qq: reply undeliverable");
                    }
                    if let Some(done) = d.done {
                        let _ = done.send(result);
                    }
                }
                Ok(None) => return,
                Err(_) => {
                    // idle: retire this queue, unless a job slipped in meanwhile
                    // (enqueueing holds the same lock)
                    let mut queues = self
                        .shared
                        .deliveries
                        .lock()
                        .expect("deliveries lock is never poisoned");
                    if rx.is_empty() {
                        if queues.get(&key).is_some_and(|t| t.same_channel(&tx)) {
                            queues.remove(&key);
                        }
                        return;
                    }
                }
            }
        }
    }

    /// Send text: flattened, split, throttled; in groups quoting and @-ing (first part).
    async fn send_text(
        &self,
        self_id: &str,
        target: &Target,
        text: &str,
    ) -> Result<(), ActionError> {
        let flat = crate::channels::text::flatten_markdown(text);
        let parts = crate::channels::text::split_reply(&flat, self.shared.cfg.max_reply_chars);
        let key = target.key();
        for (i, part) in parts.iter().enumerate() {
            let (action, params) = match target {
                Target::Group {
                    group_id,
                    reply_to,
                    mention,
                } => {
                    let mut segs: Vec<Value> = Vec::new();
                    let first = i == 0;
                    if let Some(id) = reply_to.as_ref().filter(|_| first) {
                        segs.push(json!({"type": "reply", "data": {"id": id.as_str()}}));
                    }
                    match mention.as_ref().filter(|_| first) {
                        Some(user) => {
                            segs.push(json!({"type": "at", "data": {"qq": user.as_str()}}));
                            segs.push(Segment::text(&format!(" {part}")).to_json());
                        }
                        None => segs.push(Segment::text(part).to_json()),
                    }
                    (
                        "send_group_msg",
                        json!({"group_id": group_id.to_json(), "message": segs}),
                    )
                }
                Target::Private { user_id } => (
                    "send_private_msg",
                    json!({"user_id": user_id.to_json(), "message": [Segment::text(part).to_json()]}),
                ),
            };
            self.throttle(&key).await;
            let data = self.call(self_id, action, params).await?;
            match serde_json::from_value::<Option<Sent>>(data) {
                Ok(Some(Sent {
                    message_id: Some(id),
                })) => self.remember_sent(self_id, id),
                Ok(_) => {}
                Err(e) => {
                    debug!(self_id, error = %e, "qq: send response without a usable message id")
                }
            }
        }
        Ok(())
    }

    /// Space out sends to one target by `send_interval_ms`.
    async fn throttle(&self, key: &str) {
        let gap = Duration::from_millis(self.shared.cfg.send_interval_ms);
        let wait_until = {
            let mut next = self
                .shared
                .next_send
                .lock()
                .expect("throttle lock is never poisoned");
            let now = Instant::now();
            // forget targets whose slot passed: the map holds only busy targets
            next.retain(|_, t| *t > now);
            let slot = next.get(key).copied().unwrap_or(now);
            next.insert(key.to_string(), slot + gap);
            slot
        };
        tokio::time::sleep_until(wait_until.into()).await;
    }

    pub(super) fn is_bot_message(&self, self_id: &str, id: &Id) -> bool {
        let bots = self
            .shared
            .bots
            .lock()
            .expect("bots lock is never poisoned");
        bots.get(self_id).is_some_and(|b| b.sent_set.contains(id))
    }

    fn remember_sent(&self, self_id: &str, id: Id) {
        let mut bots = self
            .shared
            .bots
            .lock()
            .expect("bots lock is never poisoned");
        let bot = bots.entry(self_id.to_string()).or_default();
        if bot.sent_set.insert(id.clone()) {
            bot.sent.push_back(id);
            if bot.sent.len() > SENT_IDS_KEPT {
                if let Some(old) = bot.sent.pop_front() {
                    bot.sent_set.remove(&old);
                }
            }
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
            why,
        })?;
        let shown = format!("{CHANNEL}:{target}");
        if text.trim().is_empty() {
            return Err(DeliveryError::Failed {
                target: shown,
                why: "nothing to say".into(),
            });
        }
        let Some(self_id) = self
            .wait_for_connection("announce", || self.first_account())
            .await
        else {
            return Err(DeliveryError::Unreachable(format!(
                "{CHANNEL} (no QQ account connected)"
            )));
        };
        let key = parsed.key();
        let (done, result) = oneshot::channel();
        let job = Delivery {
            self_id,
            target: parsed,
            reply: PendingReply::Ready(Reply::ok(text)),
            done: Some(done),
            _guard: self.shared.kernel.hold_delivery(),
        };
        self.enqueue(key, job)
            .map_err(|QueueFull| DeliveryError::Busy(shown.clone()))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn door_targets() {
        assert_eq!(
            Target::parse("group:5550001").unwrap(),
            Target::Group {
                group_id: Id::new("5550001").unwrap(),
                reply_to: None,
                mention: None
            }
        );
        assert_eq!(
            Target::parse("private:10001").unwrap().key(),
            "private:10001"
        );
        let asked = Target::parse("group:5550001@10001").unwrap();
        assert_eq!(
            asked,
            Target::Group {
                group_id: Id::new("5550001").unwrap(),
                reply_to: None,
                mention: Some(Id::new("10001").unwrap())
            }
        );
        assert_eq!(asked.outbound(), "group:5550001@10001");
        assert_eq!(asked.key(), "group:5550001");
        for bad in [
            "group:5550001@",
            "group:5550001@x",
            "private:1@2",
            "5550001",
            "group:",
            "group:abc",
            "group:-1",
            "channel:1",
            "group:1:2",
            &format!("group:{}", "9".repeat(21)),
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn one_refusal_per_chat_per_burst() {
        let mut l = RefusalLimiter::default();
        assert!(l.allow("group:1"));
        assert!(!l.allow("group:1"));
        assert!(l.allow("group:2"), "per chat");
        l.drained("group:2");
        assert!(
            !l.allow("group:1"),
            "another chat's drain ends nothing here"
        );
        l.drained("group:1");
        assert!(l.allow("group:1"), "a new burst after the drain");
        assert!(!l.allow("group:1"));
        // drained chats are forgotten
        l.drained("group:1");
        l.drained("group:2");
        assert!(l.refused.is_empty());
    }
}
