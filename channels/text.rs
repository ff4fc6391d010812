//! Text shaping shared by the channels: markdown flattened to plain text (QQ and voice
//! cannot render it) and long replies split on sentence ends.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// Words to be said aloud: markdown flattened, on one line, single spaces.
pub fn spoken(s: &str) -> String {
    let flat = flatten_markdown(s).replace('\n', " ");
    flat.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Markdown → plain text, by walking a real markdown parse (pulldown-cmark), so only
/// what markdown means is removed — a literal `[注意]` stays. Emphasis markers go;
/// headings become their own line; list items `· item` (ordered `1. item`), nested ones
/// indented; code keeps its content; links `text (url)` (just the url when the text is
/// the url); images `[图片]`; table cells joined by spaces, a row per line. Blocks keep
/// the author's spacing: a blank line between them only where the source had one (two
/// paragraphs always do), never more than one.
pub fn flatten_markdown(s: &str) -> String {
    let mut f = Flattener {
        src: s,
        out: String::new(),
        last_end: 0,
        lists: Vec::new(),
        links: Vec::new(),
        in_image: 0,
        after_marker: false,
    };
    // no strikethrough: "1~2 个，3~4 分钟" must keep its tildes
    let opts = Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for (event, range) in Parser::new_ext(s, opts).into_offset_iter() {
        f.event(event, range);
    }
    tidy(&f.out)
}

struct Flattener<'a> {
    src: &'a str,
    out: String,
    /// Source offset where the last written thing ended (for the blank-line rule).
    last_end: usize,
    /// Open lists: the next number of an ordered one, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// Open links: destination and where their text starts in `out`.
    links: Vec<(String, usize)>,
    in_image: usize,
    /// Just wrote a list marker: the item's first block continues this line.
    after_marker: bool,
}

impl Flattener<'_> {
    fn event(&mut self, event: Event<'_>, range: std::ops::Range<usize>) {
        match event {
            Event::Start(tag) => self.start(tag, range.start),
            Event::End(tag) => {
                self.end(tag);
                self.last_end = range.end;
            }
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                if self.in_image == 0 {
                    self.write(&t);
                }
                self.last_end = range.end;
            }
            Event::InlineMath(t) | Event::DisplayMath(t) | Event::FootnoteReference(t) => {
                self.write(&t);
                self.last_end = range.end;
            }
            Event::SoftBreak | Event::HardBreak => self.write("\n"),
            Event::Rule => {
                self.block_break(range.start);
                self.last_end = range.end;
            }
            Event::TaskListMarker(done) => self.write(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>, at: usize) {
        match tag {
            Tag::Paragraph
            | Tag::Heading { .. }
            | Tag::BlockQuote(_)
            | Tag::CodeBlock(_)
            | Tag::HtmlBlock
            | Tag::Table(_)
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.block_break(at),
            Tag::List(first) => {
                self.block_break(at);
                self.lists.push(first);
            }
            Tag::Item => {
                self.block_break(at);
                let indent = "  ".repeat(self.lists.len().saturating_sub(1));
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "· ".to_string(),
                };
                self.out.push_str(&indent);
                self.out.push_str(&marker);
                self.after_marker = true;
            }
            Tag::TableHead | Tag::TableRow => self.line_break(),
            Tag::Link { dest_url, .. } => self.links.push((dest_url.to_string(), self.out.len())),
            Tag::Image { .. } => {
                if self.in_image == 0 {
                    self.write("[图片]");
                }
                self.in_image += 1;
            }
            Tag::TableCell
            | Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Superscript
            | Tag::Subscript => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::CodeBlock => {
                let kept = self.out.trim_end_matches('\n').len();
                self.out.truncate(kept);
            }
            TagEnd::TableCell => self.out.push(' '),
            TagEnd::TableHead | TagEnd::TableRow => {
                let kept = self.out.trim_end_matches(' ').len();
                self.out.truncate(kept);
            }
            TagEnd::Link => {
                let Some((url, from)) = self.links.pop() else {
                    return;
                };
                let text = self.out[from..].trim();
                let bare = url.strip_prefix("mailto:").unwrap_or(&url);
                if text.is_empty() {
                    self.write(&url);
                } else if text != url && text != bare && !url.is_empty() {
                    self.write(&format!(" ({url})"));
                }
            }
            TagEnd::Image => self.in_image = self.in_image.saturating_sub(1),
            _ => {}
        }
    }

    fn write(&mut self, t: &str) {
        if !t.is_empty() {
            self.after_marker = false;
            self.out.push_str(t);
        }
    }

    fn line_break(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// A block starts at source offset `at`: a new line, and a blank one when the source
    /// has an empty line between the last thing written and here.
    fn block_break(&mut self, at: usize) {
        if self.out.is_empty() || self.after_marker {
            return;
        }
        self.line_break();
        let before = self.src[..self.last_end.min(at)].trim_end().len();
        let gap = &self.src[before..at];
        if gap.matches('\n').count() >= 2 && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }
}

/// Trailing spaces off every line, at most one blank line in a row, no blank edges.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = false;
    for line in s.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push('\n');
            blank = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// Split a long reply into parts of at most `max` characters, at sentence ends when
