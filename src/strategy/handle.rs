//! `Strategies`: the household-wide handle over `strategy/state.json`, and the strategy in
//! force in a mode session or outside one.

use super::state::State;
use super::{Effective, Source};
use crate::config::{StrategyConfig, StrategyKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The household's strategy state (cloneable handle). Every change is written to the
/// workspace before it counts; concurrent turns see one order of changes.
#[derive(Clone)]
pub struct Strategies {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) workspace: PathBuf,
    pub(super) cfg: StrategyConfig,
    /// mode id → the strategy its `mode.json` names.
    pub(super) mode_defaults: BTreeMap<String, StrategyKind>,
    pub(super) state: tokio::sync::Mutex<State>,
}

/// The mode session a turn or command runs in: (mode id, session id).
pub type ActiveMode<'a> = Option<(&'a str, &'a str)>;

impl Strategies {
    /// Load the state from `workspace` (see [`super::state::load`]).
    pub fn open(
        workspace: &Path,
        cfg: StrategyConfig,
        mode_defaults: BTreeMap<String, StrategyKind>,
    ) -> Self {
        let st = super::state::load(workspace);
        Self {
            inner: Arc::new(Inner {
                workspace: workspace.to_path_buf(),
                cfg,
                mode_defaults,
                state: tokio::sync::Mutex::new(st),
            }),
        }
    }

    pub fn config(&self) -> &StrategyConfig {
        &self.inner.cfg
    }

    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// A copy of the state.
    pub async fn snapshot(&self) -> State {
        self.inner.state.lock().await.clone()
    }

    /// Change the state and write it; the change counts only if the write succeeded.
    pub async fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> std::io::Result<R> {
        let mut guard = self.inner.state.lock().await;
        let mut next = guard.clone();
        let r = f(&mut next);
        if next != *guard {
            let ws = self.inner.workspace.clone();
            let copy = next.clone();
            tokio::task::spawn_blocking(move || super::state::save(&ws, &copy))
                .await
                .map_err(std::io::Error::other)??;
            *guard = next;
        }
        Ok(r)
    }

    /// The strategy in force in `mode` (or outside a mode).
    pub async fn effective(&self, mode: ActiveMode<'_>) -> Effective {
        let st = self.inner.state.lock().await;
        self.effective_in(&st, mode)
    }

    /// The strategy a turn gets before anyone has used `/strategy`: the mode's default
    /// (its `mode.json`), else the configured one, no preset. Its block is part of the
    /// system message (the same bytes until the configuration changes or a mode is
    /// entered, which changes the system message anyway); see [`Effective::blocks`].
    pub fn standing(&self, mode: ActiveMode<'_>) -> Effective {
        self.effective_in(&State::default(), mode)
    }

    pub(super) fn effective_in(&self, st: &State, mode: ActiveMode<'_>) -> Effective {
        let from_mode = mode.and_then(|(id, sid)| {
            let d = self.inner.mode_defaults.get(id)?;
            (st.set_in_session.as_deref() != Some(sid)).then_some(*d)
        });
        let (kind, source) = match (from_mode, st.strategy) {
            (Some(k), _) => (k, Source::Mode),
            (None, Some(k)) => (k, Source::Command),
            (None, None) => (self.inner.cfg.default, Source::Config),
        };
        Effective {
            kind,
            source,
            preset: st.preset,
            custom: st.custom_instruction.clone(),
        }
    }
}
