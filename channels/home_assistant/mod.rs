//! Home Assistant, as a client of its WebSocket API: homebot knows the house's rooms and
//! satellites, says things on a satellite unasked (a reminder rings in the kitchen), and
//! makes a satellite listen again after a question.
//!
//! Layout: `actor` — the [`actor::HaActor`] that owns what homebot knows of Home
//! Assistant, on its own arbiter thread; `connection` — connecting, auth and reconnects;
//! `session` — one session's subscriptions, commands and keep-alive; `doctor` — the
//! one-shot probe of `homebot doctor`; `protocol` — the message shapes; `rooms` — areas,
//! satellites and media players from HA's registries; `announce` — the voice channel's
//! door to HA speakers (`assist_satellite.announce`, then `tts.speak`); `listen` —
//! listening again after a question (`assist_satellite.start_conversation`).
//!
//! Everything else talks to the actor through [`HomeAssistant`], a cloneable handle; every
//! call is bounded by `home_assistant.timeout_secs`, so Home Assistant being slow or gone
//! never holds a turn longer than that. The token is read from the environment variable
//! `home_assistant.token_env` at start, sent only in the `auth` message, and never logged,
//! printed or written.

mod actor;
mod announce;
mod connection;
mod doctor;
mod home;
mod listen;
pub mod protocol;
pub mod rooms;
mod session;

use crate::config::{HomeAssistantConfig, Secret};
use actix::prelude::*;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use connection::AUTH_RETRY;
pub use doctor::doctor;
pub mod watch;

/// Why a Home Assistant call did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HaError {
    #[error("Home Assistant is {0}")]
    NotConnected(String),
    #[error("Home Assistant did not answer within {} s", .0.as_secs())]
    Timeout(Duration),
    #[error("Home Assistant refused: {0}")]
    Refused(protocol::HaFailure),
    #[error("the connection to Home Assistant was lost during the call")]
    Disconnected,
    #[error("too many Home Assistant calls are waiting")]
    Busy,
    #[error("{0:?} is neither an area nor a satellite of Home Assistant")]
    UnknownTarget(String),
}

/// What `homebot status` shows.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub connected: bool,
    /// `connected`, or why not.
    pub link: String,
    pub version: Option<String>,
    pub entities: usize,
    pub exposed: Option<usize>,
    /// Satellite entity ids and their rooms.
    pub satellites: Vec<(String, Option<String>)>,
}

impl Status {
    /// The status lines (plain, one fact each).
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![format!(
            "Home Assistant: {}{}",
            self.link,
            self.version
                .as_deref()
                .map(|v| format!(" · 版本 {v}"))
                .unwrap_or_default()
        )];
        if self.connected || self.entities > 0 {
            v.push(format!(
                "Home Assistant 实体: {}{}",
                self.entities,
                self.exposed
                    .map(|n| format!("（{n} 个开放给 Assist）"))
                    .unwrap_or_default()
            ));
        }
        let sats: Vec<String> = self
            .satellites
            .iter()
            .map(|(e, room)| format!("{e}（{}）", room.as_deref().unwrap_or("房间未知")))
            .collect();
        v.push(format!(
            "Home Assistant 语音卫星: {}",
            if sats.is_empty() {
                "无".to_string()
            } else {
                sats.join(", ")
            }
        ));
        v
    }
}

/// The satellite a voice turn came from, and its room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub entity_id: String,
    pub room: Option<String>,
}

/// The handle to the Home Assistant actor.
#[derive(Clone)]
pub struct HomeAssistant {
    addr: Addr<actor::HaActor>,
    timeout: Duration,
    /// For `tts.speak` on a media player when a satellite cannot announce.
    tts_entity: Option<String>,
    /// How long an announcement may take to be played and answered.
    announce_timeout: Duration,
    /// The language of Home Assistant's own agent.
    language: String,
    /// Home Assistant's services by domain, and when they were read.
    services: std::sync::Arc<std::sync::Mutex<Option<home::Services>>>,
    /// Sentences on their way to Home Assistant's agent now (a sentence coming back
    /// while it is there is not sent again).
    in_flight: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// Grows each time Home Assistant is connected (again) and its registries are read.
    back: tokio::sync::watch::Receiver<u64>,
    /// Fired watches, until the channel's delivery task takes them.
    watches: std::sync::Arc<
        std::sync::Mutex<Option<tokio::sync::mpsc::Receiver<crate::config::HaWatch>>>,
    >,
}

/// Why the channel cannot connect at all: the configuration lacks what a connection needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotConfigured {
    #[error("no url ([home_assistant] url or HOMEBOT_HA_URL)")]
    NoUrl,
    /// The environment variable that should hold the token.
    #[error("no access token: set {0} to a long-lived access token (Home Assistant → your profile → Security)")]
    NoToken(String),
}

