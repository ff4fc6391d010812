//! The examples the modes learned ([`crate::modes::examples`]), on their own page
//! (`/examples`, linked from `/`) and as JSON (`GET /api/examples`): per mode, the kept
//! cases newest first, each with a forget button; and, for the active session of a mode
//! that learns, each chat's last answer that others heard, with a keep button — the
//! owner's explicit word that an answer was good. The buttons post to
//! [`super::actions`], which run the kernel's commands.
//!
//! The cases are read from their files on the blocking pool and only read
//! ([`ExampleStore::peek`]: an unreadable file is shown as a warning and left for the
//! gateway to set aside). The candidates live only in the mode manager: they are asked of
//! it with a deadline ([`CANDIDATES_WAIT`]), as the reminders are of theirs, and shown as
//! unknown when it does not answer in time.

use super::auth::Access;
use super::html::{esc, header, page, refusal, when, Refusal};
use super::text::{words, Words};
use super::Dash;
use crate::modes::examples::{Case, ExampleStore, Judged};
use crate::modes::mode_core::examples::CandidateView;
use crate::modes::session::excerpt;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use std::time::Duration;

/// The page's path.
pub const PAGE: &str = "/examples";
/// How long the mode manager may take to list the candidates before the page goes
/// without them.
pub const CANDIDATES_WAIT: Duration = Duration::from_secs(2);
/// How much of a case's words and answer the page shows (the JSON has them whole).
const USER_CHARS: usize = 120;
const ANSWER_CHARS: usize = 240;

/// `GET /api/examples`.
#[derive(Debug, Clone, Serialize)]
pub struct Examples {
    pub modes: Vec<ModeCases>,
    /// The active session's answers that others heard, newest first (`[]` when no mode
    /// that learns is active; `null` when the mode manager did not answer in time).
    pub candidates: Option<Vec<CandidateView>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModeCases {
    pub mode_id: String,
    pub display_name: String,
    /// Why the mode's file could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Newest first.
    pub cases: Vec<CaseView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseView {
    pub id: String,
    pub at: String,
    pub judged: Judged,
    pub channel: String,
    pub chat_id: String,
    pub room: Option<String>,
    pub user: String,
    pub answer: String,
    pub session_id: String,
}

impl From<Case> for CaseView {
    fn from(c: Case) -> Self {
        Self {
            id: c.id,
            at: c.at,
            judged: c.judged,
            channel: c.scene.channel,
            chat_id: c.scene.chat_id,
            room: c.scene.room,
            user: c.user,
            answer: c.answer,
            session_id: c.session_id,
        }
    }
}

/// The modes that learn (in the registry's order) and any other mode with a cases file,
/// their cases read on the blocking pool; the candidates from the mode manager.
pub async fn gather(dash: &Dash) -> Option<Examples> {
    let kernel = dash.kernel()?;
    let mut modes: Vec<(String, String)> = (kernel.registry().modes().iter())
        .filter(|m| m.manifest.examples.is_some())
        .map(|m| (m.manifest.id.clone(), m.manifest.display_name.clone()))
        .collect();
    let store = ExampleStore::new(kernel.workspace());
    let names = super::api::mode_names(&kernel);
    let read = tokio::task::spawn_blocking(move || {
        for id in store.modes() {
            if !modes.iter().any(|(m, _)| *m == id) {
                let name = names.get(&id).cloned().unwrap_or_else(|| id.clone());
                modes.push((id, name));
            }
        }
        modes
            .into_iter()
            .map(|(mode_id, display_name)| {
                let (cases, warning) = store.peek(&mode_id);
                ModeCases {
                    mode_id,
                    display_name,
                    warning,
                    cases: cases.into_iter().rev().map(CaseView::from).collect(),
                }
            })
            .collect::<Vec<_>>()
    });
    let asked = tokio::time::timeout(CANDIDATES_WAIT, kernel.modes().shared_candidates());
    let (read, asked) = tokio::join!(read, asked);
    Some(Examples {
        modes: read.ok()?,
        candidates: asked.ok().and_then(Result::ok),
    })
}

fn gone() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(serde_json::json!({"error": "shutting down"})),
    )
        .into_response()
}

/// `GET /api/examples`.
pub async fn api(State(dash): State<Dash>) -> Response {
    match gather(&dash).await {
        Some(e) => Json(e).into_response(),
        None => gone(),
    }
}

fn judged(w: &Words, j: Judged) -> &'static str {
    match j {
        Judged::Good => w.judged[0],
        Judged::Praised => w.judged[1],
        Judged::Thanked => w.judged[2],
        Judged::Dashboard => w.judged[3],
    }
}

/// `channel/chat_id`, and the room when known.
fn scene(channel: &str, chat_id: &str, room: Option<&str>) -> String {
    match room {
        Some(r) => format!("{channel}/{chat_id} · {r}"),
        None => format!("{channel}/{chat_id}"),
    }
}

