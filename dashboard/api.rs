//! The JSON API behind the pages:
//!
//! - `GET /api/status` — the mode state exactly as in `action.json` (`mode`), the active
//!   session (who entered it, its turns), the channels' links with since-when, the
//!   pending reminders, uptime;
//! - `GET /api/sessions` — the newest sessions with their state and summary;
//! - `GET /api/sessions/{id}` — one session: its records (the newest) and its per-turn
//!   tokens; the id is checked before it comes near a path (400 when malformed, 404
//!   when unknown);
//! - `GET /api/live?after=N` — the active session's records from index `N` on (what the
//!   status page polls).

use super::data::{self, Line, SessionError, SessionInfo};
use super::Dash;
use crate::modes::action::ActionDoc;
use crate::modes::entered::{Entered, EnteredHow};
use crate::modes::session::CONVERSATION_FILE;
use crate::presence::ChannelState;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long the reminders actor may take to list them before the status goes without.
const REMINDERS_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub household: String,
    pub now: String,
    pub uptime_secs: u64,
    /// `action.json` as it is (`null` before the first start).
    pub mode: Option<ActionDoc>,
    /// Why `action.json` could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode_error: Option<String>,
    /// The active session, when a mode is active.
    pub session: Option<ActiveSession>,
    pub channels: Vec<ChannelState>,
    /// Pending reminders (`null` when the reminders could not be listed in time).
    pub reminders: Option<Vec<ReminderView>>,
    /// The modes this household has, with what each is for (its SKILL.md's description).
    pub modes: Vec<ModeView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModeView {
    pub id: String,
    pub display_name: String,
    pub description: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ActiveSession {
    pub session_id: String,
    /// Who entered the mode (their name, else their id), from the session's
    /// `entered.json`; `null` for a command from no chat. A session made before that file
    /// existed shows who spoke first instead, and no `entered_how`.
    pub entered_by: Option<String>,
    /// The channel they entered it on.
    pub entered_on: Option<String>,
    /// `command`, `switch` (the model's switch, checked against their words) or `offer`.
    pub entered_how: Option<EnteredHow>,
    pub turns: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReminderView {
    pub id: u32,
    pub text: String,
    pub due_at: String,
    pub channel: String,
}

/// The status, gathered: disk reads on the blocking pool, the reminders from their
/// actor with a deadline.
pub async fn gather(dash: &Dash) -> Option<Status> {
    let kernel = dash.kernel()?;
    let ws = kernel.workspace().clone();
    let (mode, mode_error, session) = tokio::task::spawn_blocking(move || {
        let (mode, error) = match data::action(&ws) {
            Ok(m) => (m, None),
            Err(e) => (None, Some(e.to_string())),
        };
        let session = mode.as_ref().filter(|a| a.active).and_then(|a| {
            let sid = a.session_id.clone()?;
            let dir = data::session_dir(&ws, &sid).ok()?;
            let conv = dir.join(CONVERSATION_FILE);
            let (entered_by, entered_on, entered_how) = match Entered::read(&dir) {
                Some(e) => {
                    let by = e.by.map(|b| {
                        let name = b.speaker_name.unwrap_or(b.speaker_id);
                        (data::cut_id(&name), data::cut_id(&b.channel))
                    });
                    let (by, on) = by.unzip();
                    (by, on, Some(e.how))
                }
                None => {
                    let first = data::first_record(&conv);
                    let by = first.as_ref().map(|l| l.speaker.clone());
                    (by, first.map(|l| l.channel), None)
                }
            };
            Some(ActiveSession {
                session_id: sid,
                entered_by,
                entered_on,
                entered_how,
                turns: data::conversation(&conv, usize::MAX).total,
            })
        });
        (mode, error, session)
    })
    .await
    .ok()?;
    let reminders = tokio::time::timeout(REMINDERS_WAIT, kernel.reminders().list(false))
        .await
        .ok()
        .and_then(Result::ok)
        .map(|list| {
            list.into_iter()
                .map(|r| ReminderView {
                    id: r.id,
                    text: r.text,
                    due_at: r.due_at.to_rfc3339(),
                    channel: r.origin.channel,
                })
                .collect()
        });
    Some(Status {
        household: kernel.config().household.name.clone(),
        now: kernel
            .now()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
        uptime_secs: dash.uptime_secs(),
        mode,
        mode_error,
        session,
        channels: kernel.presence().snapshot(),
        reminders,
        modes: kernel
            .registry()
            .modes()
            .iter()
            .map(|m| ModeView {
                id: m.manifest.id.clone(),
                display_name: m.manifest.display_name.clone(),
                description: m.description.clone(),
            })
            .collect(),
    })
}

/// Mode id → its display name, from the registry.
pub fn mode_names(kernel: &crate::kernel::Kernel) -> BTreeMap<String, String> {
    kernel
        .registry()
        .modes()
        .iter()
        .map(|m| (m.manifest.id.clone(), m.manifest.display_name.clone()))
        .collect()
}

fn gone() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(serde_json::json!({"error": "shutting down"})),
    )
        .into_response()
}

