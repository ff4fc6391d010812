//! How soon a native satellite starts speaking with `provider.stream = true`, measured
//! (not asserted): `cargo bench --bench stream`.
//!
//! A loopback HTTP server plays a model that streams three sentences 300 ms apart as
//! server-sent events. A satellite on the voice WebSocket (the real channel, in this
//! process) sends a transcript and times the frames it gets: the first `partial`
//! against the moment the server handed the first sentence to its socket (homebot's
//! own latency: SSE parsing, the splitter, the WebSocket frame), and the first partial
//! against the final `reply` (what a satellite waiting for whole replies would wait).
//!
//! Under `cargo test` (no `--bench` argument) it runs two turns as a smoke test.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use homebot::config::EnvOverrides;
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const SENTENCES: [&str; 3] = [
    "先把三个鸡蛋打散，加一点盐。",
    "番茄切成小块，热锅下油先炒蛋。",
    "蛋盛出来再炒番茄，最后一起翻匀就好了。",
];
const GAP: Duration = Duration::from_millis(300);
const TOKEN: &str = "bench-token";

/// When the fake model handed each answer's first sentence to its socket.
#[derive(Default)]
struct Fake {
    first_sent: Mutex<Vec<Instant>>,
}

fn data(v: Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

async fn model(State(f): State<Arc<Fake>>, _body: String) -> Response {
    let stream = futures_util::stream::unfold(0usize, move |i| {
        let f = f.clone();
        async move {
            let chunk = match i {
                0..=2 => {
                    if i > 0 {
                        tokio::time::sleep(GAP).await;
                    }
                    let c = data(
                        json!({"choices": [{"index": 0, "delta": {"content": SENTENCES[i]}}]}),
                    );
                    if i == 0 {
                        f.first_sent.lock().unwrap().push(Instant::now());
                    }
                    c
                }
                3 => data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
                4 => data(
                    json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 40}}),
                ),
                5 => Bytes::from("data: [DONE]\n\n"),
                _ => return None,
            };
            Some((Ok::<_, std::convert::Infallible>(chunk), i + 1))
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

struct Timing {
    /// From the first sentence leaving the model's socket to the first partial frame.
    first_sentence_to_partial: Duration,
    /// From the transcript to the first partial frame.
    to_partial: Duration,
    /// From the transcript to the reply frame.
    to_reply: Duration,
    partials: usize,
}

type Sock =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next_frame(s: &mut Sock) -> Value {
    loop {
        if let Message::Text(t) = s.next().await.unwrap().unwrap() {
            return serde_json::from_str(&t).unwrap();
        }
    }
}

async fn one_turn(s: &mut Sock, fake: &Fake, i: usize) -> Timing {
    let session = format!("bench-{i}");
    let sent = Instant::now();
    s.send(Message::Text(
        json!({"type": "transcript", "session_id": session, "text": "番茄炒蛋怎么做"}).to_string(),
    ))
    .await
    .unwrap();
    let mut first_partial = None;
    let mut partials = 0;
    loop {
        let f = next_frame(s).await;
        let at = Instant::now();
        match f["type"].as_str() {
            Some("partial") => {
                partials += 1;
                first_partial.get_or_insert(at);
            }
            Some("reply") => {
                assert_eq!(f["text"], SENTENCES.concat(), "{f}");
                let first = first_partial.expect("partials came before the reply");
                let first_sent = *fake.first_sent.lock().unwrap().last().unwrap();
                return Timing {
                    first_sentence_to_partial: first - first_sent,
                    to_partial: first - sent,
                    to_reply: at - sent,
                    partials,
                };
            }
            _ => panic!("unexpected frame {f}"),
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let runs = if full { 30 } else { 2 };

    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(model))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[provider]\nstream = true\n\n[voice]\nws_listen = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n"),
    )
    .unwrap();
    let kernel = Kernel::start(
        dir.path(),
        KernelOptions {
            env: Some(EnvOverrides {
                base_url: Some(url),
                model: Some("bench-model".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .unwrap();
    let started = homebot::channels::start_enabled(&kernel).await.unwrap();
    let addr = started
        .bound
        .iter()
        .find(|(label, _)| *label == "voice-ws")
        .unwrap()
        .1;
    let mut req = format!("ws://{addr}/voice/ws?satellite_id=kitchen")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("Authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let (mut sock, _) = tokio_tungstenite::connect_async(req).await.unwrap();

    let mut timings = Vec::with_capacity(runs);
    for i in 0..runs {
        timings.push(one_turn(&mut sock, &fake, i).await);
    }
    println!(
        "\na satellite's first words, provider.stream = true (a model streaming {} sentences {} ms apart, over loopback HTTP; {runs} turns)",
        SENTENCES.len(),
        GAP.as_millis()
    );
    println!(
        "{:>36} {:>10} {:>10} {:>10}",
        "", "p50 ms", "p90 ms", "max ms"
    );
    let row = |label: &str, f: &dyn Fn(&Timing) -> Duration| {
        let mut v: Vec<Duration> = timings.iter().map(f).collect();
        let max = *v.iter().max().unwrap();
        println!(
            "{:>36} {:>10} {:>10} {:>10}",
            label,
            ms(percentile(&mut v, 0.5)),
            ms(percentile(&mut v, 0.9)),
            ms(max)
        );
    };
    row("first sentence sent → first partial", &|t| {
        t.first_sentence_to_partial
    });
    row("transcript → first partial", &|t| t.to_partial);
    row("transcript → reply", &|t| t.to_reply);
    let partials: usize = timings.iter().map(|t| t.partials).sum();
    println!(
        "partial frames per turn: {:.1}",
        partials as f64 / runs as f64
    );
    kernel.shutdown();
}
