//! What the calls cost, on the pages: a session's cost beside its token chart, and the
//! household's cost per day, each with what the same calls would have cost with no
//! prefix-cache hits ([`crate::audit::cost`], at `[provider.price]`). Read like every
//! other file here: bounded (each audit file's tail, only the files of the last days).

use super::data::{audit_tail, Unwritten};
use super::text::Words;
use crate::audit::cost::{self, Spend, PLACES};
use crate::config::price::format_money;
use crate::config::Price;
use crate::provider::audit::SESSION_AUDIT_FILE;
use crate::workspace::Workspace;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Days the page shows the cost of.
pub const DAYS: usize = 7;

/// What the calls recorded in the audit file `audit` (a session's) cost, those still on
/// their way to it included.
pub fn session(audit: &Path, prices: &BTreeMap<String, Price>, unwritten: Unwritten<'_>) -> Spend {
    cost::cost_total(&audit_tail(audit, unwritten), prices)
}

/// The cost of the last [`DAYS`] household days that had calls, newest first: from the
/// audit files written in those days only (the day files and the sessions' files), and
/// the audit lines still on their way to any of them (a file may not exist yet).
pub fn by_day(
    ws: &Workspace,
    prices: &BTreeMap<String, Price>,
    unwritten: Unwritten<'_>,
) -> Vec<(String, Spend)> {
    let horizon = SystemTime::now() - Duration::from_secs(86_400 * (DAYS as u64 + 1));
    let mut files: Vec<PathBuf> = crate::audit::all_files(ws)
        .into_iter()
        .filter(|f| {
            std::fs::metadata(f)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= horizon)
        })
        .collect();
    if let Some(view) = unwritten {
        let day_files = ws
            .root()
            .join(crate::workspace::LOGS_DIR)
            .join(crate::provider::audit::AUDIT_DIR);
        for p in view.paths() {
            let audit = p.parent() == Some(day_files.as_path())
                || p.file_name() == Some(std::ffi::OsStr::new(SESSION_AUDIT_FILE));
            if audit && !files.iter().any(|f| f == p) {
                files.push(p.to_path_buf());
            }
        }
    }
    let mut records = Vec::new();
    for f in &files {
        records.extend(audit_tail(f, unwritten));
    }
    let mut days: Vec<(String, Spend)> = cost::cost_by_day(&records, prices).into_iter().collect();
    days.reverse();
    days.truncate(DAYS);
    days
}

/// One line per currency: the cost, without the cache, and the saving; or why there is
/// no figure (no priced call).
pub fn line(w: &Words, s: &Spend) -> String {
    if s.cost.is_empty() {
        return if s.unpriced.is_empty() {
            "—".to_string()
        } else {
            w.no_price.to_string()
        };
    }
    s.cost
        .iter()
        .map(|(currency, c)| {
            format!(
                "{} {currency} · {} {} · {} {}",
                format_money(c.actual, PLACES),
                w.uncached_cost,
                format_money(c.uncached, PLACES),
                w.saved,
                cost::saved_percent(c)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The per-day table, escaped.
pub fn days_html(w: &Words, days: &[(String, Spend)]) -> String {
    let esc = super::html::esc;
    if days.is_empty() {
        return format!("<p class=\"muted\">{}</p>", esc(w.no_tokens));
    }
    let rows: String = days
        .iter()
        .map(|(day, s)| {
            format!(
                "<tr><td>{}</td><td>{}</td></tr>",
                esc(day),
                esc(&line(w, s))
            )
        })
        .collect();
    format!(
        "<table class=\"spend\"><tr><th>{}</th><th>{}</th></tr>{rows}</table>",
        esc(w.day),
        esc(w.cost)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Cost;

    #[test]
    fn a_line_says_the_cost_the_counterfactual_and_the_saving_or_why_not() {
        let w = super::super::text::words(crate::config::Language::Zh);
        let mut s = Spend::default();
        assert_eq!(line(w, &s), "—");
        s.unpriced.insert("m".into(), 2);
        assert!(line(w, &s).contains("未配置价格"));
        s.cost.insert(
            "CNY".into(),
            Cost {
                actual: 1_500_000_000_000,
                uncached: 3_000_000_000_000,
            },
        );
        let l = line(w, &s);
        assert!(
            l.starts_with("1.500000 CNY · 没有缓存时 3.000000 · 缓存省下 50"),
            "{l}"
        );
    }
}
