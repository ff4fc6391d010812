//! What the Home Assistant actor knows ([`HaState`]) and its synchronous transitions:
//! a report from the connection applied, the status, a voice turn located, a target
//! resolved. Only the actor (`actor`) holds it, in its supervised cell; nothing here
//! waits or does I/O.

use super::connection::{self, Call, Report};
use super::home::HomeView;
use super::rooms::{Listening, Rooms};
use super::status::CHANNEL;
use super::{Located, Status};
use crate::config::HomeAssistantConfig;
use std::collections::HashSet;
use tokio::sync::mpsc;

pub struct HaState {
    pub(super) cfg: HomeAssistantConfig,
    /// The connection task's mailbox (`None`: no token, nothing to connect with).
    pub(super) calls: Option<mpsc::Sender<Call>>,
    pub(super) settings: Option<connection::Settings>,
    pub(super) link: Link,
    pub(super) version: Option<String>,
    pub(super) rooms: Rooms,
    pub(super) listening: Listening,
    pub(super) exposed: Option<usize>,
    /// The entities exposed to Assist.
    pub(super) exposed_ids: HashSet<String>,
    /// What the home tools see, rebuilt when the registries or the exposed list change.
    pub(super) view: std::sync::Arc<HomeView>,
    /// Where fired watches go (the delivery task of the channel holding Home Assistant).
    pub(super) watch_tx: Option<mpsc::Sender<crate::config::HaWatch>>,
    /// Satellites Home Assistant said cannot start a conversation (logged once each).
    pub(super) no_listen_again: HashSet<String>,
    /// Where the link coming up and going down is reported.
    pub(super) presence: crate::presence::Presence,
    /// Counts the connections whose registries were read: a message waiting because Home
    /// Assistant could not be reached watches it to be said when it is back.
    pub(super) back: tokio::sync::watch::Sender<u64>,
    /// Connected, and the registries not read yet on this connection.
    pub(super) fresh: bool,
}

#[derive(Debug, Clone)]
pub enum Link {
    Connecting,
    Up,
    Down(String),
    AuthFailed(String),
    NoToken(String),
}

impl HaState {
    pub(super) fn new(
        cfg: HomeAssistantConfig,
        settings: Result<connection::Settings, super::NotConfigured>,
        watch_tx: Option<mpsc::Sender<crate::config::HaWatch>>,
        presence: crate::presence::Presence,
        back: tokio::sync::watch::Sender<u64>,
    ) -> Self {
        let rooms = {
            let mut r = Rooms::default();
            r.apply_config(&cfg);
            r
        };
        let (settings, link) = match settings {
            Ok(s) => (Some(s), Link::Connecting),
            Err(why) => (None, Link::NoToken(why.to_string())),
        };
        Self {
            cfg,
            calls: None,
            settings,
            link,
            version: None,
            rooms,
            listening: Listening::default(),
            exposed: None,
            exposed_ids: HashSet::new(),
            view: Default::default(),
            watch_tx,
            no_listen_again: HashSet::new(),
            presence,
            back,
            fresh: false,
        }
    }

    pub(super) fn rebuild_view(&mut self) {
        self.view = std::sync::Arc::new(HomeView::new(&self.rooms, &self.exposed_ids, &self.cfg));
    }
}

