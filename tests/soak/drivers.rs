//! The soak's peers, each a loop of turns one after another, all at once: QQ chats over
//! one OneBot v11 reverse WebSocket (three groups and a private chat; every action
//! homebot calls is answered `ok`), a Home Assistant-like Wyoming client (a connection
//! per utterance), a native voice satellite on the voice WebSocket, and the control
//! socket (one JSON line per turn, as `homebot chat` speaks it). Turn numbers come from
//! one counter; each turn's tag tells the fake model what to do (see `fake`).

use crate::common::onebot::{text_of, OneBotSim};
use crate::common::wyoming::{Got, WyPeer};
use crate::fake::{tag, Fake};
use crate::stats::Collector;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// How long a driver waits for one reply before counting the turn as failed.
const REPLY_WAIT: Duration = Duration::from_secs(120);

/// What the drivers share.
pub struct Ctx {
    pub fake: Arc<Fake>,
    pub total: u64,
    next: AtomicU64,
    pub done: AtomicU64,
    pub stats: Collector,
    pub plan: Plan,
    /// Reminders that rang: on QQ, on the satellite.
    pub rings_qq: AtomicU64,
    pub rings_voice: AtomicU64,
    /// Whether cooking mode was entered last (by the control driver).
    in_mode: AtomicBool,
    pub turns_by_channel: Mutex<HashMap<&'static str, u64>>,
}

#[derive(Clone, Copy)]
pub struct Plan {
    /// Cooking mode is entered, then left, every this many turns.
    pub mode_every: u64,
    pub reminder_every: u64,
    pub memory_every: u64,
}

impl Ctx {
    pub fn new(fake: Arc<Fake>, total: u64, plan: Plan) -> Self {
        Ctx {
            fake,
            total,
            next: AtomicU64::new(0),
            done: AtomicU64::new(0),
            stats: Collector::default(),
            plan,
            rings_qq: AtomicU64::new(0),
            rings_voice: AtomicU64::new(0),
            in_mode: AtomicBool::new(false),
            turns_by_channel: Mutex::new(HashMap::new()),
        }
    }

    /// The next turn number, or `None` when all are handed out.
    fn claim(&self) -> Option<u64> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        (n < self.total).then_some(n)
    }

    /// What turn `n` asks for, on a peer that can (or cannot) hear a reminder ring.
    fn kind(&self, n: u64, rings: bool) -> char {
        if rings && n % self.plan.reminder_every == 7 {
            'r'
        } else if n % self.plan.memory_every == 3 {
            'm'
        } else {
            'c'
        }
    }

    /// Turn `n` ended after `started` with this reply (or failure).
    fn finish(
        &self,
        channel: &'static str,
        n: u64,
        started: Instant,
        reply: Result<String, String>,
    ) {
        let latency = started.elapsed();
        let fake = self.fake.take_spent(n);
        match reply {
            Ok(text) if text.contains(&format!("soak {n}")) => self.stats.turn(latency, fake),
            Ok(text) => self
                .stats
                .error(format!("turn {n} on {channel}: unexpected reply {text:?}")),
            Err(e) => self.stats.error(format!("turn {n} on {channel}: {e}")),
        }
        *self
            .turns_by_channel
            .lock()
            .unwrap()
            .entry(channel)
            .or_default() += 1;
        self.done.fetch_add(1, Ordering::SeqCst);
    }
}

fn words(n: u64, kind: char) -> String {
    let t = tag(n, kind);
    match kind {
        'r' => format!("{t} 一秒后提醒我关火"),
        'm' => format!("{t} 记住：我们家做菜少放盐"),
        'e' => format!("{t}，打开做饭模式"),
        'x' => format!("{t}，结束做饭模式"),
        _ => format!("{t} 番茄炒蛋先放蛋还是先放番茄？"),
    }
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(REPLY_WAIT, f)
        .await
        .map_err(|_| format!("no reply within {} s", REPLY_WAIT.as_secs()))
}

// ---- QQ ------------------------------------------------------------------------------

pub enum QqTarget {
    Group { group: u64, users: [u64; 3] },
    Private { user: u64 },
}

pub struct QqReq {
    group: Option<u64>,
    user: u64,
    text: String,
    reply: oneshot::Sender<String>,
}

