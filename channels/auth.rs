//! Token checks shared by the channels' servers (QQ reverse WebSocket, voice WebSocket).

use axum::http::HeaderMap;
use std::collections::HashMap;

/// The token a client presented: `Authorization: Bearer <t>` (or `Token <t>`, as older
/// OneBot implementations send), else the `query_key` query parameter.
pub fn presented_token(
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    query_key: &str,
) -> Option<String> {
    if let Some(v) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        for prefix in ["Bearer ", "bearer ", "Token ", "token "] {
            if let Some(t) = v.strip_prefix(prefix) {
                return Some(t.trim().to_string());
            }
        }
        return Some(v.to_string());
    }
    query.get(query_key).cloned()
}

/// Constant-time comparison of a presented token with the configured one, so a wrong
/// token leaks nothing through timing.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    !b.is_empty()
        && a.len() == b.len()
        && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let mut h = HeaderMap::new();
        h.insert("authorization", "Bearer abc".parse().unwrap());
        assert_eq!(
            presented_token(&h, &HashMap::new(), "access_token").as_deref(),
            Some("abc")
        );
        h.insert("authorization", "Token old".parse().unwrap());
        assert_eq!(
            presented_token(&h, &HashMap::new(), "access_token").as_deref(),
            Some("old")
        );
        let q = HashMap::from([("access_token".to_string(), "xyz".to_string())]);
        assert_eq!(
            presented_token(&HeaderMap::new(), &q, "access_token").as_deref(),
            Some("xyz")
        );
        assert_eq!(presented_token(&HeaderMap::new(), &q, "token"), None);
        assert!(
            same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("abc", "ab")
        );
    }
}
