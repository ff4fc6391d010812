//! What the kernel's shutdown stops: the actor threads started through a [`Lifecycle`]
//! (stopped and joined) and the tasks spawned through its [`Tasks`] (drained group by
//! group: turns, services, background). Nothing started here outlives the kernel's
//! shutdown unseen.

use super::tasks::Tasks;
use super::thread::ActorThread;
use actix::prelude::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The kernel's record of the actor threads it stops and joins, and of its background
/// [`Tasks`]. Cloned into whatever starts actors (the channels); the kernel stops it.
#[derive(Clone, Default)]
pub struct Lifecycle {
    threads: Arc<Mutex<Vec<ActorThread>>>,
    tasks: Tasks,
}

impl Lifecycle {
    /// Every task of the process, by group (the shutdown drains them in order).
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Keep `thread` until the shutdown stops and joins it.
    pub fn register(&self, thread: ActorThread) {
        self.lock().push(thread);
    }

    /// Start the actor `make` builds on its own thread named `name`, registered: the
    /// shutdown stops and joins it. Its address.
    pub fn start_actor<A>(
        &self,
        name: &str,
        make: impl FnOnce() -> A + Send + 'static,
    ) -> std::io::Result<Addr<A>>
    where
        A: Actor<Context = Context<A>>,
    {
        let (addr, thread) = ActorThread::start(name, make)?;
        self.register(thread);
        Ok(addr)
    }

    /// [`Lifecycle::start_actor`] for a channel's actor: it also stops when `cancel`
    /// fires (the channel's servers are stopping).
    pub fn start_actor_until<A>(
        &self,
        name: &str,
        cancel: CancellationToken,
        make: impl FnOnce() -> A + Send + 'static,
    ) -> std::io::Result<Addr<A>>
    where
        A: Actor<Context = Context<A>>,
    {
        let (addr, thread) = ActorThread::start(name, make)?;
        thread.stop_when(cancel);
        self.register(thread);
        Ok(addr)
    }

    /// The names of the registered threads, in start order.
    pub fn thread_names(&self) -> Vec<String> {
        self.lock().iter().map(|t| t.name().to_string()).collect()
    }

    /// Cancel the background tasks and stop every registered thread, waiting for none
    /// (the kernel dropped without a graceful shutdown).
    pub fn stop(&self) {
        self.tasks.cancel_all();
        self.stop_threads();
    }

    /// Stop every registered thread (their actors' pending requests fail after this).
    pub fn stop_threads(&self) {
        for t in self.lock().iter() {
            t.stop();
        }
    }

    /// Stop every registered thread and wait (at most `within` in all, on the blocking
    /// pool) until they have ended: whether all did.
    pub async fn join_threads(&self, within: Duration) -> bool {
        let threads = std::mem::take(&mut *self.lock());
        let deadline = std::time::Instant::now() + within;
        let joined = tokio::task::spawn_blocking(move || {
            threads.into_iter().fold(true, |all, t| {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                t.stop_and_join(left) && all
            })
        });
        joined.await.unwrap_or(false)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ActorThread>> {
        match self.threads.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actor::Group;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Idle;
    impl Actor for Idle {
        type Context = Context<Self>;
    }
    #[derive(Message)]
    #[rtype(result = "()")]
    struct Ping;
    impl Handler<Ping> for Idle {
        type Result = ();
        fn handle(&mut self, _: Ping, _: &mut Context<Self>) {}
    }

    #[tokio::test]
    async fn the_shutdown_stops_and_joins_the_registered_threads() {
        let life = Lifecycle::default();
        let a = life.start_actor("homebot-test-a", || Idle).unwrap();
        let b = life
            .start_actor_until("homebot-test-b", CancellationToken::new(), || Idle)
            .unwrap();
        assert_eq!(life.thread_names(), ["homebot-test-a", "homebot-test-b"]);
        a.send(Ping).await.unwrap();
        assert!(life.join_threads(Duration::from_secs(5)).await);
        assert!(life.thread_names().is_empty());
        assert!(a.send(Ping).await.is_err() && b.send(Ping).await.is_err());
    }

    #[tokio::test]
    async fn the_shutdown_cancels_the_tracked_tasks_and_waits_for_them() {
        let tasks = Tasks::default();
        let ended = Arc::new(AtomicBool::new(false));
        let seen = ended.clone();
        // a task that would run forever, and notices its end when it is dropped
        struct OnDrop(Arc<AtomicBool>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        tasks.spawn(async move {
            let _guard = OnDrop(seen);
            std::future::pending::<()>().await;
        });
        let finished = tasks.spawn(async {});
        finished.await.unwrap();
        assert_eq!(tasks.len(Group::Background), 1);
        assert!(tasks.stop(Group::Background, Duration::from_secs(5)).await);
        assert!(ended.load(Ordering::SeqCst), "the task was cancelled");
        assert_eq!(tasks.len(Group::Background), 0);
        // one spawned after the shutdown never runs its body
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        tasks
            .spawn(async move { r.store(true, Ordering::SeqCst) })
            .await
            .unwrap();
        assert!(!ran.load(Ordering::SeqCst));
    }
}