/// The OneBot implementation's side: owns the connection, posts the drivers' messages,
/// answers every action, routes replies to their senders and counts reminders that rang.
pub fn qq_hub(
    mut sim: OneBotSim,
    ctx: Arc<Ctx>,
) -> (mpsc::Sender<QqReq>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<QqReq>(64);
    let task = tokio::spawn(async move {
        // a group reply quotes the message it answers; a private one goes to its user
        let mut by_message: HashMap<String, oneshot::Sender<String>> = HashMap::new();
        let mut by_user: HashMap<u64, oneshot::Sender<String>> = HashMap::new();
        let mut message_id: i64 = 1;
        let mut sent_id: i64 = 1_000_000_000;
        let mut beat = tokio::time::interval(Duration::from_secs(5));
        loop {
            tokio::select! {
                req = rx.recv() => {
                    let Some(req) = req else { continue };
                    message_id += 1;
                    match req.group {
                        Some(g) => {
                            by_message.insert(message_id.to_string(), req.reply);
                            let msg = json!([
                                {"type": "at", "data": {"qq": sim.self_id.to_string()}},
                                {"type": "text", "data": {"text": format!(" {}", req.text)}}
                            ]);
                            sim.group_msg(g, req.user, message_id, msg).await;
                        }
                        None => {
                            by_user.insert(req.user, req.reply);
                            let msg = json!([{"type": "text", "data": {"text": req.text}}]);
                            sim.private_msg(req.user, message_id, msg).await;
                        }
                    }
                }
                action = sim.next_action(Duration::from_millis(500)) => {
                    let Some(a) = action else { continue };
                    sent_id += 1;
                    sim.send(json!({"status": "ok", "retcode": 0,
                        "data": {"message_id": sent_id}, "echo": a["echo"].clone()})).await;
                    if !a["action"].as_str().unwrap_or_default().starts_with("send_") {
                        continue;
                    }
                    let text = text_of(&a);
                    if text.contains("提醒：") {
                        ctx.rings_qq.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    let quoted = a["params"]["message"]
                        .as_array()
                        .and_then(|segs| segs.iter().find(|s| s["type"] == "reply"))
                        .and_then(|s| s["data"]["id"].as_str().map(str::to_string));
                    let waiter = match quoted {
                        Some(id) => by_message.remove(&id),
                        None => a["params"]["user_id"].as_u64().and_then(|u| by_user.remove(&u)),
                    };
                    if let Some(w) = waiter {
                        let _ = w.send(text);
                    }
                }
                _ = beat.tick() => sim.heartbeat().await,
            }
        }
    });
    (tx, task)
}

/// One QQ chat: a group (its members take turns) or a private chat.
pub async fn qq_chat(ctx: Arc<Ctx>, hub: mpsc::Sender<QqReq>, target: QqTarget) {
    while let Some(n) = ctx.claim() {
        let kind = ctx.kind(n, true);
        let (group, user) = match &target {
            QqTarget::Group { group, users } => (Some(*group), users[(n % 3) as usize]),
            QqTarget::Private { user } => (None, *user),
        };
        let (tx, rx) = oneshot::channel();
        let started = Instant::now();
        let req = QqReq {
            group,
            user,
            text: words(n, kind),
            reply: tx,
        };
        let reply = match hub.send(req).await {
            Ok(()) => within(rx)
                .await
                .and_then(|r| r.map_err(|_| "the QQ hub dropped the turn".to_string())),
            Err(_) => Err("the QQ hub is gone".into()),
        };
        ctx.finish("qq", n, started, reply);
    }
}

// ---- voice: Wyoming ------------------------------------------------------------------

/// Home Assistant's side: a new connection per utterance, a conversation id per wake
/// of three utterances.
pub async fn wyoming(ctx: Arc<Ctx>, addr: String) {
    let mut mine = 0u64;
    while let Some(n) = ctx.claim() {
        let kind = ctx.kind(n, false);
        let conv = format!("conv-{}", mine / 3);
        mine += 1;
        let started = Instant::now();
        let reply = within(async {
            let mut p = WyPeer::connect(&addr).await;
            p.send(
                "transcript",
                json!({"text": words(n, kind), "language": "zh",
                       "context": {"conversation_id": conv, "satellite_id": "living-room"}}),
            )
            .await;
            match p.read(REPLY_WAIT).await {
                Got::Event(v) if v["type"] == "handled" => {
                    Ok(v["data"]["text"].as_str().unwrap_or_default().to_string())
                }
                Got::Event(v) => Err(format!("wyoming answered {v}")),
                other => Err(format!("wyoming: {other:?}")),
            }
        })
        .await
        .and_then(|r| r);
        ctx.finish("wyoming", n, started, reply);
    }
}

// ---- voice: the satellite WebSocket --------------------------------------------------

/// A kitchen satellite: one WebSocket, a session id per wake of three utterances;
/// reminders it set ring on it as `announce` frames.
pub async fn satellite(ctx: Arc<Ctx>, addr: String, token: String) {
    let sock = crate::common::satellite::satellite(&addr, "kitchen", &token).await;
    let (mut sink, mut stream) = sock.split();
    let waiting: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>> = Default::default();
    let reader = {
        let waiting = waiting.clone();
        let ctx = ctx.clone();
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.next().await {
                let Message::Text(t) = m else { continue };
                let Ok(v) = serde_json::from_str::<Value>(&t) else {
                    continue;
                };
                match v["type"].as_str() {
                    Some("announce") => {
                        ctx.rings_voice.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => {
                        let sid = v["session_id"].as_str().unwrap_or_default().to_string();
                        if let Some(w) = waiting.lock().unwrap().remove(&sid) {
                            let _ = w.send(v);
                        }
                    }
                }
            }
        })
    };
    let mut mine = 0u64;
    while let Some(n) = ctx.claim() {
        let kind = ctx.kind(n, true);
        let sid = format!("wake-{}", mine / 3);
        mine += 1;
        let (tx, rx) = oneshot::channel();
        waiting.lock().unwrap().insert(sid.clone(), tx);
        let started = Instant::now();
        let frame = json!({"type": "transcript", "session_id": sid, "satellite_id": "kitchen",
                           "speaker_id": "voice-profile-1", "text": words(n, kind)});
        let reply = match sink.send(Message::Text(frame.to_string())).await {
            Ok(()) => within(rx).await.and_then(|r| match r {
                Ok(v) if v["type"] == "reply" && v["error"] == false => {
                    Ok(v["text"].as_str().unwrap_or_default().to_string())
                }
                Ok(v) => Err(format!("satellite got {v}")),
                Err(_) => Err("the satellite connection closed".into()),
            }),
            Err(e) => Err(format!("satellite send: {e}")),
        };
        ctx.finish("voice-ws", n, started, reply);
    }
    // stay connected: reminders set near the end still ring here
    tokio::time::sleep(Duration::from_secs(3)).await;
    let _ = sink.close().await;
    reader.abort();
}

