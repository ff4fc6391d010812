//! An `ask_user_choice` question on each channel, and its answer parsed back.
//!
//! Rendering: QQ and the terminal get the question and a numbered list (`1.` `2.` …);
//! voice gets the options spoken ("一，番茄炒蛋；二，青椒肉丝") and keeps listening.
//! Parsing: "2", "第二个", "选番茄炒蛋", "1 和 3", "都要" (multi), a custom text when
//! allowed; anything else is not an answer and cancels the question.

use super::rules::Asked;

const CN_DIGITS: [char; 6] = ['一', '二', '三', '四', '五', '六'];
/// Words that drop the question rather than answer it.
const CANCEL: &[&str] = &[
    "算了",
    "取消",
    "不用了",
    "不要了",
    "都不要",
    "cancel",
    "never mind",
];
/// Words that choose every option (multi-select only).
const ALL: &[&str] = &[
    "都要",
    "全都要",
    "全要",
    "全部",
    "都选",
    "全选",
    "都可以",
    "all",
    "both",
];
/// Words that may stand around option numbers in an answer ("我选第二个吧").
const FILLERS: &[&str] = &[
    "我选", "我要", "选择", "就要", "就选", "还是", "以及", "还有", "option", "and", "or", "选",
    "要", "就", "第", "个", "号", "项", "吧", "的", "和", "跟", "与", "呢", "啊", "嗯", "那",
];

/// How the question is shown: spoken as words, else a numbered list.
pub fn render(a: &Asked, modality: crate::turn::Modality, group_asker_only: bool) -> String {
    if a.is_confirmation() {
        // the backend's yes/no question: short, as a person would ask it
        return a.question.clone();
    }
    if modality == crate::turn::Modality::Speech {
        let opts: Vec<String> = a
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}，{o}", CN_DIGITS[i]))
            .collect();
        let mut s = format!("{} {}。", a.question, opts.join("；"));
        if a.multi_select {
            s.push_str("可以选几个。");
        }
        s.push_str("请说序号或名字。");
        return s;
    }
    let mut s = a.question.clone();
    for (i, o) in a.options.iter().enumerate() {
        s.push_str(&format!("\n{}. {o}", i + 1));
    }
    let mut how = String::from("回复序号或选项名");
    if a.multi_select {
        how.push_str("，可多选，如“1 和 3”");
    }
    if a.allow_custom {
        how.push_str("；也可以直接说你的想法");
    }
    if group_asker_only {
        how.push_str("；请提问的人 @我 回答");
    }
    s.push_str(&format!("\n（{how}）"));
    s
}

/// What a reply to a pending question amounts to.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Option indexes (0-based), in the order of the options.
    Selected(Vec<usize>),
    Custom(String),
    /// A pure number answer naming an option that does not exist.
    OutOfRange(usize),
    /// Several options for a single-choice question.
    TooMany,
    /// Not an answer: the question is dropped.
    Unrelated,
}

fn normalize(text: &str) -> String {
    text.chars()
        .filter(|c| {
            !c.is_whitespace()
                && !c.is_ascii_punctuation()
                && !"，。！？、；：“”‘’（）…～".contains(*c)
        })
        .collect::<String>()
        .to_lowercase()
}

/// The numbers of a reply made only of option numbers and filler words, or `None`.
fn pure_numbers(norm: &str) -> Option<Vec<usize>> {
    let mut nums = Vec::new();
    let mut rest = norm;
    'scan: while !rest.is_empty() {
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if !digits.is_empty() {
            nums.push(digits.parse::<usize>().unwrap_or(usize::MAX));
            rest = &rest[digits.len()..];
            continue;
        }
        let c = rest.chars().next().expect("rest is not empty");
        if let Some(i) = CN_DIGITS.iter().position(|d| *d == c) {
            nums.push(i + 1);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '两' {
            nums.push(2);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        for f in FILLERS {
            if let Some(r) = rest.strip_prefix(f) {
                rest = r;
                continue 'scan;
            }
        }
        return None;
    }
    (!nums.is_empty()).then_some(nums)
}

/// Parse `text` as the answer to `a`.
pub fn parse(text: &str, a: &Asked) -> Parsed {
    let norm = normalize(text);
    if norm.is_empty() {
        return Parsed::Unrelated;
    }
    if CANCEL.iter().any(|w| norm.contains(w)) {
        return Parsed::Unrelated;
    }
    if a.multi_select && ALL.iter().any(|w| norm.contains(w)) {
        return Parsed::Selected((0..a.options.len()).collect());
    }
    if let Some(nums) = pure_numbers(&norm) {
        if let Some(&bad) = nums.iter().find(|&&n| n == 0 || n > a.options.len()) {
            return Parsed::OutOfRange(bad);
        }
        let mut idx: Vec<usize> = nums.into_iter().map(|n| n - 1).collect();
        idx.sort_unstable();
        idx.dedup();
        if idx.len() > 1 && !a.multi_select {
            return Parsed::TooMany;
        }
        return Parsed::Selected(idx);
    }
    // option names: every option whose text the reply contains, or the one option
    // that contains the reply
    let names: Vec<String> = a.options.iter().map(|o| normalize(o)).collect();
    let mut idx: Vec<usize> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.is_empty() && norm.contains(n.as_str()))
        .map(|(i, _)| i)
        .collect();
    if idx.is_empty() && norm.chars().count() >= 2 {
        let inside: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| n.contains(norm.as_str()))
            .map(|(i, _)| i)
            .collect();
        if inside.len() == 1 {
            idx = inside;
        }
    }
    if !idx.is_empty() {
        if idx.len() > 1 && !a.multi_select {
            return Parsed::TooMany;
        }
        return Parsed::Selected(idx);
    }
    if a.allow_custom {
        return Parsed::Custom(text.trim().to_string());
    }
    Parsed::Unrelated
}

