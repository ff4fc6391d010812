//! The add-on's options: each checked with its name in the error, laid over the file,
//! and the agent token kept across starts.

use super::*;
use crate::config::{EnvOverrides, Language};
use serde_json::json;

fn parse(v: Value) -> Result<AddonOptions, ConfigError> {
    AddonOptions::parse(&v, Path::new("/data/options.json"))
}

fn err(v: Value) -> String {
    parse(v).unwrap_err().to_string()
}

fn source(dir: &Path, options: Value) -> AddonSource {
    let path = dir.join("options.json");
    std::fs::write(&path, options.to_string()).unwrap();
    AddonSource {
        supervisor_token: Secret::new("supervisor-token-1"),
        supervisor_url: "http://127.0.0.1:9".into(),
        options_path: path,
        data_dir: dir.join("data"),
        tz: None,
    }
}

#[test]
fn the_environment_makes_the_add_on_only_with_the_supervisors_token() {
    assert!(AddonSource::from_vars(|_| None).is_none());
    let s = AddonSource::from_vars(|k| (k == "SUPERVISOR_TOKEN").then(|| "t".to_string())).unwrap();
    assert_eq!(s.supervisor_url, "http://supervisor");
    assert_eq!(s.options_path, PathBuf::from("/data/options.json"));
    assert_eq!(s.token_file(), PathBuf::from("/data/addon-agent-token"));
    assert_eq!(
        websocket_of(&s.supervisor_url),
        "ws://supervisor/core/websocket"
    );
    assert_eq!(websocket_of("https://sv:1"), "wss://sv:1/core/websocket");
    assert!(!format!("{s:?}").contains("\"t\""));
}

#[test]
fn every_option_is_checked_and_named() {
    let ok =
        parse(json!({"provider": "deepseek", "api_key": "sk-1", "model": "", "language": "en"}))
            .unwrap();
    assert_eq!(ok.provider, AddonProvider::Deepseek);
    assert_eq!(ok.model, None);
    assert_eq!(ok.language, Some(Language::En));
    let e = err(json!({"provider": "skynet", "api_key": "k"}));
    assert_eq!(
        e,
        "/data/options.json: add-on option `provider`: \"skynet\" is not one of deepseek, openai, anthropic, openai_compatible"
    );
    assert!(
        err(json!({"provider": 5})).contains("option `provider`: must be a string, got a number")
    );
    assert!(err(json!({"provider": "deepseek"})).contains("option `api_key`"));
    assert!(err(json!({"provider": "openai", "api_key": "k"})).contains("option `model`"));
    assert!(err(json!({"provider": "openai_compatible"})).contains("option `base_url`"));
    let local =
        parse(json!({"provider": "openai_compatible", "base_url": "http://10.0.0.2:11434/v1"}))
            .unwrap();
    assert_eq!(local.api_key, None);
    assert!(
        err(json!({"provider": "openai_compatible", "base_url": "ftp://x"}))
            .contains("option `base_url`")
    );
    assert!(err(json!({"api_key": "k", "language": "fr"})).contains("option `language`"));
    assert!(err(json!({"api_key": "k", "timezone": "Mars/Base"})).contains("option `timezone`"));
    assert!(
        err(json!({"api_key": "k", "colour": "red"})).contains("option `colour`: unknown option")
    );
    assert!(
        err(json!({"api_key": "k", "household_name": "x".repeat(65)}))
            .contains("option `household_name`")
    );
    assert!(err(json!(["not", "an", "object"])).contains("JSON object"));
}

