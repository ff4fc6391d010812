//! The repository's Markdown, read once: which files are docs, and for each its headings
//! (with their GitHub anchors), its links and its inline text and code spans, each with
//! the line it starts on. Fenced and indented code blocks are left out: nothing in them
//! is a claim about the repository.

use crate::slug::Slugs;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::path::{Path, PathBuf};

/// A checkout: its root and its documentation files.
pub struct Repo {
    pub root: PathBuf,
    pub docs: Vec<Doc>,
}

/// Folders never searched for docs: hidden ones (`.git`, `.venv`, `.venv-ha` — Python
/// packages bring their own Markdown), build output and vendored packages.
const NOT_DOCS: [&str; 3] = ["target", "node_modules", "vendor"];

impl Repo {
    /// This checkout.
    pub fn here() -> Repo {
        Repo::at(Path::new(env!("CARGO_MANIFEST_DIR")))
    }

    /// The checkout at `root`, with every `.md` file under it (but see [`NOT_DOCS`]).
    pub fn at(root: &Path) -> Repo {
        let mut files = Vec::new();
        walk(root, root, &mut files);
        files.sort();
        let docs = files
            .into_iter()
            .map(|rel| {
                let text = std::fs::read_to_string(root.join(&rel))
                    .unwrap_or_else(|e| panic!("{}: cannot read: {e}", rel.display()));
                Doc::parse(rel, text)
            })
            .collect();
        Repo {
            root: root.to_path_buf(),
            docs,
        }
    }

