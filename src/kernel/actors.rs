//! The kernel's actor threads, started through the actor kit and registered with the
//! kernel's [`Lifecycle`]: the ModeManager on `homebot-modes`, the Cron actor on
//! `homebot-cron` (their handlers do file I/O and fsync; they never wait on the LLM, and
//! a `reminders.json` fsync never holds up a `begin_turn`), reached through their handles.

use super::KernelError;
use crate::actor::Lifecycle;
use crate::clock::SharedClock;
use crate::cron::{Cron, CronHandle, CronSetup};
use crate::modes::{ModeCore, ModeManager, ModesHandle};
use crate::outbound::Doors;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tracing::warn;

/// What the Cron actor needs besides the ModeManager.
pub(super) struct CronParts {
    pub(super) period: Duration,
    pub(super) tz: crate::zone::Zone,
    pub(super) path: PathBuf,
    pub(super) doors: Arc<Doors>,
    pub(super) retry: crate::cron::RetryPolicy,
}

/// Start the ModeManager and the Cron actor, each on its own thread registered with
/// `life`.
pub(super) fn start_actors(
    life: &Lifecycle,
    core: ModeCore,
    clock: SharedClock,
    parts: CronParts,
) -> Result<(ModesHandle, CronHandle), KernelError> {
    let failed = |e: std::io::Error| KernelError::Actors(e.to_string());
    let manager_clock = clock.clone();
    let modes = life
        .start_actor("homebot-modes", move || {
            ModeManager::new(core, manager_clock)
        })
        .map_err(failed)?;
    let modes = ModesHandle::new(modes);
    let setup = CronSetup {
        modes: modes.clone(),
        period: parts.period,
        clock,
        tz: parts.tz,
        path: parts.path,
        doors: parts.doors,
        retry: parts.retry,
        tasks: life.tasks().clone(),
    };
    let cron = life
        .start_actor("homebot-cron", move || {
            let (cron, warning) = Cron::new(setup);
            if let Some(w) = warning {
                warn!("{w}");
            }
            cron
        })
        .map_err(failed)?;
    Ok((modes, CronHandle::new(cron)))
}
