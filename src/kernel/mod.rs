//! The kernel: starts the actors and is the one door channels use.
//!
//! `Kernel::start` opens the workspace, takes its lock (one owner per workspace, see
//! `lock`), loads the config and the mode registry, starts the ModeManager and the Cron
//! actor, each on its own thread (`actors`), and prepares the Provider and the Agent.
//!
//! Channels call [`Kernel::submit`] at arrival: the turn joins its chat's FIFO (see
//! `scheduler`) and runs in that chat's worker task — slash commands directly (see
//! `commands`), chat through begin-turn → agent → end-turn. The caller only waits for the
//! reply, so a caller that goes away (a dropped connection) cannot leave a turn begun but
//! never recorded.
//!
//! One turn's way through is in [`run_turn`].
//!
//! Lifecycle: chat workers and reply deliveries run on the `turns` [`TaskTracker`];
//! channel servers on the `services` tracker and stop when the [`CancellationToken`]
//! fires; background tasks (compactions, reminder deliveries, the listen-again, the heap
//! trim) and the actor threads are the [`Lifecycle`]'s. A graceful shutdown closes
//! admission (under the queue lock, so no turn slips in unseen), waits for `turns` up to
//! the grace period, then cancels the services and waits for them (the control socket
//! removes its file on the way out), cancels the background tasks and waits for them,
//! and stops the actor threads and joins them.

use crate::actor::Lifecycle;
use crate::agent::Agent;
use crate::clock::{SharedClock, SystemClock};
use crate::config::{Config, ConfigError, EnvOverrides};
use crate::cron::CronHandle;
use crate::lock::{LockError, WorkspaceLock};
use crate::modes::core::ModeError;
use crate::modes::{ModeCore, ModeRegistry, ModesHandle};
use crate::outbound::{DeliveryError, Doors};
use crate::prompt;
use crate::provider::Provider;
use crate::scheduler::{Admission, ChatQueues};
use crate::turn::{Failure, Refusal, Reply, Turn};
use crate::workspace::Workspace;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::{task_tracker::TaskTrackerToken, TaskTracker};
use tracing::{error, info, warn};

/// How long channel servers get to stop after they were cancelled.
const SERVICE_STOP: Duration = Duration::from_secs(5);
/// After the grace period, how long stopped turns get to record that they were stopped.
const STRAGGLER_RECORD: Duration = Duration::from_secs(3);

mod actors;
mod run_turn;
mod start;

use actors::{start_actors, CronParts};

pub use run_turn::{turn_outcome, CANCELLED};

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
    /// How reminder deliveries are retried (tests shorten it).
    pub reminder_retry: Option<crate::cron::RetryPolicy>,
}

struct Job {
    turn: Turn,
    /// Fires when the sender gives up on the turn (Ctrl-C in the terminal).
    cancel: CancellationToken,
    reply: oneshot::Sender<Reply>,
    /// Counted as waiting (`homebot_turns_waiting`) until it starts or is dropped.
    queued: crate::metrics::Queued,
}

pub struct KernelInner {
    cfg: Config,
    ws: Workspace,
    modes: ModesHandle,
    cron: CronHandle,
    registry: Arc<ModeRegistry>,
    agent: Agent,
    /// The household's agent strategy, pending plans and questions.
    strategies: crate::strategy::Strategies,
    clock: SharedClock,
    tz: chrono_tz::Tz,
    /// The actor threads and the background tasks the shutdown stops.
    lifecycle: Lifecycle,
    queues: Mutex<ChatQueues<Job>>,
    /// Chat workers and reply deliveries; closed when admission stops.
    turns: TaskTracker,
    /// Channel servers and the control socket.
    services: TaskTracker,
    /// Fires when the services must stop.
    cancel: CancellationToken,
    /// Fires when the grace period is over: turns still running stop and record that.
    stragglers: CancellationToken,
    doors: Arc<Doors>,
    /// The channels' links and since when (see [`crate::presence`]).
    presence: crate::presence::Presence,
    _lock: WorkspaceLock,
}

impl Drop for KernelInner {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.lifecycle.stop();
    }
}

#[derive(Clone)]
pub struct Kernel {
    inner: Arc<KernelInner>,
}

/// Held by a channel while it delivers a reply; a graceful shutdown waits for it.
pub struct DeliveryGuard(#[allow(dead_code)] TaskTrackerToken);

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
                    Failure::Internal,
                    "the turn's worker ended without a reply",
                )
            }),
        }
    }

    /// Whether this is an immediate refusal (queue full, shutting down) rather than a turn.
    pub fn is_refusal(&self) -> bool {
        matches!(self, PendingReply::Ready(r) if !r.is_answered())
    }
}

