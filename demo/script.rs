//! What the scripted model answers: a pure function of the chat-completions request.
//!
//! It reads what a real model would read — the last user words (after the speaker tag,
//! before the dynamic tail), the tools offered, the tool results of this turn — and asks
//! for the tool calls a real model would (`switch_mode`, `set_reminder`), which the
//! gateway then runs for real. Every text it writes starts with [`LABEL`]: it never
//! passes for a model.

use serde_json::{json, Value};

/// The model name the scripted server reports.
pub const MODEL: &str = "homebot-demo-script";
/// The start of every text the script writes.
pub const LABEL: &str = "〔演示脚本〕";

/// The script's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Text(String),
    Tool { name: String, arguments: Value },
}

const MODE_NAMES: &[&str] = &["做饭模式", "烹饪模式", "下厨模式"];
const ENTER_VERBS: &[&str] = &["打开", "进入", "开始", "开启", "启用"];
const EXIT_VERBS: &[&str] = &["退出", "结束", "关闭", "停止"];
const DISHES: &[&str] = &["红烧肉", "番茄炒蛋", "可乐鸡翅", "清蒸鱼", "西兰花"];
/// Longest user text the script quotes back.
const MAX_QUOTE_CHARS: usize = 80;

fn said(text: impl AsRef<str>) -> Answer {
    Answer::Text(format!("{LABEL}{}", text.as_ref()))
}

/// The text content of a message (a string, or the text parts of an array).
fn content(msg: &Value) -> String {
    match &msg["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A user message's own words: after the speaker tag ("妈妈：") and before the dynamic
/// tail the current message carries ("\n\n[上下文]\n…").
pub fn user_words(msg: &Value) -> String {
    let c = content(msg);
    let said = c.split_once("\n\n[").map_or(c.as_str(), |(s, _)| s);
    match said.split_once('：') {
        Some((tag, words)) if !tag.contains('\n') && tag.chars().count() <= 40 => {
            words.trim().to_string()
        }
        _ => said.trim().to_string(),
    }
}

fn offered(body: &Value, tool: &str) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|ts| ts.iter().any(|t| t["function"]["name"] == tool))
}

fn any_in(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| text.contains(w))
}

/// The dish the conversation is about (the first one any user message names).
fn dish(msgs: &[Value]) -> Option<&'static str> {
    msgs.iter().filter(|m| m["role"] == "user").find_map(|m| {
        let w = user_words(m);
        DISHES.iter().copied().find(|d| w.contains(d))
    })
}

/// "十秒" → 10, "3 分钟" → 180, "两分钟" → 120: the first duration in `text`, in seconds.
pub fn seconds_in(text: &str) -> Option<i64> {
    let chars: Vec<char> = text.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let unit = match c {
            '秒' => 1,
            '分' => 60,
            '小' if chars.get(i + 1) == Some(&'时') => 3600,
            _ => continue,
        };
        let mut start = i;
        while start > 0 && (numeral(chars[start - 1]).is_some() || chars[start - 1] == ' ') {
            start -= 1;
        }
        let digits: String = chars[start..i].iter().filter(|c| **c != ' ').collect();
        if let Some(n) = parse_number(&digits) {
            return Some(n * unit);
        }
    }
    None
}

fn numeral(c: char) -> Option<i64> {
    Some(match c {
        '0'..='9' => c as i64 - '0' as i64,
        '零' => 0,
        '一' => 1,
        '二' | '两' => 2,
        '三' => 3,
        '四' => 4,
        '五' => 5,
        '六' => 6,
        '七' => 7,
        '八' => 8,
        '九' => 9,
        '十' => 10,
        _ => return None,
    })
}

/// Arabic digits, or Chinese numerals below a hundred ("十", "十五", "三十", "四十五").
fn parse_number(s: &str) -> Option<i64> {
    if s.is_empty() || s.chars().count() > 6 {
        return None;
    }
    if s.chars().all(|c| c.is_ascii_digit()) {
        return s.parse().ok();
    }
    let v: Vec<i64> = s.chars().map(numeral).collect::<Option<_>>()?;
    match v.as_slice() {
        [n] => Some(*n),
        [10, n] => Some(10 + n),
        [n, 10] => Some(n * 10),
        [n, 10, m] => Some(n * 10 + m),
        _ => None,
    }
}

