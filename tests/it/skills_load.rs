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
}
