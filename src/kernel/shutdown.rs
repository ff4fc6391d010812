//! What a graceful shutdown waits for and stops: the channel servers (`spawn_service`),
//! the reply deliveries (`DeliveryGuard`), then the background tasks and the actor threads.

use super::Kernel;
use crate::actor::Lifecycle;
use std::future::Future;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tracing::warn;

/// How long channel servers get to stop after they were cancelled.
const SERVICE_STOP: Duration = Duration::from_secs(5);

/// After the grace period, how long stopped turns get to record that they were stopped.
const STRAGGLER_RECORD: Duration = Duration::from_secs(3);

/// Held by a channel while it delivers a reply; a graceful shutdown waits for it.
pub struct DeliveryGuard(#[allow(dead_code)] TaskTrackerToken);

impl Kernel {
    /// Fires when channel servers must stop (after admitted turns finished, or the grace
    /// period passed). Channels take a child of it.
    pub fn cancel_token(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    /// Where actor threads are started and background tasks spawned so that the
    /// shutdown stops, cancels and joins them (channels start their actors here).
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.inner.lifecycle
    }

    /// Run a channel server (or the control socket) as a tracked task: a graceful
    /// shutdown cancels it and waits (briefly) for it to finish.
    pub fn spawn_service<F>(&self, fut: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.inner.services.spawn(fut)
    }

    /// Graceful stop: admit nothing new, let admitted turns finish, record and be
    /// delivered (up to `grace`), then stop the channel servers and the actors. Returns
    /// whether everything finished in time.
    pub async fn shutdown_gracefully(&self, grace: Duration) -> bool {
        let inner = &self.inner;
        {
            let _queues = inner.queues.lock().expect("queue lock is never poisoned");
            inner.turns.close();
        }
        let clean = tokio::time::timeout(grace, inner.turns.wait())
            .await
            .is_ok();
        if !clean {
            warn!(
                tasks = inner.turns.len(),
                "shutdown deadline passed with turns still running; stopping them"
            );
            // they stop where they are, reply that, and are recorded as interrupted
            inner.stragglers.cancel();
            if tokio::time::timeout(STRAGGLER_RECORD, inner.turns.wait())
                .await
                .is_err()
            {
                warn!(tasks = inner.turns.len(), "turns did not stop in time");
            }
        }
        // the last turns' observations reach the database before the process ends, and
        // it is closed
        let _ = tokio::time::timeout(SERVICE_STOP, inner.agent.memory.close()).await;
        inner.cancel.cancel();
        inner.services.close();
        if tokio::time::timeout(SERVICE_STOP, inner.services.wait())
            .await
            .is_err()
        {
            warn!(
                services = inner.services.len(),
                "channel servers did not stop in time"
            );
        }
        // compactions, reminder deliveries, listen-agains: cancelled where they are
        if !inner.lifecycle.tasks().shutdown(SERVICE_STOP).await {
            warn!(
                tasks = inner.lifecycle.tasks().len(),
                "background tasks did not stop in time"
            );
        }
        // the usage and audit lines of the last calls reach the disk before the exit
        inner.agent.provider.flush().await;
        inner.lifecycle.join_threads(SERVICE_STOP).await;
        clean
    }

    /// Deliver a reply in a task of its own, counted with the turns: a graceful shutdown
    /// waits for it as for a turn.
    pub fn spawn_delivery<F>(&self, fut: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.inner.turns.spawn(fut)
    }

    /// Count a reply delivery in progress until the guard is dropped.
    pub fn hold_delivery(&self) -> DeliveryGuard {
        DeliveryGuard(self.inner.turns.token())
    }

    /// Whether new turns are admitted (false once a shutdown has begun).
    pub fn is_admitting(&self) -> bool {
        !self.inner.turns.is_closed()
    }

    /// Turns (chat workers) and deliveries still running.
    pub fn pending_turns(&self) -> usize {
        self.inner.turns.len()
    }

    /// Stop the actor threads. In-flight calls to the ModeManager fail after this.
    pub fn shutdown(&self) {
        self.inner.lifecycle.stop_threads();
    }
}
