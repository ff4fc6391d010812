//! The QQ channel: OneBot v11 (NapCat, Lagrange.OneBot, LLOneBot) over WebSocket.
//!
//! - Reverse WebSocket server (the implementation connects to homebot) at
//!   `/onebot/v11/ws`: `X-Self-ID` required, `X-Client-Role` Universal (or split API /
//!   Event), `Authorization: Bearer <token>` or `?access_token=` checked when a token is
//!   configured. A missing header or token is refused with 401, a wrong token or a
//!   duplicate self id with 403.
//! - Forward WebSocket client (homebot connects to `ws://host:6700`), with reconnect and
//!   backoff.
//! - Events: messages become [`Turn`]s (`channel = "qq"`, `chat_id` `group:<id>` or
//!   `private:<id>`, the sender bound to the turn); lifecycle and heartbeat meta events
//!   keep the connection's health; a silent connection is closed after the heartbeat
//!   timeout. Actions carry a unique `echo` and wait for their response.
//! - Replies: in groups they quote the message and @ the sender; markdown is flattened,
//!   long replies split on sentence ends, sends to one group spaced out (QQ's risk control
//!   punishes bursts). A reply whose connection is gone waits a bounded time for a
//!   reconnect, then is logged as undeliverable.
//!
//! Access: groups and private senders each `open` / `allowlist` / `disabled`; unknown
//! private senders are denied by default and never reach the LLM.

pub mod message;

use crate::channel::{Channel, StartError, Started};
use crate::config::{Access, QqConfig, QqPolicy, QqSwitchPolicy};
use crate::kernel::{DeliveryGuard, Kernel, PendingReply};
use crate::turn::{Reply, Turn};
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use message::{Addressed, Segment};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

pub const CHANNEL: &str = "qq";
/// A group's delivery queue retires after this long without replies.
const DELIVERY_IDLE: Duration = Duration::from_secs(300);
const SENT_IDS_KEPT: usize = 512;

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
    tx: mpsc::Sender<String>,
}

impl Bot {
    fn clashes(&self, role: Role) -> bool {
        self.conns
            .iter()
            .any(|c| c.role == role || c.role == Role::Universal || role == Role::Universal)
    }
}

#[derive(Default)]
struct Bot {
    conns: Vec<Conn>,
    /// Message ids the bot sent, to recognise replies to it.
    sent: VecDeque<String>,
    sent_set: HashSet<String>,
}

struct Shared {
    cfg: QqConfig,
    kernel: Kernel,
    bots: Mutex<HashMap<String, Bot>>,
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    next_id: AtomicU64,
    /// Woken whenever a connection comes up.
    connected: Notify,
    /// Per target, when the next send may go out.
    next_send: Mutex<HashMap<String, Instant>>,
    /// One ordered delivery queue per group / person.
    deliveries: Mutex<HashMap<String, mpsc::UnboundedSender<Delivery>>>,
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
        let (_qq, bound) = Qq::start(kernel, self.cfg, cancel).await?;
        Ok(Started {
            bound: bound.map(|a| vec![(CHANNEL, a)]).unwrap_or_default(),
            outbound: None,
        })
    }
}

/// The running QQ channel.
#[derive(Clone)]
pub struct Qq {
    shared: Arc<Shared>,
}