// ---- the control socket --------------------------------------------------------------

/// The terminal's turns through `control.sock` (the protocol `homebot chat` speaks); it
/// also enters cooking mode and leaves it, every `plan.mode_every` turns.
pub async fn control(ctx: Arc<Ctx>, socket: PathBuf) {
    let mut conn = None;
    let mut phase = 0u64;
    while let Some(n) = ctx.claim() {
        let want = (n / ctx.plan.mode_every) % 2 == 1;
        let kind = if n / ctx.plan.mode_every != phase && want != ctx.in_mode.load(Ordering::SeqCst)
        {
            phase = n / ctx.plan.mode_every;
            ctx.in_mode.store(want, Ordering::SeqCst);
            if want {
                'e'
            } else {
                'x'
            }
        } else {
            ctx.kind(n, false)
        };
        let started = Instant::now();
        let line = json!({"op": "turn", "channel": "cli", "chat_id": "local",
                          "speaker_id": "mom", "text": words(n, kind)});
        let reply = within(request(&mut conn, &socket, &line))
            .await
            .and_then(|r| r);
        ctx.finish("control", n, started, reply);
    }
}

type Conn = (
    BufReader<tokio::net::unix::OwnedReadHalf>,
    tokio::net::unix::OwnedWriteHalf,
);

async fn request(
    conn: &mut Option<Conn>,
    socket: &PathBuf,
    line: &Value,
) -> Result<String, String> {
    if conn.is_none() {
        let s = tokio::net::UnixStream::connect(socket)
            .await
            .map_err(|e| format!("control socket: {e}"))?;
        let (r, w) = s.into_split();
        *conn = Some((BufReader::new(r), w));
    }
    let (r, w) = conn.as_mut().unwrap();
    let mut bytes = line.to_string().into_bytes();
    bytes.push(b'\n');
    let mut resp = String::new();
    let got = async {
        w.write_all(&bytes).await?;
        r.read_line(&mut resp).await
    }
    .await;
    match got {
        Ok(n) if n > 0 => {
            let v: Value =
                serde_json::from_str(&resp).map_err(|e| format!("control reply: {e}"))?;
            match v["outcome"]["kind"].as_str() {
                Some("answered") => Ok(v["text"].as_str().unwrap_or_default().to_string()),
                _ => Err(format!(
                    "control turn not answered: {}: {}",
                    v["outcome"], v["text"]
                )),
            }
        }
        other => {
            *conn = None;
            Err(format!("control connection lost: {other:?}"))
        }
    }
}
