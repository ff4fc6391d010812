//! The HTML pages, rendered on the server: the status page (`/`), one session
//! (`/sessions/{id}`), the login form, and the small pages of refusals and of an
//! action's outcome. Everything shown is escaped ([`esc`]); no secret is ever rendered;
//! the style and the one script are inline, served by the binary ([`super::html`]).

use super::api::{self, Status};
use super::auth::Access;
use super::data::{self, Line, SessionError, SessionInfo};
use super::html::{esc, header, page, refusal, when, Refusal};
use super::text::{words, Words};
use super::Dash;
use super::{chart, money};
use crate::config::Member;
use crate::modes::session::CONVERSATION_FILE;
use crate::provider::audit::SESSION_AUDIT_FILE;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;

/// How often the status page asks for new records, in milliseconds.
pub const POLL_MS: u64 = 2000;

fn uptime(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else {
        format!("{m}m {}s", secs % 60)
    }
}

fn lines_html(w: &Words, lines: &[Line]) -> String {
    let mut out = String::new();
    for l in lines {
        out.push_str(&format!(
            "<li data-index=\"{}\"{}><div class=\"who\">{} · {} · {}</div><div class=\"user\">{}</div><div class=\"bot\">{}</div></li>",
            l.index,
            if l.failed { " class=\"failed\"" } else { "" },
            esc(&l.speaker),
            esc(&l.channel),
            esc(l.timestamp.get(11..16).unwrap_or(&l.timestamp)),
            esc(&l.user),
            esc(&l.assistant),
        ));
    }
    let _ = w;
    out
}

fn session_row(w: &Words, s: &SessionInfo) -> String {
    format!(
        "<li><a href=\"/sessions/{id}\">{name}</a> <span class=\"state\">{state}</span> <span class=\"muted\">{start} · {turns} {tl}</span><div>{summary}</div></li>",
        id = esc(&s.session_id),
        name = esc(&format!(
            "{} · {}",
            s.display_name,
            s.started_at.as_deref().map(when).unwrap_or_default()
        )),
        state = esc(w.state(s.state)),
        start = esc(&s.session_id),
        turns = s.turns,
        tl = esc(w.turns),
        summary = match &s.summary {
            Some(t) => esc(&crate::modes::session::excerpt(t, 160)),
            None => format!("<span class=\"muted\">{}</span>", esc(w.no_summary)),
        },
    )
}

fn mode_section(w: &Words, st: &Status, owner: bool) -> String {
    let mut out = format!("<section id=\"mode\"><h2>{}</h2>", esc(w.mode));
    match st.mode.as_ref().filter(|a| a.active) {
        Some(a) => {
            let s = st.session.as_ref();
            out.push_str(&format!(
                "<div class=\"mode-name\" id=\"mode-name\">{}</div><dl><dt>{}</dt><dd><a href=\"/sessions/{sid}\">{sid}</a></dd><dt>{}</dt><dd>{}</dd><dt>{}</dt><dd>{}</dd><dt>{}</dt><dd>{}</dd><dt>{}</dt><dd id=\"turns\">{}</dd></dl>",
                esc(a.display_name.as_deref().unwrap_or("?")),
                esc(w.session),
                esc(w.entered_by),
                esc(&s.and_then(|s| Some(format!("{} · {}", s.entered_by.as_deref()?, s.entered_on.as_deref()?))).unwrap_or_else(|| w.unknown.to_string())),
                esc(w.started),
                esc(&a.started_at.as_deref().map(when).unwrap_or_default()),
                esc(w.expires),
                esc(&a.expires_at.as_deref().map(when).unwrap_or_default()),
                esc(w.turns),
                s.map_or(0, |s| s.turns),
                sid = esc(a.session_id.as_deref().unwrap_or_default()),
            ));
            out.push_str(&format!(
                "<form method=\"post\" action=\"/action/mode/exit\" class=\"exit\"><button id=\"exit\" type=\"submit\">{}</button></form>",
                esc(w.exit_mode)
            ));
            if !owner {
                out.push_str(&format!(
                    "<p class=\"muted\">{} <a href=\"/login\">{}</a></p>",
                    esc(w.owner_only),
                    esc(w.login)
                ));
            }
        }
        None => {
            out.push_str(&format!(
                "<div class=\"mode-name\" id=\"mode-name\">{}</div>",
                esc(w.no_mode)
            ));
            if let Some(r) = st.mode.as_ref().and_then(|a| a.exit_reason.as_deref()) {
                out.push_str(&format!(
                    "<p class=\"muted\">{}: {}</p>",
                    esc(w.last_exit),
                    esc(r)
                ));
            }
        }
    }
    if let Some(e) = &st.mode_error {
        out.push_str(&format!("<p class=\"bad\">{}</p>", esc(e)));
    }
    out.push_str(&modes_list(w, st));
    out.push_str(&format!(
        "<p><a href=\"{}\" id=\"examples-link\">{}</a></p>",
        super::examples::PAGE,
        esc(w.examples)
    ));
    out.push_str("</section>");
    out
}

