//! The ports registry: what the running channels provide one another, resolved once every
//! channel has started (`channels::start_enabled`), so no channel depends on another's
//! start order and none reaches into another's handle. Today one port is here: Home
//! Assistant's [`Satellites`], which the voice channel and the spoken kit use. (The
//! kernel's own ports — the doors and the house — are in [`crate::outbound::Doors`]; the
//! HTTP routes a channel provides go to the one HTTP server, `dashboard::start`.)

use crate::channels::spoken::Satellites;
use std::sync::{Arc, RwLock};

/// The resolved ports (cheap to clone; every clone sees the same).
#[derive(Clone, Default)]
pub struct Ports(Arc<RwLock<Resolved>>);

#[derive(Default)]
struct Resolved {
    satellites: Option<Arc<dyn Satellites>>,
}

impl Ports {
    /// Home Assistant's satellites, when a running channel provides them.
    pub fn satellites(&self) -> Option<Arc<dyn Satellites>> {
        self.read().satellites.clone()
    }

    /// Record what a started channel provides (the registry's owner does, after the start).
    pub(crate) fn provide_satellites(&self, s: Arc<dyn Satellites>) {
        self.0.write().unwrap_or_else(|p| p.into_inner()).satellites = Some(s);
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Resolved> {
        // every write is one assignment: a panic elsewhere leaves it whole
        self.0.read().unwrap_or_else(|p| p.into_inner())
    }
}
