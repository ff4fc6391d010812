//! The actor threads: the ModeManager on one dedicated actix system thread, the Cron
//! actor on an arbiter (thread) of its own in the same system (their handlers do file
//! I/O and fsync; they never wait on the LLM), reached through their handles.

use super::KernelError;
use crate::clock::SharedClock;
use crate::cron::{Cron, CronHandle, CronSetup};
use crate::modes::{ModeCore, ModeManager, ModesHandle};
use crate::outbound::Doors;
use actix::Actor;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tracing::{error, warn};

/// What the Cron actor needs besides the ModeManager.
pub(super) struct CronParts {
    pub(super) period: Duration,
    pub(super) tz: chrono_tz::Tz,
    pub(super) path: PathBuf,
    pub(super) doors: Arc<Doors>,
    pub(super) retry: crate::cron::RetryPolicy,
}

/// Start the ModeManager and Cron actors on a dedicated arbiter thread.
pub(super) fn start_actors(
    core: ModeCore,
    clock: SharedClock,
    parts: CronParts,
) -> Result<(ModesHandle, CronHandle, actix::System), KernelError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("homebot-actors".into())
        .spawn(move || {
            let sys = actix::System::new();
            sys.block_on(async move {
                let addr = ModeManager::new(core, clock.clone()).start();
                let modes = ModesHandle::new(addr);
                let setup = CronSetup {
                    modes: modes.clone(),
                    period: parts.period,
                    clock,
                    tz: parts.tz,
                    path: parts.path,
                    doors: parts.doors,
                    retry: parts.retry,
                };
                // Cron on an arbiter of its own: a `reminders.json` fsync never holds up
                // the ModeManager's `begin_turn` (the system's stop stops it too)
                let arbiter = actix::Arbiter::new();
                let cron = Cron::start_in_arbiter(&arbiter.handle(), move |_| {
                    let (cron, warning) = Cron::new(setup);
                    if let Some(w) = warning {
                        warn!("{w}");
                    }
                    cron
                });
                let cron = CronHandle::new(cron);
                let _ = tx.send((modes, cron, actix::System::current()));
            });
            if let Err(e) = sys.run() {
                error!(error = %e, "actor system stopped with an error");
            }
        })
        .map_err(|e| KernelError::Actors(e.to_string()))?;
    rx.recv()
        .map_err(|_| KernelError::Actors("the actor thread exited during start".into()))
}
