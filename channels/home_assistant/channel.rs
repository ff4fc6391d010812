//! [`HomeAssistantChannel`]: Home Assistant as a channel of its own. With `[home_assistant]`
//! it starts the client (the actor, which connects and reconnects by itself), delivers what
//! its watches see, and provides its door (a proactive message to an area or a satellite,
//! `homebot announce --channel home_assistant --to 厨房`, and its lines in `homebot
//! status`), the house (the home tools' and the fast path's way in) and its satellites
//! (the port the voice channel and the spoken kit use). With the agent token (`[http]
//! ha_agent_token_env`) it provides its conversation agent's endpoint to the HTTP server;
//! with the token alone it serves that endpoint and provides no house and no satellites.
//!
//! What its satellites cannot hear now waits in the spoken kit for their next turn.

use super::agent::Agent;
use super::status::CHANNEL;
use super::turn::HELD;
use super::{agent_http, watch, HaError, HomeAssistant};
use crate::channels::contract::{Channel, Provides, StartError, Started};
use crate::channels::ctx::ChannelCtx;
use crate::channels::spoken::{self, SayNow, Spoken, HA_PREFIX, WYOMING_TARGET};
use crate::config::{Config, HomeAssistantConfig, Secret};
use crate::outbound::{DeliveryError, Outbound};
use std::sync::Arc;

/// Home Assistant before it starts: its client's configuration, the agent's token, and
/// the spoken kit it shares with voice.
pub struct HomeAssistantChannel {
    cfg: Option<HomeAssistantConfig>,
    /// The agent endpoint's token, when the HTTP server runs and one is set.
    agent_token: Option<Secret>,
    spoken: Spoken,
}

impl HomeAssistantChannel {
    /// Whether the configuration enables it: `[home_assistant]`, or the agent token with
    /// the HTTP server on.
    pub fn enabled(cfg: &Config) -> bool {
        cfg.home_assistant.enabled() || agent_token(cfg).is_some()
    }

    pub fn new(cfg: &Config, spoken: Spoken) -> Self {
        Self {
            cfg: cfg
                .home_assistant
                .enabled()
                .then(|| cfg.home_assistant.clone()),
            agent_token: agent_token(cfg),
            spoken,
        }
    }
}

fn agent_token(cfg: &Config) -> Option<Secret> {
    cfg.http
        .listen
        .as_ref()
        .and(cfg.http.ha_agent_token.clone())
}

#[async_trait::async_trait]
impl Channel for HomeAssistantChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    async fn start(self: Box<Self>, ctx: ChannelCtx) -> Result<Started, StartError> {
        let ha = match self.cfg {
            Some(cfg) => {
                let (ha, watches) = HomeAssistant::start(
                    cfg,
                    ctx.lifecycle(),
                    ctx.cancel().child_token(),
                    ctx.presence().clone(),
                )
                .map_err(|e| StartError::new(CHANNEL, "-", e))?;
                ctx.tasks().spawn_in(
                    crate::actor::Group::Service,
                    watch::deliver(watches, ctx.clone()),
                );
                Some(ha)
            }
            None => None,
        };
        let routes = self.agent_token.map(|token| {
            agent_http::routes(Agent::new(&ctx, self.spoken.clone(), ha.clone(), token))
        });
        let door = HaDoor {
            ha: ha.clone(),
            spoken: self.spoken,
        };
        Ok(Started {
            bound: Vec::new(),
            provides: Provides {
                door: Some(Arc::new(door)),
                home: ha
                    .clone()
                    .map(|h| Arc::new(h) as Arc<dyn crate::home::Home>),
                satellites: ha.map(|h| Arc::new(h) as Arc<dyn spoken::Satellites>),
                routes,
            },
        })
    }
}

/// The Home Assistant channel's outbound door.
struct HaDoor {
    ha: Option<HomeAssistant>,
    spoken: Spoken,
}

#[async_trait::async_trait]
impl Outbound for HaDoor {
    /// Announce on a satellite of Home Assistant (its entity id) or on the satellites of
    /// an area (its name or id); delivered only when Home Assistant said it played.
    /// `held:<satellite>` waits for that satellite's next turn instead (in the spoken
    /// kit), or for Home Assistant to be back.
    async fn deliver(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        if let Some(satellite) = target.strip_prefix(HELD) {
            let front = match satellite {
                "" => WYOMING_TARGET.to_string(),
                s => format!("{HA_PREFIX}{s}"),
            };
            let text = spoken::shape_reply(text).0;
            return self.spoken.hold_until_said(&front, text, self).await;
        }
        let Some(ha) = &self.ha else {
            return Err(not_configured(target));
        };
        say(ha, target, &crate::channels::text::spoken(text)).await
    }

    /// A satellite Home Assistant cannot speak on now hears it on its next turn.
    fn later(&self, target: &str) -> Option<String> {
        (!target.starts_with(HELD)).then(|| format!("{HELD}{target}"))
    }

    /// Home Assistant's connection, version, entities and satellites.
    async fn status(&self) -> Vec<String> {
        match &self.ha {
            Some(ha) => ha.status().await.lines(),
            None => Vec::new(),
        }
    }
}

/// A held message for one of Home Assistant's satellites, said when it is back.
#[async_trait::async_trait]
impl SayNow for HaDoor {
    async fn say_now(&self, front: &str, text: &str) -> Result<(), DeliveryError> {
        let (Some(ha), Some(satellite)) = (&self.ha, front.strip_prefix(HA_PREFIX)) else {
            return Err(not_configured(front));
        };
        say(ha, satellite, text).await
    }
}

fn not_configured(target: &str) -> DeliveryError {
    DeliveryError::Unreachable(format!(
        "Home Assistant satellite {target:?} ([home_assistant] is not configured)"
    ))
}

/// Announce `text` at `target` through Home Assistant, its failures as delivery errors.
pub async fn say(ha: &HomeAssistant, target: &str, text: &str) -> Result<(), DeliveryError> {
    match ha.announce(target, text).await {
        Ok(_) => Ok(()),
        Err(HaError::UnknownTarget(t)) => Err(DeliveryError::BadTarget {
            channel: CHANNEL.into(),
            target: t,
            why: "neither an area nor a satellite of Home Assistant".into(),
        }),
        Err(e) => Err(DeliveryError::Unreachable(format!(
            "Home Assistant satellite {target:?} ({e})"
        ))),
    }
}
