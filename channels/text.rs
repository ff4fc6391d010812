//! Text shaping shared by the channels: markdown flattened to plain text (QQ and voice
//! cannot render it) and long replies split on sentence ends.

/// Markdown → plain text: headings, emphasis, code fences, links and list
/// markers flattened; the words stay.
pub fn flatten_markdown(s: &str) -> String {
    let mut out = Vec::new();
    for line in s.lines() {
        let t = line.trim_end();
        if t.trim_start().starts_with("```") {
            continue;
        }
        let mut l = t.trim_start_matches('#').trim_start().to_string();
        if t.starts_with('#') {
            l = l.trim().to_string();
        }
        let ind = l.len() - l.trim_start().len();
        let body = l.trim_start();
        let body = if let Some(rest) = body
            .strip_prefix("- ")
            .or_else(|| body.strip_prefix("* "))
            .or_else(|| body.strip_prefix("+ "))
        {
            format!("· {rest}")
        } else {
            body.to_string()
        };
        let mut b = body.replace("**", "").replace("__", "").replace('`', "");
        // [text](url) → text (url)
        while let (Some(o), Some(m)) = (b.find('['), b.find("](")) {
            if o >= m {
                break;
            }
            let Some(close) = b[m..].find(')') else { break };
            let text = b[o + 1..m].to_string();
            let url = b[m + 2..m + close].to_string();
            b = format!("{}{} ({}){}", &b[..o], text, url, &b[m + close + 1..]);
        }
        out.push(format!("{}{}", " ".repeat(ind), b));
    }
    let joined = out.join("\n");
    // collapse runs of blank lines
    let mut result = String::new();
    let mut blank = 0;
    for line in joined.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        result.push_str(line);
        result.push('\n');
    }
    result.trim().to_string()
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
