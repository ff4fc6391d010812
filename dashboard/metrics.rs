//! `GET /metrics`: the process's metrics in the Prometheus text format
//! ([`crate::metrics`]), with the channels' links from the presence registry. Served by
//! the dashboard's server, under its access rules (open on loopback; beyond it, the token).

use super::Dash;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

pub async fn metrics(State(dash): State<Dash>) -> Response {
    let Some(kernel) = dash.kernel() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "homebot is stopping\n").into_response();
    };
    let links = kernel.presence().snapshot();
    let states = crate::metrics::channel_states(links.iter().map(|l| {
        (
            l.channel,
            l.id.as_deref().unwrap_or(""),
            l.connected,
            Some(l.since.timestamp()),
        )
    }));
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        crate::metrics::render(&states),
    )
        .into_response()
}
