//! What the Home Assistant actor knows ([`HaState`]) and its synchronous transitions:
//! a report from the connection applied, the status, a voice turn located, a target
//! resolved, the services list kept for a minute, the sentences with Home Assistant's
//! agent now, where fired watches go, and the state rebuilt after a panic. Only the
//! actor (`actor`) holds it, in its supervised cell; nothing here waits or does I/O (the
//! connection it holds is started by the actor, and closed when the state is dropped).

use super::connection::{self, Call, Report};
use super::home::{HomeView, Services, SERVICES_FOR};
use super::rooms::{Listening, Rooms};
use super::status::CHANNEL;
use super::{Located, NotConfigured, Status};
use crate::config::{HaWatch, HomeAssistantConfig};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

pub struct HaState {
    pub(super) cfg: HomeAssistantConfig,
    /// This state's connection (`None`: not started, or no token, nothing to connect
    /// with).
    pub(super) connection: Option<Connection>,
    /// The number of this state's connection: a report of an earlier one (still in the
    /// mailbox when a panic rebuilt the state) is ignored.
    pub(super) session: u64,
    pub(super) settings: Result<connection::Settings, NotConfigured>,
    pub(super) link: Link,
    pub(super) version: Option<String>,
    pub(super) rooms: Rooms,
    pub(super) listening: Listening,
    pub(super) exposed: Option<usize>,
    /// The entities exposed to Assist.
    pub(super) exposed_ids: HashSet<String>,
    /// What the home tools see, rebuilt when the registries or the exposed list change.
    pub(super) view: std::sync::Arc<HomeView>,
    /// Where fired watches go (the channel's delivery task; a full queue drops one).
    pub(super) watches: mpsc::Sender<HaWatch>,
    /// Home Assistant's services by domain, and when they were read (`get_services`).
    pub(super) services: Option<Services>,
    /// Sentences on their way to Home Assistant's agent now, each with the number of its
    /// call (a sentence coming back while it is there is not sent again).
    pub(super) in_flight: HashMap<String, u64>,
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

/// A connection to Home Assistant: its task's mailbox, and its stop — dropping it (with
/// the state that holds it) ends the task, closing the socket; the calls waiting hear
/// the connection was lost.
pub struct Connection {
    pub(super) calls: mpsc::Sender<Call>,
    pub(super) _stop: DropGuard,
}

/// A connection being opened: what its session needs, for the actor to run it.
pub struct Opening {
    pub(super) settings: connection::Settings,
    pub(super) calls: mpsc::Receiver<Call>,
    /// Fires when the state holding the connection is dropped.
    pub(super) stop: CancellationToken,
    /// The connection's number (see [`HaState::session`]).
    pub(super) session: u64,
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
        settings: Result<connection::Settings, NotConfigured>,
        presence: crate::presence::Presence,
        back: tokio::sync::watch::Sender<u64>,
        watches: mpsc::Sender<HaWatch>,
    ) -> Self {
        let rooms = {
            let mut r = Rooms::default();
            r.apply_config(&cfg);
            r
        };
        let link = match &settings {
            Ok(_) => Link::Connecting,
            Err(why) => Link::NoToken(why.to_string()),
        };
        Self {
            cfg,
            connection: None,
            session: 0,
            settings,
            link,
            version: None,
            rooms,
            listening: Listening::default(),
            exposed: None,
            exposed_ids: HashSet::new(),
            view: Default::default(),
            watches,
            services: None,
            in_flight: HashMap::new(),
            no_listen_again: HashSet::new(),
            presence,
            back,
            fresh: false,
        }
    }

