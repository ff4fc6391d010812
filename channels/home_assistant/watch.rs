//! Watches (`[[home_assistant.watch]]`): a state change Home Assistant reports through
//! `subscribe_trigger` becomes a message, delivered through the named channel's outbound
//! door with the retry rules of reminders ([`crate::cron::deliver`]: backoff, the
//! channel's "later" target, give up after ten minutes). At most [`QUEUE`] fired watches
//! wait, and [`MAX_DELIVERING`] are delivered at once; past either, one is dropped and
//! logged rather than piling up behind a flapping sensor.

use crate::channels::ctx::ChannelCtx;
use crate::config::HaWatch;
use std::sync::Arc;
use tokio::sync::{mpsc, Semaphore};
use tracing::{info, warn};

/// Fired watches waiting for the delivery task.
pub const QUEUE: usize = 16;
/// Watch messages being delivered (and retried) at once.
pub const MAX_DELIVERING: usize = 8;

/// Deliver fired watches until the channel's token fires.
pub async fn deliver(mut rx: mpsc::Receiver<HaWatch>, ctx: ChannelCtx) {
    let cancel = ctx.cancel().clone();
    let slots = Arc::new(Semaphore::new(MAX_DELIVERING));
    loop {
        let w = tokio::select! {
            _ = cancel.cancelled() => return,
            w = rx.recv() => match w {
                Some(w) => w,
                None => return,
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            warn!(entity = %w.entity_id, "too many watch messages are being delivered; this one is dropped");
            continue;
        };
        let (ctx2, cancel) = (ctx.clone(), cancel.clone());
        ctx.tasks().spawn(async move {
            let ctx = ctx2;
            let _slot = slot;
            let origin = crate::reminders::Origin {
                channel: w.channel.clone(),
                chat_id: w.target.clone(),
                speaker_id: "home_assistant".into(),
                target: w.target.clone(),
            };
            let retry = crate::cron::RetryPolicy::default();
            tokio::select! {
                _ = cancel.cancelled() => {}
                r = ctx.deliver_to(&origin, &w.message, retry) => match r {
                    Ok(()) => info!(entity = %w.entity_id, channel = %w.channel, target = %w.target, "watch message delivered"),
                    Err(e) => warn!(entity = %w.entity_id, channel = %w.channel, target = %w.target, error = %e, "watch message not delivered"),
                },
            }
        });
    }
}
