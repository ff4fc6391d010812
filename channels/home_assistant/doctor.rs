//! `homebot doctor`: one connection with the configuration and the token in the
//! environment — authenticate, read the version, the registries and the exposed entities,
//! then close — and the lines it prints.

use super::answers::{self, AreaEntry, DeviceEntry, EntityEntry, Exposed};
use super::connection::{open, send, Ended, Settings};
use super::frames::{self, Command};
use super::lenient::Items;
use super::protocol::{self, Incoming};
use super::rooms::Rooms;
use super::Status;
use crate::config::HomeAssistantConfig;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

/// Why the doctor's connection learned nothing.
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    #[error("access token refused: {0}")]
    TokenRefused(String),
    /// The TLS handshake failed (a refused certificate, in words).
    #[error("{0}")]
    Tls(String),
    /// The connection failed or broke (the transport's words, shortened).
    #[error("{0}")]
    Lost(String),
    #[error("closed")]
    Closed,
    #[error("closed by Home Assistant")]
    ClosedByPeer,
    #[error("no answer within the timeout")]
    Timeout,
}

/// One connection for `homebot doctor`: authenticate, read the version, the registries
/// and the exposed entities, then close.
async fn probe(s: &Settings) -> Result<Probe, ProbeError> {
    let (mut ws, version) = match open(s).await {
        Ok(x) => x,
        Err(Ended::AuthInvalid(why)) => return Err(ProbeError::TokenRefused(why)),
        Err(Ended::Tls(why)) => return Err(ProbeError::Tls(why)),
        Err(Ended::Lost { why, .. }) => return Err(ProbeError::Lost(why)),
        Err(Ended::Closed) => return Err(ProbeError::Closed),
    };
    let mut out = Probe {
        version,
        ..Default::default()
    };
    let lists = [
        Command::AreaRegistry,
        Command::DeviceRegistry,
        Command::EntityRegistry,
        Command::ExposedEntities,
    ];
    for (i, list) in lists.iter().enumerate() {
        let id = i as u64 + 1;
        if let Err(Ended::Lost { why, .. }) =
            send(&mut ws, frames::command(id, list.clone()), s.timeout).await
        {
            return Err(ProbeError::Lost(why));
        }
    }
    let mut got = 0;
    while got < lists.len() {
        let text = match tokio::time::timeout(s.timeout, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => t,
            Ok(Some(Ok(_))) => continue,
            Ok(Some(Err(e))) => return Err(ProbeError::Lost(protocol::short(&e.to_string(), 200))),
            Ok(None) => return Err(ProbeError::ClosedByPeer),
            Err(_) => return Err(ProbeError::Timeout),
        };
        for inc in protocol::parse(&text) {
            if let Incoming::Result { id, outcome } = inc {
                got += 1;
                let v = outcome.ok();
                match id {
                    1 => out.areas = read(&lists[0], v).unwrap_or_default(),
                    2 => out.devices = read(&lists[1], v).unwrap_or_default(),
                    3 => out.entities = read(&lists[2], v).unwrap_or_default(),
                    4 => out.exposed = read::<Exposed>(&lists[3], v).map(|e| e.to_assist().count()),
                    _ => got -= 1,
                }
            }
        }
    }
    let _ = ws.close(None).await;
    Ok(out)
}

/// A list's answer, if HA gave it and it reads as one (the doctor reports what it can).
fn read<A: DeserializeOwned>(list: &Command, result: Option<Value>) -> Option<A> {
    answers::decode(list.kind(), result?).ok()
}

/// What `homebot doctor` learned in one connection.
#[derive(Debug, Default)]
struct Probe {
    pub version: Option<String>,
    pub areas: Items<AreaEntry>,
    pub devices: Items<DeviceEntry>,
    pub entities: Items<EntityEntry>,
    pub exposed: Option<usize>,
}

/// `homebot doctor`: connect once with the configuration and the token in the
/// environment; the lines to print and whether Home Assistant answered.
pub async fn doctor(cfg: &HomeAssistantConfig) -> (Vec<String>, bool) {
    let s = match super::settings(cfg) {
        Ok(s) => s,
        Err(why) => return (vec![format!("Home Assistant: {why}")], false),
    };
    let shown = s.url.clone();
    match probe(&s).await {
        Err(why @ ProbeError::Tls(_)) => (vec![format!("Home Assistant: {shown}: {why}")], false),
        Err(why) => (
            vec![format!("Home Assistant: {shown}: not reachable: {why}")],
            false,
        ),
        Ok(p) => {
            let rooms = Rooms::from_registries(&p.areas, &p.devices, &p.entities, cfg);
            let status = Status {
                connected: true,
                link: format!("{shown}: connected"),
                version: p.version,
                entities: rooms.entities,
                exposed: p.exposed,
                satellites: rooms
                    .satellites
                    .iter()
                    .map(|s| {
                        let room = s.area_id.as_deref().map(|a| rooms.room_name(a));
                        (s.entity_id.clone(), room)
                    })
                    .collect(),
            };
            (status.lines(), true)
        }
    }
}
