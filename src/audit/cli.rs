//! What `homebot audit` and `homebot stats` print: the text for stdout, and the notes for
//! stderr (files with unreadable lines), so the binary only prints.

use super::{load, show, AuditError};
use crate::config::Price;
use crate::workspace::Workspace;
use std::collections::BTreeMap;

/// A command's output: `out` for stdout, `notes` for stderr.
#[derive(Debug, Default, PartialEq)]
pub struct Printed {
    pub out: String,
    pub notes: String,
}

fn notes_of(loaded: &super::Loaded) -> String {
    loaded.notes().iter().map(|n| format!("{n}\n")).collect()
}

/// `homebot audit`: the last `last` records (all when `None`) of `session` (every file
/// when `None`), one readable line or JSON record each.
pub fn audit(
    ws: &Workspace,
    session: Option<&str>,
    last: Option<usize>,
    json: bool,
) -> Result<Printed, AuditError> {
    let loaded = load(ws, session)?;
    let out = show::tail(&loaded.records, last)
        .iter()
        .map(|r| match json {
            true => show::json_line(r),
            false => show::readable_line(r),
        } + "\n")
        .collect();
    Ok(Printed {
        out,
        notes: notes_of(&loaded),
    })
}

/// `homebot stats`: the cache hit ratio and tokens per day and per session, then what
/// they cost at `prices`.
pub fn stats(ws: &Workspace, prices: &BTreeMap<String, Price>) -> Result<Printed, AuditError> {
    let loaded = load(ws, None)?;
    let stats = super::stats::compute(&loaded.records);
    Ok(Printed {
        out: super::stats::render(&stats) + &super::cost::render(&loaded.records, prices),
        notes: notes_of(&loaded),
    })
}
