//! The terminal actor: the one owner of the CLI channel's state — the control socket's
//! connections, the terminals listening for proactive messages (a `homebot chat` beside a
//! running gateway opens one listening connection; an interactive chat in this process is
//! the local terminal), and their outbound queues. It runs on its own actix arbiter thread
//! (`homebot-cli`); the control connections (tasks on the process's runtime) and the
//! outbound door reach it through the [`Terminals`] handle. Handlers never wait: a message
//! for a listener is a `try_send` to its connection's bounded queue.
//!
//! Supervised ([`crate::actor::Supervised`]): a panic in a handler fails that request, and the
//! state — in memory only — is rebuilt: the control connections and listeners are
//! forgotten (a listener's stream ends with its queue; it listens again when it
//! reconnects); the local terminal, the connection numbering (no id is given twice) and
//! the delivery count carry over.

use crate::actor::{Lifecycle, Supervised, Unavailable};
use crate::outbound::{DeliveryError, Outbound};
use actix::prelude::*;
use std::collections::BTreeMap;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// At most this many terminals listen at once (each is a control connection, itself capped).
pub const MAX_LISTENERS: usize = 8;
/// Messages waiting for one listener before the next one is refused as busy.
pub const LISTENER_QUEUE: usize = 16;
/// The longest chat id a listener may name (it comes from a control client).
pub const MAX_CHAT_ID: usize = 128;

#[derive(Default)]
struct State {
    /// An interactive chat runs in this process: proactive messages print here.
    local: Option<String>,
    /// Control connections open now, by id.
    connections: BTreeMap<u64, Conn>,
    next_id: u64,
    delivered: u64,
}

#[derive(Default)]
struct Conn {
    /// Set when the connection listens for proactive messages of a chat.
    listens: Option<(String, mpsc::Sender<String>)>,
}

impl State {
    fn listeners(&self) -> usize {
        self.connections
            .values()
            .filter(|c| c.listens.is_some())
            .count()
    }

    fn announce(&mut self, target: &str, text: &str) -> Result<(), DeliveryError> {
        let mut reached = false;
        let mut busy = false;
        if self
            .local
            .as_deref()
            .is_some_and(|c| target.is_empty() || c == target)
        {
            println!("\nhomebot（主动消息）> {text}\n");
            reached = true;
        }
        for conn in self.connections.values() {
            let Some((chat, tx)) = &conn.listens else {
                continue;
            };
            if !target.is_empty() && chat != target {
                continue;
            }
            match tx.try_send(text.to_string()) {
                Ok(()) => reached = true,
                Err(mpsc::error::TrySendError::Full(_)) => busy = true,
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
        if reached {
            self.delivered += 1;
            Ok(())
        } else if busy {
            Err(DeliveryError::Busy(format!("the terminal {target:?}")))
        } else {
            Err(DeliveryError::Unreachable(format!(
                "the terminal {target:?} (no `homebot chat` of that chat is attached)"
            )))
        }
    }
}

pub struct TerminalActor {
    state: Supervised<State>,
}

impl Actor for TerminalActor {
    type Context = Context<Self>;
}

/// A control connection opened: its id.
#[derive(Message)]
#[rtype(result = "Result<u64, Unavailable>")]
struct Opened;

/// A control connection closed (its listener, if any, goes with it).
#[derive(Message)]
#[rtype(result = "()")]
struct Closed(u64);

/// The connection listens for the proactive messages of `chat`.
#[derive(Message)]
#[rtype(result = "Result<Result<(), ListenError>, Unavailable>")]
struct Listen {
    conn: u64,
    chat: String,
    tx: mpsc::Sender<String>,
}

/// An interactive chat in this process attaches (or detaches, `None`) the local terminal.
#[derive(Message)]
#[rtype(result = "()")]
struct Local(Option<String>);

#[derive(Message)]
#[rtype(result = "Result<Result<(), DeliveryError>, Unavailable>")]
struct Announce {
    target: String,
    text: String,
}

/// What the terminal channel holds now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalStatus {
    pub connections: usize,
    pub listeners: usize,
    pub local: bool,
    pub delivered: u64,
}

#[derive(Message)]
#[rtype(result = "TerminalStatus")]
struct GetStatus;

/// Why a connection may not listen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListenError {
    #[error("already {MAX_LISTENERS} terminals listen; close one first")]
    Full,
    #[error("a chat id is 1–{MAX_CHAT_ID} characters without control characters")]
    BadChat,
    #[error("the connection is not known (closed meanwhile)")]
    UnknownConnection,
}

