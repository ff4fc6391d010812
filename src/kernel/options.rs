//! What an embedder or a test may set when starting a kernel (`KernelOptions`), and
//! where skills are looked for (`skill_search_path`).

use crate::clock::SharedClock;
use crate::config::{Config, EnvOverrides};
use crate::provider::Provider;
use crate::workspace::Workspace;
use std::path::PathBuf;
use std::time::Duration;

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
