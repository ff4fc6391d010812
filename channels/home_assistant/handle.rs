//! [`HomeAssistant`], the cloneable handle everything else holds: it starts the actor on
//! its own thread (registered with the kernel's shutdown), and every call through it is
//! bounded by `home_assistant.timeout_secs`.

use super::error::{HaError, NotConfigured};
use super::frames::Command;
use super::status::{Located, Status};
use super::{actor, answers, connection, tls, watch};
use crate::actor::{Lifecycle, Tasks};
use crate::config::{HomeAssistantConfig, Secret};
use actix::prelude::*;
use serde::de::DeserializeOwned;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The handle to the Home Assistant actor.
#[derive(Clone)]
pub struct HomeAssistant {
    pub(super) addr: Addr<actor::HaActor>,
    pub(super) timeout: Duration,
    /// For `tts.speak` on a media player when a satellite cannot announce.
    pub(super) tts_entity: Option<String>,
    /// How long an announcement may take to be played and answered.
    pub(super) announce_timeout: Duration,
    /// The language of Home Assistant's own agent.
    pub(super) language: String,
    /// Grows each time Home Assistant is connected (again) and its registries are read.
    pub(super) back: tokio::sync::watch::Receiver<u64>,
    /// Where the listen-again after a question runs (the kernel's shutdown cancels it).
    pub(super) tasks: Tasks,
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
        tls: tls::client_config(cfg)?,
    })
}

impl HomeAssistant {
    /// Start the actor on its own thread; it connects (and keeps reconnecting) by itself,
    /// so Home Assistant being down at start delays nothing. Stops when `cancel` fires.
    /// Its link is reported to `presence` as it comes up and goes down. Also returns the
    /// queue of fired watches, for the channel's delivery task.
    pub fn start(
        cfg: HomeAssistantConfig,
        life: &Lifecycle,
        cancel: CancellationToken,
        presence: crate::presence::Presence,
    ) -> std::io::Result<(Self, tokio::sync::mpsc::Receiver<crate::config::HaWatch>)> {
        let timeout = Duration::from_secs(cfg.timeout_secs);
        let tts_entity = cfg.tts_entity.clone();
        let announce_timeout = Duration::from_secs(cfg.announce_timeout_secs);
        let language = cfg.language.clone();
        let (back_tx, back) = tokio::sync::watch::channel(0);
        let (watch_tx, watch_rx) = tokio::sync::mpsc::channel(watch::QUEUE);
        let s = settings(&cfg);
        if let Err(why) = &s {
            tracing::warn!("Home Assistant: {why}");
        }
        let addr = life.start_actor_until("homebot-ha", cancel, move || {
            actor::HaActor::new(cfg, s, presence, back_tx, watch_tx)
        })?;
        let ha = Self {
            addr,
            timeout,
            tts_entity,
            announce_timeout,
            language,
            back,
            tasks: life.tasks().clone(),
        };
        Ok((ha, watch_rx))
    }

    /// Changes each time Home Assistant is connected again with its rooms read (from
    /// now on: what happened before is seen).
    pub fn comebacks(&self) -> tokio::sync::watch::Receiver<u64> {
        let mut rx = self.back.clone();
        rx.mark_unchanged();
        rx
    }

    /// Send a message to the actor, bounded by the timeout.
    pub(super) async fn ask<M>(&self, msg: M) -> Result<M::Result, HaError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        actor::HaActor: Handler<M>,
    {
        self.ask_within(self.timeout, msg).await
    }

    pub(super) async fn ask_within<M>(&self, within: Duration, msg: M) -> Result<M::Result, HaError>
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

    /// Run one command (`call_service`, …) and get its `result`, decoded into the
    /// command's answer `A` (see `answers`).
    pub(super) async fn command<A: DeserializeOwned>(&self, body: Command) -> Result<A, HaError> {
        self.command_within(self.timeout, body).await
    }

    /// [`HomeAssistant::command`] with its own bound on the answer.
    pub(super) async fn command_within<A: DeserializeOwned>(
        &self,
        within: Duration,
        body: Command,
    ) -> Result<A, HaError> {
        let kind = body.kind();
        let result = self
            .ask_within(within, actor::Command { body, within })
            .await??;
        answers::decode(kind, result)
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

    /// Where an agent turn's device is, by the registries alone (see `HaState::place`).
    pub async fn place(
        &self,
        satellite_id: Option<String>,
        device_id: Option<String>,
    ) -> super::state::Placed {
        self.ask(actor::Place {
            satellite_id,
            device_id,
        })
        .await
        .unwrap_or_default()
    }
}

impl HomeAssistant {
    /// What the house tools see of Home Assistant (see `home`): the exposed entities,
    /// their states and services, as the actor holds them.
    pub(super) async fn view(
        &self,
    ) -> Result<std::sync::Arc<super::home::HomeView>, crate::home::HomeError> {
        (self.ask(super::home::GetView).await).map_err(|e| crate::home::HomeError::from(&e))
    }
}