fn candidates_section(w: &Words, candidates: Option<&[CandidateView]>) -> String {
    let mut out = format!(
        "<section id=\"candidates\"><h2>{}</h2><p class=\"muted\">{}</p>",
        esc(w.candidates),
        esc(w.candidates_note)
    );
    match candidates {
        Some(list) if !list.is_empty() => {
            out.push_str("<ul class=\"plain\">");
            for c in list {
                out.push_str(&format!(
                    "<li data-chat=\"{chat}\"><div class=\"who\">{scene} · {at}</div><div class=\"user\">{user}</div><div class=\"bot\">{answer}</div><form class=\"keep\" method=\"post\" action=\"/action/examples/keep\"><input type=\"hidden\" name=\"channel\" value=\"{ch}\"><input type=\"hidden\" name=\"chat_id\" value=\"{id}\"><button class=\"small\" type=\"submit\">{keep}</button></form></li>",
                    chat = esc(&format!("{}/{}", c.channel, c.chat_id)),
                    scene = esc(&scene(&c.channel, &c.chat_id, c.room.as_deref())),
                    at = esc(&when(&c.at)),
                    user = esc(&c.user),
                    answer = esc(&c.answer),
                    ch = esc(&c.channel),
                    id = esc(&c.chat_id),
                    keep = esc(w.keep),
                ));
            }
            out.push_str("</ul>");
        }
        Some(_) => out.push_str(&format!("<p class=\"muted\">{}</p>", esc(w.no_candidates))),
        None => out.push_str(&format!("<p class=\"muted\">{}</p>", esc(w.unknown))),
    }
    out.push_str("</section>");
    out
}

fn cases_section(w: &Words, modes: &[ModeCases]) -> String {
    let mut out = format!("<section id=\"examples\"><h2>{}</h2>", esc(w.examples));
    if modes.is_empty() {
        out.push_str(&format!("<p class=\"muted\">{}</p>", esc(w.no_examples)));
    }
    for m in modes {
        out.push_str(&format!(
            "<h3 data-mode=\"{}\">{} <span class=\"muted\">{}</span></h3>",
            esc(&m.mode_id),
            esc(&m.display_name),
            m.cases.len()
        ));
        if let Some(warning) = &m.warning {
            out.push_str(&format!("<p class=\"bad warning\">{}</p>", esc(warning)));
        }
        if m.cases.is_empty() {
            out.push_str(&format!("<p class=\"muted\">{}</p>", esc(w.no_examples)));
            continue;
        }
        out.push_str("<ul class=\"plain\">");
        for c in &m.cases {
            out.push_str(&format!(
                "<li id=\"case-{id}\"><div class=\"who\">{id} · {at} · {judged} · {scene}</div><div class=\"user\">{user}</div><div class=\"bot\">{answer}</div><form class=\"inline\" method=\"post\" action=\"/action/examples/{id}/forget\"><button class=\"small\" type=\"submit\">{forget}</button></form></li>",
                id = esc(&c.id),
                at = esc(&when(&c.at)),
                judged = esc(judged(w, c.judged)),
                scene = esc(&scene(&c.channel, &c.chat_id, c.room.as_deref())),
                user = esc(&excerpt(&c.user, USER_CHARS)),
                answer = esc(&excerpt(&c.answer, ANSWER_CHARS)),
                forget = esc(w.forget),
            ));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
    out
}

/// `GET /examples`: the candidates to keep, then every mode's kept cases.
pub async fn page_handler(State(dash): State<Dash>, access: Option<Extension<Access>>) -> Response {
    let w = words(dash.lang());
    let owner = access.is_some_and(|Extension(a)| a == Access::Owner);
    let (Some(kernel), Some(ex)) = (dash.kernel(), gather(&dash).await) else {
        return refusal(
            dash.lang(),
            StatusCode::SERVICE_UNAVAILABLE,
            Refusal::Unavailable,
        );
    };
    let household = &kernel.config().household.name;
    let mut body = header(w, household, &format!("<a href=\"/\">{}</a>", esc(w.back)));
    body.push_str("<main>");
    if !owner {
        body.push_str(&format!(
            "<p class=\"muted\">{} <a href=\"/login\">{}</a></p>",
            esc(w.owner_only),
            esc(w.login)
        ));
    }
    body.push_str(&candidates_section(w, ex.candidates.as_deref()));
    body.push_str(&cases_section(w, &ex.modes));
    body.push_str("</main>");
    page(w, w.examples, StatusCode::OK, &body, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Language;

    #[test]
    fn what_a_peer_said_is_escaped_and_shortened() {
        let w = words(Language::En);
        let m = ModeCases {
            mode_id: "cooking".into(),
            display_name: "做饭模式".into(),
            warning: Some("cooking.json is unreadable <x>".into()),
            cases: vec![CaseView {
                id: "cooking-1".into(),
                at: "2026-12-01T18:00:00+08:00".into(),
                judged: Judged::Dashboard,
                channel: "qq".into(),
                chat_id: "group:1".into(),
                room: None,
                user: "<script>alert(1)</script>".into(),
                answer: "答".repeat(ANSWER_CHARS + 50),
                session_id: "cook-1".into(),
            }],
        };
        let html = cases_section(w, &[m]);
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(html.contains("unreadable &lt;x&gt;"), "{html}");
        assert!(html.contains("kept here"), "{html}");
        assert!(html.contains(&format!("{}…", "答".repeat(ANSWER_CHARS))));
        assert!(!html.contains(&"答".repeat(ANSWER_CHARS + 1)));
        assert!(html.contains("action=\"/action/examples/cooking-1/forget\""));
        let c = CandidateView {
            mode_id: "cooking".into(),
            session_id: "cook-1".into(),
            channel: "qq".into(),
            chat_id: "group:\"1\"".into(),
            room: Some("厨房".into()),
            at: "2026-12-01T18:00:00+08:00".into(),
            user: "蒸鱼".into(),
            answer: "八分钟".into(),
        };
        let html = candidates_section(w, Some(&[c]));
        assert!(html.contains("value=\"group:&quot;1&quot;\""), "{html}");
        assert!(html.contains("qq/group:&quot;1&quot; · 厨房"), "{html}");
        assert!(candidates_section(w, None).contains(w.unknown));
        assert!(candidates_section(w, Some(&[])).contains(w.no_candidates));
    }
}
