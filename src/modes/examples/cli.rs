//! `homebot examples [MODE]` and `homebot examples forget ID`: the kept cases, read and
//! changed on disk directly (with or without a running gateway: the store's lock keeps
//! both writers' changes).

use super::{Case, ExampleStore};
use crate::workspace::Workspace;

/// What `homebot examples [MODE]` or `homebot examples forget ID` prints.
pub fn run(ws: &Workspace, mode: Option<&str>, forget: Option<&str>) -> anyhow::Result<String> {
    let store = ExampleStore::new(ws);
    if let Some(id) = forget {
        if !store.forget(id)? {
            anyhow::bail!("there is no example {id} (see `homebot examples`)");
        }
        return Ok(format!("example {id} forgotten\n"));
    }
    if let Some(m) = mode.filter(|m| !crate::config::is_safe_id(m)) {
        anyhow::bail!("{m:?} is not a mode id");
    }
    Ok(render(&store, mode))
}

/// The cases of `mode` (every mode's when `None`), one block per case.
pub fn render(store: &ExampleStore, mode: Option<&str>) -> String {
    let modes = match mode {
        Some(m) => vec![m.to_string()],
        None => store.modes(),
    };
    let mut out = String::new();
    for m in modes {
        let (cases, warning) = store.load(&m);
        if let Some(w) = warning {
            out.push_str(&format!("warning: {w}\n"));
        }
        out.push_str(&format!("{m}: {} case(s)\n", cases.len()));
        for c in cases.iter().rev() {
            out.push_str(&line(c));
        }
    }
    if out.is_empty() {
        out.push_str("no examples kept (a mode keeps them when its mode.json has \"examples\")\n");
    }
    out
}

fn line(c: &Case) -> String {
    let short = |t: &str, n: usize| {
        let one: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
        match one.char_indices().nth(n) {
            Some((i, _)) => format!("{}…", &one[..i]),
            None => one,
        }
    };
    let room = c
        .scene
        .room
        .as_deref()
        .map(|r| format!(" room {r}"))
        .unwrap_or_default();
    format!(
        "  {id}  {at}  {judged:?} in {ch}/{chat}{room} (session {sid})\n    问: {u}\n    答: {a}\n",
        id = c.id,
        at = c.at,
        judged = c.judged,
        ch = c.scene.channel,
        chat = c.scene.chat_id,
        sid = c.session_id,
        u = short(&c.user, 60),
        a = short(&c.answer, 80),
    )
}

/// The examples a session's frozen prompt got (its `examples.json`), for the audit.
pub fn session_examples(session_dir: &std::path::Path) -> Option<Vec<Case>> {
    let text = std::fs::read_to_string(session_dir.join(super::SESSION_EXAMPLES_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The line `homebot audit --session ID` prints (on stderr) about the examples of the session in
/// `dir` (nothing for a session of a mode that does not learn them).
pub fn session_lines(dir: &std::path::Path) -> String {
    match session_examples(dir) {
        None => String::new(),
        Some(cases) if cases.is_empty() => "examples: none\n".into(),
        Some(cases) => {
            let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
            format!("examples: {}\n", ids.join(", "))
        }
    }
}
