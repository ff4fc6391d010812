//! [`Tasks`]: every task the gateway runs besides the actors, in three named groups a
//! graceful shutdown drains in order ([`Group`]): the turns (chat workers and reply
//! deliveries), the services (channel servers, the control socket, the summarizer), then
//! the background (compactions, reminder deliveries, the listen-again after a question,
//! fired Home Assistant watches, the heap trim). Each group is a tracker and a token
//! that fires when the group must stop. Cheap to clone; a handle that holds one keeps no
//! thread alive.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tokio_util::task::TaskTracker;

/// A group of tasks, in the order the shutdown drains them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Chat workers and reply deliveries. Closing the group stops admission; the shutdown
    /// waits for them up to its grace period, then fires the group's token: the turns
    /// still running stop where they are and record that.
    Turn,
    /// Channel servers, the control socket, the summarizer: each watches the group's token
    /// ([`Tasks::token`]) and stops serving gracefully when it fires; waited for briefly.
    Service,
    /// Everything else: cancelled where it is when the group's token fires, then waited
    /// for briefly.
    Background,
}

/// Held while something of `group` runs outside a spawned task (a reply being sent on a
/// connection's own task): the group's drain waits for it.
pub struct TaskGuard(#[allow(dead_code)] TaskTrackerToken);

#[derive(Default)]
struct Set {
    tracker: TaskTracker,
    token: CancellationToken,
}

/// Every task, by [`Group`].
#[derive(Clone, Default)]
pub struct Tasks(Arc<[Set; 3]>);

impl Tasks {
    fn set(&self, group: Group) -> &Set {
        &self.0[group as usize]
    }

    /// Run a background task on the current runtime until it ends or the shutdown
    /// cancels it.
    pub fn spawn<F>(&self, fut: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.spawn_in(Group::Background, fut)
    }

    /// [`Tasks::spawn`] on `runtime` (from a thread that has none, or another one).
    pub fn spawn_on<F>(
        &self,
        runtime: &tokio::runtime::Handle,
        fut: F,
    ) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let set = self.set(Group::Background);
        set.tracker.spawn_on(cancellable(&set.token, fut), runtime)
    }

    /// Run `fut` on the current runtime as a task of `group`: a background task is
    /// cancelled where it is when its group stops; a turn or a service ends by itself
    /// (it watches its group's [`Tasks::token`]).
    pub fn spawn_in<F>(&self, group: Group, fut: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let set = self.set(group);
        match group {
            Group::Background => set.tracker.spawn(cancellable(&set.token, fut)),
            Group::Turn | Group::Service => set.tracker.spawn(fut),
        }
    }

    /// A turn's own task, whose answer its caller awaits ([`Group::Turn`]).
    pub fn spawn_turn<F, T>(&self, fut: F) -> tokio::task::JoinHandle<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.set(Group::Turn).tracker.spawn(fut)
    }

    /// Count work of `group` in progress until the guard is dropped.
    pub fn guard(&self, group: Group) -> TaskGuard {
        TaskGuard(self.set(group).tracker.token())
    }

    /// Fires when `group` must stop.
    pub fn token(&self, group: Group) -> CancellationToken {
        self.set(group).token.clone()
    }

    /// Whether `group` admits nothing new (its drain has begun).
    pub fn is_closed(&self, group: Group) -> bool {
        self.set(group).tracker.is_closed()
    }

    /// Admit nothing new to `group` (tasks spawned afterwards still run and are waited
    /// for; [`Group::Turn`]'s admission checks [`Tasks::is_closed`]).
    pub fn close(&self, group: Group) {
        self.set(group).tracker.close();
    }

    /// Tasks of `group` still running (and guards held).
    pub fn len(&self, group: Group) -> usize {
        self.set(group).tracker.len()
    }

    /// Wait at most `within` until every task of `group` has ended: whether they did.
    pub async fn wait(&self, group: Group, within: Duration) -> bool {
        tokio::time::timeout(within, self.set(group).tracker.wait())
            .await
            .is_ok()
    }

    /// Fire `group`'s token, close it and wait at most `within`: whether it drained.
    pub async fn stop(&self, group: Group, within: Duration) -> bool {
        let set = self.set(group);
        set.token.cancel();
        set.tracker.close();
        self.wait(group, within).await
    }

    /// Fire every group's token (the kernel dropped without a graceful shutdown).
    pub fn cancel_all(&self) {
        for set in self.0.iter() {
            set.token.cancel();
        }
    }
}

fn cancellable<F: Future<Output = ()>>(
    token: &CancellationToken,
    fut: F,
) -> impl Future<Output = ()> {
    let token = token.clone();
    async move {
        tokio::select! {
            biased;
            _ = token.cancelled() => {}
            () = fut => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Background tasks are cancelled where they are; a service ends by itself when its
    /// token fires; a guard counts like a task; a closed turn group says so.
    #[tokio::test]
    async fn each_group_stops_its_own_way() {
        let tasks = Tasks::default();
        tasks.spawn(std::future::pending());
        let token = tasks.token(Group::Service);
        let (tx, rx) = tokio::sync::oneshot::channel();
        tasks.spawn_in(Group::Service, async move {
            token.cancelled().await;
            let _ = tx.send("stopped gracefully");
        });
        let guard = tasks.guard(Group::Turn);
        assert_eq!(tasks.len(Group::Turn), 1);
        tasks.close(Group::Turn);
        assert!(tasks.is_closed(Group::Turn));
        assert!(!tasks.wait(Group::Turn, Duration::from_millis(10)).await);
        drop(guard);
        assert!(tasks.wait(Group::Turn, Duration::from_secs(5)).await);
        assert!(tasks.stop(Group::Service, Duration::from_secs(5)).await);
        assert_eq!(rx.await.unwrap(), "stopped gracefully");
        assert!(tasks.stop(Group::Background, Duration::from_secs(5)).await);
        assert_eq!(tasks.len(Group::Background), 0);
    }
}
