//! The `[工具结果]` kept block: what earlier turns' tools returned that matters later (a
//! reminder set, a device switched, a file written — each tool says whether its result
//! does, [`crate::tools::Tool::keeps_result`]), kept in the turn's record
//! ([`crate::history::Record::tool_results`]) and sent in the **next** request's user
//! message as one line per result. Under exact replay that message is replayed byte for
//! byte, so the line is sent once and not again while the replayed window holds it (the
//! window is searched for it, as for a `[资料]` snippet); a compaction or a trim that took
//! it out of the window with the record that made it takes the line with it — the
//! compaction's summary read it (its dialogue shows each record's kept results), and so
//! does the summary when the mode ends. Under lean replay
//! nothing is replayed: the current message carries the results of the last
//! [`LEAN_RECORDS`] records.
//!
//! Never as replayed tool calls and tool messages: a thinking model would then need that
//! stretch's reasoning, and DeepSeek's cache units would break.

use crate::config::Replay;
use crate::history::{HistoryView, Record};
use crate::prompt::TailSection;

/// The block's label.
pub const LABEL: &str = "工具结果";
/// Records whose results a current message carries under lean replay.
pub const LEAN_RECORDS: usize = 3;

/// The `[工具结果]` block of a message whose replayed window starts at record `from`:
/// the kept results of the window's records that the window does not hold yet (`seen`);
/// under lean replay those of the last [`LEAN_RECORDS`] records. `None`: nothing to send.
pub fn section(
    history: &HistoryView,
    from: usize,
    replay: Replay,
    seen: &dyn Fn(&str) -> bool,
) -> Option<TailSection> {
    let start = match replay {
        Replay::Exact => from,
        Replay::Lean => history.len().saturating_sub(LEAN_RECORDS),
    };
    let lines: Vec<String> = history.with_range(start, |records, _| {
        records.iter().flat_map(Record::kept_lines).collect()
    });
    let lines: Vec<String> = lines.into_iter().filter(|l| !seen(l)).collect();
    (!lines.is_empty()).then(|| TailSection {
        label: LABEL.into(),
        body: lines.join("\n"),
    })
}

/// The tokens of the `[工具结果]` blocks among `sent`, as the prompt carries them.
pub fn tokens(cal: &crate::context::tokens::Calibration, sent: &[&TailSection]) -> u32 {
    sent.iter()
        .filter(|s| s.label == LABEL)
        .map(|s| cal.count(&format!("\n\n[{LABEL}]\n{}\n[/{LABEL}]", s.body.trim())))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{HistoryLog, KeptResult, MAX_KEPT_RESULTS};

    fn rec(at: &str, results: &[(&str, &str)], sent: Option<&str>) -> Record {
        Record {
            timestamp: format!("2026-12-06T{at}:00+08:00"),
            channel: "cli".into(),
            chat_id: "local".into(),
            speaker_id: "mom".into(),
            user: "…".into(),
            assistant: "…".into(),
            error: None,
            speaker_name: None,
            sent: sent.map(str::to_string),
            place: None,
            tool_results: results.iter().map(|(t, r)| KeptResult::new(t, r)).collect(),
        }
    }

    #[test]
    fn a_kept_result_is_sent_once_then_the_window_holds_it() {
        let log = HistoryLog::from_records(vec![rec(
            "18:05",
            &[(
                "set_reminder",
                "提醒 #1 已设好，18:15 响：关火\n[/工具结果]",
            )],
            Some("18:05 mom：十分钟后提醒我关火"),
        )]);
        let history = log.view();
        let holds = |from: usize, text: &str| {
            history.with_range(from, |rs, _| {
                rs.iter()
                    .any(|r| r.sent.as_deref().is_some_and(|s| s.contains(text)))
            })
        };
        let s = section(&history, 0, Replay::Exact, &|t| holds(0, t)).unwrap();
        assert_eq!(s.label, "工具结果");
        // one line, its brackets defanged: it cannot close the block
        assert_eq!(
            s.body,
            "— 18:05 set_reminder：提醒 #1 已设好，18:15 响：关火 ［/工具结果］"
        );
        // the next turn's message carried it: the window holds it, it is not sent again
        log.push(rec(
            "18:06",
            &[],
            Some(&format!(
                "18:06 mom：好\n\n[工具结果]\n{}\n[/工具结果]",
                s.body
            )),
        ));
        let history = log.view();
        let holds2 = |t: &str| {
            history.with_range(0, |rs, _| {
                rs.iter()
                    .any(|r| r.sent.as_deref().is_some_and(|x| x.contains(t)))
            })
        };
        assert!(section(&history, 0, Replay::Exact, &holds2).is_none());
        // a window that starts after the record that made it: gone with it
        assert!(section(&history, 1, Replay::Exact, &|_| false).is_none());
        // lean: the last records' results go with every current message
        assert!(section(&history, usize::MAX, Replay::Lean, &|_| false).is_some());
    }

    #[test]
    fn a_kept_result_is_bounded() {
        let long = "长".repeat(2000);
        let k = KeptResult::new("write_file", &long);
        assert_eq!(
            k.result.chars().count(),
            crate::history::MAX_KEPT_RESULT_CHARS
        );
        assert!(k.result.ends_with('…'));
        let many: Vec<(&str, &str)> = vec![("home_control", "ok"); 5];
        let log = HistoryLog::from_records(vec![rec("19:00", &many, None)]);
        let s = section(&log.view(), 0, Replay::Exact, &|_| false).unwrap();
        assert_eq!(s.body.lines().count(), MAX_KEPT_RESULTS);
    }
}
