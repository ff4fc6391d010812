//! What the kernel's shutdown stops: the actor threads started through a [`Lifecycle`]
//! (stopped and joined) and the background tasks spawned through its [`Tasks`] (the
//! listen-again after a question, compactions, reminder deliveries, the heap trim —
//! cancelled, then waited for). Nothing started here outlives the kernel's shutdown
//! unseen.

use super::thread::ActorThread;
use actix::prelude::*;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Background tasks that belong to no turn and no connection: tracked, so a shutdown
/// sees them, and cancelled by it. Cheap to clone; a handle that holds one keeps no
/// thread alive.
#[derive(Clone, Default)]
pub struct Tasks {
    tracker: TaskTracker,
    cancel: CancellationToken,
}

impl Tasks {
    /// Run `fut` on the current runtime until it ends or the shutdown cancels it.
    pub fn spawn<F>(&self, fut: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(self.cancellable(fut))
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
        self.tracker.spawn_on(self.cancellable(fut), runtime)
    }

    fn cancellable<F: Future<Output = ()>>(&self, fut: F) -> impl Future<Output = ()> {
        let cancel = self.cancel.clone();
        async move {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {}
                () = fut => {}
            }
        }
    }

    /// Tasks still running.
    pub fn len(&self) -> usize {
        self.tracker.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tracker.is_empty()
    }

    /// Fires when the shutdown cancels the tasks (a task may watch it to end cleanly).
    pub fn cancelled(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Cancel every task and wait (at most `within`) until they have ended: whether they
    /// did. Tasks spawned afterwards are cancelled at once.
    pub async fn shutdown(&self, within: Duration) -> bool {
        self.cancel.cancel();
        self.tracker.close();
        tokio::time::timeout(within, self.tracker.wait())
            .await
            .is_ok()
    }
}

/// The kernel's record of the actor threads it stops and joins, and of its background
/// [`Tasks`]. Cloned into whatever starts actors (the channels); the kernel stops it.
#[derive(Clone, Default)]
pub struct Lifecycle {
    threads: Arc<Mutex<Vec<ActorThread>>>,
    tasks: Tasks,
}

impl Lifecycle {
    /// The background tasks the shutdown cancels.
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
        self.tasks.cancel.cancel();
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
        assert_eq!(tasks.len(), 1);
        assert!(tasks.shutdown(Duration::from_secs(5)).await);
        assert!(ended.load(Ordering::SeqCst), "the task was cancelled");
        assert!(tasks.is_empty());
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
