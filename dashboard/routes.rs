//! The dashboard's routes, and the access rules around them.

use super::{actions, api, auth, examples, live_events, metrics, pages, Dash};
use axum::routing::{get, post};
use axum::Router;

/// The dashboard's routes, its state applied. Composable: merge more routes into it
/// (the `/metrics` slot, see [`app`]); [`app`] then puts the access rules around all.
pub fn router(dash: Dash) -> Router {
    Router::new()
        .route("/", get(pages::index))
        .route("/sessions/:id", get(pages::session))
        .route(examples::PAGE, get(examples::page_handler))
        .route("/login", get(pages::login_form).post(auth::login))
        .route("/logout", post(auth::logout))
        .route("/action/mode/exit", post(actions::exit_mode))
        .route(
            "/action/reminders/:id/cancel",
            post(actions::cancel_reminder),
        )
        .route("/action/examples/:id/forget", post(actions::forget_example))
        .route("/action/examples/keep", post(actions::keep_example))
        .route("/api/status", get(api::status))
        .route("/api/examples", get(examples::api))
        .route("/api/sessions", get(api::sessions))
        .route("/api/sessions/:id", get(api::session))
        .route("/api/live", get(api::live))
        .route("/api/live/events", get(live_events::events))
        .route("/api/mode/exit", post(actions::exit_mode))
        .route("/api/reminders/:id/cancel", post(actions::cancel_reminder))
        .route("/api/examples/:id/forget", post(actions::forget_example))
        .route("/api/examples/keep", post(actions::keep_example))
        .with_state(dash)
}

/// Everything served: the dashboard's routes and the `/metrics` slot under the access
/// rules ([`auth::guard`]), and beside them the routes the channels provide
/// (`provided`: Home Assistant's agent endpoint), which check their own tokens against
/// the same wrong-token table.
pub fn app(dash: Dash, provided: Option<Router>) -> Router {
    let routes = router(dash.clone()).merge(
        Router::new()
            .route("/metrics", get(metrics::metrics))
            .with_state(dash.clone()),
    );
    let provided = provided.map(|r| r.layer(axum::Extension(dash.shared_limit())));
    auth::wrap(routes, provided, dash)
}