/// The token given directly, else the one from `token_env`, or why there is none.
fn token(cfg: &HomeAssistantConfig) -> Result<Secret, NotConfigured> {
    if let Some(t) = &cfg.token {
        return Ok(t.clone());
    }
    match std::env::var(&cfg.token_env) {
        Ok(t) if !t.trim().is_empty() => Ok(Secret::new(t.trim())),
        _ => Err(NotConfigured::NoToken(cfg.token_env.clone())),
    }
}

pub(crate) fn settings(cfg: &HomeAssistantConfig) -> Result<connection::Settings, NotConfigured> {
    let url = cfg.websocket_url().ok_or(NotConfigured::NoUrl)?;
    Ok(connection::Settings {
        url,
        token: token(cfg)?,
        timeout: Duration::from_secs(cfg.timeout_secs),
        max_message: cfg.max_message_bytes,
        watches: cfg
            .watch
            .iter()
            .map(|w| (w.entity_id.clone(), w.to.clone()))
            .collect(),
    })
}

impl HomeAssistant {
    /// Start the actor on its own thread; it connects (and keeps reconnecting) by itself,
    /// so Home Assistant being down at start delays nothing. Stops when `cancel` fires.
    /// Its link is reported to `presence` as it comes up and goes down.
    pub fn start(
        cfg: HomeAssistantConfig,
        cancel: CancellationToken,
        presence: crate::presence::Presence,
    ) -> std::io::Result<Self> {
        let timeout = Duration::from_secs(cfg.timeout_secs);
        let tts_entity = cfg.tts_entity.clone();
        let announce_timeout = Duration::from_secs(cfg.announce_timeout_secs);
        let language = cfg.language.clone();
        let (watch_tx, watch_rx) = tokio::sync::mpsc::channel(watch::QUEUE);
        let (back_tx, back) = tokio::sync::watch::channel(0);
        let s = settings(&cfg);
        if let Err(why) = &s {
            tracing::warn!("Home Assistant: {why}");
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("homebot-ha".into())
            .spawn(move || {
                let sys = actix::System::new();
                sys.block_on(async move {
                    let addr =
                        actor::HaActor::new(cfg, s, Some(watch_tx), presence, back_tx).start();
                    let _ = tx.send(addr);
                    actix::spawn(async move {
                        cancel.cancelled().await;
                        actix::System::current().stop();
                    });
                });
                let _ = sys.run();
            })?;
        let addr = rx
            .recv()
            .map_err(|_| std::io::Error::other("the Home Assistant thread exited at start"))?;
        Ok(Self {
            addr,
            timeout,
            tts_entity,
            announce_timeout,
            language,
            services: Default::default(),
            in_flight: Default::default(),
            back,
            watches: std::sync::Arc::new(std::sync::Mutex::new(Some(watch_rx))),
        })
    }

    /// Changes each time Home Assistant is connected again with its rooms read (from
    /// now on: what happened before is seen).
    pub fn comebacks(&self) -> tokio::sync::watch::Receiver<u64> {
        let mut rx = self.back.clone();
        rx.mark_unchanged();
        rx
    }

    /// The fired watches (once: the channel's delivery task takes them).
    pub fn take_watches(&self) -> Option<tokio::sync::mpsc::Receiver<crate::config::HaWatch>> {
        self.watches.lock().ok()?.take()
    }

    /// Send a message to the actor, bounded by the timeout.
    async fn ask<M>(&self, msg: M) -> Result<M::Result, HaError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        actor::HaActor: Handler<M>,
    {
        self.ask_within(self.timeout, msg).await
    }

    async fn ask_within<M>(&self, within: Duration, msg: M) -> Result<M::Result, HaError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        actor::HaActor: Handler<M>,
    {
        match tokio::time::timeout(within, self.addr.send(msg)).await {
            Err(_) => Err(HaError::Timeout(within)),
            Ok(Err(_)) => Err(HaError::NotConnected("stopped".into())),
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// Run one command (`call_service`, …) and get its `result`.
    pub async fn command(&self, body: serde_json::Value) -> Result<serde_json::Value, HaError> {
        self.command_within(self.timeout, body).await
    }

    /// [`HomeAssistant::command`] with its own bound on the answer.
    pub async fn command_within(
        &self,
        within: Duration,
        body: serde_json::Value,
    ) -> Result<serde_json::Value, HaError> {
        self.ask_within(within, actor::Command { body, within })
            .await?
    }

    pub async fn status(&self) -> Status {
        self.ask(actor::GetStatus).await.unwrap_or_else(|e| Status {
            link: e.to_string(),
            ..Default::default()
        })
    }

    /// Which satellite a voice turn comes from (see [`actor::Locate`]).
    pub async fn locate(
        &self,
        satellite_id: Option<String>,
        device_id: Option<String>,
    ) -> Option<Located> {
        self.ask(actor::Locate {
            satellite_id,
            device_id,
        })
        .await
        .ok()
        .flatten()
    }
}
