//! The one door for channels: a turn admitted to its chat's FIFO (`submit`), its reply on
//! the way (`PendingReply`), and the chat's worker that runs its turns one after another.

use super::turn_run::{turn_outcome, TurnRun};
use super::Kernel;
use crate::actor::Group;
use crate::scheduler::Admission;
use crate::turn::{Failure, Refusal, Reply, Turn};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::{error, warn};

pub(super) struct Job {
    pub(super) turn: Turn,
    /// Fires when the sender gives up on the turn (Ctrl-C in the terminal).
    pub(super) cancel: CancellationToken,
    pub(super) reply: oneshot::Sender<Reply>,
    /// Counted as waiting (`homebot_turns_waiting`) until it starts or is dropped.
    pub(super) queued: crate::metrics::Queued,
}

/// A reply on its way: refused at once, or waiting for the chat's worker.
pub enum PendingReply {
    Ready(Reply),
    Waiting(oneshot::Receiver<Reply>),
}

impl PendingReply {
    pub async fn reply(self) -> Reply {
        match self {
            PendingReply::Ready(r) => r,
            PendingReply::Waiting(rx) => rx.await.unwrap_or_else(|_| {
                Reply::failed(
                    "抱歉，处理这条消息时出错了。",
                    Failure::Internal,
                    "the turn's worker ended without a reply",
                )
            }),
        }
    }

    /// Whether this is an immediate refusal (queue full, shutting down) rather than a turn.
    pub fn is_refusal(&self) -> bool {
        matches!(self, PendingReply::Ready(r) if !r.is_answered())
    }
}

/// Admit a turn to its chat's FIFO now and start the chat's worker if it has none
/// ([`Kernel::submit_cancellable`]). Admission is checked and closed under the queue lock,
/// so a shutdown never misses a turn admitted at the same moment.
pub(super) fn enqueue(kernel: &Kernel, turn: Turn, cancel: CancellationToken) -> PendingReply {
    let inner = &kernel.inner;
    let key = turn.chat_key();
    let (tx, rx) = oneshot::channel();
    let mut queues = inner.queues.lock().expect("queue lock is never poisoned");
    if inner.lifecycle.tasks().is_closed(Group::Turn) {
        crate::metrics::turn_refused(&turn.channel);
        return PendingReply::Ready(Reply::refused(
            "homebot 正在关闭，请稍后再说。(homebot is shutting down)",
            Refusal::ShuttingDown,
            "shutting down",
        ));
    }
    match queues.admit(
        &key,
        Job {
            turn,
            cancel,
            reply: tx,
            queued: crate::metrics::Queued::new(),
        },
    ) {
        Ok(admission) => {
            if admission == Admission::StartWorker {
                let kernel = kernel.clone();
                (inner.lifecycle.tasks())
                    .spawn_in(Group::Turn, async move { chat_worker(kernel, key).await });
            }
            drop(queues);
            PendingReply::Waiting(rx)
        }
        Err(job) => {
            let waiting = queues.waiting(&key);
            drop(queues);
            warn!(chat = %key, waiting, "chat queue full; turn refused");
            crate::metrics::turn_refused(&job.turn.channel);
            drop(job);
            PendingReply::Ready(Reply::refused(
                format!("消息太多了：这个对话里还有 {waiting} 条在排队，请等我回完再发。"),
                Refusal::Busy,
                format!("chat queue full ({waiting} waiting)"),
            ))
        }
    }
}

/// The one worker of a chat: runs its turns strictly one after another.
async fn chat_worker(kernel: Kernel, key: String) {
    loop {
        let job = (kernel.inner.queues)
            .lock()
            .expect("queue lock is never poisoned")
            .next(&key);
        let Some(job) = job else { break };
        let this = kernel.clone();
        let counted = crate::metrics::turns_of(&job.turn.channel);
        let running = job.queued.start();
        let (turn, cancel) = (job.turn, job.cancel);
        // its own task: a panic in one turn becomes an error reply, not a dead chat
        let run = kernel
            .tasks()
            .spawn_turn(async move { TurnRun::new(&this, &turn, cancel).run().await });
        let reply = match run.await {
            Ok(r) => r,
            Err(e) => {
                error!(chat = %key, error = %e, "turn task failed");
                Reply::failed(
                    "抱歉，处理这条消息时出错了。",
                    Failure::Internal,
                    e.to_string(),
                )
            }
        };
        running.finish(&counted, turn_outcome(&reply));
        let _ = job.reply.send(reply);
    }
}