/// The household's modes, each with what it is for (its SKILL.md's description).
fn modes_list(w: &Words, st: &Status) -> String {
    if st.modes.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h3>{}</h3><ul class=\"plain\" id=\"modes\">",
        esc(w.modes_available)
    );
    for m in &st.modes {
        out.push_str(&format!(
            "<li data-mode=\"{}\"><b>{}</b>{}</li>",
            esc(&m.id),
            esc(&m.display_name),
            if m.description.is_empty() {
                String::new()
            } else {
                format!(" — {}", esc(&m.description))
            }
        ));
    }
    out.push_str("</ul>");
    out
}

fn reminders_section(w: &Words, st: &Status) -> String {
    let mut out = format!("<section id=\"reminders\"><h2>{}</h2>", esc(w.reminders));
    match &st.reminders {
        Some(list) if !list.is_empty() => {
            out.push_str("<ul class=\"plain\">");
            for r in list {
                out.push_str(&format!(
                    "<li>#{} {} <span class=\"muted\">{} {} · {}</span> <form class=\"inline\" method=\"post\" action=\"/action/reminders/{}/cancel\"><button class=\"small\" type=\"submit\">{}</button></form></li>",
                    r.id,
                    esc(&r.text),
                    esc(w.due),
                    esc(&when(&r.due_at)),
                    esc(&r.channel),
                    r.id,
                    esc(w.cancel)
                ));
            }
            out.push_str("</ul>");
        }
        Some(_) => out.push_str(&format!("<p class=\"muted\">{}</p>", esc(w.no_reminders))),
        None => out.push_str(&format!("<p class=\"muted\">{}</p>", esc(w.unknown))),
    }
    out.push_str("</section>");
    out
}