impl Handler<Opened> for TerminalActor {
    type Result = Result<u64, Unavailable>;
    fn handle(&mut self, _: Opened, _: &mut Context<Self>) -> Self::Result {
        self.state.run("open a control connection", |st| {
            st.next_id += 1;
            st.connections.insert(st.next_id, Conn::default());
            st.next_id
        })
    }
}

impl Handler<Closed> for TerminalActor {
    type Result = ();
    fn handle(&mut self, Closed(id): Closed, _: &mut Context<Self>) {
        let _ = self.state.run("close a control connection", |st| {
            st.connections.remove(&id)
        });
    }
}

impl Handler<Listen> for TerminalActor {
    type Result = Result<Result<(), ListenError>, Unavailable>;
    fn handle(&mut self, msg: Listen, _: &mut Context<Self>) -> Self::Result {
        self.state.run("listen", |st| {
            let chat = msg.chat.trim();
            if chat.is_empty()
                || chat.chars().count() > MAX_CHAT_ID
                || chat.chars().any(char::is_control)
            {
                return Err(ListenError::BadChat);
            }
            if st.listeners() >= MAX_LISTENERS {
                return Err(ListenError::Full);
            }
            let conn = st
                .connections
                .get_mut(&msg.conn)
                .ok_or(ListenError::UnknownConnection)?;
            conn.listens = Some((chat.to_string(), msg.tx));
            Ok(())
        })
    }
}

impl Handler<Local> for TerminalActor {
    type Result = ();
    fn handle(&mut self, Local(chat): Local, _: &mut Context<Self>) {
        let _ = self
            .state
            .run("attach the local terminal", |st| st.local = chat);
    }
}

impl Handler<Announce> for TerminalActor {
    type Result = Result<Result<(), DeliveryError>, Unavailable>;
    fn handle(&mut self, msg: Announce, _: &mut Context<Self>) -> Self::Result {
        self.state
            .run("announce", |st| st.announce(&msg.target, &msg.text))
    }
}

impl Handler<GetStatus> for TerminalActor {
    type Result = MessageResult<GetStatus>;
    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> Self::Result {
        let status = self.state.run("status", |st| TerminalStatus {
            connections: st.connections.len(),
            listeners: st.listeners(),
            local: st.local.is_some(),
            delivered: st.delivered,
        });
        MessageResult(status.unwrap_or_default())
    }
}

/// The handle to the terminal actor: the control connections' registry and the CLI
/// channel's outbound door.
#[derive(Clone)]
pub struct Terminals {
    addr: Addr<TerminalActor>,
}

/// Why the terminal actor could not do what a connection asked.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error("the terminal channel has stopped")]
    Stopped,
    #[error(transparent)]
    Listen(#[from] ListenError),
}

impl Terminals {
    /// Start the actor on its own thread, registered with `life` (the kernel's shutdown
    /// stops and joins it); it also stops when `cancel` fires.
    pub fn start(life: &Lifecycle, cancel: CancellationToken) -> std::io::Result<Self> {
        let addr = life.start_actor_until("homebot-cli", cancel, || TerminalActor {
            state: Supervised::rebuilt_by(
                "the terminal channel",
                State::default(),
                |old: &mut State, hit: &str| {
                    tracing::warn!(
                        hit,
                        connections = old.connections.len(),
                        "cli: the channel's state is rebuilt after a panic; its control connections are forgotten"
                    );
                    State {
                        local: old.local.take(),
                        connections: BTreeMap::new(),
                        next_id: old.next_id,
                        delivered: old.delivered,
                    }
                },
            ),
        })?;
        Ok(Self { addr })
    }

