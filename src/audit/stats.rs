//! `homebot stats`: what the provider calls cost — the prefix-cache hit ratio (cached ÷
//! prompt tokens) and the token totals, per household day and per mode session. Only
//! attempts that got an answer carry usage; the others (failed, or cancelled mid-call)
//! are counted under `errors`.

use super::show::percent;
use crate::provider::audit::AuditRecord;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub calls: u64,
    pub errors: u64,
    pub prompt: u64,
    pub cached: u64,
    pub completion: u64,
    /// Of `completion`, what the model spent reasoning (where the server says).
    pub reasoning: u64,
    /// Of `prompt`, what the memories recalled by wording cost (the `memory_wording`
    /// block of the answered requests that sent one).
    pub wording: u64,
}

impl Totals {
    fn add(&mut self, r: &AuditRecord) {
        self.calls += 1;
        match &r.usage {
            Some(u) => {
                // numbers a server reported: a hostile one must not overflow the sum
                self.prompt = self.prompt.saturating_add(u.prompt);
                self.cached = self.cached.saturating_add(u.cached);
                self.completion = self.completion.saturating_add(u.completion);
                self.reasoning = self.reasoning.saturating_add(u.reasoning);
                let wording = r.shape.iter().flat_map(|s| &s.blocks);
                for b in wording.filter(|b| b.name == "memory_wording") {
                    self.wording = self.wording.saturating_add(b.tokens);
                }
            }
            None => self.errors += 1,
        }
    }
}

#[derive(Debug, Default, PartialEq)]
pub struct Stats {
    /// By the household date (the timestamp's own date: records are in its zone).
    pub days: BTreeMap<String, Totals>,
    pub sessions: BTreeMap<String, Totals>,
    pub total: Totals,
    /// Turns Home Assistant's own agent answered (the fast path: no provider call), by day.
    pub fast_path: BTreeMap<String, u64>,
}

pub fn compute(records: &[AuditRecord]) -> Stats {
    let mut s = Stats::default();
    for r in records {
        let day = r.timestamp.get(..10).unwrap_or("?").to_string();
        if r.purpose == crate::home::FAST_PATH {
            *s.fast_path.entry(day).or_default() += 1;
            continue;
        }
        s.days.entry(day).or_default().add(r);
        if let Some(id) = &r.session_id {
            s.sessions.entry(id.clone()).or_default().add(r);
        }
        s.total.add(r);
    }
    s
}

/// An optional cell (`reasoning`, `wording`): a column only when some call has it.
fn cell(shown: bool, v: impl std::fmt::Display) -> String {
    if shown {
        format!(" {v:>10}")
    } else {
        String::new()
    }
}

/// Which optional columns the tables show.
#[derive(Clone, Copy)]
struct Shown {
    reasoning: bool,
    wording: bool,
}

fn row(out: &mut String, name: &str, t: &Totals, c: Shown) {
    let _ = writeln!(
        out,
        "{name:<30} {:>6} {:>6} {:>10} {:>10} {:>10}{}{} {:>7}",
        t.calls,
        t.errors,
        t.prompt,
        t.cached,
        t.completion,
        cell(c.reasoning, t.reasoning),
        cell(c.wording, t.wording),
        percent(t.cached, t.prompt)
    );
}

fn header(out: &mut String, first: &str, c: Shown) {
    let _ = writeln!(
        out,
        "{first:<30} {:>6} {:>6} {:>10} {:>10} {:>10}{}{} {:>7}",
        "calls",
        "errors",
        "prompt",
        "cached",
        "completion",
        cell(c.reasoning, "reasoning"),
        cell(c.wording, "wording"),
        "hit"
    );
}

/// The tables: per day, per mode session, and the total. `hit` is cached ÷ prompt;
/// `reasoning`, shown once any call reported it, is the part of `completion` the model
/// spent reasoning (OpenAI, DeepSeek; Anthropic counts thinking in `completion` only);
/// `wording`, shown once any request sent memories recalled by wording, is the part of
/// `prompt` their block took.
pub fn render(s: &Stats) -> String {
    let mut out = String::new();
    if s.total.calls == 0 {
        out.push_str("no provider calls recorded yet\n");
        fast_path(&mut out, s);
        return out;
    }
    let r = Shown {
        reasoning: s.total.reasoning > 0,
        wording: s.total.wording > 0,
    };
    header(&mut out, "day", r);
    for (d, t) in &s.days {
        row(&mut out, d, t, r);
    }
    out.push('\n');
    header(&mut out, "mode session", r);
    for (id, t) in &s.sessions {
        row(&mut out, id, t, r);
    }
    if s.sessions.is_empty() {
        out.push_str("(none)\n");
    }
    out.push('\n');
    row(&mut out, "total", &s.total, r);
    fast_path(&mut out, s);
    out
}

/// Turns answered by Home Assistant's own agent, apart from the provider calls.
fn fast_path(out: &mut String, s: &Stats) {
    if s.fast_path.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nfast path (answered by Home Assistant's own agent, no provider call)"
    );
    for (d, n) in &s.fast_path {
        let _ = writeln!(out, "{d:<30} {n:>6} turns");
    }
    let total: u64 = s.fast_path.values().sum();
    let _ = writeln!(out, "{:<30} {total:>6} turns", "total");
}
