//! Where a channel's actor runs: its own actix arbiter thread (`homebot-<channel>`), so
//! its handlers — short, they never wait — are never delayed by another channel's work.
//! The actor stops when the channel's cancellation token fires (the gateway's graceful
//! shutdown, after the admitted turns were delivered).

use actix::prelude::*;
use tokio_util::sync::CancellationToken;

/// Start the actor `make` builds on a new thread named `thread`; returns its address
/// once it runs.
pub fn start_actor<A>(
    thread: &str,
    cancel: CancellationToken,
    make: impl FnOnce() -> A + Send + 'static,
) -> std::io::Result<Addr<A>>
where
    A: Actor<Context = Context<A>>,
{
    let (tx, rx) = std::sync::mpsc::channel();
    let name = thread.to_string();
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            let sys = actix::System::new();
            sys.block_on(async move {
                let _ = tx.send(make().start());
                actix::spawn(async move {
                    cancel.cancelled().await;
                    actix::System::current().stop();
                });
            });
            if let Err(e) = sys.run() {
                tracing::error!(thread = %name, error = %e, "channel actor system stopped with an error");
            }
        })?;
    rx.recv()
        .map_err(|_| std::io::Error::other(format!("the {thread} thread exited at start")))
}
