//! Ringing a reminder (or a watched home event): through the outbound door of the
//! channel that set it, retried with backoff until the policy gives up.

use crate::outbound::{DeliveryError, Doors};
use crate::reminders::Origin;
use std::time::Duration;
use tracing::info;

/// How deliveries are retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Give up (mark undelivered) after this long.
    pub give_up_after: Duration,
    pub first_wait: Duration,
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            give_up_after: Duration::from_secs(600),
            first_wait: Duration::from_secs(5),
            max_wait: Duration::from_secs(60),
        }
    }
}

/// Deliver through the origin's channel door, retrying with backoff until the policy
/// gives up.
pub async fn deliver(
    doors: &Doors,
    origin: &Origin,
    message: &str,
    retry: RetryPolicy,
) -> Result<(), DeliveryError> {
    let started = tokio::time::Instant::now();
    let mut wait = retry.first_wait;
    loop {
        // one attempt may wait (a QQ reconnect, a voice front end's next turn), but never
        // past the whole budget
        let left = retry.give_up_after.saturating_sub(started.elapsed());
        let attempt = tokio::time::timeout(
            left,
            doors.deliver_or_later(&origin.channel, &origin.target, message),
        )
        .await
        .unwrap_or_else(|_| {
            Err(DeliveryError::Failed {
                target: origin.target.clone(),
                why: format!("not delivered within {} s", retry.give_up_after.as_secs()),
            })
        });
        match attempt {
            Ok(()) => return Ok(()),
            Err(e) => {
                if started.elapsed() + wait > retry.give_up_after {
                    return Err(e);
                }
                info!(channel = %origin.channel, target = %origin.target, error = %e, retry_secs = wait.as_secs(), "reminder not delivered yet; retrying");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(retry.max_wait);
            }
        }
    }
}