/// The tool result the model reads in the answering turn.
pub fn tool_result(a: &Asked, p: &Parsed) -> String {
    match p {
        Parsed::Selected(idx) => {
            let chosen: Vec<&str> = idx.iter().map(|&i| a.options[i].as_str()).collect();
            format!("User selected: {}", chosen.join(", "))
        }
        Parsed::Custom(t) => {
            format!("User selected: {t} (their own answer, not one of the options)")
        }
        _ => "User did not answer".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(options: &[&str], multi: bool, custom: bool) -> Asked {
        Asked {
            question: "今晚做哪个？".into(),
            options: options.iter().map(|s| s.to_string()).collect(),
            multi_select: multi,
            allow_custom: custom,
            anyone: false,
            call_id: "c".into(),
            arguments: "{}".into(),
            offer: None,
        }
    }

    #[test]
    fn answers_parse_back_to_options() {
        let single = q(&["番茄炒蛋", "青椒肉丝", "红烧肉"], false, false);
        assert_eq!(parse("2", &single), Parsed::Selected(vec![1]));
        assert_eq!(parse("第二个", &single), Parsed::Selected(vec![1]));
        assert_eq!(parse("我选第三个吧。", &single), Parsed::Selected(vec![2]));
        assert_eq!(parse("选番茄炒蛋", &single), Parsed::Selected(vec![0]));
        assert_eq!(parse("青椒", &single), Parsed::Selected(vec![1]));
        assert_eq!(parse("1 和 3", &single), Parsed::TooMany);
        assert_eq!(parse("7", &single), Parsed::OutOfRange(7));
        assert_eq!(parse("今天几号？", &single), Parsed::Unrelated);
        assert_eq!(parse("7点开饭", &single), Parsed::Unrelated);
        assert_eq!(parse("算了", &single), Parsed::Unrelated);
        assert_eq!(parse("都要", &single), Parsed::Unrelated);

        let multi = q(&["番茄炒蛋", "青椒肉丝", "红烧肉"], true, false);
        assert_eq!(parse("1 和 3", &multi), Parsed::Selected(vec![0, 2]));
        assert_eq!(parse("一、三", &multi), Parsed::Selected(vec![0, 2]));
        assert_eq!(parse("都要", &multi), Parsed::Selected(vec![0, 1, 2]));
        assert_eq!(
            parse("番茄炒蛋和红烧肉", &multi),
            Parsed::Selected(vec![0, 2])
        );
        assert_eq!(
            tool_result(&multi, &Parsed::Selected(vec![0, 2])),
            "User selected: 番茄炒蛋, 红烧肉"
        );

        let custom = q(&["番茄炒蛋", "青椒肉丝"], false, true);
        assert_eq!(
            parse("来个酸辣土豆丝", &custom),
            Parsed::Custom("来个酸辣土豆丝".into())
        );
        assert_eq!(parse("算了不做了", &custom), Parsed::Unrelated);
    }

    #[test]
    fn rendering_per_channel() {
        let a = q(&["番茄炒蛋", "青椒肉丝"], false, false);
        let qq = render(&a, crate::turn::Modality::Text, true);
        assert!(
            qq.starts_with("今晚做哪个？\n1. 番茄炒蛋\n2. 青椒肉丝\n（"),
            "{qq}"
        );
        assert!(qq.contains("请提问的人 @我 回答"), "{qq}");
        let cli = render(&a, crate::turn::Modality::Text, false);
        assert!(!cli.contains("@我"), "{cli}");
        let voice = render(&a, crate::turn::Modality::Speech, false);
        assert_eq!(
            voice,
            "今晚做哪个？ 一，番茄炒蛋；二，青椒肉丝。请说序号或名字。"
        );
    }
}
