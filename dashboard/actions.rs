//! What the owner can do from the dashboard: exit the active mode, cancel a reminder,
//! forget a learned example, keep a chat's answer as one. Each goes through the kernel's
//! command path as an owner turn (a typed [`Command`]: `/mode exit`, `/reminders cancel
//! ID`, `/examples forget ID`, `/good CHANNEL CHAT_ID`), exactly as `homebot reminders
//! cancel` does from the terminal: the dashboard never writes a file. [`super::auth`] has
//! already checked the token; the ids are checked here before a command is made.
//!
//! A form post gets a small page; a request that accepts JSON gets
//! `{"ok": …, "text": …, "outcome": …}` (the turn's outcome, as on the control socket).

use super::html as pages;
use super::Dash;
use crate::channels::cli;
use crate::modes::examples::is_case_id;
use crate::turn::{ChatRef, Command, Outcome, Reply};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};

/// The chat the dashboard's commands run in (its own FIFO beside the terminal's).
pub const CHAT: &str = "dashboard";
/// Who the commands run as.
pub const SPEAKER: &str = "owner";

/// The HTTP status of a command's outcome: refused (no mode to exit, no such reminder)
/// is a conflict with the state; a failure is the server's.
pub fn status_of(o: &Outcome) -> StatusCode {
    match o {
        Outcome::Answered => StatusCode::OK,
        Outcome::Refused { .. } | Outcome::Cancelled => StatusCode::CONFLICT,
        Outcome::Failed { .. } => StatusCode::SERVICE_UNAVAILABLE,
    }
}

async fn run(dash: &Dash, command: Command) -> Option<Reply> {
    let kernel = dash.kernel()?;
    let turn = cli::turn(CHAT, SPEAKER, command.to_string());
    Some(kernel.submit(turn).reply().await)
}

fn answer(dash: &Dash, headers: &HeaderMap, reply: Option<Reply>) -> Response {
    answer_back_to(dash, headers, reply, "/")
}

/// The reply as JSON or as a small page whose back link goes to `back`.
fn answer_back_to(dash: &Dash, headers: &HeaderMap, reply: Option<Reply>, back: &str) -> Response {
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"));
    let Some(reply) = reply else {
        return pages::refusal(
            dash.lang(),
            StatusCode::SERVICE_UNAVAILABLE,
            pages::Refusal::Unavailable,
        );
    };
    let ok = reply.is_answered();
    let status = status_of(&reply.outcome);
    if wants_json {
        let body = serde_json::json!({"ok": ok, "text": reply.text, "outcome": reply.outcome});
        return (status, Json(body)).into_response();
    }
    pages::outcome_back_to(dash.lang(), status, ok, &reply.text, back)
}

/// `POST /action/mode/exit`, `POST /api/mode/exit`.
pub async fn exit_mode(State(dash): State<Dash>, headers: HeaderMap) -> Response {
    let reply = run(&dash, Command::Exit(None)).await;
    answer(&dash, &headers, reply)
}

/// `POST /action/reminders/{id}/cancel`, `POST /api/reminders/{id}/cancel`.
pub async fn cancel_reminder(
    State(dash): State<Dash>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let Ok(id) = id.parse::<u32>() else {
        return (StatusCode::BAD_REQUEST, "not a reminder id\n").into_response();
    };
    let reply = run(&dash, Command::CancelReminder(Some(id))).await;
    answer(&dash, &headers, reply)
}

/// `POST /action/examples/{id}/forget`, `POST /api/examples/{id}/forget`.
pub async fn forget_example(
    State(dash): State<Dash>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if !is_case_id(&id) {
        return (
            StatusCode::BAD_REQUEST,
            "not an example id (like cooking-3)\n",
        )
            .into_response();
    }
    let reply = run(&dash, Command::ForgetExample(Some(id))).await;
    answer_back_to(&dash, &headers, reply, super::examples::PAGE)
}

/// The chat whose answer the keep button names.
#[derive(serde::Deserialize)]
pub struct KeepForm {
    pub channel: String,
    pub chat_id: String,
}

/// `POST /action/examples/keep`, `POST /api/examples/keep` (a form: `channel`, `chat_id`).
pub async fn keep_example(
    State(dash): State<Dash>,
    headers: HeaderMap,
    Form(f): Form<KeepForm>,
) -> Response {
    let Some(chat) = ChatRef::new(&f.channel, &f.chat_id) else {
        return (
            StatusCode::BAD_REQUEST,
            "not a chat (channel and chat id)\n",
        )
            .into_response();
    };
    let reply = run(&dash, Command::GoodIn(Some(chat))).await;
    answer_back_to(&dash, &headers, reply, super::examples::PAGE)
}
