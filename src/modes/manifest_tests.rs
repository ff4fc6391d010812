//! Tests of `manifest.rs`: what a skill's mode.json may say.
use super::*;

#[test]
fn minimal_manifest() {
    let m = ModeManifest::parse(r#"{"id":"example","display_name":"示例模式"}"#).unwrap();
    assert_eq!(m.id, "example");
    assert_eq!(m.expiry(), ExpiryPolicy::default());
}

#[test]
fn unknown_key_is_an_error() {
    let e = ModeManifest::parse(r#"{"id":"x","display_name":"X","colour":"red"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `colour`"), "{e}");
}

#[test]
fn context_limits_are_read_and_bounded() {
    let m = ModeManifest::parse(
        r#"{"id":"x","display_name":"X","context":{"history_limit":12,"summary_threshold_tokens":1800}}"#,
    )
    .unwrap();
    let c = m.context.unwrap();
    assert_eq!(
        (c.history_limit, c.summary_threshold_tokens),
        (Some(12), Some(1800))
    );
    for (key, bad) in [
        ("history_limit", "0"),
        ("history_limit", "100001"),
        ("summary_threshold_tokens", "99"),
        ("summary_threshold_tokens", "-1"),
    ] {
        let e = ModeManifest::parse(&format!(
            r#"{{"id":"x","display_name":"X","context":{{"{key}":{bad}}}}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains(key) || e.contains("invalid value"), "{e}");
    }
}

#[test]
fn knowledge_is_a_folder_of_its_own() {
    let with = |path: &str| {
        ModeManifest::parse(&format!(
            r#"{{"id":"x","display_name":"X","context":{{"knowledge":[{{"name":"k","path":"{path}"}}]}}}}"#
        ))
    };
    assert!(with("cooking/recipes").is_ok());
    let in_skill = |path: &str| {
        ModeManifest::parse(&format!(
            r#"{{"id":"x","display_name":"X","context":{{"knowledge":[{{"name":"k","path":"{path}","in":"skill"}}]}}}}"#
        ))
    };
    assert_eq!(
        in_skill("knowledge").unwrap().context.unwrap().knowledge[0].root,
        KnowledgeRoot::Skill
    );
    for bad in ["", ".", "../x", "/etc", ".hidden", "a/../../b"] {
        assert!(in_skill(bad).is_err(), "{bad:?} accepted in the skill");
    }
    let long = "长".repeat(MAX_OBJECTIVE_CHARS + 1);
    let e = ModeManifest::parse(&format!(
        r#"{{"id":"x","display_name":"X","context":{{"objective":"{long}"}}}}"#
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("context.objective"), "{e}");
    let e = ModeManifest::parse(
        r#"{"id":"x","display_name":"X","context":{"retrieval_tokens":999999}}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("retrieval_tokens"), "{e}");
    for bad in [
        "",
        ".",
        "./",
        "../x",
        "/etc",
        "chats",
        "Members/mom",
        "config.toml",
        "modes/sessions",
        ".git",
    ] {
        assert!(with(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn a_mode_may_word_its_own_summary_and_compaction() {
    let m = ModeManifest::parse(
        r#"{"id":"x","display_name":"X","context":{"summary_instructions":"写下作业题目和错题","compaction_instructions":"保留每道题的答案"}}"#,
    )
    .unwrap();
    let c = m.context.unwrap();
    assert_eq!(
        c.summary_instructions.as_deref(),
        Some("写下作业题目和错题")
    );
    assert_eq!(
        c.compaction_instructions.as_deref(),
        Some("保留每道题的答案")
    );
    let long = "长".repeat(MAX_INSTRUCTIONS_CHARS + 1);
    for key in ["summary_instructions", "compaction_instructions"] {
        for bad in [" ".to_string(), long.clone()] {
            let e = ModeManifest::parse(&format!(
                r#"{{"id":"x","display_name":"X","context":{{"{key}":"{bad}"}}}}"#
            ))
            .unwrap_err()
            .to_string();
            assert!(e.contains(key), "{e}");
        }
    }
}

#[test]
fn bad_values_are_errors() {
    assert!(ModeManifest::parse(r#"{"id":"../x","display_name":"X"}"#).is_err());
    assert!(ModeManifest::parse(r#"{"id":"x","display_name":" "}"#).is_err());
    assert!(
        ModeManifest::parse(r#"{"id":"x","display_name":"X","expiry":{"at":"25:00"}}"#).is_err()
    );
}

#[test]
fn examples_are_opt_in_and_bounded() {
    let m = ModeManifest::parse(r#"{"id":"x","display_name":"X"}"#).unwrap();
    assert_eq!(m.examples, None);
    let m = ModeManifest::parse(r#"{"id":"x","display_name":"X","examples":{"use":2,"keep":50}}"#)
        .unwrap();
    assert_eq!(m.examples, Some(ExamplesPolicy { use_n: 2, keep: 50 }));
    for (u, k) in [(0, 50), (3, 50), (1, 0), (1, 201)] {
        let e = ModeManifest::parse(&format!(
            r#"{{"id":"x","display_name":"X","examples":{{"use":{u},"keep":{k}}}}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("examples.use must be 1..=2"), "{e}");
    }
    assert!(ModeManifest::parse(
        r#"{"id":"x","display_name":"X","examples":{"use":1,"keep":5,"extra":1}}"#
    )
    .is_err());
}