/// possible (。！？!?; or a newline), else at the limit.
pub fn split_reply(s: &str, max: usize) -> Vec<String> {
    let max = max.max(20);
    let chars: Vec<char> = s.chars().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        if chars.len() - start <= max {
            parts.push(chars[start..].iter().collect::<String>());
            break;
        }
        let window = &chars[start..start + max];
        let cut = window
            .iter()
            .rposition(|c| matches!(c, '\n' | '。' | '！' | '？' | '!' | '?' | '；' | ';'))
            .filter(|&i| i >= max / 3)
            .map(|i| i + 1)
            .unwrap_or(max);
        parts.push(chars[start..start + cut].iter().collect::<String>());
        start += cut;
    }
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_flattened() {
        let md = "## 番茄炒蛋\n\n**食材**：\n- 鸡蛋 `3` 个\n- 番茄\n\n```\ncode\n```\n看[菜谱](http://x)";
        assert_eq!(
            flatten_markdown(md),
            "番茄炒蛋\n\n食材：\n· 鸡蛋 3 个\n· 番茄\n\ncode\n看菜谱 (http://x)"
        );
    }

    #[test]
    fn literal_brackets_stay_and_links_read_as_text_and_url() {
        assert_eq!(
            flatten_markdown("[注意] 见[菜谱](http://x)"),
            "[注意] 见菜谱 (http://x)"
        );
        assert_eq!(
            flatten_markdown("<http://x.cn/a> 和 [http://x.cn/a](http://x.cn/a)"),
            "http://x.cn/a 和 http://x.cn/a"
        );
        assert_eq!(flatten_markdown("[](http://x)"), "http://x");
        assert_eq!(
            flatten_markdown("数组 a[0] 和 [1, 2]"),
            "数组 a[0] 和 [1, 2]"
        );
    }

    #[test]
    fn emphasis_markers_go_the_words_stay() {
        assert_eq!(flatten_markdown("*斜体*"), "斜体");
        assert_eq!(flatten_markdown("_x_"), "x");
        assert_eq!(
            flatten_markdown("**粗** 和 __也粗__ 和 ***都***"),
            "粗 和 也粗 和 都"
        );
        // not emphasis: intraword underscores, lone stars, tildes
        assert_eq!(flatten_markdown("file_name_here"), "file_name_here");
        assert_eq!(flatten_markdown("3 * 4 = 12"), "3 * 4 = 12");
        assert_eq!(flatten_markdown("1~2 个，3~4 分钟"), "1~2 个，3~4 分钟");
    }

    #[test]
    fn headings_images_and_code() {
        assert_eq!(
            flatten_markdown("# 标题\n正文 `x = 1` 结束\n![成品图](http://img/1.png)"),
            "标题\n正文 x = 1 结束\n[图片]"
        );
        assert_eq!(
            flatten_markdown("步骤：\n\n```rust\nfn main() {\n    go();\n}\n```\n\n好了"),
            "步骤：\n\nfn main() {\n    go();\n}\n\n好了"
        );
        assert_eq!(flatten_markdown("#不是标题"), "#不是标题");
    }

    #[test]
    fn lists_nest_and_number() {
        let md = "1. 打蛋\n2. 切番茄\n   - 去皮\n   - 切块\n     * 小块\n3. 炒";
        assert_eq!(
            flatten_markdown(md),
            "1. 打蛋\n2. 切番茄\n  · 去皮\n  · 切块\n    · 小块\n3. 炒"
        );
        assert_eq!(flatten_markdown("3. 三\n4. 四"), "3. 三\n4. 四");
        // a loose list keeps its blank lines, the marker stays on the item's line
        assert_eq!(flatten_markdown("- 甲\n\n- 乙"), "· 甲\n\n· 乙");
        assert_eq!(
            flatten_markdown("- [x] 买菜\n- [ ] 洗菜"),
            "· [x] 买菜\n· [ ] 洗菜"
        );
    }

    #[test]
    fn tables_become_rows_of_cells() {
        let md = "| 食材 | 用量 |\n|---|---|\n| 鸡蛋 | **3** 个 |\n| 番茄 | 2 个 |\n\n够了";
        assert_eq!(
            flatten_markdown(md),
            "食材 用量\n鸡蛋 3 个\n番茄 2 个\n\n够了"
        );
    }

    #[test]
    fn paragraphs_are_separated_by_one_blank_line() {
        assert_eq!(
            flatten_markdown("\n\n第一段\n第二行\n\n\n\n第二段\n\n---\n\n> 引用\n\n"),
            "第一段\n第二行\n\n第二段\n\n引用"
        );
        assert_eq!(flatten_markdown(""), "");
    }

    #[test]
    fn long_replies_split_at_sentences() {
        let s = "第一步，打蛋。第二步，切番茄。第三步，热锅下油。第四步，炒蛋盛出。";
        let parts = split_reply(s, 20);
        assert!(parts.iter().all(|p| p.chars().count() <= 20), "{parts:?}");
        assert!(parts.iter().all(|p| p.ends_with('。')), "{parts:?}");
        assert_eq!(parts.concat(), s);
        let long: String = "很".repeat(50);
        let parts = split_reply(&long, 20);
        assert_eq!(parts.len(), 3);
    }
}
