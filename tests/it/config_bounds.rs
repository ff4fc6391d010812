//! Every number in `config.toml` is bounded where it is read: a value that passes
//! `config check` must not panic or overflow at run time (a `Duration` added to an
//! `Instant`, a size plus one). Out-of-range values are refused by `Config::parse` and by
//! `homebot config check` (exit 1), with the key and the allowed range named.

use crate::common;

use homebot::config::Config;
use std::path::Path;

const MAX: &str = "9223372036854775807"; // i64::MAX, the largest TOML integer

/// (section, key, an out-of-range value)
const OUT_OF_RANGE: &[(&str, &str, &str)] = &[
    ("agent", "max_tool_rounds", "0"),
    ("agent", "max_tool_rounds", "51"),
    ("agent", "normal_history_turns", MAX),
    ("agent", "turn_timeout_secs", "0"),
    ("agent", "turn_timeout_secs", MAX),
    ("agent", "max_message_chars", "0"),
    ("agent", "max_message_chars", MAX),
    ("agent", "max_queued_per_chat", MAX),
    ("agent", "max_queued_per_chat", "0"),
    ("agent", "shutdown_grace_secs", MAX),
    ("agent", "max_reply_chars", "10"),
    ("cron", "expiry_check_secs", MAX),
    ("tools", "max_calls_per_response", "0"),
    ("tools", "max_calls_per_turn", MAX),
    ("tools", "max_argument_bytes", MAX),
    ("tools", "max_write_bytes_per_turn", MAX),
    ("tools", "max_zone_bytes", MAX),
    ("tools", "max_zone_files", "0"),
    ("provider", "max_response_bytes", "1"),
    ("provider", "max_response_bytes", MAX),
    ("provider", "timeout_secs", MAX),
    ("provider", "max_concurrent", MAX),
    ("qq", "reconnect_wait_secs", MAX),
    ("qq", "heartbeat_timeout_secs", MAX),
    ("qq", "action_timeout_secs", MAX),
    ("qq", "send_interval_ms", MAX),
    ("qq", "max_reply_chars", MAX),
    ("voice", "max_frame_bytes", MAX),
    ("voice", "max_frame_bytes", "0"),
];

#[test]
fn out_of_range_numbers_are_refused_with_their_key_and_range() {
    for (section, key, value) in OUT_OF_RANGE {
        let text = format!("[{section}]\n{key} = {value}\n");
        let err = match Config::parse(&text, Path::new("/ws/config.toml")) {
            Ok(_) => panic!("{section}.{key} = {value} was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.starts_with(&format!(
                "/ws/config.toml: key `{section}.{key}`: must be between "
            )),
            "{section}.{key} = {value}: {err}"
        );
        assert!(err.ends_with(&format!(", got {value}")), "{err}");
    }
}

#[test]
fn the_edges_of_each_range_are_accepted() {
    Config::parse(
        "[agent]\nmax_tool_rounds = 50\nturn_timeout_secs = 86400\nshutdown_grace_secs = 3600\nmax_reply_chars = 100\n\
         [cron]\nexpiry_check_secs = 86400\n\
         [tools]\nmax_calls_per_response = 100\nmax_calls_per_turn = 1000\nmax_zone_files = 100000\n\
         [provider]\nmax_response_bytes = 65536\n\
         [qq]\nreconnect_wait_secs = 3600\nsend_interval_ms = 0\n\
         [voice]\nmax_frame_bytes = 1048576\n",
        Path::new("/ws/config.toml"),
    )
    .unwrap();
    let err = Config::parse(
        "[tools]\nmax_calls_per_response = 10\nmax_calls_per_turn = 5\n",
        Path::new("/ws/config.toml"),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("key `tools.max_calls_per_turn`"),
        "{err}"
    );
}

#[tokio::test]
async fn config_check_exits_1_and_names_the_key() {
    for (section, key) in [
        ("qq", "reconnect_wait_secs"),
        ("agent", "shutdown_grace_secs"),
    ] {
        let dir = common::workspace();
        std::fs::write(
            dir.path().join("config.toml"),
            format!("[{section}]\n{key} = {MAX}\n"),
        )
        .unwrap();
        let out = common::homebot(dir.path(), None)
            .args(["config", "check"])
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{section}.{key}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("key `{section}.{key}`: must be between")),
            "{stderr}"
        );
    }
}
