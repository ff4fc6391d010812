//! Every folder shipped under `skills/` loads: its mode.json parses, its entrypoint is
//! compiled in, and its SKILL.md has the conventional front matter.

use homebot::modes::plugin::front_matter_field;
use homebot::modes::ModeRegistry;
use std::path::Path;

#[test]
fn every_shipped_skill_loads() {
    let skills = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let reg = ModeRegistry::load(std::slice::from_ref(&skills), homebot::skills::PLUGINS);
    assert!(reg.issues().is_empty(), "{:?}", reg.issues());
    let mut folders = 0;
    for e in std::fs::read_dir(&skills).unwrap() {
        let dir = e.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        folders += 1;
        let name = dir.file_name().unwrap().to_str().unwrap();
        let md = std::fs::read_to_string(dir.join("SKILL.md"))
            .unwrap_or_else(|e| panic!("{name}: SKILL.md: {e}"));
        assert_eq!(
            front_matter_field(&md, "name").as_deref(),
            Some(name),
            "{name}"
        );
        assert!(
            front_matter_field(&md, "description").is_some_and(|d| !d.is_empty()),
            "{name}"
        );
        if dir.join("mode.json").exists() {
            let m = reg.modes().iter().find(|m| m.skill_dir == dir);
            assert!(m.is_some(), "{name}: mode not registered");
        }
    }
    assert!(folders >= 1);
    let cooking = reg.get("cooking").expect("the cooking mode ships");
    assert_eq!(cooking.manifest.display_name, "做饭模式");
    assert_eq!(cooking.skill_name, "home-cooking");
    let md = std::fs::read_to_string(skills.join("home-cooking/SKILL.md")).unwrap();
    assert_eq!(
        Some(cooking.description.clone()),
        front_matter_field(&md, "description"),
        "a mode's description is its SKILL.md's"
    );
    assert!(cooking.description.starts_with("做饭模式："));
}

fn skill(root: &Path, folder: &str, skill_md: &str, mode_json: &str) {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), skill_md).unwrap();
    std::fs::write(dir.join("mode.json"), mode_json).unwrap();
}

#[test]
fn a_modes_description_comes_from_its_skill_md_and_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    skill(
        root,
        "homework",
        "---\nname: homework\ndescription: 作业模式：陪孩子写作业\n---\n# 作业\n",
        r#"{"id":"homework","display_name":"作业模式","priority":5}"#,
    );
    skill(
        root,
        "plain",
        "# no front matter\n",
        r#"{"id":"plain","display_name":"无描述模式"}"#,
    );
    let long = "长".repeat(homebot::modes::registry::MAX_MODE_DESCRIPTION_CHARS + 1);
    skill(
        root,
        "wordy",
        &format!("---\nname: wordy\ndescription: {long}\n---\n"),
        r#"{"id":"wordy","display_name":"啰嗦模式"}"#,
    );
    skill(
        root,
        "ranked",
        "---\nname: ranked\ndescription: x\n---\n",
        r#"{"id":"ranked","display_name":"排名模式","priority":1001}"#,
    );
    let reg = ModeRegistry::load(&[root.to_path_buf()], &[]);
    let hw = reg.get("homework").unwrap();
    assert_eq!(hw.description, "作业模式：陪孩子写作业");
    assert_eq!(hw.manifest.priority, 5);
    let plain = reg.get("plain").unwrap();
    assert_eq!(
        (plain.description.as_str(), plain.manifest.priority),
        ("", 0)
    );
    assert!(reg.get("wordy").is_none() && reg.get("ranked").is_none());
    let issues: Vec<String> = reg.issues().iter().map(|i| i.to_string()).collect();
    assert_eq!(issues.len(), 2, "{issues:?}");
    assert!(
        issues
            .iter()
            .any(|i| i.contains("wordy") && i.contains("description must be at most 300")),
        "{issues:?}"
    );
    assert!(
        issues
            .iter()
            .any(|i| i.contains("ranked") && i.contains("priority must be -1000..=1000")),
        "{issues:?}"
    );
}
