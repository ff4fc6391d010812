//! Who may read and who may act.
//!
//! - Reading: open on loopback; bound beyond loopback, every request needs the token.
//! - Acting (every `POST` but the login): the token, always — on loopback too. With no
//!   token configured nobody can act from the dashboard.
//! - The token comes as `Authorization: Bearer <token>`, or as the cookie the login form
//!   (or a `?token=` link, exchanged at once for the cookie and a redirect that drops it
//!   from the address bar) sets: `HttpOnly`, `SameSite=Strict`, holding a random login id
//!   the server maps to the login ([`super::logins`]: it expires, and `POST /logout` or a
//!   restart ends it), so a leaked cookie is not the token. Tokens are compared in
//!   constant time. A `POST` whose `Origin` is another site is refused. The
//!   login form takes a few wrong tokens a minute per address ([`crate::channels::login_limit`]).
//!
//! Every answer gets `no-store`, `nosniff`, no referrer to other sites, no framing and a content policy
//! that allows nothing from elsewhere and no inline code but the pages' own blocks, by hash. Each request is handled within
//! [`REQUEST_DEADLINE`] (a body that trickles in is cut off), but the live stream
//! ([`LIVE_EVENTS`], bounded by `live_events`), and its body is bounded.
//!
//! The routes channels provide (Home Assistant's agent endpoint) are served beside these
//! rules, not under them: each checks its own token (nothing else opens it, and it opens
//! nothing else), with the same wrong-token table and the same headers.

use super::html as pages;
use super::logins::{Logins, LOGIN_LIFETIME};
use super::Dash;
use crate::channels::auth::same_secret;
use crate::channels::login_limit::Verdict;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form, Router};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::LazyLock;
use std::time::{Duration, Instant};
use tracing::warn;

/// The cookie that carries the login's id ([`super::logins`]) after a login.
pub const COOKIE: &str = "homebot_dash";
/// A request is answered within this, or gets 408.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(15);
/// The one path answered without [`REQUEST_DEADLINE`]: the live stream.
pub const LIVE_EVENTS: &str = "/api/live/events";
/// Largest request body (the forms carry a token at most).
pub const MAX_BODY: usize = 4096;
/// Longest token looked at (a longer one cannot be right).
const MAX_TOKEN: usize = 512;

/// [`pages::content_policy`], hashed once.
static CONTENT_POLICY: LazyLock<HeaderValue> = LazyLock::new(|| {
    HeaderValue::from_str(&pages::content_policy())
        .expect("the policy is ASCII: fixed words and base64")
});

/// Put the access rules and the deadline around the dashboard's `routes`; merge the
/// routes channels provide beside them (their own token rules and bounds: Home
/// Assistant's agent answer streams as long as its turn, bounded by the turn's limits);
/// the body cap and the headers around all.
pub fn wrap(routes: Router, provided: Option<Router>, dash: Dash) -> Router {
    let dashboard = routes
        .layer(middleware::from_fn_with_state(dash, guard))
        .layer(middleware::from_fn(deadline));
    let all = match provided {
        Some(p) => dashboard.merge(p),
        None => dashboard,
    };
    all.layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn(headers))
}

async fn deadline(req: Request, next: Next) -> Response {
    // the live stream is meant to stay open; it has bounds of its own (`live_events`)
    if req.uri().path() == LIVE_EVENTS {
        return next.run(req).await;
    }
    match tokio::time::timeout(REQUEST_DEADLINE, next.run(req)).await {
        Ok(r) => r,
        Err(_) => (StatusCode::REQUEST_TIMEOUT, "request took too long\n").into_response(),
    }
}

async fn headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    for (k, v) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // not `no-referrer`: with it a browser sends `Origin: null` on the forms' posts
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    h.insert(header::CONTENT_SECURITY_POLICY, CONTENT_POLICY.clone());
    resp
}

/// What a request proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token (or a wrong one).
    Anonymous,
    /// The configured token.
    Owner,
}

