//! The frame every page shares (head, style, header), escaping, and the small pages of a
//! refusal and of an action's outcome. A leaf: the other files of the dashboard use it.

use super::text::{words, Words};
use crate::config::Language;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

const STYLE: &str = include_str!("assets/style.css");
const LIVE_JS: &str = include_str!("assets/live.js");

/// The content policy of every answer: nothing from elsewhere, and of inline code only
/// the pages' own `<style>` and `<script>` blocks, named by their SHA-256 — no
/// `unsafe-inline`, so neither an injected `<script>` nor a `style=` attribute would be
/// applied. The pages carry no `style=` attribute (classes in `assets/style.css`).
pub fn content_policy() -> String {
    format!(
        "default-src 'none'; img-src 'self' data:; style-src '{}'; script-src '{}'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        sha256_source(STYLE),
        sha256_source(LIVE_JS)
    )
}

/// A CSP hash source: `sha256-` and the base64 of the block's SHA-256.
fn sha256_source(block: &str) -> String {
    use base64::Engine;
    let digest = ring::digest::digest(&ring::digest::SHA256, block.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
    )
}

/// Text made safe to put in HTML, inside elements and quoted attributes alike.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `2026-10-22T19:55:00+08:00` as `2026-10-22 19:55`.
pub fn when(t: &str) -> String {
    t.get(..16).unwrap_or(t).replace('T', " ")
}

pub fn page(w: &Words, title: &str, status: StatusCode, body: &str, script: bool) -> Response {
    let script = if script {
        format!("<script>{LIVE_JS}</script>")
    } else {
        String::new()
    };
    let html = format!(
        "<!doctype html><html lang=\"{}\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body>{body}{script}</body></html>",
        w.lang_tag,
        esc(title)
    );
    (status, Html(html)).into_response()
}

pub fn header(w: &Words, household: &str, right: &str) -> String {
    format!(
        "<header><h1><a href=\"/\" class=\"home\">{} · {}</a></h1><span>{right}</span></header>",
        esc(w.title),
        esc(household)
    )
}

/// Why a request was not served.
#[derive(Debug, Clone, Copy)]
pub enum Refusal {
    NeedToken,
    WrongToken,
    TooManyTries,
    NoTokenSet,
    OtherSite,
    NotFound,
    BadId,
    Unavailable,
}

pub fn refusal(lang: Language, status: StatusCode, why: Refusal) -> Response {
    let w = words(lang);
    let text = match why {
        Refusal::NeedToken => w.need_token,
        Refusal::WrongToken => w.wrong_token,
        Refusal::TooManyTries => w.too_many_tries,
        Refusal::NoTokenSet => w.no_token_set,
        Refusal::OtherSite => w.other_site,
        Refusal::NotFound => w.not_found,
        Refusal::BadId => w.bad_id,
        Refusal::Unavailable => w.unavailable,
    };
    let login = matches!(why, Refusal::NeedToken | Refusal::WrongToken);
    let body = format!(
        "{}<main><section id=\"refusal\"><h2 class=\"bad\">{}</h2>{}<p><a href=\"/\">{}</a></p></section></main>",
        header(w, "", ""),
        esc(text),
        if login {
            format!("<p><a href=\"/login\">{}</a></p>", esc(w.login))
        } else {
            String::new()
        },
        esc(w.back)
    );
    page(w, text, status, &body, false)
}

/// What an action did, with the kernel's own reply text.
pub fn outcome(lang: Language, status: StatusCode, ok: bool, text: &str) -> Response {
    outcome_back_to(lang, status, ok, text, "/")
}

/// [`outcome`], its back link to `back` (a page of the dashboard's own).
pub fn outcome_back_to(
    lang: Language,
    status: StatusCode,
    ok: bool,
    text: &str,
    back: &str,
) -> Response {
    let w = words(lang);
    let head = if ok { w.done } else { w.failed };
    let body = format!(
        "{}<main><section id=\"outcome\"><h2 class=\"{}\">{}</h2><p>{}</p><p><a href=\"{}\" id=\"back\">{}</a></p></section></main>",
        header(w, "", ""),
        if ok { "ok" } else { "bad" },
        esc(head),
        esc(text),
        esc(back),
        esc(w.back)
    );
    page(w, head, status, &body, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text between the first `open` and the `</…>` after it.
    fn block<'a>(html: &'a str, open: &str, close: &str) -> &'a str {
        let start = html.find(open).expect("the block is there") + open.len();
        let len = html[start..].find(close).expect("the block is closed");
        &html[start..start + len]
    }

    #[tokio::test]
    async fn the_policy_names_exactly_the_inline_blocks_a_page_carries() {
        use axum::body::to_bytes;
        let w = words(Language::En);
        let resp = page(w, "t", StatusCode::OK, "<main></main>", true);
        let html = to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        let html = std::str::from_utf8(&html).unwrap();
        let csp = content_policy();
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        for (open, close, directive) in [
            ("<style>", "</style>", "style-src"),
            ("<script>", "</script>", "script-src"),
        ] {
            let digest =
                ring::digest::digest(&ring::digest::SHA256, block(html, open, close).as_bytes());
            let want = format!(
                "{directive} 'sha256-{}'",
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, digest)
            );
            assert!(csp.contains(&want), "{want} not in {csp}");
            assert_eq!(html.matches(open).count(), 1, "one {open} block");
        }
        assert!(!html.contains(" style="));
        assert!(!header(w, "h", "").contains(" style="));
    }

    #[test]
    fn escaping_covers_elements_and_attributes() {
        assert_eq!(
            esc("<script>\"x\"&'y'</script>"),
            "&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/script&gt;"
        );
        assert_eq!(when("2026-10-22T19:55:00+08:00"), "2026-10-22 19:55");
    }
}
