//! The QQ channel: OneBot v11 (NapCat, Lagrange.OneBot, LLOneBot) over WebSocket.
//!
//! - Reverse WebSocket server (the implementation connects to homebot) at
//!   `/onebot/v11/ws`: `X-Self-ID` required, `X-Client-Role` Universal (or split API /
//!   Event), `Authorization: Bearer <token>` or `?access_token=` checked when a token is
//!   configured. A missing header or token is refused with 401, a wrong token or a
//!   duplicate self id with 403.
//! - Forward WebSocket client (homebot connects to `ws://host:6700`), with reconnect and
//!   backoff.
//! - Events: messages become [`crate::turn::Turn`]s (`channel = "qq"`, `chat_id`
//!   `group:<id>` or `private:<id>`, the sender bound to the turn); lifecycle and
//!   heartbeat meta events keep the connection's health; a silent connection is closed
//!   after the heartbeat timeout. Actions carry a unique `echo` and wait for their
//!   response.
//! - Replies: in groups they quote the message and @ the sender; markdown is flattened,
//!   long replies split on sentence ends, sends to one group spaced out (QQ's risk control
//!   punishes bursts). A reply whose connection is gone waits a bounded time for a
//!   reconnect, then is logged as undeliverable. "Please wait" refusals go out once
//!   per burst (until the chat's queue drains).
//! - Outbound door: `homebot announce --channel qq --to group:<id>|private:<id>` and
//!   the Cron deliver through the same ordered queues.
//!
//! Access: groups and private senders each `open` / `allowlist` / `disabled`; unknown
//! private senders are denied by default and never reach the LLM.
//!
//! Layout, one job per file:
//! - this file: [`QqChannel`] (the config, implementing [`Channel`]), the running [`Qq`]
//!   handle, the state its parts share, connection slots and the read loop both
//!   transports feed;
//! - `server`: the reverse WebSocket server (handshake, auth, reservation);
//! - `forward`: the forward WebSocket client (reconnect, backoff);
//! - `events`: typed OneBot frames, and a message event into a turn;
//! - `delivery`: per-target ordered, bounded, throttled delivery, and the outbound door;
//! - `rpc`: actions with `echo`, matched to their responses, with timeouts;
//! - `id`: string-or-number OneBot ids; `message`: message segments and CQ codes.

mod delivery;
mod events;
mod forward;
pub mod id;
pub mod message;
mod rpc;
mod server;

pub use rpc::ActionError;

use crate::channels::contract::{Channel, StartError, Started};
use crate::config::QqConfig;
use crate::kernel::Kernel;
use delivery::{Delivery, RefusalLimiter};
use events::{ActionResponse, Frame};
use futures_util::StreamExt;
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

pub const CHANNEL: &str = "qq";
/// Frames waiting for one connection's writer.
const WRITER_QUEUE: usize = 64;

/// Which kind of frames a connection carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Role {
    Universal,
    Api,
    Event,
}

impl Role {
    fn parse(s: Option<&str>) -> Option<Self> {
        match s.map(str::trim).map(str::to_ascii_lowercase).as_deref() {
            None | Some("") | Some("universal") => Some(Role::Universal),
            Some("api") => Some(Role::Api),
            Some("event") => Some(Role::Event),
            _ => None,
        }
    }
    fn sends_actions(self) -> bool {
        matches!(self, Role::Universal | Role::Api)
    }
}

struct Conn {
    id: u64,
    role: Role,
    /// `None` while the connection is only reserved (its handshake is under way).
    tx: Option<mpsc::Sender<String>>,
}

#[derive(Default)]
struct Bot {
    conns: Vec<Conn>,
    /// Message ids the bot sent, to recognise replies to it.
    sent: VecDeque<id::Id>,
    sent_set: HashSet<id::Id>,
}

impl Bot {
    /// Split API / Event connections may coexist; anything else is a duplicate.
    fn clashes(&self, role: Role) -> bool {
        self.conns
            .iter()
            .any(|c| c.role == role || c.role == Role::Universal || role == Role::Universal)
    }
}

/// A second connection of an account already connected (or connecting) in that role.
#[derive(Debug, thiserror::Error)]
#[error("QQ account {0} is already connected")]
pub struct AlreadyConnected(String);

struct Shared {
    cfg: QqConfig,
    kernel: Kernel,
    bots: Mutex<HashMap<String, Bot>>,
    pending: Mutex<HashMap<String, oneshot::Sender<ActionResponse>>>,
    next_id: AtomicU64,
    /// Woken whenever a connection comes up.
    connected: Notify,
    /// Per target, when the next send may go out.
    next_send: Mutex<HashMap<String, Instant>>,
    /// One ordered, bounded delivery queue per group / person.
    deliveries: Mutex<HashMap<String, mpsc::Sender<Delivery>>>,
    /// Which chats got their "please wait" refusal in the current burst.
    refusals: Mutex<RefusalLimiter>,
    cancel: CancellationToken,
}

/// The QQ channel before it starts: its configuration.
pub struct QqChannel {
    cfg: QqConfig,
}

impl QqChannel {
    pub fn new(cfg: QqConfig) -> Self {
        Self { cfg }
    }
}

#[async_trait::async_trait]
impl Channel for QqChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    async fn start(
        self: Box<Self>,
        kernel: Kernel,
        cancel: CancellationToken,
    ) -> Result<Started, StartError> {
        let (qq, bound) = Qq::start(kernel, self.cfg, cancel).await?;
        Ok(Started {
            bound: bound.map(|a| vec![(CHANNEL, a)]).unwrap_or_default(),
            outbound: Some(Arc::new(qq)),
        })
    }
}