/// The rules (see the module doc), in front of every route.
async fn guard(State(dash): State<Dash>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let token = dash.inner.token.as_ref().map(|t| t.expose());
    // `?token=…`: exchange it for the cookie, and drop it from the address
    if req.method() == Method::GET {
        if let Some(given) = query_token(req.uri().query()) {
            return match token {
                Some(t) if same_secret(&given, t) => with_login(&dash, Redirect::to(local(&path))),
                _ => refused(&dash, StatusCode::UNAUTHORIZED, pages::Refusal::WrongToken),
            };
        }
    }
    let access = access(req.headers(), token, &lock_logins(&dash));
    // logging in or out needs no proof: a logout ends only the login its cookie names
    let is_login = path == "/login" || path == "/logout";
    if req.method() == Method::POST && !is_login {
        if !same_origin(req.headers()) {
            return refused(&dash, StatusCode::FORBIDDEN, pages::Refusal::OtherSite);
        }
        if token.is_none() {
            return refused(&dash, StatusCode::FORBIDDEN, pages::Refusal::NoTokenSet);
        }
        if access != Access::Owner {
            return refused(&dash, StatusCode::UNAUTHORIZED, pages::Refusal::NeedToken);
        }
    } else if dash.inner.exposed && access != Access::Owner && !is_login {
        return refused(&dash, StatusCode::UNAUTHORIZED, pages::Refusal::NeedToken);
    }
    let mut req = req;
    req.extensions_mut().insert(access);
    next.run(req).await
}

/// `path` as a redirect target that stays on this server (`//host` or `/\host` would
/// leave it).
fn local(path: &str) -> &str {
    if path.starts_with('/') && !path.starts_with("//") && !path.starts_with("/\\") {
        path
    } else {
        "/"
    }
}

/// The access a request's headers prove against the configured `token` and the live
/// `logins`.
pub fn access(headers: &HeaderMap, token: Option<&str>, logins: &Logins) -> Access {
    let Some(token) = token else {
        return Access::Anonymous;
    };
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let v = v.trim();
        let given = v
            .strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
            .unwrap_or(v)
            .trim();
        return if given.len() <= MAX_TOKEN && same_secret(given, token) {
            Access::Owner
        } else {
            Access::Anonymous
        };
    }
    match cookie(headers, COOKIE) {
        Some(id) if logins.is_live(&id, Instant::now()) => Access::Owner,
        _ => Access::Anonymous,
    }
}

/// The value of cookie `name`, if the request carries it.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_string())
}

fn query_token(query: Option<&str>) -> Option<String> {
    let q: HashMap<String, String> = query_pairs(query?).into_iter().collect();
    q.get("token").filter(|t| t.len() <= MAX_TOKEN).cloned()
}

/// `a=b&c=d`, percent-decoded (as axum's `Query` does), without a size surprise: the
/// query is part of the request head, which hyper bounds.
fn query_pairs(q: &str) -> Vec<(String, String)> {
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(
        &format!("/?{q}").parse().unwrap_or_default(),
    )
    .map(|axum::extract::Query(v)| v)
    .unwrap_or_default()
}

/// A `POST` from a page of this same server (or from a tool that sends no `Origin`).
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let bare = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .unwrap_or("");
    !host.is_empty() && bare == host
}

/// `inner` with the cookie of a new login.
fn with_login(dash: &Dash, inner: impl IntoResponse) -> Response {
    let id = lock_logins(dash).create(Instant::now());
    set_cookie(
        inner.into_response(),
        &format!(
            "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
            LOGIN_LIFETIME.as_secs()
        ),
    )
}

