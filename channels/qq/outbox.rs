//! A target's delivery worker, the sending side of `delivery`: one delivery at a time,
//! in order, each completely (all its parts) before the next; markdown flattened, long
//! text split, sends to the target spaced out by `send_interval_ms`; in groups the first
//! part quotes the message and @s its sender. The QQ actor starts one per open queue, on
//! the gateway's runtime; it retires after [`DELIVERY_IDLE`] without deliveries.

use super::action::Action;
use super::actor::{Drained, Retire};
use super::delivery::NewQueue;
use super::handle::Qq;
use super::message::OutSegment;
use super::rpc::ActionError;
use super::target::Target;
use std::time::Duration;
use tokio::time::Instant;
use tracing::warn;

/// A target's delivery queue retires after this long without deliveries.
const DELIVERY_IDLE: Duration = Duration::from_secs(300);

/// Work through one target's queue until the actor closes it.
pub(super) async fn run_queue(qq: Qq, queue: NewQueue) {
    let NewQueue { key, id, mut rx } = queue;
    let mut throttle = Throttle::new(Duration::from_millis(qq.cfg.send_interval_ms));
    loop {
        match tokio::time::timeout(DELIVERY_IDLE, rx.recv()).await {
            Ok(Some(d)) => {
                let reply = d.reply.reply().await;
                // the last accepted message is answered: a burst of refusals is over, and
                // the next refusal starts a new one (marked by the trip that opens the
                // first part's send, before it goes out, so a peer that sees this reply
                // can rely on it)
                let drained = rx.is_empty().then_some(key.as_str());
                let result = send_text(
                    &qq,
                    &mut throttle,
                    (&d.self_id, &d.target),
                    &reply.text,
                    drained,
                )
                .await;
                if let Err(e) = &result {
                    warn!(self_id = %d.self_id, target = %key, error = %e, "qq: reply undeliverable");
                }
                if let Some(done) = d.done {
                    let _ = done.send(result);
                }
            }
            // the actor closed the queue (or stopped): nothing more comes
            Ok(None) => return,
            Err(_) => {
                // idle: the actor closes the queue unless a delivery slipped in; either
                // way the next receive tells
                if qq
                    .addr
                    .send(Retire {
                        key: key.clone(),
                        queue: id,
                    })
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Spaces out the sends to one target.
struct Throttle {
    gap: Duration,
    next: Option<Instant>,
}

impl Throttle {
    fn new(gap: Duration) -> Self {
        Self { gap, next: None }
    }

    async fn wait(&mut self) {
        let slot = self.slot(Instant::now());
        tokio::time::sleep_until(slot).await;
    }

    /// When a send asked for at `now` may go out (and the next one is due after it).
    fn slot(&mut self, now: Instant) -> Instant {
        let slot = self.next.filter(|t| *t > now).unwrap_or(now);
        self.next = Some(slot + self.gap);
        slot
    }
}

/// Send text: flattened, split, throttled; in groups quoting and @-ing (first part).
/// `drained` (the queue has nothing more waiting) goes with the first part's trip to the
/// actor, or on its own when there is no part to send.
async fn send_text(
    qq: &Qq,
    throttle: &mut Throttle,
    (self_id, target): (&str, &Target),
    text: &str,
    mut drained: Option<&str>,
) -> Result<(), ActionError> {
    let flat = crate::channels::text::flatten_markdown(text);
    let parts = crate::channels::text::split_reply(&flat, qq.cfg.max_reply_chars);
    for (i, part) in parts.iter().enumerate() {
        let action = match target {
            Target::Group {
                group_id,
                reply_to,
                mention,
            } => {
                let mut message = Vec::new();
                let first = i == 0;
                if let Some(id) = reply_to.as_ref().filter(|_| first) {
                    message.push(OutSegment::Reply { id: id.clone() });
                }
                match mention.as_ref().filter(|_| first) {
                    Some(user) => {
                        message.push(OutSegment::At { qq: user.clone() });
                        message.push(OutSegment::text(format!(" {part}")));
                    }
                    None => message.push(OutSegment::text(part.as_str())),
                }
                Action::SendGroupMsg {
                    group_id: group_id.clone(),
                    message,
                }
            }
            Target::Private { user_id } => Action::SendPrivateMsg {
                user_id: user_id.clone(),
                message: vec![OutSegment::text(part.as_str())],
            },
        };
        throttle.wait().await;
        // the message id of what was sent is remembered by the actor, with the response
        qq.call_draining(self_id, action, drained.take()).await?;
    }
    if let Some(key) = drained {
        let _ = qq.addr.send(Drained(key.to_string())).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_are_spaced_out_by_the_gap() {
        let gap = Duration::from_millis(500);
        let mut t = Throttle::new(gap);
        let start = Instant::now();
        assert_eq!(t.slot(start), start, "the first goes at once");
        assert_eq!(t.slot(start), start + gap);
        assert_eq!(t.slot(start + gap / 2), start + gap * 2, "in order, spaced");
        let later = start + Duration::from_secs(5);
        assert_eq!(t.slot(later), later, "a passed slot is not waited for");
    }
}