/// Why an action failed.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no connection to QQ account {0} (waited for a reconnect)")]
    NotConnected(String),
    #[error("action {action} timed out after {secs} s")]
    Timeout { action: String, secs: u64 },
    #[error("action {action} failed: status {status}, retcode {retcode}{}", msg.as_ref().map(|m| format!(", {m}")).unwrap_or_default())]
    Failed {
        action: String,
        status: String,
        retcode: i64,
        msg: Option<String>,
    },
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
                kernel,
                bots: Mutex::new(HashMap::new()),
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                connected: Notify::new(),
                next_send: Mutex::new(HashMap::new()),
                deliveries: Mutex::new(HashMap::new()),
                cancel: cancel.clone(),
            }),
        };
        let mut bound = None;
        if let Some(listen) = &cfg.listen {
            let (listener, addr) = crate::channels::net::bind(CHANNEL, listen).await?;
            let app = axum::Router::new()
                .route(&cfg.path, axum::routing::get(ws_handler))
                .with_state(ch.clone());
            info!(addr = %addr, path = %cfg.path, token = cfg.access_token.is_some(), "qq channel: reverse WebSocket listening");
            let kernel = ch.shared.kernel.clone();
            crate::channels::net::serve_http(&kernel, CHANNEL, listener, app, cancel.clone());
            bound = Some(addr);
        }
        if let Some(url) = cfg.forward_url.clone() {
            let ch2 = ch.clone();
            let kernel = ch.shared.kernel.clone();
            kernel.spawn_service(async move { ch2.forward_loop(url).await });
        }
        Ok((ch, bound))
    }

    // ---- connections -----------------------------------------------------------------

    /// Refuse a second connection of the same account and role (split API / Event
    /// connections may coexist).
    fn check_free(&self, self_id: &str, role: Role) -> Result<(), String> {
        let bots = self.shared.bots.lock().expect("bots lock");
        match bots.get(self_id) {
            Some(bot) if bot.clashes(role) => {
                Err(format!("QQ account {self_id} is already connected"))
            }
            _ => Ok(()),
        }
    }

    fn register(&self, self_id: &str, role: Role, tx: mpsc::Sender<String>) -> Result<u64, String> {
        let mut bots = self.shared.bots.lock().expect("bots lock");
        let bot = bots.entry(self_id.to_string()).or_default();
        if bot.clashes(role) {
            return Err(format!("QQ account {self_id} is already connected"));
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        bot.conns.push(Conn { id, role, tx });
        drop(bots);
        self.shared.connected.notify_waiters();
        Ok(id)
    }

    fn unregister(&self, self_id: &str, conn_id: u64) {
        let mut bots = self.shared.bots.lock().expect("bots lock");
        if let Some(bot) = bots.get_mut(self_id) {
            bot.conns.retain(|c| c.id != conn_id);
        }
    }

    /// Read frames until the peer goes away or stays silent past the heartbeat timeout.
    async fn run_conn<S>(&self, self_id: String, role: Role, mut incoming: S, conn_id: u64)
    where
        S: futures_util::Stream<Item = Result<String, String>> + Unpin,
    {
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
            let v: Value = match serde_json::from_str(&frame) {
                Ok(v) => v,
                Err(e) => {
                    warn!(self_id = %self_id, error = %e, "qq: malformed frame ignored");
                    continue;
                }
            };
            if v.get("post_type").is_some() {
                if let Some(iv) = self.on_event(&self_id, &v) {
                    // heartbeat interval known: allow three missed beats
                    timeout = (iv * 3).max(Duration::from_secs(
                        self.shared.cfg.heartbeat_timeout_secs.min(15),
                    ));
                }
            } else if let Some(echo) = v.get("echo") {
                let key = match echo {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let waiter = self
                    .shared
                    .pending
                    .lock()
                    .expect("pending lock")
                    .remove(&key);
                match waiter {
                    Some(w) => {
                        let _ = w.send(v);
                    }
                    None => {
                        debug!(self_id = %self_id, echo = %key, "qq: response to an unknown action ignored")
                    }
                }
            } else {
                debug!(self_id = %self_id, role = ?role, "qq: frame of unknown kind ignored");
            }
        }
        self.unregister(&self_id, conn_id);
        info!(self_id = %self_id, role = ?role, "qq connection closed");
    }

    /// Handle one event; returns the heartbeat interval when the event announces one.
    fn on_event(&self, self_id: &str, v: &Value) -> Option<Duration> {
        match v.get("post_type").and_then(Value::as_str) {
            Some("meta_event") => {
                match v.get("meta_event_type").and_then(Value::as_str) {
                    Some("lifecycle") => {
                        let sub = v.get("sub_type").and_then(|x| x.as_str()).unwrap_or("");
                        info!(self_id, sub_type = sub, "qq lifecycle");
                    }
                    Some("heartbeat") => {
                        return v
                            .get("interval")
                            .and_then(Value::as_u64)
                            .filter(|&ms| ms > 0)
                            .map(Duration::from_millis);
                    }
                    _ => {}
                }
                None
            }
            Some("message") | Some("message_sent") => {
                self.on_message(self_id, v);
                None
            }
            _ => None, // notices and requests are not turns
        }
    }

    fn on_message(&self, self_id: &str, v: &Value) {
        let cfg = &self.shared.cfg;
        let id_of = |k: &str| match v.get(k) {
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let Some(user_id) = id_of("user_id") else {
            warn!(self_id, "qq: message without user_id ignored");
            return;
        };
        if user_id == self_id || v.get("post_type").and_then(Value::as_str) == Some("message_sent")
        {
            return; // our own messages
        }
        let message_id = id_of("message_id");
        let raw = v
            .get("message")
            .cloned()
            .or_else(|| v.get("raw_message").cloned())
            .unwrap_or(Value::Null);
        let segs = match message::parse_message(&raw) {
            Ok(s) => s,
            Err(e) => {
                warn!(self_id, error = %e, "qq: unreadable message ignored");
                return;
            }
        };
        let member = self
            .shared
            .kernel
            .config()
            .member_for(&user_id)
            .map(|m| m.id.clone());
        let (chat_id, target) = match v.get("message_type").and_then(Value::as_str) {
            Some("group") => {
                let Some(group_id) = id_of("group_id") else {
                    return;
                };
                if !allowed(&cfg.groups, &group_id, false) {
                    debug!(self_id, group = %group_id, "qq: group not allowed; ignored");
                    return;
                }
                let bot_msg = |id: &str| self.is_bot_message(self_id, id);
                if message::addressed(&segs, self_id, bot_msg) == Addressed::No {
                    return;
                }
                (
                    format!("group:{group_id}"),
                    Target::Group {
                        group_id,
                        reply_to: message_id,
                        user_id: user_id.clone(),
                    },
                )
            }
            Some("private") => {
                if !allowed(&cfg.private, &user_id, member.is_some()) {
                    info!(self_id, user = %user_id, "qq: private sender not allowed; denied");
                    return;
                }
                (
                    format!("private:{user_id}"),
                    Target::Private {
                        user_id: user_id.clone(),
                    },
                )
            }
            other => {
                debug!(self_id, kind = ?other, "qq: message type not handled");
                return;
            }
        };
        let text = message::plain_text(&segs, self_id);
        let speaker = member.clone().unwrap_or_else(|| format!("qq:{user_id}"));
        let may_switch = match (&target, cfg.mode_switch) {
            (Target::Private { .. }, _) => true,
            (_, QqSwitchPolicy::Any) => true,
            (_, QqSwitchPolicy::Members) => member.is_some(),
            (_, QqSwitchPolicy::Nobody) => false,
        };
        let reply = if text.is_empty() {
            PendingReply::Ready(Reply::ok("在的，请说。"))
        } else {
            let mut turn = Turn::new(CHANNEL, chat_id, speaker, text);
            turn.may_switch_modes = may_switch;
            // admitted now, at arrival: the chat's FIFO keeps QQ's order
            self.shared.kernel.submit(turn)
        };
        self.enqueue_delivery(self_id, target, reply);
    }

    /// Replies to one group or person go out through one queue, in arrival order, each
    /// completely (all its parts) before the next.
    fn enqueue_delivery(&self, self_id: &str, target: Target, reply: PendingReply) {
        let key = target.key();
        let job = Delivery {
            self_id: self_id.to_string(),
            target,
            reply,
            _guard: self.shared.kernel.hold_delivery(),
        };
        let mut queues = self.shared.deliveries.lock().expect("deliveries lock");
        let job = match queues.get(&key) {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                Err(mpsc::error::SendError(job)) => job,
            },
            None => job,
        };
        let (tx, mut rx) = mpsc::unbounded_channel::<Delivery>();
        tx.send(job).expect("the receiver is alive: created above");
        queues.insert(key.clone(), tx.clone());
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                match tokio::time::timeout(DELIVERY_IDLE, rx.recv()).await {
                    Ok(Some(d)) => {
                        let reply = d.reply.reply().await;
                        this.deliver(&d.self_id, &d.target, &reply.text).await;
                    }
                    Ok(None) => return,
                    Err(_) => {
                        // idle: retire this queue, unless a job slipped in meanwhile
                        // (enqueueing holds the same lock)
                        let mut queues = this.shared.deliveries.lock().expect("deliveries lock");
                        if rx.is_empty() {
                            if queues.get(&key).is_some_and(|t| t.same_channel(&tx)) {
                                queues.remove(&key);
                            }
                            return;
                        }
                    }
                }
            }
        });
    }

    fn is_bot_message(&self, self_id: &str, id: &str) -> bool {
        let bots = self.shared.bots.lock().expect("bots lock");
        bots.get(self_id).is_some_and(|b| b.sent_set.contains(id))
    }

    fn remember_sent(&self, self_id: &str, id: String) {
        let mut bots = self.shared.bots.lock().expect("bots lock");
        let bot = bots.entry(self_id.to_string()).or_default();
        if bot.sent_set.insert(id.clone()) {
            bot.sent.push_back(id);
            if bot.sent.len() > SENT_IDS_KEPT {
                if let Some(old) = bot.sent.pop_front() {
                    bot.sent_set.remove(&old);
                }
            }
        }
    }

    // ---- sending ---------------------------------------------------------------------

    /// Send a reply: flattened, split, throttled; in groups quoting and @-ing the sender.
    async fn deliver(&self, self_id: &str, target: &Target, text: &str) {
        let flat = crate::channels::text::flatten_markdown(text);
        let parts = crate::channels::text::split_reply(&flat, self.shared.cfg.max_reply_chars);
        for (i, part) in parts.iter().enumerate() {
            let (action, params, key) = match target {
                Target::Group {
                    group_id,
                    reply_to,
                    user_id,
                } => {
                    let mut segs = Vec::new();
                    if i == 0 {
                        if let Some(id) = reply_to {
                            let mut d = serde_json::Map::new();
                            d.insert("id".into(), Value::String(id.clone()));
                            segs.push(
                                Segment {
                                    kind: "reply".into(),
                                    data: d,
                                }
                                .to_json(),
                            );
                        }
                        segs.push(json!({"type": "at", "data": {"qq": user_id}}));
                        segs.push(Segment::text(&format!(" {part}")).to_json());
                    } else {
                        segs.push(Segment::text(part).to_json());
                    }
                    (
                        "send_group_msg",
                        json!({"group_id": numeric(group_id), "message": segs}),
                        format!("group:{group_id}"),
                    )
                }
                Target::Private { user_id } => (
                    "send_private_msg",
                    json!({"user_id": numeric(user_id), "message": [Segment::text(part).to_json()]}),
                    format!("private:{user_id}"),
                ),
            };
            self.throttle(&key).await;
            match self.call(self_id, action, params).await {
                Ok(data) => {
                    if let Some(id) = data.get("message_id") {
                        let id = match id {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        self.remember_sent(self_id, id);
                    }
                }
                Err(e) => {
                    warn!(self_id, target = %key, error = %e, "qq: reply undeliverable");
                    return;
                }
            }
        }
    }

    /// Space out sends to one target by `group_send_interval_ms`.
    async fn throttle(&self, key: &str) {
        let gap = Duration::from_millis(self.shared.cfg.send_interval_ms);
        let wait_until = {
            let mut next = self.shared.next_send.lock().expect("throttle lock");
            let now = Instant::now();
            let slot = next.get(key).copied().filter(|t| *t > now).unwrap_or(now);
            next.insert(key.to_string(), slot + gap);
            slot
        };
        tokio::time::sleep_until(wait_until.into()).await;
    }

    /// Call an action and wait for its response (matched by `echo`). Waits up to
    /// `reconnect_wait_secs` for a connection if there is none.
    pub async fn call(
        &self,
        self_id: &str,
        action: &str,
        params: Value,
    ) -> Result<Value, ActionError> {
        let cfg = &self.shared.cfg;
        let deadline = Instant::now() + Duration::from_secs(cfg.reconnect_wait_secs);
        let tx = loop {
            let notified = self.shared.connected.notified();
            if let Some(tx) = self.sender_for(self_id) {
                break tx;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ActionError::NotConnected(self_id.to_string()));
            }
            info!(
                self_id,
                action, "qq: no connection; waiting for the implementation to reconnect"
            );
            let _ = tokio::time::timeout(left, notified).await;
        };
        let echo = format!(
            "homebot-{}",
            self.shared.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (wtx, wrx) = oneshot::channel();
        self.shared
            .pending
            .lock()
            .expect("pending lock")
            .insert(echo.clone(), wtx);
        let frame = json!({"action": action, "params": params, "echo": echo}).to_string();
        if tx.send(frame).await.is_err() {
            self.shared
                .pending
                .lock()
                .expect("pending lock")
                .remove(&echo);
            return Err(ActionError::NotConnected(self_id.to_string()));
        }
        let secs = cfg.action_timeout_secs;
        let resp = match tokio::time::timeout(Duration::from_secs(secs), wrx).await {
            Ok(Ok(v)) => v,
            _ => {
                self.shared
                    .pending
                    .lock()
                    .expect("pending lock")
                    .remove(&echo);
                return Err(ActionError::Timeout {
                    action: action.into(),
                    secs,
                });
            }
        };
        let status = resp
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let retcode = resp.get("retcode").and_then(Value::as_i64).unwrap_or(-1);
        if status == "ok" || status == "async" || (status.is_empty() && retcode == 0) {
            Ok(resp.get("data").cloned().unwrap_or(Value::Null))
        } else {
            Err(ActionError::Failed {
                action: action.into(),
                status,
                retcode,
                msg: resp
                    .get("wording")
                    .or(resp.get("msg"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        }
    }

    fn sender_for(&self, self_id: &str) -> Option<mpsc::Sender<String>> {
        let bots = self.shared.bots.lock().expect("bots lock");
        let bot = bots.get(self_id)?;
        bot.conns
            .iter()
            .find(|c| c.role.sends_actions())
            .map(|c| c.tx.clone())
    }

    // ---- forward WebSocket -----------------------------------------------------------

    async fn forward_loop(self, url: String) {
        // a token may ride in the query string: never log it
        let shown = url.split('?').next().unwrap_or_default().to_string();
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut backoff = Duration::from_secs(1);
        let cancel = self.shared.cancel.clone();
        loop {
            let mut req = match url.as_str().into_client_request() {
                Ok(r) => r,
                Err(e) => {
                    warn!(url = %shown, error = %e, "qq forward WebSocket: bad URL; not connecting");
                    return;
                }
            };
            if let Some(t) = &self.shared.cfg.access_token {
                if let Ok(v) = format!("Bearer {}", t.expose()).parse() {
                    req.headers_mut().insert("authorization", v);
                }
            }
            match tokio_tungstenite::connect_async(req).await {
                Ok((ws, _)) => {
                    backoff = Duration::from_secs(1);
                    info!(url = %shown, "qq forward WebSocket connected");
                    self.run_forward(ws).await;
                    info!(url = %shown, "qq forward WebSocket disconnected");
                }
                Err(e) => {
                    warn!(url = %shown, error = %e, retry_secs = backoff.as_secs(), "qq forward WebSocket: cannot connect")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = cancel.cancelled() => return,
            }
            backoff = (backoff * 2).min(Duration::from_secs(30));
        }
    }

    async fn run_forward(
        &self,
        ws: tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
    ) {
        use tokio_tungstenite::tungstenite::Message as TMsg;
        let (mut sink, mut stream) = ws.split();
        // The self id is learned from the first event that names it.
        let mut first: Option<String> = None;
        let mut self_id = None;
        while self_id.is_none() {
            match tokio::time::timeout(
                Duration::from_secs(self.shared.cfg.heartbeat_timeout_secs),
                stream.next(),
            )
            .await
            {
                Ok(Some(Ok(TMsg::Text(t)))) => {
                    if let Ok(v) = serde_json::from_str::<Value>(&t) {
                        if let Some(id) = v.get("self_id").map(|x| match x {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        }) {
                            self_id = Some(id);
                            first = Some(t.to_string());
                        }
                    }
                }
                Ok(Some(Ok(_))) => {}
                _ => return,
            }
        }
        let self_id = self_id.expect("loop ends with a self id");
        let (tx, mut rx) = mpsc::channel::<String>(64);
        let conn_id = match self.register(&self_id, Role::Universal, tx) {
            Ok(id) => id,
            Err(e) => {
                warn!(error = %e, "qq forward WebSocket refused");
                return;
            }
        };
        tokio::spawn(async move {
            while let Some(frame) = rx.recv().await {
                if sink.send(TMsg::Text(frame)).await.is_err() {
                    break;
                }
            }
        });
        let incoming = futures_util::stream::iter(first.map(Ok))
            .chain(stream.filter_map(|m| async move {
                match m {
                    Ok(TMsg::Text(t)) => Some(Ok(t.to_string())),
                    Ok(TMsg::Close(_)) => Some(Err("closed".to_string())),
                    Ok(_) => None,
                    Err(e) => Some(Err(e.to_string())),
                }
            }))
            .boxed();
        self.run_conn(self_id, Role::Universal, incoming, conn_id)
            .await;
    }
}

struct Delivery {
    self_id: String,
    target: Target,
    reply: PendingReply,
    /// Keeps a graceful shutdown waiting until this reply has gone out.
    _guard: DeliveryGuard,
}

#[derive(Debug, Clone)]
enum Target {
    Group {
        group_id: String,
        reply_to: Option<String>,
        user_id: String,
    },
    Private {
        user_id: String,
    },
}

impl Target {
    fn key(&self) -> String {
        match self {
            Target::Group { group_id, .. } => format!("group:{group_id}"),
            Target::Private { user_id } => format!("private:{user_id}"),
        }
    }
}

/// Ids travel as numbers in OneBot; keep a string if it is not one.
fn numeric(id: &str) -> Value {
    id.parse::<u64>()
        .map(Value::from)
        .unwrap_or_else(|_| Value::String(id.into()))
}

fn allowed(p: &QqPolicy, id: &str, is_member: bool) -> bool {
    match p.policy {
        Access::Open => true,
        Access::Allowlist => is_member || p.allow.iter().any(|a| a == id),
        Access::Disabled => false,
    }
}

use crate::channels::auth::{presented_token, same_secret};

async fn ws_handler(
    State(ch): State<Qq>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let Some(self_id) = headers
        .get("x-self-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string)
    else {
        warn!("qq: connection without a valid X-Self-ID refused");
        return (StatusCode::UNAUTHORIZED, "X-Self-ID header required").into_response();
    };
    let Some(role) = Role::parse(headers.get("x-client-role").and_then(|v| v.to_str().ok())) else {
        return (
            StatusCode::BAD_REQUEST,
            "X-Client-Role must be Universal, API or Event",
        )
            .into_response();
    };
    if let Some(expected) = &ch.shared.cfg.access_token {
        match presented_token(&headers, &query, "access_token") {
            None => {
                warn!(self_id = %self_id, "qq: connection without an access token refused");
                return (StatusCode::UNAUTHORIZED, "access token required").into_response();
            }
            Some(t) if !same_secret(&t, expected.expose()) => {
                warn!(self_id = %self_id, "qq: connection with a wrong access token refused");
                return (StatusCode::FORBIDDEN, "wrong access token").into_response();
            }
            Some(_) => {}
        }
    }
    if let Err(e) = ch.check_free(&self_id, role) {
        warn!(self_id = %self_id, "qq: duplicate connection refused");
        return (StatusCode::FORBIDDEN, e).into_response();
    }
    // Registered only once the upgrade has happened: a handshake that dies halfway
    // must not leave a dead connection holding the account.
    let ch2 = ch.clone();
    ws.max_message_size(4 << 20)
        .on_upgrade(move |socket| async move { ch2.serve_socket(socket, self_id, role).await })
        .into_response()
}

impl Qq {
    async fn serve_socket(self, mut socket: WebSocket, self_id: String, role: Role) {
        let (tx, mut rx) = mpsc::channel::<String>(64);
        let conn_id = match self.register(&self_id, role, tx) {
            Ok(id) => id,
            Err(e) => {
                // lost a race with another connection of the same account
                warn!(self_id = %self_id, "qq: duplicate connection closed (1008)");
                let _ = socket
                    .send(WsMessage::Close(Some(axum::extract::ws::CloseFrame {
                        code: 1008,
                        reason: e.into(),
                    })))
                    .await;
                return;
            }
        };
        info!(self_id = %self_id, role = ?role, "qq: implementation connected");
        let (mut sink, stream) = socket.split();
        tokio::spawn(async move {
            while let Some(frame) = rx.recv().await {
                if sink.send(WsMessage::Text(frame)).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let incoming = stream
            .filter_map(|m| async move {
                match m {
                    Ok(WsMessage::Text(t)) => Some(Ok(t)),
                    Ok(WsMessage::Close(_)) => Some(Err("closed".to_string())),
                    Ok(_) => None,
                    Err(e) => Some(Err(e.to_string())),
                }
            })
            .boxed();
        self.run_conn(self_id, role, incoming, conn_id).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies() {
        let allow = QqPolicy {
            policy: Access::Allowlist,
            allow: vec!["1".into()],
        };
        assert!(allowed(&allow, "1", false));
        assert!(!allowed(&allow, "2", false));
        assert!(
            allowed(&allow, "2", true),
            "household members are known senders"
        );
        let off = QqPolicy {
            policy: Access::Disabled,
            allow: vec!["1".into()],
        };
        assert!(!allowed(&off, "1", true));
        let open = QqPolicy {
            policy: Access::Open,
            allow: vec![],
        };
        assert!(allowed(&open, "9", false));
    }
}
