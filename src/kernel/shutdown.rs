//! What a graceful shutdown waits for and stops, in order: the turns (`Group::Turn`: chat
//! workers and reply deliveries), the services (`Group::Service`: channel servers, the
//! control socket), the background tasks (`Group::Background`), then the actor threads.

use super::Kernel;
use crate::actor::Group;
use std::time::Duration;
use tracing::warn;

/// How long channel servers get to stop after they were cancelled.
const SERVICE_STOP: Duration = Duration::from_secs(5);

/// After the grace period, how long stopped turns get to record that they were stopped.
const STRAGGLER_RECORD: Duration = Duration::from_secs(3);

/// [`Kernel::shutdown_gracefully`]: admission closed under the queue lock, the turns
/// waited for (and stopped after `grace`), then the services, the background tasks, the
/// actors.
pub(super) async fn graceful(kernel: &Kernel, grace: Duration) -> bool {
    let inner = &kernel.inner;
    let tasks = kernel.tasks();
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