/// What a reminder asked for in `words` should say: the words after "提醒我", else a default.
fn reminder_text(words: &str) -> String {
    let after = words
        .split_once("提醒我")
        .or_else(|| words.split_once("提醒"))
        .map_or("", |(_, a)| a);
    let t: String = after
        .chars()
        .filter(|c| !matches!(c, '。' | '！' | '!' | '，' | ',' | '？' | '?'))
        .take(20)
        .collect();
    let t = t.trim();
    if t.is_empty() {
        "时间到了".into()
    } else {
        t.to_string()
    }
}

fn quote(text: &str) -> String {
    let mut q: String = text.chars().take(MAX_QUOTE_CHARS).collect();
    if text.chars().count() > MAX_QUOTE_CHARS {
        q.push('…');
    }
    q
}

/// The tool the assistant asked for just before the trailing tool results.
fn called_tool(msgs: &[Value]) -> String {
    msgs.iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["tool_calls"][0]["function"]["name"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// One request → the script's answer.
pub fn answer(body: &Value) -> Answer {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let Some(last) = msgs.last() else {
        return said("（请求里没有消息。）");
    };
    let dish_name = dish(&msgs);
    if last["role"] == "tool" {
        return after_tool(&called_tool(&msgs), &content(last), dish_name);
    }
    let words = user_words(last);
    let names_mode = any_in(&words, MODE_NAMES);
    if names_mode && offered(body, "switch_mode") {
        if any_in(&words, EXIT_VERBS) {
            return Answer::Tool {
                name: "switch_mode".into(),
                arguments: json!({"action": "exit", "mode_id": "cooking",
                                  "summary": summary(&msgs, dish_name)}),
            };
        }
        if any_in(&words, ENTER_VERBS) {
            return Answer::Tool {
                name: "switch_mode".into(),
                arguments: json!({"action": "enter", "mode_id": "cooking"}),
            };
        }
    }
    if words.contains("提醒") && offered(body, "set_reminder") {
        if let Some(secs) = seconds_in(&words).filter(|s| *s > 0) {
            return Answer::Tool {
                name: "set_reminder".into(),
                arguments: json!({"in_seconds": secs, "text": reminder_text(&words)}),
            };
        }
    }
    let dish_or = dish_name.unwrap_or("这道菜");
    if words.contains('盐') {
        return said(format!(
            "{dish_or}按三个人、五百克肉算，盐大约一小勺，三克左右；老抽和冰糖已经有咸甜味，起锅前尝一下再补。"
        ));
    }
    if any_in(&words, &["多久", "多长时间", "还要"]) {
        return said(format!(
            "{dish_or}小火炖四十分钟左右，筷子能轻松插进肉里就好了，最后大火收汁。"
        ));
    }
    said(format!(
        "这是演示脚本写好的回答，不是真的模型。你说的是：「{}」",
        quote(&words)
    ))
}

/// The reply after a tool ran: relay its result as a real model would.
fn after_tool(tool: &str, result: &str, dish_name: Option<&str>) -> Answer {
    let failed = result.starts_with("error") || result.contains("refused");
    match tool {
        "switch_mode" if !failed && result.contains("已进入") => said(format!(
            "做饭模式开好了。{}：五花肉切三厘米见方的块，冷水下锅焯水，撇掉浮沫。几个人吃？",
            dish_name.unwrap_or("今天的菜")
        )),
        "switch_mode" if !failed && (result.contains("退出") || result.contains("结束")) => {
            said("做饭模式关了，这次做了什么已经记下来。辛苦了，开饭吧！")
        }
        "set_reminder" if !failed => {
            let told = result
                .find("提醒 #")
                .map_or(result, |i| &result[i..])
                .trim();
            said(format!("好的，{}", quote(told)))
        }
        _ => said(format!("工具 {tool} 的结果：{}", quote(result))),
    }
}

/// The exit summary, from what the conversation holds.
fn summary(msgs: &[Value], dish_name: Option<&str>) -> String {
    let users: Vec<String> = msgs
        .iter()
        .filter(|m| m["role"] == "user")
        .map(user_words)
        .collect();
    let mut parts = vec![format!("做了{}", dish_name.unwrap_or("一顿饭"))];
    if users.iter().any(|u| u.contains('盐')) {
        parts.push("问了盐的用量（约三克）".into());
    }
    if users.iter().any(|u| u.contains("提醒")) {
        parts.push("设了一个关火的计时提醒".into());
    }
    format!("{}。（演示脚本写的总结）", parts.join("，"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(msgs: Value, tools: &[&str]) -> Value {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t}}))
            .collect();
        json!({"messages": msgs, "tools": tools})
    }

    #[test]
    fn durations_in_chinese_and_digits() {
        assert_eq!(seconds_in("十秒后提醒我关火"), Some(10));
        assert_eq!(seconds_in("三秒后提醒我关火"), Some(3));
        assert_eq!(seconds_in("十五分钟后"), Some(900));
        assert_eq!(seconds_in("45 秒以后"), Some(45));
        assert_eq!(seconds_in("两小时后"), Some(7200));
        assert_eq!(seconds_in("提醒我关火"), None);
        assert_eq!(seconds_in("秒"), None);
    }

    #[test]
    fn a_story_turn_becomes_the_tool_call_a_model_would_make() {
        let enter = req(
            json!([{"role": "system", "content": "s"},
                   {"role": "user", "content": "妈妈：开始做饭模式，今天做红烧肉\n\n[上下文]\n时间"}]),
            &["switch_mode", "set_reminder"],
        );
        assert_eq!(
            answer(&enter),
            Answer::Tool {
                name: "switch_mode".into(),
                arguments: json!({"action": "enter", "mode_id": "cooking"})
            }
        );
        let timer = req(
            json!([{"role": "user", "content": "妈妈：十秒后提醒我关火"}]),
            &["switch_mode", "set_reminder"],
        );
        assert_eq!(
            answer(&timer),
            Answer::Tool {
                name: "set_reminder".into(),
                arguments: json!({"in_seconds": 10, "text": "关火"})
            }
        );
        // without the tool on offer, no call: words instead
        let no_tool = req(
            json!([{"role": "user", "content": "妈妈：十秒后提醒我关火"}]),
            &[],
        );
        assert!(matches!(answer(&no_tool), Answer::Text(t) if t.starts_with(LABEL)));
    }

    #[test]
    fn exit_summarizes_the_conversation_and_results_are_relayed() {
        let body = req(
            json!([{"role": "user", "content": "妈妈：开始做饭模式，今天做红烧肉"},
                   {"role": "assistant", "content": "x"},
                   {"role": "user", "content": "妈妈：盐放多少"},
                   {"role": "user", "content": "妈妈：做好了，退出做饭模式"}]),
            &["switch_mode"],
        );
        let Answer::Tool { name, arguments } = answer(&body) else {
            panic!("a tool call")
        };
        assert_eq!(name, "switch_mode");
        assert_eq!(arguments["action"], "exit");
        let s = arguments["summary"].as_str().unwrap();
        assert!(s.contains("红烧肉") && s.contains("盐"), "{s}");
        let relayed = req(
            json!([{"role": "user", "content": "妈妈：十秒后提醒我关火"},
                   {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                     "function": {"name": "set_reminder", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": "c", "content": "ok: reminder #1 set. 提醒 #1 已设好，20:00:10 响：关火"}]),
            &["set_reminder"],
        );
        assert_eq!(
            answer(&relayed),
            Answer::Text(format!("{LABEL}好的，提醒 #1 已设好，20:00:10 响：关火"))
        );
    }

    #[test]
    fn anything_else_is_labelled_and_quoted_within_bounds() {
        let long = "啊".repeat(5000);
        let body = req(json!([{"role": "user", "content": long}]), &[]);
        let Answer::Text(t) = answer(&body) else {
            panic!()
        };
        assert!(t.starts_with(LABEL));
        assert!(t.chars().count() < 200, "quoted text is cut");
        assert!(matches!(answer(&json!({})), Answer::Text(t) if t.starts_with(LABEL)));
    }
}
