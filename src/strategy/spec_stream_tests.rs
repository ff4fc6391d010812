use super::*;
use crate::strategy::doc;
use crate::strategy::WorkKind;
use crate::turn::Partial;

const SPEC: &str = r#"好的，规格如下：
```json
{"goal": "一桌年夜饭", "requirements": ["荤素搭配", "两小时内做完"],
 "constraints": ["没有烤箱"], "acceptance_criteria": [],
 "deliverables": ["买菜", "做四道菜"], "risks": ["  ", "客人迟到"]}
```
以上。"#;

fn read(deltas: &[&str]) -> String {
    let mut r = SpecText::new();
    deltas.iter().map(|d| r.push(d)).collect()
}

fn letters(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).collect()
}

#[test]
fn the_card_s_words_stream_and_the_markup_does_not() {
    let text = read(&[SPEC]);
    assert_eq!(
        text,
        "需求规格：一桌年夜饭\n需求：\n- 荤素搭配\n- 两小时内做完\n约束：\n- 没有烤箱\n\
         交付物：\n- 买菜\n- 做四道菜\n风险：\n- 客人迟到\n"
    );
    // the stream is the card's beginning, letter for letter: the reply adds only its end
    let card = doc::render(
        WorkKind::Spec,
        &doc::parse(WorkKind::Spec, SPEC, 8).unwrap(),
    );
    let rest = letters(&card)
        .strip_prefix(&letters(&text))
        .map(str::to_string)
        .expect("the stream begins the card");
    assert!(rest.starts_with("将依次完成1买菜2做四道菜"), "{rest}");
}

#[test]
fn however_the_deltas_split_it_the_text_is_the_same() {
    let whole = read(&[SPEC]);
    let cuts: Vec<usize> = SPEC.char_indices().map(|(i, _)| i).collect();
    for &i in &cuts {
        assert_eq!(read(&[&SPEC[..i], &SPEC[i..]]), whole, "cut at {i}");
    }
    let chars: Vec<String> = SPEC.chars().map(String::from).collect();
    let one_by_one: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(read(&one_by_one), whole);
}

#[test]
fn escapes_are_decoded_in_values_and_keys() {
    let json = r#"{"go\u0061l": "\"年\"夜\\饭\u4e2d\ud83c\udf45\/", "requirements": ["a\nb", "\ud83c x"]}"#;
    assert_eq!(
        read(&[json]),
        "需求规格：\"年\"夜\\饭中🍅/\n需求：\n- a\nb\n- \u{FFFD} x\n"
    );
}

#[test]
fn what_the_card_does_not_show_is_not_streamed() {
    let long_key = "k".repeat(MAX_KEY_CHARS + 5);
    let json = format!(
        r#"{{"notes": "不说", "extra": {{"goal": "不说", "requirements": ["不说"]}},
            "n": 3, "ok": true, "requirements": "不是列表", "risks": [["嵌套"], {{"a": "b"}}, 5],
            "{long_key}": "不说", "constraints": ["", "   "], "goal": "说"}} {{"goal": "第二个对象"}}"#
    );
    assert_eq!(read(&[&json]), "需求规格：说\n");
    assert_eq!(read(&["没有 JSON 的回答。"]), "");
}

fn received(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Partial>) -> Vec<Partial> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

fn t(s: &str) -> Partial {
    Partial::Text(s.into())
}

#[test]
fn a_spec_is_said_line_by_line_and_a_failed_one_becomes_an_aside() {
    let (p, mut rx) = Partials::new(4000);
    let s = SpecSpeech::new(&p);
    s.text(r#"{"goal": "年夜"#);
    assert!(received(&mut rx).is_empty(), "no line is whole yet");
    s.text(r#"饭", "requirements": ["荤素"#);
    assert_eq!(received(&mut rx), [t("需求规格：年夜饭\n"), t("需求：\n")]);
    s.text(r#"搭配"]}"#);
    s.ended(true);
    assert_eq!(received(&mut rx), [t("- 荤素搭配\n")]);

    // an attempt retried by the provider starts over: what it says again is not repeated
    let (p, mut rx) = Partials::new(4000);
    let s = SpecSpeech::new(&p);
    s.text(r#"{"goal": "年夜饭", "requi"#);
    s.retry();
    s.text(r#"{"goal": "年夜饭", "requirements": ["荤素搭配"]}"#);
    s.ended(true);
    assert_eq!(
        received(&mut rx),
        [t("需求规格：年夜饭\n"), t("需求：\n"), t("- 荤素搭配\n")]
    );

    // a spec that does not parse: what was said is an aside, not the reply's beginning
    let (p, mut rx) = Partials::new(4000);
    let s = SpecSpeech::new(&p);
    s.text(r#"{"goal": "年夜饭", "requirements": ["荤素"#);
    s.ended(false);
    assert_eq!(
        received(&mut rx),
        [t("需求规格：年夜饭\n"), t("需求：\n"), Partial::Aside]
    );
}

#[test]
fn what_a_spec_says_is_bounded_by_the_partials_caps() {
    let (p, mut rx) = Partials::new(100);
    let s = SpecSpeech::new(&p);
    let items: Vec<String> = (0..200)
        .map(|i| format!("第{i}条要求写得很长很长"))
        .collect();
    s.text(&serde_json::json!({"goal": "g", "requirements": items}).to_string());
    s.ended(true);
    let said: usize = received(&mut rx)
        .iter()
        .map(|p| match p {
            Partial::Text(t) => t.chars().count(),
            Partial::Aside => 0,
        })
        .sum();
    assert!(said <= 100, "{said}");
    assert!(p.count() <= Partials::max_count(100));
}
