//! The Prometheus text exposition format, version 0.0.4: per family a `# HELP` and a
//! `# TYPE` line, then its samples `name{label="value",…} value`. Label values escape
//! `\`, `"` and newlines; help text escapes `\` and newlines. A histogram is its
//! cumulative `_bucket{le="…"}` series ending with `le="+Inf"`, then `_sum` and `_count`.

use super::registry::HistogramSnapshot;
use std::fmt::Write;

/// The `Content-Type` of the text this module writes.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One sample's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Histogram(HistogramSnapshot),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: Value,
}

/// A metric family ready to print: what the registry's series render into, and what a
/// caller outside this module (the channel states of the dashboard) hands to
/// [`super::render`] to be printed with them.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

impl Family {
    pub fn new(name: &'static str, help: &'static str, kind: Kind) -> Self {
        Self {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }

    /// Add a sample; `labels` are pairs of a label name and its value.
    pub fn sample(mut self, labels: Vec<(&'static str, String)>, value: Value) -> Self {
        self.samples.push(Sample { labels, value });
        self
    }
}

/// A metric or label name as the format allows: `[a-zA-Z_:][a-zA-Z0-9_:]*` (labels
/// without `:`).
pub fn valid_name(name: &str, label: bool) -> bool {
    let ok = |c: char, first: bool| {
        c.is_ascii_alphabetic()
            || c == '_'
            || (!label && c == ':')
            || (!first && c.is_ascii_digit())
    };
    let mut chars = name.chars();
    chars.next().is_some_and(|c| ok(c, true)) && chars.all(|c| ok(c, false))
}

fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn escape_help(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A float as the format reads it (Go's `ParseFloat`): `+Inf`, `-Inf`, `NaN`, or a plain
/// decimal.
pub fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

fn series(out: &mut String, name: &str, suffix: &str, labels: &[(&str, &str)], value: &str) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(k);
            out.push_str("=\"");
            escape_label(out, v);
            out.push('"');
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(value);
    out.push('\n');
}

/// Append `f` to `out`. A family with an invalid name or label name is skipped (and said
/// so in a comment): one bad family must not make the whole page unreadable.
pub fn write_family(out: &mut String, f: &Family) {
    if !valid_name(f.name, false)
        || f.samples
            .iter()
            .flat_map(|s| &s.labels)
            .any(|(k, _)| !valid_name(k, true) || k.starts_with("__") || *k == "le")
    {
        let _ = writeln!(
            out,
            "# skipped a family with an invalid metric or label name"
        );
        return;
    }
    let _ = write!(out, "# HELP {} ", f.name);
    escape_help(out, f.help);
    out.push('\n');
    let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind.word());
    for s in &f.samples {
        let labels: Vec<(&str, &str)> = s.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        match &s.value {
            Value::Int(v) => series(out, f.name, "", &labels, &v.to_string()),
            Value::Float(v) => series(out, f.name, "", &labels, &float(*v)),
            Value::Histogram(h) => {
                for (i, n) in h.cumulative.iter().enumerate() {
                    let le = h
                        .bounds
                        .get(i)
                        .map_or_else(|| "+Inf".to_string(), |b| float(*b));
                    let mut with_le = labels.clone();
                    with_le.push(("le", &le));
                    series(out, f.name, "_bucket", &with_le, &n.to_string());
                }
                series(out, f.name, "_sum", &labels, &float(h.sum_seconds));
                series(out, f.name, "_count", &labels, &h.count.to_string());
            }
        }
    }
}
