//! `Kernel`, the cheap handle the gateway holds, and what it owns (`KernelInner`): every
//! method of `Kernel` but its start (`start`) — the door turns come in by (`submit`), the
//! tasks and the shutdown, the accessors to the workspace, the config, the actors and the
//! doors, and the slash commands' context. The machinery behind them lives beside it:
//! `submit` (a chat's FIFO and worker), `turn_run` (one turn), `shutdown` (the drain).

use super::submit::Job;
use super::submit::PendingReply;
use crate::actor::{Group, Lifecycle, Tasks};
use crate::agent::Agent;
use crate::clock::SharedClock;
use crate::config::Config;
use crate::cron::CronHandle;
use crate::lock::WorkspaceLock;
use crate::modes::{ModeRegistry, ModesHandle};
use crate::outbound::{DeliveryError, Doors};
use crate::provider::Provider;
use crate::scheduler::ChatQueues;
use crate::turn::{Reply, Turn};
use crate::workspace::Workspace;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub struct KernelInner {
    pub(super) cfg: Config,
    pub(super) ws: Workspace,
    pub(super) modes: ModesHandle,
    pub(super) cron: CronHandle,
    pub(super) registry: Arc<ModeRegistry>,
    pub(super) agent: Agent,
    /// The household's agent strategy, pending plans and questions.
    pub(super) strategies: crate::strategy::Strategies,
    pub(super) clock: SharedClock,
    pub(super) tz: crate::zone::Zone,
    /// The actor threads and every task (turns, services, background) the shutdown
    /// stops.
    pub(super) lifecycle: Lifecycle,
    pub(super) queues: Mutex<ChatQueues<Job>>,
    pub(super) doors: Arc<Doors>,
    /// The channels' links and since when (see [`crate::presence`]).
    pub(super) presence: crate::presence::Presence,
    pub(super) _lock: WorkspaceLock,
}

impl Drop for KernelInner {
    fn drop(&mut self) {
        self.lifecycle.stop();
    }
}

#[derive(Clone)]
pub struct Kernel {
    pub(super) inner: Arc<KernelInner>,
}

impl Kernel {
    pub fn downgrade(&self) -> Weak<KernelInner> {
        Arc::downgrade(&self.inner)
    }

    pub fn upgrade(w: &Weak<KernelInner>) -> Option<Self> {
        w.upgrade().map(|inner| Self { inner })
    }

    /// Admit a turn to its chat's FIFO now (call this at arrival) and get its reply later.
    /// Refused at once when the chat's queue is full or the kernel is shutting down.
    pub fn submit(&self, turn: Turn) -> PendingReply {
        self.submit_cancellable(turn, CancellationToken::new())
    }

    /// [`Kernel::submit`], with a token the sender may cancel: the turn then stops where
    /// it is (the provider call is dropped), replies that it was cancelled, and is
    /// recorded as cancelled. The chat's worker runs it (see `submit`, `turn_run`).
    pub fn submit_cancellable(&self, turn: Turn, cancel: CancellationToken) -> PendingReply {
        super::submit::enqueue(self, turn, cancel)
    }

    /// Submit and wait: the whole turn, to its reply. Never fails: errors become a reply.
    pub async fn handle_turn(&self, turn: Turn) -> Reply {
        self.submit(turn).reply().await
    }

    /// Fires when channel servers must stop (after admitted turns finished, or the grace
    /// period passed): [`Group::Service`]'s token. Channels take a child of it.
    pub fn cancel_token(&self) -> CancellationToken {
        self.tasks().token(Group::Service)
    }

    /// Where actor threads are started (channels start their actors here); its
    /// [`Tasks`] are [`Kernel::tasks`].
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.inner.lifecycle
    }

    /// Every task of the gateway, by group: a turn's delivery
    /// (`spawn_in(Group::Turn, …)`, or `guard(Group::Turn)` while a connection sends a
    /// reply itself), a channel server (`Group::Service`), background work (`spawn`).
    /// The graceful shutdown drains them in that order.
    pub fn tasks(&self) -> &Tasks {
        self.inner.lifecycle.tasks()
    }

    /// Graceful stop: admit nothing new, let admitted turns finish, record and be
    /// delivered (up to `grace`), then stop the channel servers, the background tasks and
    /// the actors (see `shutdown`). Returns whether everything finished in time.
    pub async fn shutdown_gracefully(&self, grace: Duration) -> bool {
        super::shutdown::graceful(self, grace).await
    }

    /// Whether new turns are admitted (false once a shutdown has begun).
    pub fn is_admitting(&self) -> bool {
        !self.tasks().is_closed(Group::Turn)
    }

    /// Turns (chat workers) and deliveries still running.
    pub fn pending_turns(&self) -> usize {
        self.tasks().len(Group::Turn)
    }

    /// Stop the actor threads. In-flight calls to the ModeManager fail after this.
    pub fn shutdown(&self) {
        self.inner.lifecycle.stop_threads();
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
    pub fn timezone(&self) -> crate::zone::Zone {
        self.inner.tz
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
            turn: None,
            workspace: &inner.ws,
            calls: &inner.agent.provider,
            memory: &inner.agent.memory,
            language: inner.cfg.household.language,
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
}