    /// The doc at `rel` (relative to the root), if it is one.
    pub fn doc(&self, rel: &Path) -> Option<&Doc> {
        self.docs.iter().find(|d| d.path == rel)
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: cannot list: {e}", dir.display()));
    for entry in entries {
        let entry = entry.expect("a directory entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let kind = entry.file_type().expect("a file type");
        if kind.is_dir() {
            if !name.starts_with('.') && !NOT_DOCS.contains(&name.as_str()) {
                walk(root, &path, out);
            }
        } else if kind.is_file() && name.ends_with(".md") {
            out.push(
                path.strip_prefix(root)
                    .expect("under the root")
                    .to_path_buf(),
            );
        }
    }
}

/// One Markdown file.
pub struct Doc {
    /// Relative to the repository's root.
    pub path: PathBuf,
    pub text: String,
    pub headings: Vec<Heading>,
    pub links: Vec<Link>,
    /// The text of each bold span (`**…**`), with its line.
    pub bold: Vec<(String, usize)>,
    /// The inline content of each paragraph, heading, list item and table cell.
    pub blocks: Vec<Vec<Inline>>,
}

pub struct Heading {
    /// Its anchor, as GitHub makes it (`#` left out).
    pub anchor: String,
    pub line: usize,
}

pub struct Link {
    pub dest: String,
    /// The rendered text between the brackets.
    pub text: String,
    pub line: usize,
}

/// A piece of a block's inline content.
#[derive(Debug, Clone, PartialEq)]
pub enum Inline {
    /// Text, soft and hard breaks as spaces.
    Text(String),
    /// A code span's content, and its line.
    Code(String, usize),
}

impl Doc {
    pub fn parse(path: PathBuf, text: String) -> Doc {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let line_of = |offset: usize| starts.partition_point(|&s| s <= offset);
        let mut headings = Vec::new();
        let mut links = Vec::new();
        let mut blocks = Vec::new();
        let mut slugs = Slugs::default();
        let mut block: Vec<Inline> = Vec::new();
        // (text so far, line) of the heading and of the links being read
        let mut heading: Option<(String, usize)> = None;
        let mut open: Vec<(String, String, usize)> = Vec::new();
        let mut bold = Vec::new();
        let mut open_bold: Vec<(String, usize)> = Vec::new();
        let mut in_code_block = false;
        for (event, range) in Parser::new_ext(&text, Options::ENABLE_TABLES).into_offset_iter() {
            let line = line_of(range.start);
            let words = match &event {
                Event::Text(t) if !in_code_block => Some(t.to_string()),
                Event::Code(c) => Some(c.to_string()),
                Event::SoftBreak | Event::HardBreak => Some(" ".to_string()),
                _ => None,
            };
            if let Some(w) = &words {
                if let Some((h, _)) = heading.as_mut() {
                    h.push_str(w);
                }
                for (_, t, _) in open.iter_mut() {
                    t.push_str(w);
                }
                for (t, _) in open_bold.iter_mut() {
                    t.push_str(w);
                }
            }
            match event {
                Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
                Event::End(TagEnd::CodeBlock) => in_code_block = false,
                Event::Start(Tag::Heading { .. }) => {
                    flush(&mut block, &mut blocks);
                    heading = Some((String::new(), line));
                }
                Event::End(TagEnd::Heading(_)) => {
                    flush(&mut block, &mut blocks);
                    if let Some((h, at)) = heading.take() {
                        headings.push(Heading {
                            anchor: slugs.next(&h),
                            line: at,
                        });
                    }
                }
                Event::Start(Tag::Link { dest_url, .. }) => {
                    open.push((dest_url.to_string(), String::new(), line))
                }
                Event::Start(Tag::Strong) => open_bold.push((String::new(), line)),
                Event::End(TagEnd::Strong) => bold.extend(open_bold.pop()),
                Event::End(TagEnd::Link) => {
                    if let Some((dest, text, line)) = open.pop() {
                        links.push(Link { dest, text, line });
                    }
                }
                Event::Start(Tag::Paragraph | Tag::Item | Tag::TableCell | Tag::BlockQuote(_))
                | Event::End(
                    TagEnd::Paragraph | TagEnd::Item | TagEnd::TableCell | TagEnd::BlockQuote(_),
                ) => flush(&mut block, &mut blocks),
                Event::Code(c) => block.push(Inline::Code(c.to_string(), line)),
                Event::Text(_) | Event::SoftBreak | Event::HardBreak if !in_code_block => {
                    let w = words.expect("text has words");
                    match block.last_mut() {
                        Some(Inline::Text(t)) => t.push_str(&w),
                        _ => block.push(Inline::Text(w)),
                    }
                }
                _ => {}
            }
        }
        flush(&mut block, &mut blocks);
        Doc {
            path,
            text,
            headings,
            links,
            bold,
            blocks,
        }
    }

    /// Whether a heading of this file has `anchor`.
    pub fn has_anchor(&self, anchor: &str) -> bool {
        self.headings.iter().any(|h| h.anchor == anchor)
    }

    /// The lines of the section `anchor` heads: from its heading to the next heading of
    /// any level (exclusive); `None` if no heading has that anchor.
    pub fn section_lines(&self, anchor: &str) -> Option<std::ops::Range<usize>> {
        let i = self.headings.iter().position(|h| h.anchor == anchor)?;
        let from = self.headings[i].line;
        Some(from..self.headings.get(i + 1).map_or(usize::MAX, |h| h.line))
    }

    /// The source of the section `anchor` heads (see [`Doc::section_lines`]).
    pub fn section(&self, anchor: &str) -> Option<String> {
        let range = self.section_lines(anchor)?;
        let lines: Vec<&str> = self
            .text
            .lines()
            .enumerate()
            .filter(|(n, _)| range.contains(&(n + 1)))
            .map(|(_, l)| l)
            .collect();
        Some(lines.join("\n"))
    }

    /// The bold texts of the section `anchor` heads.
    pub fn section_bold(&self, anchor: &str) -> Vec<&str> {
        let Some(range) = self.section_lines(anchor) else {
            return Vec::new();
        };
        self.bold
            .iter()
            .filter(|(_, line)| range.contains(line))
            .map(|(t, _)| t.as_str())
            .collect()
    }
}

fn flush(block: &mut Vec<Inline>, blocks: &mut Vec<Vec<Inline>>) {
    if !block.is_empty() {
        blocks.push(std::mem::take(block));
    }
}

/// Runs of whitespace as one space, the ends trimmed: a figure may wrap at any space.
pub fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_links_and_code_spans_are_read_with_their_lines_and_code_blocks_are_not() {
        let text = "# Top\n\nSee [the `x` part](other.md#a-b) and `src/a.rs`, **1.5\nMiB**.\n\n\
                    ```text\n[not a link](nowhere.md) `src/not.rs`\n```\n\n## A, b!\n\n- `tests/t.rs` (`one_two`)\n";
        let d = Doc::parse("README.md".into(), text.into());
        let anchors: Vec<(&str, usize)> = d
            .headings
            .iter()
            .map(|h| (h.anchor.as_str(), h.line))
            .collect();
        assert_eq!(anchors, [("top", 1), ("a-b", 10)]);
        assert_eq!(d.links.len(), 1);
        assert_eq!(d.links[0].dest, "other.md#a-b");
        assert_eq!(d.links[0].text, "the x part");
        assert_eq!(d.links[0].line, 3);
        let code: Vec<(&str, usize)> = d
            .blocks
            .iter()
            .flatten()
            .filter_map(|i| match i {
                Inline::Code(c, l) => Some((c.as_str(), *l)),
                Inline::Text(_) => None,
            })
            .collect();
        assert_eq!(
            code,
            [
                ("x", 3),
                ("src/a.rs", 3),
                ("tests/t.rs", 12),
                ("one_two", 12)
            ]
        );
        assert_eq!(
            d.section("a-b").as_deref(),
            Some("## A, b!\n\n- `tests/t.rs` (`one_two`)")
        );
        assert_eq!(d.section("nope"), None);
        assert_eq!(d.bold, [("1.5 MiB".to_string(), 3)]);
        assert_eq!(d.section_bold("top"), ["1.5 MiB"]);
        assert!(d.section_bold("a-b").is_empty());
    }
}
