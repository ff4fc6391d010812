//! [`Door`]: where the CLI's turns go — its own kernel when it can take the workspace
//! lock, otherwise the control socket of the process that holds it (a running gateway),
//! never a second writer — and how a turn typed in the terminal ends ([`Typed`]).

use super::actor::Terminals;
use super::channel::serve;
use super::control::{self, Request};
use super::interrupts::Interrupts;
use super::options::CHANNEL;
use super::shown::Shown;
use crate::kernel::{Kernel, KernelError, KernelOptions};
use crate::turn::{Failure, Partial, Reply, Turn};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Mutex};
use tokio_util::sync::CancellationToken;

/// Where the CLI's turns go.
pub enum Door {
    /// This process owns the workspace (and runs the CLI channel's actor).
    Local(Kernel, Terminals),
    /// Another process (a gateway) owns it; turns go through its control socket (the
    /// connection is dropped to cancel a turn, and made again for the next one).
    #[cfg(unix)]
    Remote {
        root: std::path::PathBuf,
        conn: Mutex<Option<control::Client>>,
    },
}

/// How a turn typed in the terminal ended.
pub enum Typed {
    Replied(Reply),
    /// Ctrl-C twice: the first cancelled the turn, the second asks to leave.
    Quit,
}

impl Door {
    /// Own the workspace if free, else route to its owner. Waits up to `patience` for a
    /// lock that is held by a process without a control socket (another one-shot).
    pub async fn open(root: &Path, patience: Duration) -> Result<Self, KernelError> {
        let started = Instant::now();
        loop {
            let opts = KernelOptions {
                lock_wait: Some(Duration::ZERO),
                ..Default::default()
            };
            match Kernel::start(root, opts) {
                Ok(k) => {
                    let terminals = serve(&crate::channels::ctx::ChannelCtx::of(&k))
                        .map_err(|e| KernelError::Actors(e.to_string()))?;
                    k.doors()
                        .register(CHANNEL, std::sync::Arc::new(terminals.clone()));
                    return Ok(Door::Local(k, terminals));
                }
                Err(KernelError::Locked(e)) => {
                    #[cfg(unix)]
                    {
                        let root = std::fs::canonicalize(root).unwrap_or(root.to_path_buf());
                        if let Ok(c) = control::Client::connect(&root).await {
                            return Ok(Door::Remote {
                                root,
                                conn: Mutex::new(Some(c)),
                            });
                        }
                    }
                    if started.elapsed() >= patience {
                        return Err(KernelError::Locked(e));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub async fn turn(&self, turn: Turn) -> Reply {
        self.turn_cancellable(turn, CancellationToken::new()).await
    }

    /// A turn that `cancel` stops: the owner records it as cancelled.
    pub async fn turn_cancellable(&self, turn: Turn, cancel: CancellationToken) -> Reply {
        self.turn_with(turn, cancel, None).await
    }

    /// [`Door::turn_cancellable`]; with `partials`, the answer's partials (when the
    /// provider streams) go there as they come.
    async fn turn_with(
        &self,
        mut turn: Turn,
        cancel: CancellationToken,
        partials: Option<mpsc::UnboundedSender<Partial>>,
    ) -> Reply {
        match self {
            Door::Local(k, _) => {
                let streamed = partials.filter(|_| k.provider().streams()).map(|tx| {
                    let (p, rx) = super::served::sink(k.config().agent.max_reply_chars);
                    turn.partials = Some(p);
                    (tx, rx)
                });
                let reply = k.submit_cancellable(turn, cancel).reply();
                match streamed {
                    None => reply.await,
                    Some((tx, mut rx)) => {
                        tokio::pin!(reply);
                        loop {
                            tokio::select! {
                                biased;
                                r = &mut reply => {
                                    while let Ok(p) = rx.try_recv() {
                                        let _ = tx.send(p);
                                    }
                                    break r;
                                }
                                Some(p) = rx.recv() => { let _ = tx.send(p); }
                            }
                        }
                    }
                }
            }
            #[cfg(unix)]
            Door::Remote { root, conn } => {
                let mut conn = conn.lock().await;
                let client = match connected(root, &mut conn).await {
                    Ok(c) => c,
                    Err(e) => return unreachable_gateway(e),
                };
                let asked = async {
                    match &partials {
                        None => client.turn(&turn).await,
                        Some(tx) => {
                            client
                                .turn_streamed(&turn, |p| {
                                    let _ = tx.send(p);
                                })
                                .await
                        }
                    }
                };
                let answered = tokio::select! {
                    r = asked => Some(r),
                    _ = cancel.cancelled() => None,
                };
                match answered {
                    Some(r) => r.unwrap_or_else(unreachable_gateway),
                    None => {
                        // hanging up is how a control client cancels its turn
                        *conn = None;
                        Reply::cancelled("（已取消这一轮。）")
                    }
                }
            }
        }
    }

    /// A turn typed in the terminal: the first Ctrl-C cancels it (it is recorded as
    /// cancelled), a second one asks to leave. Its partials, when the provider streams,
    /// go to `shown` as they come; the reply is returned, not shown.
    pub async fn typed_turn<W: std::io::Write>(
        &self,
        turn: Turn,
        ctrl_c: &mut Interrupts,
        shown: &mut Shown<W>,
    ) -> Typed {
        let cancel = CancellationToken::new();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let reply = self.turn_with(turn, cancel.clone(), Some(tx));
        tokio::pin!(reply);
        loop {
            tokio::select! {
                biased;
                r = &mut reply => {
                    while let Ok(p) = rx.try_recv() {
                        shown.partial(p);
                    }
                    return Typed::Replied(r);
                }
                Some(p) = rx.recv() => shown.partial(p),
                _ = ctrl_c.next() => {
                    if cancel.is_cancelled() {
                        return Typed::Quit;
                    }
                    cancel.cancel();
                    eprintln!("（正在取消这一轮；再按一次 Ctrl-C 退出）");
                }
            }
        }
    }

    pub async fn status(&self) -> String {
        match self {
            Door::Local(k, _) => k.status_text().await,
            #[cfg(unix)]
            Door::Remote { root, conn } => {
                let mut conn = conn.lock().await;
                match connected(root, &mut conn).await {
                    Ok(c) => match c.request(&Request::Status).await {
                        Ok(r) => r.text,
                        Err(e) => format!("status unavailable: {e}"),
                    },
                    Err(e) => format!("status unavailable: {e}"),
                }
            }
        }
    }

    /// A proactive message through a running channel (only a gateway runs channels).
    pub async fn announce(&self, channel: &str, target: &str, text: &str) -> Reply {
        let result = match self {
            Door::Local(k, _) => k
                .deliver(channel, target, text)
                .await
                .map_err(|e| e.to_string()),
            #[cfg(unix)]
            Door::Remote { root, conn } => {
                let req = Request::Announce {
                    channel: channel.into(),
                    target: target.into(),
                    text: text.into(),
                };
                let mut conn = conn.lock().await;
                match connected(root, &mut conn).await {
                    Ok(c) => match c.request(&req).await {
                        Ok(r) => return r,
                        Err(e) => Err(e.to_string()),
                    },
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        match result {
            Ok(()) => Reply::ok(format!("delivered to {channel}:{target}")),
            Err(e) => Reply::failed(e.clone(), Failure::Unavailable, e),
        }
    }

    pub fn household(&self) -> Option<String> {
        match self {
            Door::Local(k, _) => Some(k.config().household.name.clone()),
            #[cfg(unix)]
            Door::Remote { .. } => None,
        }
    }

    /// Let in-flight turns finish, then stop (a no-op for a remote door).
    pub async fn close(self) {
        if let Door::Local(k, _) = self {
            k.shutdown_gracefully(Duration::from_secs(k.config().agent.shutdown_grace_secs))
                .await;
        }
    }
}

/// The control connection, made again if an earlier turn was cancelled by hanging up.
#[cfg(unix)]
async fn connected<'a>(
    root: &Path,
    conn: &'a mut Option<control::Client>,
) -> std::io::Result<&'a mut control::Client> {
    if conn.is_none() {
        *conn = Some(control::Client::connect(root).await?);
    }
    Ok(conn.as_mut().expect("connected just above"))
}

fn unreachable_gateway(e: std::io::Error) -> Reply {
    Reply::failed(
        format!("无法把消息交给正在运行的 homebot：{e}"),
        Failure::Unavailable,
        e.to_string(),
    )
}