/// The running QQ channel.
#[derive(Clone)]
pub struct Qq {
    shared: Arc<Shared>,
}

impl Qq {
    /// Start the configured transports. Returns the reverse server's bound address.
    pub async fn start(
        kernel: Kernel,
        cfg: QqConfig,
        cancel: CancellationToken,
    ) -> Result<(Self, Option<SocketAddr>), StartError> {
        let ch = Qq {
            shared: Arc::new(Shared {
                cfg: cfg.clone(),
                kernel: kernel.clone(),
                bots: Mutex::new(HashMap::new()),
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                connected: Notify::new(),
                next_send: Mutex::new(HashMap::new()),
                deliveries: Mutex::new(HashMap::new()),
                refusals: Mutex::new(RefusalLimiter::default()),
                cancel: cancel.clone(),
            }),
        };
        let mut bound = None;
        if let Some(listen) = &cfg.listen {
            let (listener, addr) = crate::channels::net::bind(CHANNEL, listen).await?;
            let app = axum::Router::new()
                .route(&cfg.path, axum::routing::get(server::ws_handler))
                .with_state(ch.clone());
            info!(addr = %addr, path = %cfg.path, token = cfg.access_token.is_some(), "qq channel: reverse WebSocket listening");
            let limits = crate::channels::net::HttpLimits {
                conns: crate::channels::net::listener_limit(CHANNEL, cfg.max_connections),
                handshake: Duration::from_secs(cfg.handshake_timeout_secs),
            };
            crate::channels::net::serve_http(
                &kernel,
                CHANNEL,
                listener,
                app,
                cancel.clone(),
                limits,
            );
            bound = Some(addr);
        }
        if let Some(url) = cfg.forward_url.clone() {
            let ch2 = ch.clone();
            kernel.spawn_service(async move { ch2.forward_loop(url).await });
        }
        Ok((ch, bound))
    }

    fn next_id(&self) -> u64 {
        self.shared.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Reserve the account's place for a connection in `role`, atomically with the
    /// duplicate check: two handshakes of one account cannot both pass. The slot is
    /// released when dropped — by a handshake that never completes as much as by a
    /// connection that ends.
    fn reserve(&self, self_id: &str, role: Role) -> Result<Slot, AlreadyConnected> {
        let mut bots = self
            .shared
            .bots
            .lock()
            .expect("bots lock is never poisoned");
        let bot = bots.entry(self_id.to_string()).or_default();
        if bot.clashes(role) {
            return Err(AlreadyConnected(self_id.to_string()));
        }
        let id = self.next_id();
        bot.conns.push(Conn { id, role, tx: None });
        Ok(Slot {
            qq: self.clone(),
            self_id: self_id.to_string(),
            conn_id: id,
        })
    }

    /// Read frames until the peer goes away or stays silent past the heartbeat timeout;
    /// then release the slot.
    async fn run_conn<S>(&self, slot: Slot, role: Role, mut incoming: S)
    where
        S: futures_util::Stream<Item = Result<String, String>> + Unpin,
    {
        let self_id = slot.self_id.clone();
        let mut timeout = Duration::from_secs(self.shared.cfg.heartbeat_timeout_secs);
        loop {
            let frame = match tokio::time::timeout(timeout, incoming.next()).await {
                Err(_) => {
                    warn!(self_id = %self_id, secs = timeout.as_secs(), "qq connection silent past the heartbeat timeout; closing it");
                    break;
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    debug!(self_id = %self_id, error = %e, "qq connection error");
                    break;
                }
                Ok(Some(Ok(text))) => text,
            };
            match events::parse_frame(&frame) {
                Err(e) => warn!(self_id = %self_id, error = %e, "qq: malformed frame ignored"),
                Ok(Frame::Event(ev)) => {
                    if let Some(iv) = self.on_event(&self_id, ev) {
                        // heartbeat interval known: allow three missed beats
                        timeout = (iv * 3).max(Duration::from_secs(
                            self.shared.cfg.heartbeat_timeout_secs.min(15),
                        ));
                    }
                }
                Ok(Frame::Response(r)) => self.resolve(&self_id, r),
                Ok(Frame::Unknown) => {
                    debug!(self_id = %self_id, role = ?role, "qq: frame of unknown kind ignored")
                }
            }
        }
        drop(slot);
        info!(self_id = %self_id, role = ?role, "qq connection closed");
    }
}

/// A connection's place in its account (see [`Qq::reserve`]).
struct Slot {
    qq: Qq,
    self_id: String,
    conn_id: u64,
}

impl Slot {
    /// The connection is up: actions may use its writer.
    fn activate(&self, tx: mpsc::Sender<String>) {
        let mut bots = self
            .qq
            .shared
            .bots
            .lock()
            .expect("bots lock is never poisoned");
        let conn = bots
            .get_mut(&self.self_id)
            .and_then(|b| b.conns.iter_mut().find(|c| c.id == self.conn_id))
            .expect("a slot's connection stays registered until the slot is dropped");
        conn.tx = Some(tx);
        drop(bots);
        self.qq.shared.connected.notify_waiters();
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // runs during unwinding too: a poisoned map is still the map
        let mut bots = self
            .qq
            .shared
            .bots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(bot) = bots.get_mut(&self.self_id) else {
            return;
        };
        bot.conns.retain(|c| c.id != self.conn_id);
        // an account that never got a message out leaves nothing behind
        if bot.conns.is_empty() && bot.sent.is_empty() {
            bots.remove(&self.self_id);
        }
    }
}
