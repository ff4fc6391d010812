//! The audit trail: one record per provider attempt (failed ones too), in the session's
//! `audit.jsonl` inside a mode and in the dated file otherwise, on disk after a graceful
//! shutdown; `homebot audit` and `homebot stats` read it back, field by field, and skip
//! corrupt lines with a note.

use crate::common;

use common::*;
use homebot::channels::{cli, qq};
use homebot::provider::{
    BlockTokens, CallMeta, ChatRequest, KnowledgeShare, Message, PromptShape, Provider,
};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

async fn run(ws: &Path, args: &[&str]) -> (bool, String, String) {
    let o = homebot(ws, None).args(args).output().await.unwrap();
    (
        o.status.success(),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

fn dated_file(ws: &Path) -> std::path::PathBuf {
    let files: Vec<_> = std::fs::read_dir(ws.join("logs/audit"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

fn check_common(r: &Value) {
    let ts = r["timestamp"].as_str().unwrap();
    let t = chrono::DateTime::parse_from_rfc3339(ts).unwrap();
    assert_eq!(
        t.offset().local_minus_utc(),
        8 * 3600,
        "household zone: {ts}"
    );
    assert_eq!(r["purpose"], "turn");
    assert_eq!(r["model"], "fake-model");
    assert!(r["latency_ms"].is_u64());
    assert_eq!(r["stream"], false);
    // the prompt builder's shape, when it gives one
    assert!(
        r["shape"].is_null() || r["shape"]["blocks"].is_array(),
        "{r}"
    );
}

#[tokio::test]
async fn every_attempt_is_audited_and_the_cli_shows_it() {
    let dir = workspace();
    let ws = dir.path();
    std::fs::write(ws.join("config.toml"), "[provider]\nmax_retries = 1\n").unwrap();
    let fake = FakeLlm::start(|body, n| match n {
        0 => FakeReply::Status(500, vec![], "boom".into()),
        _ => scripted(body),
    })
    .await;
    let k = start_kernel(ws, &fake);
    let r = k.handle_turn(cli::turn("local", "mom", "你好")).await;
    assert_eq!(r.text, "好的：你好");
    k.handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    let sid = action(ws)["session_id"].as_str().unwrap().to_string();
    let sdir = session_dir(ws);
    k.handle_turn(qq::turn("group:5550001", "dad", "番茄要放几个？"))
        .await;
    // no flush: a graceful shutdown writes what is queued
    k.shutdown_gracefully(Duration::from_secs(5)).await;
    drop(k);

    let day = jsonl(&dated_file(ws));
    assert_eq!(
        day.len(),
        4,
        "a failed attempt, its retry, a tool round: {day:?}"
    );
    for r in &day {
        check_common(r);
        assert_eq!(
            (r["channel"].as_str(), r["chat_id"].as_str()),
            (Some("cli"), Some("local"))
        );
        assert!(r["session_id"].is_null());
    }
    assert_eq!(day[0]["outcome"], "error");
    assert!(
        day[0]["error"].as_str().unwrap().contains("HTTP 500"),
        "{}",
        day[0]
    );
    assert_eq!(day[0]["retries"], 0);
    assert!(day[0]["usage"].is_null());
    assert_eq!(day[1]["outcome"], "ok");
    assert!(day[1]["error"].is_null());
    assert_eq!(day[1]["retries"], 1);
    assert_eq!(
        day[1]["usage"],
        json!({"prompt": 120, "cached": 64, "completion": 12})
    );
    assert_eq!(
        day[2]["usage"],
        json!({"prompt": 100, "cached": 0, "completion": 10})
    );
    let in_mode = jsonl(&sdir.join("audit.jsonl"));
    assert_eq!(in_mode.len(), 1);
    let m = &in_mode[0];
    check_common(m);
    assert_eq!(m["session_id"], sid.as_str());
    assert_eq!(
        (m["channel"].as_str(), m["chat_id"].as_str()),
        (Some("qq"), Some("group:5550001"))
    );
    assert_eq!(
        m["usage"],
        json!({"prompt": 120, "cached": 64, "completion": 12})
    );

    // homebot audit --json: every record, oldest first
    let (ok, out, err) = run(ws, &["audit", "--json"]).await;
    assert!(ok, "{err}");
    let printed: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut expect = day.clone();
    expect.push(m.clone());
    assert_eq!(printed, expect);

    // --session: that session only, readable, field by field
    let (ok, out, err) = run(ws, &["audit", "--session", &sid]).await;
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    let f: Vec<&str> = lines[0].split("  ").collect();
    assert_eq!(f[0], m["timestamp"].as_str().unwrap());
    assert_eq!(
        f[1..12],
        [
            "purpose=turn",
            "model=fake-model",
            "provider=primary",
            "chat=qq/group:5550001",
            &format!("session={sid}"),
            "prompt=120",
            "cached=64",
            "completion=12",
            "hit=53.3%",
            &format!("latency={}ms", m["latency_ms"]),
            "retries=0",
        ]
    );
    assert_eq!(*f.last().unwrap(), "ok");

    // --last 2: the newest two, newest last
    let (ok, out, _) = run(ws, &["audit", "--last", "2"]).await;
    assert!(ok);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with(day[3]["timestamp"].as_str().unwrap()));
    assert!(lines[1].contains(&format!("session={sid}")));
    let (_, out, _) = run(ws, &["audit", "--last", "9"]).await;
    let first: Vec<&str> = out.lines().next().unwrap().split("  ").collect();
    assert!(
        first.contains(&"retries=0") && first.contains(&"provider=primary"),
        "{first:?}"
    );
    assert!(first
        .last()
        .unwrap()
        .starts_with("error: the provider answered HTTP 500"));

    // stats: per day and per session
    let (ok, out, err) = run(ws, &["stats"]).await;
    assert!(ok, "{err}");
    let date = &m["timestamp"].as_str().unwrap()[..10];
    let row = |name: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // 5 attempts, 1 failed; tokens 120+100+120+120 prompt, 64×3 cached, 12+10+12+12
    assert_eq!(row(date), [date, "5", "1", "460", "192", "46", "41.7%"]);
    assert_eq!(
        row(&sid),
        [sid.as_str(), "1", "0", "120", "64", "12", "53.3%"]
    );
    assert_eq!(
        row("total"),
        ["total", "5", "1", "460", "192", "46", "41.7%"]
    );
    assert!(out
        .lines()
        .any(|l| l.starts_with("day ") && l.contains("hit")));

    // corrupt lines are skipped with a note
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(sdir.join("audit.jsonl"))
        .unwrap();
    f.write_all(b"{\"timestamp\": half a rec\n\xff\xfe\n")
        .unwrap();
    let (ok, out, err) = run(ws, &["audit", "--session", &sid]).await;
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 1);
    assert!(err.contains("skipped 2 unreadable line(s)"), "{err}");
    let (ok, out, _) = run(ws, &["stats"]).await;
    assert!(ok);
    assert!(out.contains("41.7%"));

    // a bad or unknown session id is a clear error
    let (ok, _, err) = run(ws, &["audit", "--session", "../../etc"]).await;
    assert!(!ok);
    assert!(err.contains("is not a mode session id"), "{err}");
    let (ok, _, err) = run(ws, &["audit", "--session", "cook-20200101-000000-abcdef"]).await;
    assert!(!ok);
    assert!(
        err.contains("no mode session cook-20200101-000000-abcdef"),
        "{err}"
    );
}

#[tokio::test]
async fn the_record_carries_purpose_and_the_prompt_shape() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let cfg = homebot::config::Config::default()
        .resolve_provider(&fake.env())
        .unwrap();
    let p = Provider::from_config(&cfg, dir.path().join("logs/usage.jsonl"))
        .unwrap()
        .with_timezone("Asia/Shanghai".parse::<homebot::zone::Zone>().unwrap());
    let shape = PromptShape {
        blocks: vec![
            BlockTokens {
                name: "system".into(),
                tokens: 800,
            },
            BlockTokens {
                name: "history".into(),
                tokens: 1200,
            },
        ],
        history_from: 4,
        history_to: 12,
        compacted_through: Some(4),
        prefix_hash: "abcdef0123456789abcdef".into(),
        snippets: vec!["basics/家常菜.md".into()],
        aside: true,
        memories_scene: vec![3, 1],
        memories_wording: vec![7],
        knowledge: vec![
            KnowledgeShare {
                name: "recipes".into(),
                cap: 200,
                tokens: 0,
                sent: vec![],
                held: 1,
            },
            KnowledgeShare {
                name: "basics".into(),
                cap: 200,
                tokens: 120,
                sent: vec!["basics/家常菜.md".into()],
                held: 0,
            },
        ],
    };
    let sdir = dir
        .path()
        .join("modes/sessions/cooking/cook-20261130-200000-abcdef");
    std::fs::create_dir_all(&sdir).unwrap();
    let meta = CallMeta {
        channel: "cli".into(),
        chat_id: "local".into(),
        session_id: Some("cook-20261130-200000-abcdef".into()),
        session_dir: Some(sdir.clone()),
        purpose: "compaction",
        shape: Some(Arc::new(shape.clone())),
        turn: None,
    };
    let msgs = [Message::User {
        content: "总结一下".into(),
    }];
    p.complete(
        &ChatRequest {
            messages: &msgs,
            tools: &[],
            depth: None,
        },
        &meta,
    )
    .await
    .unwrap();
    // a session folder gone meanwhile is not made again: the record goes to the day's file
    let gone = dir
        .path()
        .join("modes/sessions/cooking/cook-20261130-210000-abcdef");
    p.complete(
        &ChatRequest {
            messages: &msgs,
            tools: &[],
            depth: None,
        },
        &CallMeta {
            session_dir: Some(gone.clone()),
            ..meta.clone()
        },
    )
    .await
    .unwrap();
    drop(p); // dropping the provider drains the writer
    assert!(!gone.exists());
    let day = std::fs::read_dir(dir.path().join("logs/audit"))
        .unwrap()
        .count();
    assert_eq!(day, 1);
    let recs = jsonl(&sdir.join("audit.jsonl"));
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r["purpose"], "compaction");
    assert_eq!(r["shape"], serde_json::to_value(&shape).unwrap());
    let rec: homebot::provider::audit::AuditRecord = serde_json::from_value(r.clone()).unwrap();
    let line = homebot::audit::show::readable_line(&rec);
    let f: Vec<&str> = line.split("  ").collect();
    assert_eq!(
        f[f.len() - 10..],
        [
            "blocks=system:800,history:1200",
            "history=4..12",
            "compacted=4",
            "snippets=basics/家常菜.md",
            "knowledge=recipes:0×0/200t+1held,basics:1×120/200t",
            "memories_scene=3,1",
            "memories_wording=7",
            "aside",
            "prefix=abcdef012345",
            "ok"
        ]
    );
    assert_eq!(f[1], "purpose=compaction");
    // the session is found by id through the workspace's sessions folder
    let ws = homebot::workspace::Workspace::open(dir.path()).unwrap();
    let loaded = homebot::audit::load(&ws, Some("cook-20261130-200000-abcdef")).unwrap();
    assert_eq!(loaded.records, vec![rec]);
}

/// Calls never wait for the log disk: with the writer stalled every call still returns,
/// and the lines they queued are then written in one batch, one sync per file.
#[tokio::test]
async fn calls_do_not_wait_for_the_log_writer_and_share_its_syncs() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let cfg = homebot::config::Config::default()
        .resolve_provider(&fake.env())
        .unwrap();
    let (p, gate) = Provider::from_config(&cfg, dir.path().join("logs/usage.jsonl"))
        .unwrap()
        .with_gated_logs();
    let msgs = [Message::User {
        content: "你好".into(),
    }];
    let req = ChatRequest {
        messages: &msgs,
        tools: &[],
        depth: None,
    };
    let sdir = dir
        .path()
        .join("modes/sessions/cooking/cook-20261130-200000-abcdef");
    std::fs::create_dir_all(&sdir).unwrap();
    for i in 0..10 {
        let meta = CallMeta {
            session_dir: (i % 2 == 0).then(|| sdir.clone()),
            ..Default::default()
        };
        p.complete(&req, &meta).await.unwrap();
    }
    let s = p.log_stats();
    assert_eq!(
        (s.lines, s.syncs),
        (0, 0),
        "nothing written yet, no call waited"
    );
    drop(gate);
    p.flush().await;
    let s = p.log_stats();
    assert_eq!(s.lines, 20, "a usage line and an audit record per call");
    assert_eq!(s.batches, 1, "{s:?}");
    assert_eq!(
        s.syncs, 3,
        "usage, the dated audit file, the session's: {s:?}"
    );
    assert_eq!(jsonl(&sdir.join("audit.jsonl")).len(), 5);
    assert_eq!(jsonl(&dir.path().join("logs/usage.jsonl")).len(), 10);
}