pub async fn status(State(dash): State<Dash>) -> Response {
    match gather(&dash).await {
        Some(s) => Json(s).into_response(),
        None => gone(),
    }
}

#[derive(Serialize)]
struct SessionList {
    sessions: Vec<SessionInfo>,
}

/// The sessions, read on the blocking pool.
pub async fn list(dash: &Dash) -> Option<Vec<SessionInfo>> {
    let kernel = dash.kernel()?;
    let names = mode_names(&kernel);
    let ws = kernel.workspace().clone();
    let cfg = kernel.config().clone();
    tokio::task::spawn_blocking(move || data::sessions(&ws, &cfg, &names))
        .await
        .ok()
}

pub async fn sessions(State(dash): State<Dash>) -> Response {
    match list(&dash).await {
        Some(sessions) => Json(SessionList { sessions }).into_response(),
        None => gone(),
    }
}

/// One session, read on the blocking pool.
pub async fn detail(dash: &Dash, id: String) -> Option<Result<data::SessionDetail, SessionError>> {
    let kernel = dash.kernel()?;
    let names = mode_names(&kernel);
    let ws = kernel.workspace().clone();
    let cfg = kernel.config().clone();
    let logs = kernel.provider().log_reader();
    tokio::task::spawn_blocking(move || {
        let view = logs.as_ref().map(|l| l.view());
        data::session(&ws, &cfg, &names, &id, view.as_ref())
    })
    .await
    .ok()
}

pub async fn session(State(dash): State<Dash>, Path(id): Path<String>) -> Response {
    match detail(&dash, id).await {
        Some(Ok(d)) => Json(d).into_response(),
        Some(Err(SessionError::BadId)) => (
            StatusCode::BAD_REQUEST,
            Json(
                serde_json::json!({"error": "not a session id (like cook-20261022-195500-a1b2c3)"}),
            ),
        )
            .into_response(),
        Some(Err(SessionError::Unknown)) => (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"error": "no such session"})),
        )
            .into_response(),
        None => gone(),
    }
}

#[derive(Deserialize)]
pub struct LiveQuery {
    #[serde(default)]
    pub after: usize,
}

/// The active session's new records.
#[derive(Debug, Clone, Serialize)]
pub struct Live {
    /// The active session (`null` when no mode is active).
    pub session_id: Option<String>,
    pub total: usize,
    pub records: Vec<Line>,
}

/// The active session's records from index `after` on (blocking: files).
pub fn read_live(ws: &crate::workspace::Workspace, after: usize) -> Live {
    let active = data::action(ws)
        .ok()
        .flatten()
        .filter(|a| a.active)
        .and_then(|a| a.session_id);
    let conv = active
        .as_deref()
        .and_then(|sid| data::session_dir(ws, sid).ok())
        .map(|dir| data::conversation(&dir.join(CONVERSATION_FILE), after))
        .unwrap_or_default();
    Live {
        session_id: active,
        total: conv.total,
        records: conv.records,
    }
}

pub async fn live(State(dash): State<Dash>, Query(q): Query<LiveQuery>) -> Response {
    let Some(kernel) = dash.kernel() else {
        return gone();
    };
    let ws = kernel.workspace().clone();
    let live = tokio::task::spawn_blocking(move || read_live(&ws, q.after)).await;
    match live {
        Ok(l) => Json(l).into_response(),
        Err(_) => gone(),
    }
}
