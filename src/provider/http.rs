//! What both dialects do the same way over HTTP: send a body, turn a failure into a
//! [`ProviderError`] (with the server's `Retry-After`, a short error text with any echoed
//! key masked), and read an answer with the byte cap; and how many idle connections to
//! the model's host the client keeps.

use super::error::{read_capped, BodyError, ProviderError};
use crate::config::{ResolvedProvider, Secret};
use std::time::Duration;

/// How long an idle connection to the model's host is kept for the next call. A turn's
/// calls follow each other within seconds, so they still reuse one; a quiet household
/// holds none to a public API.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Idle connections kept per host: a quarter of the endpoint's slots, at least 2. At 64
/// slots a burst left 65 connections open and idle (one per call that had run at once);
/// calls that follow each other need only a few, and a new one costs a handshake.
pub fn idle_per_host(max_concurrent: usize) -> usize {
    (max_concurrent / 4).max(2)
}

/// What the client keeps between calls.
#[derive(Debug, Clone, Copy)]
pub struct IdlePool {
    pub per_host: usize,
    pub timeout: Duration,
}

impl IdlePool {
    pub fn for_slots(max_concurrent: usize) -> Self {
        Self {
            per_host: idle_per_host(max_concurrent),
            timeout: IDLE_TIMEOUT,
        }
    }
}

/// Largest error body read; at most [`MAX_ERROR_CHARS`] of it is kept.
pub const MAX_ERROR_BYTES: usize = 64 * 1024;
pub const MAX_ERROR_CHARS: usize = 300;

/// The client a dialect posts with, and what it needs to word its errors.
pub struct Endpoint {
    pub client: reqwest::Client,
    pub url: String,
    /// `url` fit for messages: no credentials, no query.
    pub shown_url: String,
    pub timeout_secs: u64,
    pub max_response_bytes: usize,
}

impl Endpoint {
    /// The client for `url` with `cfg`'s timeout, answer cap and an idle pool sized to
    /// its slots.
    pub fn new(url: String, cfg: &ResolvedProvider) -> Result<Self, ProviderError> {
        Self::with_pool(
            url,
            cfg.timeout_secs,
            cfg.max_response_bytes,
            IdlePool::for_slots(cfg.max_concurrent),
        )
    }

    pub fn with_pool(
        url: String,
        timeout_secs: u64,
        max_response_bytes: usize,
        pool: IdlePool,
    ) -> Result<Self, ProviderError> {
        let shown_url = crate::config::display_url(&url);
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(timeout_secs))
            .connect_timeout(Duration::from_secs(timeout_secs.min(10)))
            .pool_max_idle_per_host(pool.per_host)
            .pool_idle_timeout(pool.timeout)
            .build()
            .map_err(|source| ProviderError::Network {
                url: shown_url.clone(),
                source,
            })?;
        Ok(Self {
            client,
            url,
            shown_url,
            timeout_secs,
            max_response_bytes,
        })
    }

    /// POST `body`; a non-success status becomes [`ProviderError::Http`].
    pub async fn post(
        &self,
        req: reqwest::RequestBuilder,
        body: Vec<u8>,
        key: Option<&Secret>,
    ) -> Result<reqwest::Response, ProviderError> {
        let resp = req
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| self.classify(e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = retry_after(resp.headers());
        let mut body = match read_capped(resp, MAX_ERROR_BYTES).await {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => format!("({e})"),
        };
        // some servers echo the key they refused; the body ends up in logs
        if let Some(k) = key.filter(|k| !k.expose().is_empty()) {
            body = body.replace(k.expose(), "***");
        }
        Err(ProviderError::Http {
            status: status.as_u16(),
            body: short(&body),
            retry_after,
        })
    }

    /// The whole answer body, refused past `max_response_bytes`.
    pub async fn read(&self, resp: reqwest::Response) -> Result<Vec<u8>, ProviderError> {
        read_capped(resp, self.max_response_bytes)
            .await
            .map_err(|e| self.body_error(e))
    }

    pub fn body_error(&self, e: BodyError) -> ProviderError {
        match e {
            BodyError::Read(e) => self.classify(e),
            BodyError::TooLarge(cap) => ProviderError::TooLarge(cap),
        }
    }

    pub fn classify(&self, e: reqwest::Error) -> ProviderError {
        if e.is_timeout() {
            ProviderError::Timeout(self.timeout_secs)
        } else {
            // the printable URL replaces reqwest's, which could carry credentials
            ProviderError::Network {
                url: self.shown_url.clone(),
                source: e.without_url(),
            }
        }
    }
}

/// A JSON answer that did not parse, said briefly.
pub fn malformed(e: serde_json::Error) -> ProviderError {
    let what = if e.is_data() {
        "unexpected shape"
    } else {
        "invalid JSON"
    };
    ProviderError::Malformed(short(&format!("{what}: {e}")))
}

/// At most [`MAX_ERROR_CHARS`] characters, whitespace runs folded: error texts end up in
/// logs and records, and a server may send a whole HTML page.
pub fn short(s: &str) -> String {
    let folded = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= MAX_ERROR_CHARS {
        return folded;
    }
    let mut out: String = folded.chars().take(MAX_ERROR_CHARS - 1).collect();
    out.push('…');
    out
}

/// `Retry-After` as seconds or as an HTTP date.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    Some(
        (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
}

/// The call's id, or `call_<i>` when the server sent none.
pub fn call_id(id: Option<String>, i: usize) -> String {
    id.filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("call_{i}"))
}

pub fn is_event_stream(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

#[cfg(test)]
#[path = "http_pool_tests.rs"]
mod pool_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_pool_is_a_quarter_of_the_slots_at_least_two() {
        assert_eq!(idle_per_host(1), 2);
        assert_eq!(idle_per_host(8), 2);
        assert_eq!(idle_per_host(12), 3);
        assert_eq!(idle_per_host(64), 16);
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a past date: no wait"
        );
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(20)).to_rfc2822();
        h.insert("retry-after", soon.parse().unwrap());
        let d = retry_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(15) && d <= Duration::from_secs(20),
            "{d:?}"
        );
        h.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn short_caps_and_folds() {
        assert_eq!(short(&"y ".repeat(1000)).chars().count(), MAX_ERROR_CHARS);
        assert_eq!(short("a \n\t b"), "a b");
    }
}
