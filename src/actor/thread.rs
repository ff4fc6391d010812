//! An actor's thread: an actix system on a named OS thread (`homebot-<role>`), so one
//! owner's file I/O or parsing never delays another's mailbox. [`ActorThread::spawn`]
//! starts it, runs the start-up closure inside it (which starts the actors) and hands back
//! what the closure returned — their addresses — once they run. Stopping stops the
//! system (its actors are dropped on their thread); dropping the [`ActorThread`] stops it
//! and waits for the thread.

use actix::prelude::*;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A running actix system on its own named thread.
pub struct ActorThread {
    name: String,
    system: actix::System,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Closed when the thread's work is done (its sender drops), so a bounded join waits
    /// on it instead of polling.
    done: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl ActorThread {
    /// Start a system on a new thread named `name`, run `init` in it (start the actors
    /// there) and return what it returns, once it has run.
    pub fn spawn<R: Send + 'static>(
        name: &str,
        init: impl FnOnce() -> R + Send + 'static,
    ) -> std::io::Result<(R, ActorThread)> {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done) = std::sync::mpsc::channel::<()>();
        let thread_name = name.to_string();
        let thread = std::thread::Builder::new()
            .name(thread_name.clone())
            .spawn(move || {
                let _done = done_tx;
                let sys = actix::System::new();
                sys.block_on(async move {
                    let _ = tx.send((init(), actix::System::current()));
                });
                if let Err(e) = sys.run() {
                    tracing::error!(thread = %thread_name, error = %e, "actor system stopped with an error");
                }
            })?;
        let (out, system) = rx
            .recv()
            .map_err(|_| std::io::Error::other(format!("the {name} thread exited at start")))?;
        Ok((
            out,
            ActorThread {
                name: name.to_string(),
                system,
                thread: Some(thread),
                done: std::sync::Mutex::new(done),
            },
        ))
    }

    /// Start the actor `make` builds on a new thread named `name`.
    pub fn start<A>(
        name: &str,
        make: impl FnOnce() -> A + Send + 'static,
    ) -> std::io::Result<(Addr<A>, ActorThread)>
    where
        A: Actor<Context = Context<A>>,
    {
        Self::spawn(name, move || make().start())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Stop the system when `cancel` fires (as well as when it is stopped or dropped).
    pub fn stop_when(&self, cancel: CancellationToken) {
        let system = self.system.clone();
        self.system.arbiter().spawn(async move {
            cancel.cancelled().await;
            system.stop();
        });
    }

    /// Stop the system: its actors stop and are dropped on their thread.
    pub fn stop(&self) {
        self.system.stop();
    }

    /// Whether the thread has ended.
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stop, and wait at most `within` for the thread to end: whether it did. A thread
    /// still busy then (a handler in a long write) is left to end by itself.
    pub fn stop_and_join(mut self, within: Duration) -> bool {
        self.stop();
        let Some(t) = self.thread.take() else {
            return true;
        };
        if is_current(&t) {
            return false;
        }
        let done = self.done.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Err(RecvTimeoutError::Timeout) = done.recv_timeout(within) {
            tracing::warn!(thread = %self.name, "actor thread did not stop in time");
            return false;
        }
        let _ = t.join();
        true
    }
}

fn is_current(t: &std::thread::JoinHandle<()>) -> bool {
    t.thread().id() == std::thread::current().id()
}

impl Drop for ActorThread {
    /// Stop the system and wait for the thread (unless this is that thread).
    fn drop(&mut self) {
        self.system.stop();
        if let Some(t) = self.thread.take() {
            if !is_current(&t) {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    struct Echo;
    impl Actor for Echo {
        type Context = Context<Self>;
    }
    #[derive(Message)]
    #[rtype(result = "String")]
    struct Name;
    impl Handler<Name> for Echo {
        type Result = String;
        fn handle(&mut self, _: Name, _: &mut Context<Self>) -> String {
            std::thread::current()
                .name()
                .unwrap_or_default()
                .to_string()
        }
    }

    #[tokio::test]
    async fn the_actor_runs_on_its_named_thread_and_stops_with_it() {
        let (addr, thread) = ActorThread::start("homebot-test-echo", || Echo).unwrap();
        assert_eq!(addr.send(Name).await.unwrap(), "homebot-test-echo");
        assert!(thread.stop_and_join(Duration::from_secs(5)));
        assert!(addr.send(Name).await.is_err(), "stopped with its thread");
    }

    #[tokio::test]
    async fn a_cancelled_token_stops_the_thread() {
        let (addr, thread) = ActorThread::start("homebot-test-cancel", || Echo).unwrap();
        let cancel = CancellationToken::new();
        thread.stop_when(cancel.clone());
        cancel.cancel();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !thread.is_finished() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(thread.is_finished());
        assert!(addr.send(Name).await.is_err());
    }
}
