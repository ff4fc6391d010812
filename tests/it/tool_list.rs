//! The tool list is part of the stable prompt prefix: its order and bytes must not change
//! unless a change means to (a changed byte misses every provider's prefix cache). The
//! fixtures were generated from the hand-written tool definitions, before the tool
//! registry derived them. To change the list on purpose (a new tool, a reworded
//! description), run this test with `HOMEBOT_WRITE_TOOL_FIXTURES=1` and commit the
//! fixtures' diff with the change: the diff is what every household's prompt loses from
//! its cache.

use homebot::modes::ModeRegistry;
use homebot::provider::ToolDef;
use std::path::{Path, PathBuf};

/// One compact JSON line per tool, exactly as serialized.
fn lines(defs: &[ToolDef]) -> String {
    defs.iter()
        .map(|d| serde_json::to_string(d).unwrap() + "\n")
        .collect()
}

fn fixture(name: &str) -> (PathBuf, String) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_default();
    (p, text)
}

fn check(name: &str, defs: &[ToolDef]) {
    let got = lines(defs);
    let (p, want) = fixture(name);
    if std::env::var_os("HOMEBOT_WRITE_TOOL_FIXTURES").is_some() {
        std::fs::write(&p, &got).unwrap();
        return;
    }
    assert!(!want.is_empty(), "{} is missing", p.display());
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "tool {} of {} differs from the fixture", i + 1, name);
    }
    assert_eq!(got, want, "{name}: the tool list changed");
}

/// The repository's skills (cooking and its sub-mode baking) and a second mode, as a
/// household with two top-level modes.
fn two_modes() -> (tempfile::TempDir, ModeRegistry) {
    let d = tempfile::tempdir().unwrap();
    let skill = d.path().join("homework");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: homework\n---\n检查作业。",
    )
    .unwrap();
    std::fs::write(
        skill.join("mode.json"),
        r#"{"id":"homework","display_name":"作业模式","enter_verbs":["开始"],"exit_verbs":["收工"]}"#,
    )
    .unwrap();
    let skills = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let reg = ModeRegistry::load(&[skills, d.path().to_path_buf()], homebot::skills::PLUGINS);
    (d, reg)
}

#[test]
fn the_tool_list_of_a_household_with_two_modes_is_pinned() {
    let (_d, reg) = two_modes();
    // the shipped cooking mode, its sub-mode baking, and a second top-level mode
    assert_eq!(reg.ids(), ["baking", "cooking", "homework"]);
    let defs = homebot::tools::definitions(&reg, &["notes/".into(), "cooking/recipes/".into()]);
    check("tools_two_modes.jsonl", &defs);
}

#[test]
fn the_tool_list_without_modes_is_pinned() {
    let defs = homebot::tools::definitions(&ModeRegistry::default(), &["notes/".into()]);
    check("tools_no_modes.jsonl", &defs);
}
