//! Why a Home Assistant call did not succeed, and why the channel cannot connect at all.

use super::protocol;
use crate::config::TrustError;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Why a Home Assistant call did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HaError {
    #[error("Home Assistant is {0}")]
    NotConnected(String),
    #[error("Home Assistant did not answer within {} s", .0.as_secs())]
    Timeout(Duration),
    #[error("Home Assistant refused: {0}")]
    Refused(protocol::HaFailure),
    /// The answer is not what the command returns (see `answers`).
    #[error("Home Assistant's answer to {command} was malformed: {why}")]
    Malformed { command: &'static str, why: String },
    #[error("the connection to Home Assistant was lost during the call")]
    Disconnected,
    #[error("too many Home Assistant calls are waiting")]
    Busy,
    #[error("{0:?} is neither an area nor a satellite of Home Assistant")]
    UnknownTarget(String),
}

/// Why the channel cannot connect at all: the configuration lacks what a connection needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotConfigured {
    #[error("no url ([home_assistant] url or HOMEBOT_HA_URL)")]
    NoUrl,
    /// The environment variable that should hold the token.
    #[error("no access token: set {0} to a long-lived access token (Home Assistant → your profile → Security)")]
    NoToken(String),
    /// The https settings could not be built (the CA file became unreadable, …).
    #[error("https: {0}")]
    Tls(#[from] TlsSetupError),
}

/// Why the https settings of a `wss://` connection could not be built (see `tls`); each
/// names the setting, and carries what rustls or the file said. Cloned with the state
/// that holds it: the errors that cannot be cloned (io) are shared.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TlsSetupError {
    /// `fingerprint` is not a SHA-256 fingerprint (the configuration check refuses it at
    /// load, so only a configuration built elsewhere gets here).
    #[error("fingerprint {0}")]
    Fingerprint(#[source] Arc<TrustError>),
    /// `ca_file` cannot be read or holds no usable certificate (it changed since the
    /// configuration was loaded).
    #[error("ca_file: {0}")]
    CaFile(#[source] Arc<TrustError>),
    /// rustls refused one of `ca_file`'s certificates as a trust anchor.
    #[error("ca_file {}: {source}", path.display())]
    CaRefused {
        path: PathBuf,
        source: rustls::Error,
    },
    /// The trust anchors could not make a verifier.
    #[error("TLS roots: {0}")]
    Roots(#[source] rustls::client::VerifierBuilderError),
    /// The crypto provider supports none of the safe protocol versions.
    #[error("TLS versions: {0}")]
    Versions(#[source] rustls::Error),
}

/// Equal when they say the same: the io errors inside have no equality of their own.
impl PartialEq for TlsSetupError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for TlsSetupError {}