#[test]
fn the_options_lie_over_the_file_and_the_supervisor_is_home_assistant() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(
        dir.path(),
        json!({"provider": "anthropic", "api_key": "sk-ant-secret", "household_name": "Smiths", "language": "en", "timezone": "Europe/Amsterdam"}),
    );
    let mut c = Config::parse(
        "[provider]\nmax_retries = 5\n",
        Path::new("/ws/config.toml"),
    )
    .unwrap();
    let env = EnvOverrides {
        addon: Some(src.clone()),
        ..Default::default()
    };
    c.apply_env(&env).unwrap();
    let p = c.provider.as_ref().unwrap();
    assert_eq!(p.base_url.as_deref(), Some(ANTHROPIC_BASE_URL));
    assert_eq!(p.kind, Some(ProviderKind::Anthropic));
    assert_eq!(p.max_retries, Some(5), "the file's other keys stay");
    let r = c.resolve_provider(&env).unwrap();
    assert_eq!(
        r.api_key.as_ref().map(Secret::expose),
        Some("sk-ant-secret")
    );
    assert_eq!(c.household.name, "Smiths");
    assert_eq!(c.household.timezone, "Europe/Amsterdam");
    assert_eq!(c.http.listen.as_deref(), Some(ADDON_LISTEN));
    assert_eq!(
        c.home_assistant.websocket_url().as_deref(),
        Some("ws://127.0.0.1:9/core/websocket")
    );
    assert_eq!(
        c.home_assistant.token.as_ref().map(Secret::expose),
        Some("supervisor-token-1")
    );
    let agent = c.http.ha_agent_token.clone().unwrap();
    assert_eq!(agent.expose().len(), 64);
    assert!(!format!("{c:?}").contains(agent.expose()));
    assert!(!format!("{c:?}").contains("sk-ant-secret"));
    assert!(!format!("{c:?}").contains("supervisor-token-1"));
    // a variable still wins over the add-on
    let mut c2 = Config::default();
    let env2 = EnvOverrides {
        http_listen: Some("127.0.0.1:0".into()),
        ..env
    };
    c2.apply_env(&env2).unwrap();
    assert_eq!(c2.http.listen.as_deref(), Some("127.0.0.1:0"));
    assert_eq!(
        c2.http.ha_agent_token,
        Some(agent),
        "the same token on the next start"
    );
}

#[test]
fn the_agent_token_is_made_once_private_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data").join(AGENT_TOKEN_FILE);
    let first = agent_token(&file).unwrap();
    assert!(is_token(first.expose()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(agent_token(&file).unwrap(), first);
    std::fs::write(&file, "garbage").unwrap();
    let second = agent_token(&file).unwrap();
    assert_ne!(second, first);
    assert!(is_token(second.expose()));
}

#[test]
fn a_bad_option_writes_no_token() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path(), json!({"provider": "deepseek", "api_key": 42}));
    let e = apply(&mut Config::default(), &src).unwrap_err().to_string();
    assert!(e.contains("option `api_key`: must be a string"), "{e}");
    assert!(!src.token_file().exists());
    assert!(!src.data_dir.exists());
}

#[test]
fn members_come_from_the_option_with_their_ha_users_and_each_field_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(
        dir.path(),
        json!({"provider": "deepseek", "api_key": "k", "members": [
            {"id": "mom", "name": "妈妈", "ha_user_ids": "a1b2, c3d4", "qq_ids": "10001"},
            {"id": "kid"}
        ]}),
    );
    let mut c = Config::parse("[[members]]\nid = \"old\"\n", Path::new("/ws/config.toml")).unwrap();
    c.apply_env(&EnvOverrides {
        addon: Some(src),
        ..Default::default()
    })
    .unwrap();
    let ids: Vec<&str> = c.members.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        ["mom", "kid"],
        "the option replaces the file's members"
    );
    assert_eq!(c.members[0].name.as_deref(), Some("妈妈"));
    assert_eq!(c.members[0].ha_user_ids, ["a1b2", "c3d4"]);
    assert_eq!(c.members[0].qq_ids, ["10001"]);
    assert!(c.members[1].ha_user_ids.is_empty());

    let key = json!("k");
    let e = err(json!({"api_key": key, "members": [{"name": "x"}]}));
    assert!(
        e.contains("option `members[0].id`: a member needs an id"),
        "{e}"
    );
    let e = err(json!({"api_key": key, "members": [{"id": "a", "phone": "1"}]}));
    assert!(
        e.contains("option `members[0].phone`: unknown field"),
        "{e}"
    );
    let e = err(json!({"api_key": key, "members": "mom"}));
    assert!(e.contains("option `members`: must be a list"), "{e}");
    let many: Vec<Value> = (0..51).map(|i| json!({"id": format!("m{i}")})).collect();
    assert!(err(json!({"api_key": key, "members": many})).contains("at most 50 members"));
    let ids = (0..21).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let e = err(json!({"api_key": key, "members": [{"id": "a", "qq_ids": ids}]}));
    assert!(
        e.contains("option `members[0].qq_ids`: at most 20 ids"),
        "{e}"
    );
}
