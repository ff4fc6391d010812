//! A test that every key the configuration accepts is documented: in the table of
//! docs/configuration.md and, commented, in the first-use template (`assets/default-config.toml`). The
//! keys come from the code: each section is probed with an unknown key, and serde's
//! `deny_unknown_fields` answer lists the fields it expects there.

use super::{Config, DEFAULT_CONFIG};
use toml::{Table, Value};

const PROBE: &str = "__probe__";

/// One step down the tree: a table's key, an array of tables' element, a map's entry.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Element,
    Entry,
}

/// The fields serde expects at `path`, if a table there is a struct.
fn fields_at(path: &[Step]) -> Option<Vec<String>> {
    let mut v = Value::Table(Table::from_iter([(PROBE.to_string(), Value::Integer(1))]));
    for step in path.iter().rev() {
        v = match step {
            Step::Key(k) => Value::Table(Table::from_iter([(k.clone(), v)])),
            Step::Element => Value::Array(vec![v]),
            Step::Entry => Value::Table(Table::from_iter([("m".to_string(), v)])),
        };
    }
    let err = v.try_into::<Config>().err()?.to_string();
    let rest = err.split(&format!("unknown field `{PROBE}`")).nth(1)?;
    let rest = rest.split('\n').next().unwrap_or_default();
    Some(
        rest.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

/// Every key, as its path of steps, struct by struct from the top.
fn keys(path: Vec<Step>, out: &mut Vec<Vec<Step>>) {
    for f in fields_at(&path).unwrap_or_default() {
        let mut p = path.clone();
        p.push(Step::Key(f));
        out.push(p.clone());
        for deeper in [None, Some(Step::Element), Some(Step::Entry)] {
            let mut q = p.clone();
            q.extend(deeper);
            if fields_at(&q).is_some() {
                keys(q, out);
                break;
            }
        }
    }
}

fn names(path: &[Step]) -> Vec<&str> {
    path.iter()
        .filter_map(|s| match s {
            Step::Key(k) => Some(k.as_str()),
            _ => None,
        })
        .collect()
}

fn display(path: &[Step]) -> String {
    path.iter()
        .map(|s| match s {
            Step::Key(k) => k.clone(),
            Step::Element => "[]".into(),
            Step::Entry => "<name>".into(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// The template with its commented keys and section headers uncommented (prose stays a
/// comment).
fn uncommented(template: &str) -> String {
    template
        .lines()
        .map(|l| {
            let Some(body) = l.strip_prefix("# ") else {
                return l.to_string();
            };
            let head = body.split(['=', ' ']).next().unwrap_or_default();
            let is_key = !head.is_empty()
                && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && body[head.len()..].trim_start().starts_with('=');
            if is_key || body.starts_with('[') {
                body.to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn present(v: &Value, path: &[Step]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return true;
    };
    match (first, v) {
        (Step::Key(k), Value::Table(t)) => t.get(k).is_some_and(|v| present(v, rest)),
        (Step::Element, Value::Array(a)) => a.iter().any(|v| present(v, rest)),
        (Step::Entry, Value::Table(t)) => t.values().any(|v| present(v, rest)),
        _ => false,
    }
}

fn all_keys() -> Vec<Vec<Step>> {
    let mut out = Vec::new();
    keys(Vec::new(), &mut out);
    out
}

#[test]
fn the_probe_finds_the_keys_of_nested_sections() {
    let all: Vec<String> = all_keys().iter().map(|p| display(p)).collect();
    for k in [
        "household.timezone",
        "qq.max_reply_chars",
        "voice.satellites.[].token",
        "provider.fallback.[].base_url",
        "provider.price.<name>.tiers.[].hours",
        "members.[].qq_ids",
        "memory.channels",
    ] {
        assert!(all.contains(&k.to_string()), "{k} not among {all:?}");
    }
}

#[test]
fn every_key_is_in_the_template_and_commented() {
    let raw: Table = toml::from_str(DEFAULT_CONFIG).expect("the template parses");
    assert!(
        raw.is_empty(),
        "keys written uncommented in assets/default-config.toml: {raw:?}"
    );
    let full: Value = toml::from_str::<Table>(&uncommented(DEFAULT_CONFIG))
        .map(Value::Table)
        .expect("the template's commented keys parse as TOML");
    let missing: Vec<String> = all_keys()
        .iter()
        .filter(|p| !present(&full, p))
        .map(|p| display(p))
        .collect();
    assert!(
        missing.is_empty(),
        "not in assets/default-config.toml: {missing:?}"
    );
}

#[test]
fn every_key_is_in_the_configuration_table() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"),
    )
    .expect("docs/configuration.md is there");
    let rows: Vec<&str> = doc.lines().filter(|l| l.starts_with("| `")).collect();
    let missing: Vec<String> = all_keys()
        .iter()
        .filter(|p| {
            let n = names(p);
            let (top, leaf) = (n[0], n[n.len() - 1]);
            !rows.iter().any(|row| {
                let first = row.split(" | ").next().unwrap_or_default();
                let in_section = [format!("`{top}."), format!("`[{top}"), format!("`[[{top}")]
                    .iter()
                    .any(|s| first.contains(s.as_str()));
                in_section
                    && (n.len() == 1
                        || row.contains(&format!("`{leaf}`"))
                        || [
                            format!(".{leaf}`"),
                            format!(".{leaf}]"),
                            format!(".{leaf}."),
                        ]
                        .iter()
                        .any(|s| row.contains(s.as_str())))
            })
        })
        .map(|p| display(p))
        .collect();
    assert!(
        missing.is_empty(),
        "not in docs/configuration.md's table: {missing:?}"
    );
}