fn set_cookie(mut resp: Response, cookie: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

/// `POST /logout`: ends the login the cookie names (if any), clears the cookie and goes
/// to the login form.
pub async fn logout(State(dash): State<Dash>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie(&headers, COOKIE) {
        lock_logins(&dash).drop_login(&id);
    }
    set_cookie(
        Redirect::to("/login").into_response(),
        &format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    )
}

fn refused(dash: &Dash, status: StatusCode, why: pages::Refusal) -> Response {
    pages::refusal(dash.lang(), status, why)
}

#[derive(serde::Deserialize)]
pub struct LoginForm {
    token: String,
}

/// `POST /login`: a right token sets the cookie and goes to the status page. An address
/// that gave a few wrong ones gets `429` for a while ([`crate::channels::login_limit`]), its token
/// not looked at.
pub async fn login(
    State(dash): State<Dash>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    Form(f): Form<LoginForm>,
) -> Response {
    let Some(t) = dash.inner.token.as_ref().map(|t| t.expose()) else {
        return refused(&dash, StatusCode::FORBIDDEN, pages::Refusal::NoTokenSet);
    };
    // served without the listener (a test's router): one address for all
    let addr = peer.map_or(IpAddr::from([0, 0, 0, 0]), |Extension(ConnectInfo(a))| {
        a.ip()
    });
    let now = std::time::Instant::now();
    let verdict = dash.login_limit().check(addr, now);
    if let Verdict::Refused { retry_after, first } = verdict {
        let secs = retry_after.as_secs().max(1);
        if first {
            warn!(
                addr = %addr,
                retry_after_secs = secs,
                "dashboard login: too many wrong tokens from this address; refused for a while"
            );
        }
        let mut resp = refused(
            &dash,
            StatusCode::TOO_MANY_REQUESTS,
            pages::Refusal::TooManyTries,
        );
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        return resp;
    }
    if f.token.len() <= MAX_TOKEN && same_secret(f.token.trim(), t) {
        return with_login(&dash, Redirect::to("/"));
    }
    dash.login_limit().wrong(addr, now);
    refused(&dash, StatusCode::UNAUTHORIZED, pages::Refusal::WrongToken)
}

fn lock_logins(dash: &Dash) -> std::sync::MutexGuard<'_, Logins> {
    // every call leaves the table consistent: a panic elsewhere leaves it usable
    dash.inner
        .logins
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_from_header_or_cookie() {
        let mut logins = Logins::default();
        let mut h = HeaderMap::new();
        assert_eq!(access(&h, Some("s3cret"), &logins), Access::Anonymous);
        h.insert(header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert_eq!(access(&h, Some("s3cret"), &logins), Access::Owner);
        assert_eq!(access(&h, None, &logins), Access::Anonymous);
        h.insert(header::AUTHORIZATION, "Bearer s3cre".parse().unwrap());
        assert_eq!(access(&h, Some("s3cret"), &logins), Access::Anonymous);
        let id = logins.create(Instant::now());
        let with = |v: String| {
            let mut h = HeaderMap::new();
            h.insert(header::COOKIE, v.parse().unwrap());
            h
        };
        let h = with(format!("a=b; {COOKIE}={id}"));
        assert_eq!(access(&h, Some("s3cret"), &logins), Access::Owner);
        assert_eq!(access(&h, None, &logins), Access::Anonymous);
        // the token's own hex (what the cookie held once) is no login
        let hex: String = "s3cret".bytes().map(|b| format!("{b:02x}")).collect();
        let old = with(format!("{COOKIE}={hex}"));
        assert_eq!(access(&old, Some("s3cret"), &logins), Access::Anonymous);
        logins.drop_login(&id);
        assert_eq!(access(&h, Some("s3cret"), &logins), Access::Anonymous);
    }

    #[test]
    fn origins() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        assert!(same_origin(&h));
        h.insert(header::ORIGIN, "http://127.0.0.1:8080".parse().unwrap());
        assert!(same_origin(&h));
        h.insert(header::ORIGIN, "http://evil.example".parse().unwrap());
        assert!(!same_origin(&h));
        assert_eq!(query_token(Some("a=1&token=x%20y")).as_deref(), Some("x y"));
        assert_eq!(local("/sessions/x"), "/sessions/x");
        assert_eq!(local("//evil.example/x"), "/");
        assert_eq!(local("/\\evil.example"), "/");
    }
}
