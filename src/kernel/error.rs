//! Why the kernel could not start (`KernelError`).

use crate::config::ConfigError;
use crate::lock::LockError;
use crate::modes::mode_core::ModeError;
use std::path::PathBuf;

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
