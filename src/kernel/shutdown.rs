//! What a graceful shutdown waits for and stops, in order: the turns (`Group::Turn`: chat
//! workers and reply deliveries), the services (`Group::Service`: channel servers, the
//! control socket), the background tasks (`Group::Background`), then the actor threads.

use super::Kernel;
use crate::actor::{Group, Lifecycle, Tasks};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How long channel servers get to stop after they were cancelled.
const SERVICE_STOP: Duration = Duration::from_secs(5);

/// After the grace period, how long stopped turns get to record that they were stopped.
const STRAGGLER_RECORD: Duration = Duration::from_secs(3);

impl Kernel {
    /// Fires when channel servers must stop (after admitted turns finished, or the grace
    /// period passed): [`Group::Service`]'s token. Channels take a child of it.
    pub fn cancel_token(&self) -> CancellationToken {
        self.tasks().token(Group::Service)
    }

    /// Where actor threads are started (channels start their actors here); its
    /// [`Tasks`] are [`Kernel::tasks`].
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.inner.lifecycle
    }

    /// Every task of the gateway, by group: a turn's delivery
    /// (`spawn_in(Group::Turn, …)`, or `guard(Group::Turn)` while a connection sends a
    /// reply itself), a channel server (`Group::Service`), background work (`spawn`).
    /// The graceful shutdown drains them in that order.
    pub fn tasks(&self) -> &Tasks {
        self.inner.lifecycle.tasks()
    }

    /// Graceful stop: admit nothing new, let admitted turns finish, record and be
    /// delivered (up to `grace`), then stop the channel servers, the background tasks and
    /// the actors. Returns whether everything finished in time.
    pub async fn shutdown_gracefully(&self, grace: Duration) -> bool {
        let inner = &self.inner;
        let tasks = self.tasks();
        {
            let _queues = inner.queues.lock().expect("queue lock is never poisoned");
            tasks.close(Group::Turn);
        }
        let clean = tasks.wait(Group::Turn, grace).await;
        if !clean {
            warn!(
                tasks = tasks.len(Group::Turn),
                "shutdown deadline passed with turns still running; stopping them"
            );
            // they stop where they are, reply that, and are recorded as interrupted
            if !tasks.stop(Group::Turn, STRAGGLER_RECORD).await {
                warn!(tasks = tasks.len(Group::Turn), "turns did not stop in time");
            }
        }
        // the last turns' observations reach the database before the process ends, and
        // it is closed
        let _ = tokio::time::timeout(SERVICE_STOP, inner.agent.memory.close()).await;
        if !tasks.stop(Group::Service, SERVICE_STOP).await {
            warn!(
                services = tasks.len(Group::Service),
                "channel servers did not stop in time"
            );
        }
        // compactions, reminder deliveries, listen-agains: cancelled where they are
        if !tasks.stop(Group::Background, SERVICE_STOP).await {
            warn!(
                tasks = tasks.len(Group::Background),
                "background tasks did not stop in time"
            );
        }
        // the usage and audit lines of the last calls reach the disk before the exit
        inner.agent.provider.flush().await;
        inner.lifecycle.join_threads(SERVICE_STOP).await;
        clean
    }

    /// Whether new turns are admitted (false once a shutdown has begun).
    pub fn is_admitting(&self) -> bool {
        !self.tasks().is_closed(Group::Turn)
    }

    /// Turns (chat workers) and deliveries still running.
    pub fn pending_turns(&self) -> usize {
        self.tasks().len(Group::Turn)
    }

    /// Stop the actor threads. In-flight calls to the ModeManager fail after this.
    pub fn shutdown(&self) {
        self.inner.lifecycle.stop_threads();
    }
}
