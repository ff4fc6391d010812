//! `homebot examples [MODE]` and `homebot examples forget ID`: the kept cases, read and
//! changed on disk directly (with or without a running gateway: the store's lock keeps
//! both writers' changes). The same listing, in the household's language, is what
//! `/examples` answers in a chat ([`render_in`]).

use super::{Case, ExampleStore, Judged};
use crate::config::Language;
use crate::workspace::Workspace;

/// What `homebot examples [MODE]` or `homebot examples forget ID` prints.
pub fn run(ws: &Workspace, mode: Option<&str>, forget: Option<&str>) -> anyhow::Result<String> {
    let store = ExampleStore::new(ws);
    if let Some(id) = forget {
        if !super::store::is_case_id(id) {
            anyhow::bail!("{id:?} is not an example id (like cooking-3; see `homebot examples`)");
        }
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

/// The cases of `mode` (every mode's when `None`), one block per case, in English (the
/// command line's).
pub fn render(store: &ExampleStore, mode: Option<&str>) -> String {
    render_in(store, mode, Language::En)
}

/// [`render`] in `language` (`/examples` in a chat: the household's).
pub fn render_in(store: &ExampleStore, mode: Option<&str>, language: Language) -> String {
    let zh = language == Language::Zh;
    let modes = match mode {
        Some(m) => vec![m.to_string()],
        None => store.modes(),
    };
    let mut out = String::new();
    for m in modes {
        let (cases, warning) = store.load(&m);
        if let Some(w) = warning {
            out.push_str(&format!("{}{w}\n", if zh { "警告：" } else { "warning: " }));
        }
        out.push_str(&match zh {
            true => format!("{m}：{} 个例子\n", cases.len()),
            false => format!("{m}: {} case(s)\n", cases.len()),
        });
        for c in cases.iter().rev() {
            out.push_str(&line(c, zh));
        }
    }
    if out.is_empty() {
        out.push_str(match zh {
            true => "还没有记下的例子（mode.json 里写了 \"examples\" 的模式才会记）\n",
            false => "no examples kept (a mode keeps them when its mode.json has \"examples\")\n",
        });
    }
    out
}

/// How a case was judged, in words.
pub fn judged_words(j: Judged, zh: bool) -> &'static str {
    match (j, zh) {
        (Judged::Good, false) => "Good",
        (Judged::Praised, false) => "Praised",
        (Judged::Thanked, false) => "Thanked",
        (Judged::Dashboard, false) => "Dashboard",
        (Judged::Good, true) => "/good",
        (Judged::Praised, true) => "夸了",
        (Judged::Thanked, true) => "道谢",
        (Judged::Dashboard, true) => "网页上记下",
    }
}

fn line(c: &Case, zh: bool) -> String {
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
        .map(|r| match zh {
            true => format!(" 房间 {r}"),
            false => format!(" room {r}"),
        })
        .unwrap_or_default();
    let (id, at, judged) = (&c.id, &c.at, judged_words(c.judged, zh));
    let (ch, chat, sid) = (&c.scene.channel, &c.scene.chat_id, &c.session_id);
    let head = match zh {
        true => format!("  {id}  {at}  {judged} · {ch}/{chat}{room}（会话 {sid}）\n"),
        false => format!("  {id}  {at}  {judged} in {ch}/{chat}{room} (session {sid})\n"),
    };
    format!(
        "{head}    问: {u}\n    答: {a}\n",
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
