//! A strict reader of the text format, for tests (this crate's and the dashboard's): every
//! line is a `# HELP` / `# TYPE` line or a sample `name{labels} value`; names are valid;
//! a family's `# TYPE` comes before its samples, once, and its samples are together; no
//! series appears twice; a histogram's buckets rise with `le`, never fall, end with
//! `+Inf`, and agree with its `_count`; its `_sum` is there.

use super::text::valid_name;
use std::collections::{BTreeMap, HashMap, HashSet};

/// One sample: its name (with a histogram's `_bucket` / `_sum` / `_count` suffix), labels
/// and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Where the text breaks the format, and which rule.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExpositionError {
    #[error("the text does not end with a newline")]
    NoFinalNewline,
    #[error("line {line}: {why}: {text:?}")]
    Line {
        line: usize,
        why: &'static str,
        text: String,
    },
    #[error("{series}: {why}")]
    Series { series: String, why: &'static str },
}

/// The samples of `text`, or the first line that breaks a rule and why.
pub fn parse_strict(text: &str) -> Result<Vec<Parsed>, ExpositionError> {
    let mut types: HashMap<String, String> = HashMap::new();
    let mut helps: HashSet<String> = HashSet::new();
    let mut done: HashSet<String> = HashSet::new();
    let mut current: Option<String> = None;
    let mut seen: HashSet<(String, Vec<(String, String)>)> = HashSet::new();
    let mut out = Vec::new();
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(ExpositionError::NoFinalNewline);
    }
    for (n, line) in text.lines().enumerate() {
        let bad = |why: &'static str| {
            Err(ExpositionError::Line {
                line: n + 1,
                why,
                text: line.to_string(),
            })
        };
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap_or_default();
            if !valid_name(name, false) || !helps.insert(name.to_string()) {
                return bad("a HELP line with a bad or repeated name");
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let (Some(name), Some(kind), None) = (parts.next(), parts.next(), parts.next()) else {
                return bad("a TYPE line is `# TYPE name kind`");
            };
            if !valid_name(name, false)
                || !matches!(
                    kind,
                    "counter" | "gauge" | "histogram" | "summary" | "untyped"
                )
            {
                return bad("a TYPE line with a bad name or kind");
            }
            if types.insert(name.to_string(), kind.to_string()).is_some() {
                return bad("a second TYPE line for a family");
            }
            if let Some(prev) = current.replace(name.to_string()) {
                done.insert(prev);
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let sample = match sample(line) {
            Ok(s) => s,
            Err(why) => return bad(why),
        };
        let family = family_of(&sample.name, &types);
        if current.as_deref() != Some(family.as_str()) || done.contains(&family) {
            return bad("a sample outside its family's block (after another TYPE line)");
        }
        let key = (
            sample.name.clone(),
            sample.labels.clone().into_iter().collect::<Vec<_>>(),
        );
        if !seen.insert(key) {
            return bad("the same series twice");
        }
        out.push(sample);
    }
    check_histograms(&out, &types)?;
    Ok(out)
}

/// The family a sample belongs to: a histogram's suffixed samples belong to the
/// histogram.
fn family_of(name: &str, types: &HashMap<String, String>) -> String {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if types.get(base).map(String::as_str) == Some("histogram") {
                return base.to_string();
            }
        }
    }
    name.to_string()
}

