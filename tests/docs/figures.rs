//! A figure lives in one place: an entry of `docs/operations.md` (a heading and its
//! section), where the current figures are the bold text, with the commit and the
//! command that measured them. The README only cites a figure, as a link from the figure
//! to its entry: `[10.4 MiB](docs/operations.md#idle-gateway)` (or a reference link).
//!
//! - Each README link into `docs/operations.md` whose text holds a digit is a figure:
//!   its text must be, word for word (line breaks as spaces), one of the bold texts of
//!   the section its anchor heads (to the next heading) — so an older figure the entry
//!   mentions for the record is no source — and that section must name a commit (7 to 40
//!   hex digits) and a command (a code span).
//! - Any other number with a unit in the README's prose (MiB, MB, %, ×, turns/s, ms, s,
//!   min, …) is a figure without its source. Code spans and code blocks are not prose.

use crate::corpus::{squeeze, Doc, Repo};
use crate::Problem;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::path::Path;

pub const README: &str = "README.md";
pub const SOURCE: &str = "docs/operations.md";

/// Units that make a number a figure; the longer first, so `ms` is not read as `m`.
const UNITS: [&str; 12] = [
    "turns/s", "MiB", "KiB", "GiB", "min", "MB", "KB", "GB", "ms", "%", "×", "s",
];

pub fn check(repo: &Repo) -> Vec<Problem> {
    let (Some(readme), Some(source)) = (repo.doc(Path::new(README)), repo.doc(Path::new(SOURCE)))
    else {
        return vec![Problem::new(
            Path::new(README),
            1,
            format!("{README} or {SOURCE} is missing"),
        )];
    };
    let mut problems = Vec::new();
    for link in &readme.links {
        let Some(anchor) = figure_anchor(&link.dest, &link.text) else {
            continue;
        };
        let at = |what: String| Problem::new(&readme.path, link.line, what);
        let Some(section) = source.section(anchor) else {
            problems.push(at(format!(
                "figure `{}` cites {SOURCE}#{anchor}, which no heading there has",
                link.text
            )));
            continue;
        };
        let figure = squeeze(&link.text);
        let current: Vec<String> = source
            .section_bold(anchor)
            .into_iter()
            .map(squeeze)
            .collect();
        if !current.contains(&figure) {
            problems.push(at(format!(
                "figure `{figure}` is not a figure of its source, {SOURCE}#{anchor}, whose figures (in bold) are: {}",
                current.join(" · ")
            )));
        }
        if !names_a_commit(&section) || !section.contains('`') {
            problems.push(at(format!(
                "{SOURCE}#{anchor}, the source of `{figure}`, names no commit or no command"
            )));
        }
    }
    for (figure, line) in loose_figures(readme) {
        problems.push(Problem::new(
            &readme.path,
            line,
            format!("figure `{figure}` without its source: link it to its entry in {SOURCE}"),
        ));
    }
    problems
}

/// The anchor in `docs/operations.md` a README link cites a figure from.
fn figure_anchor<'a>(dest: &'a str, text: &str) -> Option<&'a str> {
    let anchor = dest.strip_prefix(SOURCE)?.strip_prefix('#')?;
    text.contains(|c: char| c.is_ascii_digit())
        .then_some(anchor)
}

/// A commit id: 7 to 40 lower-case hex digits, at least one a decimal digit (so no word
/// like "facade" passes; numbers in the docs group their thousands, `14,102,776`).
fn names_a_commit(section: &str) -> bool {
    section
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| {
            (7..=40).contains(&w.len())
                && w.chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
                && w.chars().any(|c| c.is_ascii_digit())
        })
}

