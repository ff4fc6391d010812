//! The client's idle pool against a loopback server that counts the connections open to
//! it: after a burst at 64 slots the idle ones fall to the bound, and an idle connection
//! is closed once it has waited the pool's timeout.

use super::*;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct Counting {
    url: String,
    /// Connections open now, and the most there ever were at once.
    open: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

/// A server that answers no request before `burst` have arrived, so a burst of `burst`
/// calls at once holds `burst` connections; later requests are answered at once.
async fn server(burst: usize) -> Counting {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let open = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (arrived_tx, arrived) = tokio::sync::watch::channel(0usize);
    let arrived_tx = Arc::new(arrived_tx);
    let (o, p) = (open.clone(), peak.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let now = o.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
            let (o, tx, rx) = (o.clone(), arrived_tx.clone(), arrived.clone());
            tokio::spawn(async move {
                let svc = service_fn(move |_req| {
                    let (tx, mut rx) = (tx.clone(), rx.clone());
                    async move {
                        tx.send_modify(|n| *n += 1);
                        rx.wait_for(|n| *n >= burst).await.unwrap();
                        Ok::<_, Infallible>(hyper::Response::new(String::from("{}")))
                    }
                });
                // ends when the client closes the connection
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
                o.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Counting { url, open, peak }
}

async fn call(e: &Endpoint) {
    let resp = e
        .post(e.client.post(&e.url), b"{}".to_vec(), None)
        .await
        .unwrap();
    // read to the end: only then does the connection go back to the pool
    e.read(resp).await.unwrap();
}

/// Poll until `open` is `n` (the test's timeout bounds the wait).
async fn open_falls_to(open: &AtomicUsize, n: usize) {
    let polled = tokio::time::timeout(Duration::from_secs(20), async {
        while open.load(Ordering::SeqCst) != n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        polled.is_ok(),
        "{} connections open, not {n}",
        open.load(Ordering::SeqCst)
    );
}

#[tokio::test]
async fn after_a_burst_at_64_slots_the_idle_connections_fall_to_the_bound() {
    let srv = server(64).await;
    let mut pool = IdlePool::for_slots(64);
    // long enough that only the bound closes connections here
    pool.timeout = Duration::from_secs(600);
    let e = Endpoint::with_pool(srv.url.clone(), 5, 1 << 20, pool).unwrap();
    futures_util::future::join_all((0..64).map(|_| call(&e))).await;
    assert_eq!(
        srv.peak.load(Ordering::SeqCst),
        64,
        "one connection per call"
    );
    open_falls_to(&srv.open, 16).await;
    // the kept ones serve the next calls: no new connection
    call(&e).await;
    call(&e).await;
    assert_eq!(srv.peak.load(Ordering::SeqCst), 64);
    assert_eq!(srv.open.load(Ordering::SeqCst), 16);
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_timeout() {
    let srv = server(4).await;
    let pool = IdlePool {
        per_host: 4,
        timeout: Duration::from_millis(200),
    };
    let e = Endpoint::with_pool(srv.url.clone(), 5, 1 << 20, pool).unwrap();
    futures_util::future::join_all((0..4).map(|_| call(&e))).await;
    assert_eq!(srv.peak.load(Ordering::SeqCst), 4);
    open_falls_to(&srv.open, 0).await;
}
