//! Helpers for the strategy tests: a scripted planner model and readers for the
//! strategy state and journal.

pub use super::last_user;
use super::{text, FakeReply};
use serde_json::Value;
use std::path::Path;

/// The system message of a request (where the standing strategy's block is).
pub fn system_text(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub fn last_role(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["role"]
        .as_str()
        .unwrap()
        .to_string()
}

pub const PLAN: &str = r#"{"goal":"今晚三道菜","steps":[{"title":"买菜","detail":"番茄、鸡蛋、青椒"},{"title":"做菜"}]}"#;

/// A model that plans, runs steps, summarizes, reviews and revises on cue.
pub fn planner(body: &Value, _n: usize) -> FakeReply {
    let u = last_user(body);
    if last_role(body) == "tool" {
        return text("工具已用");
    }
    if u.contains("全部 2 步都做完了") {
        return text("总结：菜买好了，也做好了。");
    }
    if u.contains("[第 2/2 步]") {
        return text("三道菜做好了");
    }
    if u.contains("[第 1/2 步]") {
        return text("菜买好了");
    }
    if u.contains("You are in planning mode") {
        return text(&format!("```json\n{PLAN}\n```"));
    }
    if u.contains("You are in spec mode") {
        return text(
            r#"{"goal":"一桌年夜饭","requirements":["荤素搭配","两小时内做完"],"constraints":["没有烤箱"]}"#,
        );
    }
    text("好的")
}

pub fn journal(ws: &Path) -> Vec<Value> {
    let p = ws.join("logs/strategy.jsonl");
    if !p.exists() {
        return vec![];
    }
    super::jsonl(&p)
}

pub fn stages(ws: &Path, flow: &str) -> Vec<String> {
    journal(ws)
        .iter()
        .filter(|e| e["flow"] == flow)
        .map(|e| e["stage"].as_str().unwrap().to_string())
        .collect()
}

pub fn state(ws: &Path) -> Value {
    super::read_json(&ws.join("strategy/state.json"))
}
