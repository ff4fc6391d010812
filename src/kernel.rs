//! The kernel: starts the actors and is the one door channels use.
//!
//! `Kernel::start` opens the workspace, takes its lock (one owner per workspace, see
//! `control`), loads the config and the mode registry, starts the ModeManager and Cron
//! actors on their own arbiter thread, and prepares the Provider and the Agent.
//!
//! Channels call [`Kernel::submit`] at arrival: the turn joins its chat's FIFO (see
//! `scheduler`) and runs in that chat's worker task — slash commands directly, chat
//! through begin-turn → agent → end-turn. The caller only waits for the reply, so a caller
//! that goes away (a dropped connection) cannot leave a turn begun but never recorded.

use crate::agent::{Agent, AgentOutcome};
use crate::clock::{SharedClock, SystemClock};
use crate::config::{Config, ConfigError, EnvOverrides};
use crate::control::{LockError, WorkspaceLock};
use crate::cron::Cron;
use crate::modes::core::{ModeError, TurnMeta};
use crate::modes::switch::SwitchAction;
use crate::modes::{ModeCore, ModeManager, ModeRegistry, ModesHandle, Record};
use crate::prompt::{self, TailInfo};
use crate::provider::Provider;
use crate::scheduler::{Admission, ChatQueues};
use crate::turn::{Reply, Turn};
use crate::workspace::Workspace;
use actix::Actor;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tracing::{error, info, warn};

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("workspace {path}: {source}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("mode state: {0}")]
    Modes(#[from] ModeError),
    #[error("provider: {0}")]
    Provider(#[from] crate::provider::ProviderError),
    #[error("could not start the actor system: {0}")]
    Actors(String),
    #[error(transparent)]
    Locked(#[from] LockError),
}

/// Knobs for embedding and tests; `Default` is what `homebot` itself uses.
#[derive(Default)]
pub struct KernelOptions {
    pub clock: Option<SharedClock>,
    /// Use this provider instead of the configured one.
    pub provider: Option<Provider>,
    /// Environment overrides; `None` reads the process environment.
    pub env: Option<EnvOverrides>,
    /// Override `cron.expiry_check_secs`.
    pub expiry_period: Option<Duration>,
    /// Skill folders to use instead of the default search path.
    pub skills_dirs: Option<Vec<PathBuf>>,
    /// How long to wait for the workspace lock (a previous owner shutting down).
    pub lock_wait: Option<Duration>,
}

/// A channel's door for proactive messages (timers, announcements).
#[async_trait::async_trait]
pub trait Outbound: Send + Sync {
    /// Deliver `text` to `target` (a satellite id, a chat id …) without a user turn.
    async fn announce(&self, target: &str, text: &str) -> Result<(), String>;
}

struct Job {
    turn: Turn,
    reply: oneshot::Sender<Reply>,
}

pub struct KernelInner {
    cfg: Config,
    ws: Workspace,
    modes: ModesHandle,
    agent: Agent,
    clock: SharedClock,
    tz: chrono_tz::Tz,
    system: actix::System,
    queues: Mutex<ChatQueues<Job>>,
    admitting: AtomicBool,
    /// Turns admitted and not yet answered.
    pending: AtomicUsize,
    /// Replies being delivered by channels (see [`DeliveryGuard`]).
    delivering: Arc<AtomicUsize>,
    stop_tx: watch::Sender<bool>,
    outbound: Mutex<std::collections::HashMap<String, Arc<dyn Outbound>>>,
    _lock: WorkspaceLock,
}

impl Drop for KernelInner {
    fn drop(&mut self) {
        let _ = self.stop_tx.send(true);
        self.system.stop();
    }
}

#[derive(Clone)]
pub struct Kernel {
    inner: Arc<KernelInner>,
}

/// Held by a channel while it delivers a reply; a graceful shutdown waits for it.
pub struct DeliveryGuard(Arc<AtomicUsize>);

impl Drop for DeliveryGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A reply on its way: refused at once, or waiting for the chat's worker.
pub enum PendingReply {
    Ready(Reply),
    Waiting(oneshot::Receiver<Reply>),
}

impl PendingReply {
    pub async fn reply(self) -> Reply {
        match self {
            PendingReply::Ready(r) => r,
            PendingReply::Waiting(rx) => rx.await.unwrap_or_else(|_| {
                Reply::failed(
                    "抱歉，处理这条消息时出错了。",
                    "the turn's worker ended without a reply",
                )
            }),
        }
    }
}

/// Ends a begun turn even if its task is cancelled or panics, so the ModeManager never
/// waits forever for it (a pending exit would otherwise never archive).
struct TurnGuard {
    modes: ModesHandle,
    turn_id: u64,
    record: Option<Record>,
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        if let Some(mut r) = self.record.take() {
            r.assistant = "（这一轮处理中断了。）".into();
            r.error = Some("turn aborted before it finished".into());
            self.modes.end_turn_detached(self.turn_id, r);
        }
    }
}

impl Kernel {
    pub fn start(root: &Path, opts: KernelOptions) -> Result<Self, KernelError> {
        let ws = Workspace::open(root).map_err(|source| KernelError::Workspace {
            path: root.to_path_buf(),
            source,
        })?;
        let lock =
            WorkspaceLock::acquire(ws.root(), opts.lock_wait.unwrap_or(Duration::from_secs(2)))?;
        let mut cfg = Config::load_or_init(ws.root())?;
        let env = opts.env.unwrap_or_else(EnvOverrides::from_env);
        cfg.apply_env(&env)?;
        let tz = cfg.timezone();
        let clock = opts.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let dirs = opts
            .skills_dirs
            .unwrap_or_else(|| skill_search_path(&ws, &cfg));
        let registry = Arc::new(ModeRegistry::load(&dirs));
        let provider = match opts.provider {
            Some(p) => p,
            None => match cfg.resolve_provider(&env) {
                Some(r) => {
                    info!(base_url = %r.base_url, model = %r.model, "provider configured");
                    Provider::from_config(&r, ws.usage_log())?
                }
                None => {
                    info!("no LLM provider configured; chat turns will explain how to set one");
                    Provider::unconfigured()
                }
            },
        };
        let extra = std::fs::read_to_string(ws.system_extra()).ok();
        let base = prompt::base_system_prompt(&cfg.household.name, &registry, extra.as_deref());
        let files = Arc::new(file_access(&ws, &registry));
        let tools = crate::tools::definitions(&registry.ids(), &files.writable_names());
        let core = ModeCore::open(ws.clone(), registry, tz, clock.now())?;
        let period = opts
            .expiry_period
            .unwrap_or(Duration::from_secs(cfg.cron.expiry_check_secs));
        let (modes, system) = start_actors(core, clock.clone(), period)?;
        let agent = Agent {
            provider,
            base_prompt: base.into(),
            tools,
            max_tool_rounds: cfg.agent.max_tool_rounds,
            normal_history_turns: cfg.agent.normal_history_turns,
            files,
        };
        let queue_cap = cfg.agent.max_queued_per_chat;
        Ok(Self {
            inner: Arc::new(KernelInner {
                cfg,
                ws,
                modes,
                agent,
                clock,
                tz,
                system,
                queues: Mutex::new(ChatQueues::new(queue_cap)),
                admitting: AtomicBool::new(true),
                pending: AtomicUsize::new(0),
                delivering: Arc::new(AtomicUsize::new(0)),
                stop_tx: watch::channel(false).0,
                outbound: Mutex::new(Default::default()),
                _lock: lock,
            }),
        })
    }

    pub fn downgrade(&self) -> Weak<KernelInner> {
        Arc::downgrade(&self.inner)
    }

    pub fn upgrade(w: &Weak<KernelInner>) -> Option<Self> {
        w.upgrade().map(|inner| Self { inner })
    }

    /// A running channel offers proactive delivery under its name.
    pub fn register_outbound(&self, channel: &str, door: Arc<dyn Outbound>) {
        self.inner
            .outbound
            .lock()
            .expect("outbound lock is never poisoned")
            .insert(channel.to_string(), door);
    }

    /// Deliver a proactive message through a running channel.
    pub async fn announce(&self, channel: &str, target: &str, text: &str) -> Result<(), String> {
        let door = self
            .inner
            .outbound
            .lock()
            .expect("outbound lock is never poisoned")
            .get(channel)
            .cloned();
        match door {
            Some(d) => d.announce(target, text).await,
            None => Err(format!(
                "channel {channel:?} is not running in this process"
            )),
        }
    }

    /// Fires when the kernel stops (for servers such as the control socket).
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.inner.stop_tx.subscribe()
    }

    pub fn workspace(&self) -> &Workspace {
        &self.inner.ws
    }
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }
    pub fn modes(&self) -> &ModesHandle {
        &self.inner.modes
    }

    /// Admit a turn to its chat's FIFO now (call this at arrival) and get its reply later.
    /// Refused at once when the chat's queue is full or the kernel is shutting down.
    pub fn submit(&self, turn: Turn) -> PendingReply {
        let inner = &self.inner;
        let key = turn.chat_key();
        let (tx, rx) = oneshot::channel();
        // `admitting` is read and flipped under the queue lock, so a shutdown never
        // misses a turn admitted at the same moment
        let mut queues = inner.queues.lock().expect("queue lock is never poisoned");
        if !inner.admitting.load(Ordering::SeqCst) {
            return PendingReply::Ready(Reply::failed(
                "homebot 正在关闭，请稍后再说。(homebot is shutting down)",
                "shutting down",
            ));
        }
        match queues.admit(&key, Job { turn, reply: tx }) {
            Ok(admission) => {
                inner.pending.fetch_add(1, Ordering::SeqCst);
                drop(queues);
                if admission == Admission::StartWorker {
                    let this = self.clone();
                    tokio::spawn(async move { this.chat_worker(key).await });
                }
                PendingReply::Waiting(rx)
            }
            Err(job) => {
                let waiting = queues.waiting(&key);
                drop(queues);
                warn!(chat = %key, waiting, "chat queue full; turn refused");
                drop(job);
                PendingReply::Ready(Reply::failed(
                    format!("消息太多了：这个对话里还有 {waiting} 条在排队，请等我回完再发。"),
                    format!("chat queue full ({waiting} waiting)"),
                ))
            }
        }
    }

    /// Submit and wait: the whole turn, to its reply. Never fails: errors become a reply.
    pub async fn handle_turn(&self, turn: Turn) -> Reply {
        self.submit(turn).reply().await
    }

    /// The one worker of a chat: runs its turns strictly one after another.
    async fn chat_worker(self, key: String) {
        loop {
            let job = self
                .inner
                .queues
                .lock()
                .expect("queue lock is never poisoned")
                .next(&key);
            let Some(job) = job else { break };
            let this = self.clone();
            let turn = job.turn;
            // its own task: a panic in one turn becomes an error reply, not a dead chat
            let reply = match tokio::spawn(async move { this.run_turn(turn).await }).await {
                Ok(r) => r,
                Err(e) => {
                    error!(chat = %key, error = %e, "turn task failed");
                    Reply::failed("抱歉，处理这条消息时出错了。", e.to_string())
                }
            };
            let _ = job.reply.send(reply);
            self.inner.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Graceful stop: admit nothing new, let admitted turns finish and record (up to
    /// `deadline`), then stop the actors. Returns whether everything finished in time.
    pub async fn shutdown_gracefully(&self, deadline: Duration) -> bool {
        {
            let _queues = self
                .inner
                .queues
                .lock()
                .expect("queue lock is never poisoned");
            self.inner.admitting.store(false, Ordering::SeqCst);
        }
        let end = tokio::time::Instant::now() + deadline;
        let mut clean = true;
        loop {
            let left = self.inner.pending.load(Ordering::SeqCst)
                + self.inner.delivering.load(Ordering::SeqCst);
            if left == 0 {
                break;
            }
            if tokio::time::Instant::now() >= end {
                warn!(
                    turns = left,
                    "shutdown deadline passed with turns still running"
                );
                clean = false;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = self.inner.stop_tx.send(true);
        // We hold the workspace lock, so the control socket is ours to remove now rather
        // than leave it to a server task that may not run again before the process exits.
        let _ = std::fs::remove_file(crate::control::socket_path(self.inner.ws.root()));
        self.shutdown();
        clean
    }

    /// Count a reply delivery in progress until the guard is dropped.
    pub fn hold_delivery(&self) -> DeliveryGuard {
        self.inner.delivering.fetch_add(1, Ordering::SeqCst);
        DeliveryGuard(self.inner.delivering.clone())
    }

    /// Turns admitted and not yet answered.
    pub fn pending_turns(&self) -> usize {
        self.inner.pending.load(Ordering::SeqCst)
    }

    async fn run_turn(&self, turn: Turn) -> Reply {
        let text = turn.text.trim();
        if text.is_empty() {
            return Reply::failed("（收到一条空消息。）", "empty message");
        }
        let max = self.inner.cfg.agent.max_message_chars;
        let len = text.chars().count();
        if len > max {
            return Reply::failed(
                format!("消息太长了（{len} 字），上限是 {max} 字，请分几次说。"),
                format!("message of {len} characters exceeds the limit of {max}"),
            );
        }
        if text.starts_with('/') {
            return self.command_as(text, turn.may_switch_modes).await;
        }
        let inner = &self.inner;
        let meta = TurnMeta {
            channel: turn.channel.clone(),
            chat_id: turn.chat_id.clone(),
            speaker_id: turn.speaker_id.clone(),
        };
        let ticket = match inner.modes.begin_turn(meta).await {
            Ok(t) => t,
            Err(e) => return Reply::failed("抱歉，系统正在关闭，请稍后再试。", e.to_string()),
        };
        let mut guard = TurnGuard {
            modes: inner.modes.clone(),
            turn_id: ticket.turn_id,
            record: Some(Record {
                timestamp: ticket
                    .began_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
                channel: turn.channel.clone(),
                chat_id: turn.chat_id.clone(),
                speaker_id: turn.speaker_id.clone(),
                user: text.to_string(),
                assistant: String::new(),
                error: None,
            }),
        };
        let member = inner.cfg.member_for(&turn.speaker_id);
        let profile = match (&ticket.mode, member) {
            (None, Some(m)) => std::fs::read_to_string(inner.ws.user_profile(&m.id)).ok(),
            _ => None,
        };
        let tail = TailInfo {
            now: ticket.began_at,
            channel: &turn.channel,
            chat_id: &turn.chat_id,
            speaker_id: &turn.speaker_id,
            speaker_name: member.and_then(|m| m.name.as_deref()),
            channel_hint: turn.reply_hint.as_deref(),
            workspace: inner.ws.root(),
        };
        let limit = Duration::from_secs(inner.cfg.agent.turn_timeout_secs);
        let outcome = match tokio::time::timeout(
            limit,
            inner.agent.run(
                &ticket,
                &tail,
                profile.as_deref(),
                text,
                turn.may_switch_modes,
                &inner.modes,
            ),
        )
        .await
        {
            Ok(o) => o,
            Err(_) => {
                warn!(channel = %turn.channel, chat = %turn.chat_id, secs = limit.as_secs(), "turn watchdog fired");
                AgentOutcome {
                    reply: "抱歉，这次处理时间太长，已经停止了，请再说一次。".into(),
                    error: Some(format!("turn exceeded {} s", limit.as_secs())),
                }
            }
        };
        let mut record = guard
            .record
            .take()
            .expect("the guard holds the record until here");
        record.assistant = outcome.reply.clone();
        record.error = outcome.error.clone();
        match inner.modes.end_turn(ticket.turn_id, record).await {
            Ok(o) => {
                if let Some(sid) = o.recorded_in {
                    tracing::debug!(session = %sid, "turn recorded in mode session");
                }
            }
            Err(e) => error!(error = %e, "turn could not be recorded"),
        }
        Reply {
            text: outcome.reply,
            error: outcome.error,
        }
    }

    /// Slash commands: `/mode enter <id>`, `/mode exit [id]`, `/mode status`, `/status`,
    /// `/help`. They change or show state without the LLM and are not recorded.
    pub async fn command(&self, text: &str) -> Reply {
        self.command_as(text, true).await
    }

    async fn command_as(&self, text: &str, may_switch: bool) -> Reply {
        let words: Vec<&str> = text.split_whitespace().collect();
        if !may_switch && matches!(words.as_slice(), ["/mode", "enter" | "exit", ..]) {
            return Reply::failed(
                "你在这里没有切换模式的权限。(not allowed to switch modes here)",
                "mode switch not permitted for this sender",
            );
        }
        let modes = &self.inner.modes;
        let result = match words.as_slice() {
            ["/mode", "enter", id] => {
                modes
                    .switch(SwitchAction::Enter, Some(id.to_string()), None, None)
                    .await
            }
            ["/mode", "enter"] => Err("用法: /mode enter <mode_id>".to_string()),
            ["/mode", "exit"] => modes.switch(SwitchAction::Exit, None, None, None).await,
            ["/mode", "exit", id] => {
                modes
                    .switch(SwitchAction::Exit, Some(id.to_string()), None, None)
                    .await
            }
            ["/mode"] | ["/mode", "status"] | ["/status"] => Ok(self.status_text().await),
            _ => Ok(HELP.to_string()),
        };
        match result {
            Ok(t) => Reply::ok(t),
            Err(t) => Reply::failed(t.clone(), t),
        }
    }

    pub async fn status_text(&self) -> String {
        let inner = &self.inner;
        let st = match inner.modes.status().await {
            Ok(s) => s,
            Err(e) => return format!("status unavailable: {e}"),
        };
        let a = &st.action;
        let mut out = format!("homebot · {} · {}\n", inner.cfg.household.name, inner.tz);
        if a.active {
            out.push_str(&format!(
                "模式: {} ({}) 活动中{} · 会话 {} · 开始 {} · 到期 {} · 已记录 {} 轮\n",
                a.display_name.as_deref().unwrap_or("?"),
                a.mode_id.as_deref().unwrap_or("?"),
                if st.exiting { "（正在结束）" } else { "" },
                a.session_id.as_deref().unwrap_or("?"),
                a.started_at.as_deref().unwrap_or("?"),
                a.expires_at.as_deref().unwrap_or("?"),
                st.turns_recorded
            ));
        } else {
            out.push_str(&format!(
                "模式: 无活动模式（上次结束原因: {}）\n",
                a.exit_reason.as_deref().unwrap_or("—")
            ));
        }
        let modes: Vec<String> = st
            .modes
            .iter()
            .map(|(id, name)| format!("{name} ({id})"))
            .collect();
        out.push_str(&format!(
            "可用模式: {}\n",
            if modes.is_empty() {
                "—".into()
            } else {
                modes.join(", ")
            }
        ));
        out.push_str(&format!(
            "模型: {}\n",
            inner
                .agent
                .provider
                .model_name()
                .unwrap_or("未配置 (not configured)")
        ));
        out.push_str(&format!("进行中的轮次: {}\n", st.in_flight));
        for w in &st.warnings {
            out.push_str(&format!("警告: {w}\n"));
        }
        out
    }

    /// The current time in the household's zone.
    pub fn now(&self) -> chrono::DateTime<chrono::FixedOffset> {
        self.inner
            .clock
            .now()
            .with_timezone(&self.inner.tz)
            .fixed_offset()
    }

    /// Stop the actor system. In-flight calls to the ModeManager fail after this.
    pub fn shutdown(&self) {
        self.inner.system.stop();
    }
}

const HELP: &str = "命令:\n  /mode enter <mode_id>  进入模式\n  /mode exit             退出当前模式\n  /mode status | /status 查看状态\n  /help                  本帮助";

/// What the file tools may touch: `notes/` and the plugins' writable folders for
/// writing; the registered skill folders (wherever they are) for reading.
fn file_access(ws: &Workspace, registry: &ModeRegistry) -> crate::tools::FileAccess {
    let mut writable = vec![ws.root().join("notes")];
    let mut readable_outside = Vec::new();
    for m in registry.modes() {
        let ctx = crate::modes::plugin::PluginContext {
            workspace: ws,
            manifest: &m.manifest,
            skill_dir: &m.skill_dir,
            skill_name: &m.skill_name,
        };
        writable.extend(m.plugin.writable_dirs(&ctx));
        readable_outside.push(m.skill_dir.clone());
    }
    for s in registry.skills() {
        if let Some(d) = s.path.parent() {
            readable_outside.push(d.to_path_buf());
        }
    }
    let readable_outside = readable_outside
        .into_iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        // inside the workspace the zone rules apply; a folder holding the workspace
        // would open all of it
        .filter(|d| !d.starts_with(ws.root()) && !ws.root().starts_with(d))
        .collect();
    crate::tools::FileAccess {
        root: ws.root().to_path_buf(),
        writable,
        readable_outside,
    }
}

/// Skill folders, first wins: the workspace's own, configured ones, `$HOMEBOT_SKILLS_DIR`,
/// then the skills shipped with homebot.
pub fn skill_search_path(ws: &Workspace, cfg: &Config) -> Vec<PathBuf> {
    let mut dirs = vec![ws.skills_dir()];
    dirs.extend(cfg.skills.dirs.iter().cloned());
    if let Ok(d) = std::env::var("HOMEBOT_SKILLS_DIR") {
        dirs.push(PathBuf::from(d));
    }
    if let Some(d) = crate::skills::builtin_dir(ws.root()) {
        dirs.push(d);
    }
    dirs
}

/// Start the ModeManager and Cron actors on a dedicated arbiter thread.
fn start_actors(
    core: ModeCore,
    clock: SharedClock,
    period: Duration,
) -> Result<(ModesHandle, actix::System), KernelError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("homebot-actors".into())
        .spawn(move || {
            let sys = actix::System::new();
            sys.block_on(async move {
                let addr = ModeManager::new(core, clock).start();
                let modes = ModesHandle::new(addr);
                Cron::new(modes.clone(), period).start();
                let _ = tx.send((modes, actix::System::current()));
            });
            if let Err(e) = sys.run() {
                error!(error = %e, "actor system stopped with an error");
            }
        })
        .map_err(|e| KernelError::Actors(e.to_string()))?;
    rx.recv()
        .map_err(|_| KernelError::Actors("the actor thread exited during start".into()))
}