    /// The state after a panic: the defaults, with what is not its own carried over —
    /// the configuration and settings, where the link, the comebacks and the fired
    /// watches go — and the next connection number. Dropping the old state closes its
    /// connection (the actor starts the new one); its link, if it was up, is reported
    /// down.
    pub(super) fn rebuilt(&mut self, hit: &str) -> HaState {
        tracing::warn!(
            hit,
            "Home Assistant: the actor's state is rebuilt after a panic; its connection is closed and reconnects"
        );
        if matches!(self.link, Link::Up) {
            self.presence
                .report(crate::presence::Link::new(CHANNEL, None), false);
        }
        let mut fresh = HaState::new(
            self.cfg.clone(),
            self.settings.clone(),
            self.presence.clone(),
            self.back.clone(),
            self.watches.clone(),
        );
        fresh.session = self.session + 1;
        fresh
    }

    /// This state's connection, opened if it has settings and none yet.
    pub(super) fn open(&mut self) -> Option<Opening> {
        if self.connection.is_some() {
            return None;
        }
        let settings = self.settings.clone().ok()?;
        // a small mailbox: the callers' own timeouts bound the wait, a full one refuses
        let (tx, calls) = mpsc::channel(connection::MAX_IN_FLIGHT);
        let stop = CancellationToken::new();
        self.connection = Some(Connection {
            calls: tx,
            _stop: stop.clone().drop_guard(),
        });
        Some(Opening {
            settings,
            calls,
            stop,
            session: self.session,
        })
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
                // (the supervision test: the rooms replaced, the exposed list and the view not)
                crate::failpoint::panic_once("ha.registries");
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
                let Some(w) = self.cfg.watch.get(i).cloned() else {
                    return;
                };
                tracing::info!(entity = %w.entity_id, to = %w.to, channel = %w.channel, "a Home Assistant watch fired");
                self.fired(w);
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
    /// Where an agent turn's device is, by the registries alone — never the satellite
    /// listening now, nor the default one (a wall tablet in the study is not the kitchen
    /// satellite that happens to be listening): the satellite HA named, else the
    /// device's; the area of the device, else that satellite's.
    pub(super) fn place(&self, satellite_id: Option<&str>, device_id: Option<&str>) -> Placed {
        let r = &self.rooms;
        let satellite = satellite_id
            .and_then(|id| r.satellite(id))
            .or_else(|| device_id.and_then(|d| r.satellite_of_device(d)));
        let area_id = device_id
            .and_then(|d| r.device_areas.get(d))
            .or_else(|| satellite.and_then(|s| s.area_id.as_ref()));
        Placed {
            satellite: satellite.map(|s| s.entity_id.clone()),
            area: area_id.map(|a| super::rooms::Area {
                id: a.clone(),
                name: r.room_name(a),
            }),
        }
    }
}

/// Where an agent turn's device is (see [`HaState::place`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placed {
    pub satellite: Option<String>,
    pub area: Option<super::rooms::Area>,
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

impl HaState {
    fn fired(&mut self, w: HaWatch) {
        if let Err(mpsc::error::TrySendError::Full(w)) = self.watches.try_send(w) {
            tracing::warn!(entity = %w.entity_id, "too many watch messages waiting; this one is dropped");
        }
    }

    /// The services of `domain` if the list was read less than [`SERVICES_FOR`] ago
    /// (`Some(None)`: Home Assistant has no such domain); `None`: read the list again.
    pub(super) fn known_services(&self, domain: &str) -> Option<Option<Vec<String>>> {
        self.services
            .as_ref()
            .filter(|(at, _)| at.elapsed() < SERVICES_FOR)
            .map(|(_, m)| m.get(domain).cloned())
    }

    /// `sentence` goes to Home Assistant's agent as call `call`; false when the same
    /// sentence is there already.
    pub(super) fn start_conversing(&mut self, sentence: String, call: u64) -> bool {
        match self.in_flight.entry(sentence) {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(call);
                true
            }
        }
    }

    /// Call `call` of `sentence` ended (however it ended; another call's entry is kept).
    pub(super) fn conversed(&mut self, sentence: &str, call: u64) {
        if self.in_flight.get(sentence) == Some(&call) {
            self.in_flight.remove(sentence);
        }
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
