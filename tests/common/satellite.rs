//! A native voice satellite: a WebSocket client of homebot's `/voice/ws` (as the
//! satellites of `channels/voice` speak it) — connect with a bearer token, send frames,
//! read the next JSON frame within a deadline.

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

pub type Sock =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How long a frame may take to come.
pub const FRAME_WAIT: Duration = Duration::from_secs(30);

/// `ws://{addr}/voice/ws{query}` with `token` as bearer; the HTTP status if refused.
pub async fn connect(addr: &str, query: &str, token: Option<&str>) -> Result<Sock, u16> {
    let mut req = format!("ws://{addr}/voice/ws{query}")
        .into_client_request()
        .unwrap();
    if let Some(t) = token {
        req.headers_mut()
            .insert("Authorization", format!("Bearer {t}").parse().unwrap());
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((s, _)) => Ok(s),
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => Err(r.status().as_u16()),
        Err(e) => panic!("{e}"),
    }
}

/// Satellite `id`, admitted with `token`.
pub async fn satellite(addr: &str, id: &str, token: &str) -> Sock {
    connect(addr, &format!("?satellite_id={id}"), Some(token))
        .await
        .unwrap_or_else(|status| panic!("satellite {id} refused: HTTP {status}"))
}

pub async fn send(s: &mut Sock, v: Value) {
    s.send(Message::Text(v.to_string())).await.unwrap();
}

/// What the user said in `session`.
pub async fn transcript(s: &mut Sock, session: &str, text: &str) {
    send(
        s,
        json!({"type": "transcript", "session_id": session, "text": text}),
    )
    .await;
}

/// The next text frame as JSON (pings and the like skipped), within [`FRAME_WAIT`].
pub async fn recv(s: &mut Sock) -> Value {
    let text = async {
        loop {
            if let Message::Text(t) = s.next().await.unwrap().unwrap() {
                return t;
            }
        }
    };
    let t = tokio::time::timeout(FRAME_WAIT, text)
        .await
        .expect("a frame within 30 s");
    serde_json::from_str(&t).unwrap()
}