/// A call whose turn is cancelled mid-flight is recorded as `cancelled`.
#[tokio::test]
async fn a_call_cancelled_mid_flight_is_recorded() {
    let dir = workspace();
    let fake =
        FakeLlm::start(|_, _| FakeReply::Delay(Duration::from_secs(60), Box::new(text("太晚了"))))
            .await;
    let cfg = homebot::config::Config::default()
        .resolve_provider(&fake.env())
        .unwrap();
    let p = Provider::from_config(&cfg, dir.path().join("logs/usage.jsonl")).unwrap();
    let call = {
        let p = p.clone();
        tokio::spawn(async move {
            let msgs = [Message::User {
                content: "你好".into(),
            }];
            let req = ChatRequest {
                messages: &msgs,
                tools: &[],
                depth: None,
            };
            let meta = CallMeta {
                channel: "voice".into(),
                chat_id: "wake-1".into(),
                ..Default::default()
            };
            p.complete(&req, &meta).await
        })
    };
    until(|| fake.calls() == 1).await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    p.flush().await;
    let recs = jsonl(&dated_file(dir.path()));
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["outcome"], "cancelled");
    assert_eq!(recs[0]["chat_id"], "wake-1");
    assert!(recs[0]["usage"].is_null());
    assert!(recs[0]["error"]
        .as_str()
        .unwrap()
        .contains("stopped waiting"));
}
