//! `Kernel`, the cheap handle every channel holds, and what it owns (`KernelInner`): the
//! accessors to the workspace, the config, the actors and the doors, and the slash commands'
//! context.

use super::submit::Job;
use crate::actor::Lifecycle;
use crate::agent::Agent;
use crate::clock::SharedClock;
use crate::config::Config;
use crate::cron::CronHandle;
use crate::lock::WorkspaceLock;
use crate::modes::{ModeRegistry, ModesHandle};
use crate::outbound::{DeliveryError, Doors};
use crate::provider::Provider;
use crate::scheduler::ChatQueues;
use crate::turn::Reply;
use crate::workspace::Workspace;
use std::sync::{Arc, Mutex, Weak};

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