impl HaState {
    pub(super) fn on_report(&mut self, r: Report) {
        match r {
            Report::Connected { version } => {
                self.link = Link::Up;
                self.fresh = true;
                self.version = version;
                self.presence
                    .report(crate::presence::Link::new(CHANNEL, None), true);
            }
            Report::Down { why } => {
                self.link = Link::Down(why);
                self.fresh = false;
                self.presence
                    .report(crate::presence::Link::new(CHANNEL, None), false);
            }
            Report::AuthFailed { why } => {
                self.link = Link::AuthFailed(why);
                self.fresh = false;
                self.presence
                    .report(crate::presence::Link::new(CHANNEL, None), false);
            }
            Report::Registries {
                areas,
                devices,
                entities,
                exposed,
            } => {
                self.rooms = Rooms::from_registries(&areas, &devices, &entities, &self.cfg);
                if let Some(ids) = exposed {
                    self.exposed = Some(ids.len());
                    self.exposed_ids = ids.into_iter().collect();
                }
                self.rebuild_view();
                tracing::info!(
                    areas = self.rooms.areas.len(),
                    satellites = self.rooms.satellites.len(),
                    entities = self.rooms.entities,
                    exposed = self.exposed_ids.len(),
                    "Home Assistant registries read"
                );
                // back, and its rooms known: what waited for it can be said now
                if std::mem::take(&mut self.fresh) {
                    self.back.send_modify(|n| *n += 1);
                }
            }
            Report::Watch(i) => {
                let (Some(w), Some(tx)) = (self.cfg.watch.get(i), &self.watch_tx) else {
                    return;
                };
                tracing::info!(entity = %w.entity_id, to = %w.to, channel = %w.channel, "a Home Assistant watch fired");
                if tx.try_send(w.clone()).is_err() {
                    tracing::warn!(entity = %w.entity_id, "too many watch messages waiting; this one is dropped");
                }
            }
            Report::State { entity_id, state } => self.listening.update(&entity_id, &state),
        }
    }
}

pub fn link_text(l: &Link) -> String {
    match l {
        Link::Connecting => "connecting".into(),
        Link::Up => "connected".into(),
        Link::Down(why) => format!("not connected: {why}"),
        Link::AuthFailed(why) => format!("access token refused ({why})"),
        Link::NoToken(why) => why.clone(),
    }
}

impl HaState {
    pub(super) fn status(&self) -> Status {
        Status {
            connected: matches!(self.link, Link::Up),
            link: link_text(&self.link),
            version: self.version.clone(),
            entities: self.rooms.entities,
            exposed: self.exposed,
            satellites: self
                .rooms
                .satellites
                .iter()
                .map(|s| {
                    let room = s.area_id.as_deref().map(|a| self.rooms.room_name(a));
                    (s.entity_id.clone(), room)
                })
                .collect(),
        }
    }
}

impl HaState {
    /// Which satellite (and room) a voice turn comes from: the ids Home Assistant sent,
    /// else the satellite listening now, else the configured default.
    pub(super) fn locate(
        &self,
        satellite_id: Option<&str>,
        device_id: Option<&str>,
    ) -> Option<Located> {
        let r = &self.rooms;
        let sat = satellite_id
            .and_then(|id| r.satellite(id))
            .or_else(|| device_id.and_then(|d| r.satellite_of_device(d)))
            .map(|s| s.entity_id.clone())
            .or_else(|| self.listening.active().map(str::to_string))
            .or_else(|| self.cfg.default_satellite.clone());
        sat.map(|entity_id| {
            let room = r
                .satellite(&entity_id)
                .and_then(|s| s.area_id.as_deref())
                .map(|a| r.room_name(a));
            Located { entity_id, room }
        })
    }
}

impl HaState {
    pub(super) fn resolve(&self, target: &str) -> Vec<(String, Vec<String>)> {
        let r = &self.rooms;
        let mut out: Vec<(String, Vec<String>)> = r
            .targets(target)
            .into_iter()
            .map(|s| {
                let players = s
                    .area_id
                    .as_deref()
                    .map(|a| {
                        r.media_players_in(a)
                            .into_iter()
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                (s.entity_id.clone(), players)
            })
            .collect();
        if out.is_empty() {
            // an area with no satellite may still have a media player
            if let Some(a) = r.area(target) {
                let players: Vec<String> = r
                    .media_players_in(&a.id)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                if !players.is_empty() {
                    out.push((String::new(), players));
                }
            }
        }
        out
    }
}