impl Kernel {
    pub fn downgrade(&self) -> Weak<KernelInner> {
        Arc::downgrade(&self.inner)
    }

    pub fn upgrade(w: &Weak<KernelInner>) -> Option<Self> {
        w.upgrade().map(|inner| Self { inner })
    }

    /// The outbound doors of the running channels.
    pub fn doors(&self) -> &Doors {
        &self.inner.doors
    }

    /// Deliver a proactive message through a running channel's door.
    pub async fn deliver(
        &self,
        channel: &str,
        target: &str,
        text: &str,
    ) -> Result<(), DeliveryError> {
        self.inner.doors.deliver(channel, target, text).await
    }

    /// Where channels report their connections, and readers see them.
    pub fn presence(&self) -> &crate::presence::Presence {
        &self.inner.presence
    }

    /// Fires when channel servers must stop (after admitted turns finished, or the grace
    /// period passed). Channels take a child of it.
    pub fn cancel_token(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    /// Where actor threads are started and background tasks spawned so that the
    /// shutdown stops, cancels and joins them (channels start their actors here).
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.inner.lifecycle
    }

    /// Run a channel server (or the control socket) as a tracked task: a graceful
    /// shutdown cancels it and waits (briefly) for it to finish.
    pub fn spawn_service<F>(&self, fut: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.inner.services.spawn(fut)
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
    /// The household's reminders (owned by the Cron actor).
    pub fn reminders(&self) -> &CronHandle {
        &self.inner.cron
    }
    pub fn registry(&self) -> &ModeRegistry {
        &self.inner.registry
    }
    pub fn provider(&self) -> &Provider {
        &self.inner.agent.provider
    }
    /// Scene memory.
    pub fn memory(&self) -> &crate::memory::Memory {
        &self.inner.agent.memory
    }
    pub fn timezone(&self) -> chrono_tz::Tz {
        self.inner.tz
    }

    /// Admit a turn to its chat's FIFO now (call this at arrival) and get its reply later.
    /// Refused at once when the chat's queue is full or the kernel is shutting down.
    pub fn submit(&self, turn: Turn) -> PendingReply {
        self.submit_cancellable(turn, CancellationToken::new())
    }

    /// [`Kernel::submit`], with a token the sender may cancel: the turn then stops where
    /// it is (the provider call is dropped), replies that it was cancelled, and is
    /// recorded as cancelled.
    pub fn submit_cancellable(&self, turn: Turn, cancel: CancellationToken) -> PendingReply {
        let inner = &self.inner;
        let key = turn.chat_key();
        let (tx, rx) = oneshot::channel();
        // Admission is checked and closed under the queue lock, so a shutdown never misses
        // a turn admitted at the same moment.
        let mut queues = inner.queues.lock().expect("queue lock is never poisoned");
        if inner.turns.is_closed() {
            crate::metrics::turn_refused(&turn.channel);
            return PendingReply::Ready(Reply::refused(
                "homebot 正在关闭，请稍后再说。(homebot is shutting down)",
                Refusal::ShuttingDown,
                "shutting down",
            ));
        }
        match queues.admit(
            &key,
            Job {
                turn,
                cancel,
                reply: tx,
                queued: crate::metrics::Queued::new(),
            },
        ) {
            Ok(admission) => {
                if admission == Admission::StartWorker {
                    let this = self.clone();
                    inner
                        .turns
                        .spawn(async move { this.chat_worker(key).await });
                }
                drop(queues);
                PendingReply::Waiting(rx)
            }
            Err(job) => {
                let waiting = queues.waiting(&key);
                drop(queues);
                warn!(chat = %key, waiting, "chat queue full; turn refused");
                crate::metrics::turn_refused(&job.turn.channel);
                drop(job);
                PendingReply::Ready(Reply::refused(
                    format!("消息太多了：这个对话里还有 {waiting} 条在排队，请等我回完再发。"),
                    Refusal::Busy,
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
            let counted = crate::metrics::turns_of(&job.turn.channel);
            let running = job.queued.start();
            let (turn, cancel) = (job.turn, job.cancel);
            // its own task: a panic in one turn becomes an error reply, not a dead chat
            let run = self
                .inner
                .turns
                .spawn(async move { this.run_turn(turn, cancel).await });
            let reply = match run.await {
                Ok(r) => r,
                Err(e) => {
                    error!(chat = %key, error = %e, "turn task failed");
                    Reply::failed(
                        "抱歉，处理这条消息时出错了。",
                        Failure::Internal,
                        e.to_string(),
                    )
                }
            };
            running.finish(&counted, turn_outcome(&reply));
            let _ = job.reply.send(reply);
        }
    }

    /// Graceful stop: admit nothing new, let admitted turns finish, record and be
    /// delivered (up to `grace`), then stop the channel servers and the actors. Returns
    /// whether everything finished in time.
    pub async fn shutdown_gracefully(&self, grace: Duration) -> bool {
        let inner = &self.inner;
        {
            let _queues = inner.queues.lock().expect("queue lock is never poisoned");
            inner.turns.close();
        }
        let clean = tokio::time::timeout(grace, inner.turns.wait())
            .await
            .is_ok();
        if !clean {
            warn!(
                tasks = inner.turns.len(),
                "shutdown deadline passed with turns still running; stopping them"
            );
            // they stop where they are, reply that, and are recorded as interrupted
            inner.stragglers.cancel();
            if tokio::time::timeout(STRAGGLER_RECORD, inner.turns.wait())
                .await
                .is_err()
            {
                warn!(tasks = inner.turns.len(), "turns did not stop in time");
            }
        }
        // the last turns' observations reach the database before the process ends
        let _ = tokio::time::timeout(SERVICE_STOP, inner.agent.memory.flush()).await;
        inner.cancel.cancel();
        inner.services.close();
        if tokio::time::timeout(SERVICE_STOP, inner.services.wait())
            .await
            .is_err()
        {
            warn!(
                services = inner.services.len(),
                "channel servers did not stop in time"
            );
        }
        // compactions, reminder deliveries, listen-agains: cancelled where they are
        if !inner.lifecycle.tasks().shutdown(SERVICE_STOP).await {
            warn!(
                tasks = inner.lifecycle.tasks().len(),
                "background tasks did not stop in time"
            );
        }
        // the usage and audit lines of the last calls reach the disk before the exit
        inner.agent.provider.flush().await;
        inner.lifecycle.join_threads(SERVICE_STOP).await;
        clean
    }

    /// Deliver a reply in a task of its own, counted with the turns: a graceful shutdown
    /// waits for it as for a turn.
    pub fn spawn_delivery<F>(&self, fut: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.inner.turns.spawn(fut)
    }

    /// Count a reply delivery in progress until the guard is dropped.
    pub fn hold_delivery(&self) -> DeliveryGuard {
        DeliveryGuard(self.inner.turns.token())
    }

    /// Whether new turns are admitted (false once a shutdown has begun).
    pub fn is_admitting(&self) -> bool {
        !self.inner.turns.is_closed()
    }

    /// Turns (chat workers) and deliveries still running.
    pub fn pending_turns(&self) -> usize {
        self.inner.turns.len()
    }

    /// Run a slash command as an allowed sender (see [`crate::commands`]).
    pub async fn command(&self, command: impl Into<crate::turn::Command>) -> Reply {
        crate::commands::run(&self.command_context(), command.into(), true).await
    }

    /// The status text (`/status`, `homebot status`).
    pub async fn status_text(&self) -> String {
        crate::commands::status_text(&self.command_context()).await
    }

    pub(crate) fn command_context(&self) -> crate::commands::Context<'_> {
        self.command_context_for(crate::cron::Scope::Household, true)
    }

    pub(crate) fn command_context_for(
        &self,
        scope: crate::cron::Scope,
        channel_details: bool,
    ) -> crate::commands::Context<'_> {
        let inner = &self.inner;
        crate::commands::Context {
            modes: &inner.modes,
            reminders: &inner.cron,
            scope,
            registry: &inner.registry,
            household: &inner.cfg.household.name,
            tz: inner.tz,
            provider: inner.agent.provider.summary(),
            provider_circuit: inner.agent.provider.circuit_line(),
            doors: inner.doors.names(),
            door_status: channel_details.then_some(&*inner.doors),
            strategies: &inner.strategies,
            who: None,
        }
    }

    /// The current time in the household's zone.
    pub fn now(&self) -> chrono::DateTime<chrono::FixedOffset> {
        self.inner
            .clock
            .now()
            .with_timezone(&self.inner.tz)
            .fixed_offset()
    }

    /// Stop the actor threads. In-flight calls to the ModeManager fail after this.
    pub fn shutdown(&self) {
        self.inner.lifecycle.stop_threads();
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
    if let Some(d) = crate::skills::builtin_dir(ws) {
        dirs.push(d);
    }
    dirs
}