fn sample(line: &str) -> Result<Parsed, &'static str> {
    let name_end = line.find(['{', ' ']).ok_or("no value after the name")?;
    let name = &line[..name_end];
    if !valid_name(name, false) {
        return Err("an invalid metric name");
    }
    let mut labels = BTreeMap::new();
    let mut rest = &line[name_end..];
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        loop {
            // a label name up to `=`
            let start = chars.peek().map(|(i, _)| *i).ok_or("unclosed labels")?;
            if body[start..].starts_with('}') {
                if !labels.is_empty() {
                    return Err("a comma before `}`");
                }
                rest = &body[start + 1..];
                break;
            }
            let eq = body[start..].find('=').ok_or("a label without `=`")? + start;
            let key = &body[start..eq];
            if !valid_name(key, true) {
                return Err("an invalid label name");
            }
            while chars.peek().is_some_and(|(i, _)| *i <= eq) {
                chars.next();
            }
            if chars.next().map(|(_, c)| c) != Some('"') {
                return Err("a label value must be quoted");
            }
            let mut value = String::new();
            loop {
                match chars.next().ok_or("unclosed label value")?.1 {
                    '"' => break,
                    '\\' => match chars.next().ok_or("a lone backslash")?.1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        _ => return Err("an unknown escape (only \\\\, \\\" and \\n are)"),
                    },
                    '\n' => return Err("a raw newline in a label value"),
                    c => value.push(c),
                }
            }
            if labels.insert(key.to_string(), value).is_some() {
                return Err("a label twice");
            }
            match chars.next().ok_or("unclosed labels")? {
                (_, ',') => {}
                (i, '}') => {
                    rest = &body[i + 1..];
                    break;
                }
                _ => return Err("something other than `,` or `}` after a label value"),
            }
        }
    }
    let value = rest.strip_prefix(' ').ok_or("no space before the value")?;
    // no timestamp is written: exactly one value
    if value.contains(' ') || value.is_empty() {
        return Err("not exactly one value");
    }
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse::<f64>().map_err(|_| "the value is not a number")?,
    };
    Ok(Parsed {
        name: name.to_string(),
        labels,
        value,
    })
}

fn check_histograms(
    samples: &[Parsed],
    types: &HashMap<String, String>,
) -> Result<(), ExpositionError> {
    let bad = |series: String, why: &'static str| Err(ExpositionError::Series { series, why });
    type Key = (String, Vec<(String, String)>);
    let mut buckets: BTreeMap<Key, Vec<(f64, f64)>> = BTreeMap::new();
    let mut counts: HashMap<Key, f64> = HashMap::new();
    let mut sums: HashSet<Key> = HashSet::new();
    for s in samples {
        let family = family_of(&s.name, types);
        if types.get(&family).map(String::as_str) != Some("histogram") {
            if types.get(&family).is_some_and(|k| k == "counter")
                && (s.value.is_nan() || s.value < 0.0)
            {
                return bad(s.name.clone(), "a counter is negative or NaN");
            }
            continue;
        }
        let mut labels = s.labels.clone();
        let le = labels.remove("le");
        let key = (family.clone(), labels.into_iter().collect::<Vec<_>>());
        match &s.name[family.len()..] {
            "_bucket" => {
                let Some(le) = le else {
                    return bad(s.name.clone(), "a bucket without le");
                };
                let le = match le.as_str() {
                    "+Inf" => f64::INFINITY,
                    v => match v.parse() {
                        Ok(le) => le,
                        Err(_) => return bad(s.name.clone(), "le is not a number"),
                    },
                };
                buckets.entry(key).or_default().push((le, s.value));
            }
            "_count" => {
                counts.insert(key, s.value);
            }
            "_sum" => {
                sums.insert(key);
            }
            _ => return bad(s.name.clone(), "not a histogram series"),
        }
    }
    for (key, b) in &buckets {
        if !b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1) {
            return bad(
                format!("{key:?}"),
                "buckets not rising with le, or counts falling",
            );
        }
        let last = b.last().expect("an entry has a bucket");
        if last.0 != f64::INFINITY {
            return bad(format!("{key:?}"), "no +Inf bucket");
        }
        if counts.get(key) != Some(&last.1) {
            return bad(format!("{key:?}"), "_count is not the +Inf bucket");
        }
        if !sums.contains(key) {
            return bad(format!("{key:?}"), "no _sum");
        }
    }
    if counts.len() != buckets.len() {
        return bad(String::new(), "a histogram _count without buckets");
    }
    Ok(())
}

/// The value of the sample `name` whose labels include `labels` (`None`: no such
/// sample). Several matching: their sum.
pub fn value(samples: &[Parsed], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let matching: Vec<f64> = samples
        .iter()
        .filter(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .collect();
    (!matching.is_empty()).then(|| matching.iter().sum())
}