fn members_section(w: &Words, members: &[Member]) -> String {
    let mut out = format!("<section id=\"members\"><h2>{}</h2>", esc(w.members));
    if members.is_empty() {
        out.push_str(&format!("<p class=\"muted\">{}</p>", esc(w.no_members)));
    } else {
        out.push_str("<ul class=\"plain\">");
        for m in members {
            let ids: Vec<String> = m
                .qq_ids
                .iter()
                .map(|q| format!("QQ {q}"))
                .chain(m.speaker_ids.iter().map(|s| format!("🔊 {s}")))
                .collect();
            out.push_str(&format!(
                "<li>{} <span class=\"muted\">{} {}</span></li>",
                esc(m.name.as_deref().unwrap_or(&m.id)),
                esc(&m.id),
                esc(&ids.join(", "))
            ));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
    out
}

fn channels_section(w: &Words, st: &Status) -> String {
    let mut out = format!("<section id=\"channels\"><h2>{}</h2>", esc(w.channels));
    if st.channels.is_empty() {
        out.push_str(&format!("<p class=\"muted\">{}</p>", esc(w.no_channels)));
    } else {
        out.push_str("<ul class=\"plain\">");
        for c in &st.channels {
            out.push_str(&format!(
                "<li>{} {} <span class=\"{}\">{}</span> <span class=\"muted\">{} {}</span></li>",
                esc(c.channel),
                esc(c.id.as_deref().unwrap_or_default()),
                if c.connected { "ok" } else { "bad" },
                esc(if c.connected {
                    w.connected
                } else {
                    w.disconnected
                }),
                esc(w.since),
                esc(&when(&c.since.to_rfc3339())),
            ));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
    out
}

fn sessions_section(w: &Words, sessions: &[SessionInfo]) -> String {
    let mut out = format!("<section id=\"sessions\"><h2>{}</h2>", esc(w.past_sessions));
    if sessions.is_empty() {
        out.push_str(&format!("<p class=\"muted\">{}</p>", esc(w.no_sessions)));
    }
    // grouped by mode (the cooking history is the 做饭模式 group), newest first in each
    let mut modes: Vec<&str> = Vec::new();
    for s in sessions {
        if !modes.contains(&s.display_name.as_str()) {
            modes.push(&s.display_name);
        }
    }
    for m in modes {
        out.push_str(&format!("<h3>{}</h3><ul class=\"plain\">", esc(m)));
        for s in sessions.iter().filter(|s| s.display_name == m) {
            out.push_str(&session_row(w, s));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
    out
}

/// `GET /`: the status page.
pub async fn index(State(dash): State<Dash>, access: Option<Extension<Access>>) -> Response {
    let w = words(dash.lang());
    let owner = access.is_some_and(|Extension(a)| a == Access::Owner);
    let (Some(kernel), Some(st), Some(sessions)) = (
        dash.kernel(),
        api::gather(&dash).await,
        api::list(&dash).await,
    ) else {
        return refusal(
            dash.lang(),
            StatusCode::SERVICE_UNAVAILABLE,
            Refusal::Unavailable,
        );
    };
    let active = st.session.as_ref().map(|s| s.session_id.clone());
    let ws = kernel.workspace().clone();
    let sid = active.clone();
    let prices = kernel.config().prices();
    let logs = kernel.provider().log_reader();
    let ((conv, tokens, spent), days) = tokio::task::spawn_blocking(move || {
        let dir = sid.and_then(|s| data::session_dir(&ws, &s).ok());
        // the audit lines of calls just answered count too, written or not
        let view = logs.as_ref().map(|l| l.view());
        let view = view.as_ref();
        let session = match dir {
            Some(d) => (
                data::conversation(&d.join(CONVERSATION_FILE), 0),
                data::turn_tokens(&d.join(SESSION_AUDIT_FILE), view),
                money::session(&d.join(SESSION_AUDIT_FILE), &prices, view),
            ),
            None => Default::default(),
        };
        (session, money::by_day(&ws, &prices, view))
    })
    .await
    .unwrap_or_default();
    let right = format!(
        "{} {}{}",
        esc(w.uptime),
        esc(&uptime(st.uptime_secs)),
        if owner {
            String::new()
        } else {
            format!(" · <a href=\"/login\">{}</a>", esc(w.login))
        }
    );
    let mut body = header(w, &st.household, &right);
    body.push_str("<main>");
    body.push_str(&mode_section(w, &st, owner));
    body.push_str(&format!(
        "<section id=\"conversation\"><h2>{}</h2>{}<ol class=\"conv\" id=\"live\" data-session=\"{}\" data-total=\"{}\" data-every=\"{POLL_MS}\">{}</ol></section>",
        esc(w.live),
        if conv.total == 0 {
            format!("<p class=\"muted\" id=\"live-empty\">{}</p>", esc(w.no_turns_yet))
        } else {
            String::new()
        },
        esc(active.as_deref().unwrap_or_default()),
        conv.total,
        lines_html(w, &conv.records)
    ));
    if active.is_some() {
        body.push_str(&format!(
            "<section id=\"tokens\"><h2>{}</h2>{}<p id=\"cost\">{}: {}</p></section>",
            esc(w.tokens),
            chart::svg(&tokens, w),
            esc(w.cost),
            esc(&money::line(w, &spent))
        ));
    }
    body.push_str(&format!(
        "<section id=\"spend\"><h2>{}</h2>{}</section>",
        esc(w.spend_by_day),
        money::days_html(w, &days)
    ));
    body.push_str(&reminders_section(w, &st));
    body.push_str(&channels_section(w, &st));
    body.push_str(&members_section(w, &kernel.config().members));
    let past: Vec<SessionInfo> = sessions
        .into_iter()
        .filter(|s| Some(&s.session_id) != active.as_ref())
        .collect();
    body.push_str(&sessions_section(w, &past));
    body.push_str("</main>");
    page(w, w.title, StatusCode::OK, &body, true)
}

/// `GET /sessions/{id}`: one session, its summary, conversation and chart.
pub async fn session(State(dash): State<Dash>, Path(id): Path<String>) -> Response {
    let w = words(dash.lang());
    let d = match api::detail(&dash, id).await {
        Some(Ok(d)) => d,
        Some(Err(SessionError::BadId)) => {
            return refusal(dash.lang(), StatusCode::BAD_REQUEST, Refusal::BadId)
        }
        Some(Err(SessionError::Unknown)) => {
            return refusal(dash.lang(), StatusCode::NOT_FOUND, Refusal::NotFound)
        }
        None => {
            return refusal(
                dash.lang(),
                StatusCode::SERVICE_UNAVAILABLE,
                Refusal::Unavailable,
            )
        }
    };
    let household = dash
        .kernel()
        .map(|k| k.config().household.name.clone())
        .unwrap_or_default();
    let mut body = header(w, &household, &format!("<a href=\"/\">{}</a>", esc(w.back)));
    body.push_str("<main>");
    body.push_str(&format!(
        "<section><h2>{} · {}</h2><dl><dt>{}</dt><dd>{}</dd><dt>{}</dt><dd>{}</dd><dt>{}</dt><dd>{}</dd></dl><h3>{}</h3><div class=\"bot\">{}</div></section>",
        esc(&d.info.display_name),
        esc(w.state(d.info.state)),
        esc(w.session),
        esc(&d.info.session_id),
        esc(w.started),
        esc(&d.info.started_at.as_deref().map(when).unwrap_or_default()),
        esc(w.turns),
        d.info.turns,
        esc(w.summary),
        esc(d.info.summary.as_deref().unwrap_or(w.no_summary)),
    ));
    let spent = match dash.kernel() {
        Some(k) => {
            let prices = k.config().prices();
            let audit = data::session_dir(k.workspace(), &d.info.session_id)
                .map(|dir| dir.join(SESSION_AUDIT_FILE));
            let logs = k.provider().log_reader();
            tokio::task::spawn_blocking(move || match audit {
                Ok(a) => {
                    let view = logs.as_ref().map(|l| l.view());
                    money::session(&a, &prices, view.as_ref())
                }
                Err(_) => Default::default(),
            })
            .await
            .unwrap_or_default()
        }
        None => Default::default(),
    };
    body.push_str(&format!(
        "<section><h2>{}</h2>{}<p id=\"cost\">{}: {}</p></section>",
        esc(w.tokens),
        chart::svg(&d.tokens, w),
        esc(w.cost),
        esc(&money::line(w, &spent))
    ));
    body.push_str(&format!(
        "<section><h2>{}</h2><ol class=\"conv\">{}</ol></section></main>",
        esc(w.conversation),
        lines_html(w, &d.conversation.records)
    ));
    page(w, &d.info.display_name, StatusCode::OK, &body, false)
}

/// `GET /login`.
pub async fn login_form(State(dash): State<Dash>) -> Response {
    let w = words(dash.lang());
    let body = format!(
        "{}<main><section><h2>{}</h2><p class=\"muted\">{}</p><form method=\"post\" action=\"/login\"><label>{} <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"current-password\"></label> <button type=\"submit\" id=\"login\">{}</button></form></section></main>",
        header(w, "", ""),
        esc(w.login),
        esc(w.owner_only),
        esc(w.token),
        esc(w.login)
    );
    page(w, w.login, StatusCode::OK, &body, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_is_short() {
        assert_eq!(uptime(3725), "1h 2m");
    }
}
