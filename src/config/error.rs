//! Why a configuration could not be read or used (`ConfigError`).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: key `{key}`: {message}")]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
    /// An option of the Home Assistant add-on (`/data/options.json`, see `addon`).
    #[error("{path}: add-on option `{option}`: {message}")]
    AddonOption {
        path: PathBuf,
        option: String,
        message: String,
    },
}