    /// Register a control connection; it must say [`Terminals::closed`] when it ends.
    pub async fn opened(&self) -> Result<u64, TerminalError> {
        match self.addr.send(Opened).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(TerminalError::Stopped),
        }
    }

    pub fn closed(&self, id: u64) {
        self.addr.do_send(Closed(id));
    }

    /// Let connection `conn` receive the proactive messages for `chat` on `tx`.
    pub async fn listen(
        &self,
        conn: u64,
        chat: &str,
        tx: mpsc::Sender<String>,
    ) -> Result<(), TerminalError> {
        let msg = Listen {
            conn,
            chat: chat.to_string(),
            tx,
        };
        match self.addr.send(msg).await {
            Ok(r) => Ok(r??),
            Err(_) => Err(TerminalError::Stopped),
        }
    }

    /// An interactive chat of `chat` runs in this process (or no longer: `None`).
    pub fn attach_local(&self, chat: Option<String>) {
        self.addr.do_send(Local(chat));
    }

    pub async fn snapshot(&self) -> TerminalStatus {
        self.addr.send(GetStatus).await.unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl Outbound for Terminals {
    /// A target is a CLI chat id (`local`); empty reaches every attached terminal.
    async fn deliver(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        let msg = Announce {
            target: target.to_string(),
            text: text.to_string(),
        };
        match self.addr.send(msg).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(DeliveryError::Failed {
                target: target.into(),
                why: e.to_string(),
            }),
            Err(_) => Err(DeliveryError::Failed {
                target: target.into(),
                why: TerminalError::Stopped.to_string(),
            }),
        }
    }

    async fn status(&self) -> Vec<String> {
        let s = self.snapshot().await;
        vec![format!(
            "终端: {} 个控制连接，{} 个终端在听主动消息{}",
            s.connections,
            s.listeners,
            if s.local {
                "（含本进程的终端）"
            } else {
                ""
            }
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listener_gets_its_chats_messages_and_a_full_queue_is_busy() {
        let cancel = CancellationToken::new();
        let life = Lifecycle::default();
        let t = Terminals::start(&life, cancel.clone()).unwrap();
        let nobody = t.deliver("local", "水开了").await.unwrap_err();
        assert!(matches!(nobody, DeliveryError::Unreachable(_)), "{nobody}");

        let a = t.opened().await.unwrap();
        let b = t.opened().await.unwrap();
        let (tx, mut rx) = mpsc::channel(LISTENER_QUEUE);
        t.listen(a, "local", tx).await.unwrap();
        let (tx_b, mut rx_b) = mpsc::channel(LISTENER_QUEUE);
        t.listen(b, "kitchen", tx_b).await.unwrap();
        t.deliver("local", "水开了").await.unwrap();
        assert_eq!(rx.recv().await.as_deref(), Some("水开了"));
        assert!(
            rx_b.try_recv().is_err(),
            "another chat's terminal hears nothing"
        );

        for i in 0..LISTENER_QUEUE {
            t.deliver("kitchen", &format!("{i}")).await.unwrap();
        }
        let full = t.deliver("kitchen", "one more").await.unwrap_err();
        assert!(matches!(full, DeliveryError::Busy(_)), "{full}");

        let st = t.snapshot().await;
        assert_eq!((st.connections, st.listeners, st.local), (2, 2, false));
        t.closed(a);
        let gone = t.deliver("local", "还在吗").await.unwrap_err();
        assert!(matches!(gone, DeliveryError::Unreachable(_)), "{gone}");
        cancel.cancel();
    }

    #[tokio::test]
    async fn listening_is_bounded_and_checked() {
        let cancel = CancellationToken::new();
        let life = Lifecycle::default();
        let t = Terminals::start(&life, cancel.clone()).unwrap();
        let (tx, _rx) = mpsc::channel(1);
        let c = t.opened().await.unwrap();
        let bad = ["", "a\nb", &"x".repeat(MAX_CHAT_ID + 1)];
        for chat in bad {
            let e = t.listen(c, chat, tx.clone()).await.unwrap_err();
            assert!(
                matches!(e, TerminalError::Listen(ListenError::BadChat)),
                "{chat:?}: {e}"
            );
        }
        let e = t.listen(999, "local", tx.clone()).await.unwrap_err();
        assert!(
            matches!(e, TerminalError::Listen(ListenError::UnknownConnection)),
            "{e}"
        );
        let mut keep = Vec::new();
        for _ in 0..MAX_LISTENERS {
            let c = t.opened().await.unwrap();
            let (tx, rx) = mpsc::channel(1);
            keep.push(rx);
            t.listen(c, "local", tx).await.unwrap();
        }
        let c = t.opened().await.unwrap();
        let e = t.listen(c, "local", tx).await.unwrap_err();
        assert!(matches!(e, TerminalError::Listen(ListenError::Full)), "{e}");
        cancel.cancel();
    }
}