/// The figures of `doc`'s prose outside a figure link, with their lines.
fn loose_figures(doc: &Doc) -> Vec<(String, usize)> {
    let text = &doc.text;
    let mut out = Vec::new();
    let mut in_code = false;
    let mut in_figure = 0usize;
    for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Start(Tag::Link { dest_url, .. }) => {
                let inner = &text[range.clone()];
                if figure_anchor(&dest_url, inner).is_some() {
                    in_figure += 1;
                }
            }
            Event::End(TagEnd::Link) => in_figure = in_figure.saturating_sub(1),
            Event::Text(t) if !in_code && in_figure == 0 => {
                let line = text[..range.start].matches('\n').count() + 1;
                out.extend(figures_in(&t).into_iter().map(|f| (f, line)));
            }
            _ => {}
        }
    }
    out
}

/// The numbers with a unit in `s` (`16.7 %`, `146–151 turns/s`, `2.2×`).
fn figures_in(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '.'));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || (",.–".contains(chars[j])
                    && chars.get(j + 1).is_some_and(|c| c.is_ascii_digit())))
        {
            j += 1;
        }
        let mut k = j;
        if chars.get(k) == Some(&' ') {
            k += 1;
        }
        let rest: String = chars[k..].iter().take(8).collect();
        let unit = UNITS.iter().find(|u| {
            rest.starts_with(*u)
                && (matches!(**u, "%" | "×")
                    || !rest[u.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric()))
        });
        if let Some(u) = unit {
            let number: String = chars[i..k].iter().collect();
            out.push(format!("{number}{u}"));
        }
        i = j.max(i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::repo;

    const SOURCE_DOC: &str = "# Operations\n\n## Figures\n\n### Idle gateway\n\n\
        **10.4\nMiB** resident, measured at 1a2b3c4 with `cargo bench --bench footprint`; it \
        was 10.1 MiB at 0f0f0f0.\n\n### Old figure\n\n**12.0 MiB**, no record of how.\n";

    fn problems(readme: &str) -> Vec<String> {
        check(&repo(&[
            ("README.md", readme),
            ("docs/operations.md", SOURCE_DOC),
        ]))
        .iter()
        .map(|p| p.to_string())
        .collect()
    }

    #[test]
    fn a_readme_figure_that_differs_from_its_source_is_found() {
        assert!(problems("Idles at [10.4 MiB](docs/operations.md#idle-gateway).\n").is_empty());
        assert_eq!(
            problems("# R\n\nIdles at [10.1 MiB](docs/operations.md#idle-gateway).\n"),
            ["README.md:3: figure `10.1 MiB` is not a figure of its source, docs/operations.md#idle-gateway, whose figures (in bold) are: 10.4 MiB"]
        );
        assert_eq!(
            problems("Idles at [10.4 MiB](docs/operations.md#idle).\n"),
            ["README.md:1: figure `10.4 MiB` cites docs/operations.md#idle, which no heading there has"]
        );
        assert_eq!(
            problems("Was [12.0 MiB](docs/operations.md#old-figure).\n"),
            ["README.md:1: docs/operations.md#old-figure, the source of `12.0 MiB`, names no commit or no command"]
        );
    }

    #[test]
    fn a_readme_figure_without_a_link_to_its_source_is_found() {
        assert_eq!(
            problems("# R\n\n[10.4 MiB](docs/operations.md#idle-gateway); the binary is\n13.7 MiB, 2.2× and 98 % cached, 7 ms, 146–151 turns/s.\n"),
            [
                "README.md:4: figure `13.7 MiB` without its source: link it to its entry in docs/operations.md",
                "README.md:4: figure `2.2×` without its source: link it to its entry in docs/operations.md",
                "README.md:4: figure `98 %` without its source: link it to its entry in docs/operations.md",
                "README.md:4: figure `7 ms` without its source: link it to its entry in docs/operations.md",
                "README.md:4: figure `146–151 turns/s` without its source: link it to its entry in docs/operations.md",
            ]
        );
    }

    #[test]
    fn counts_versions_times_of_day_and_code_are_not_figures() {
        let readme = "OneBot v11, 8 slots, 50 chats, 100,000 turns, a 30-turn session, \
            at 00:10, 2-core, HA 2025.4.4, `max_concurrent = 8 MiB`.\n\n```sh\nsleep 5 s\n```\n";
        assert!(problems(readme).is_empty(), "{:?}", problems(readme));
    }
}
