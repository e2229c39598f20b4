//! Fixed, deterministic inputs shared by the benchmarks and the byte-for-byte guard tests, so a
//! benchmark's figure and the guard digests are about the same declaration. Pure data
//! builders; nothing in the product calls them.

use serde_json::{Value, json};

use crate::registry;

/// The runner every routed fixture entry names.
pub const RUNNER: &str = "0190a000-0000-7000-8000-000000000001";

/// The words the search fixture's descriptions are made of (queries pick from them).
pub const WORDS: [&str; 8] = [
    "file",
    "repository",
    "network",
    "image",
    "database",
    "ledger",
    "mail",
    "calendar",
];

/// The declarations benchmark's set: 20 aliases, the 19 plain kernel entries and 961
/// functions (every fourth routed), deterministically interleaved so the sort has work to do.
pub fn declaration_1000() -> Vec<Value> {
    let mut out = Vec::with_capacity(1000);
    let tools = registry::entries();
    for i in 0..20 {
        let tool = tools[i % tools.len()];
        let mut alias = json!({"name": format!("Alias{i:02}"), "canonical": tool.canonical,
            "description": format!("Alias {i} of {{{{{}}}}}; see {{{{wait}}}}.", tool.wire)});
        if tool.wire == "delegate_task" {
            alias["params"] =
                json!({"run_in_background": {"maps_to": "wait", "invert": true, "description": "false: block."}});
        }
        out.push(alias);
    }
    for tool in tools {
        out.push(tool.definition().clone());
    }
    let mut i = 0;
    while out.len() < 1000 {
        let mut f = json!({"type": "function", "function": {"name": format!("tool_{i:04}"),
            "description": format!("Does thing number {i} to a file."),
            "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "A path."},
                "limit": {"type": "integer", "minimum": 1}}, "required": ["path"]}}});
        if i % 4 == 0 {
            f["route"] =
                json!({"kind": "runner", "runner_executor_public_id": RUNNER, "tool_name": format!("served_{i}")});
        }
        out.push(f);
        i += 1;
    }
    let n = out.len();
    (0..n).map(|k| out[(k * 7919) % n].clone()).collect()
}

/// The `tool_search` benchmarks' frozen declaration: 10,000 callables (a few aliases,
/// functions built from [`WORDS`], every fourth routed with a served name and deferred) and a
/// 500-entry skill catalog. Returns `(tool_definitions, skills)`.
pub fn search_10k() -> (Vec<Value>, Vec<Value>) {
    let mut out = Vec::with_capacity(10_000);
    let tools = registry::entries();
    for i in 0..20 {
        let tool = tools[i % tools.len()];
        if tool.wire == "delegate_task" {
            continue;
        }
        out.push(json!({"name": format!("Alias{i:02}"), "canonical": tool.canonical,
            "description": format!("Alias {i} of {{{{{}}}}}.", tool.wire)}));
    }
    let mut i = 0;
    while out.len() < 10_000 {
        let w = WORDS[i % WORDS.len()];
        let v = WORDS[(i / 8) % WORDS.len()];
        let mut f = json!({"type": "function", "function": {"name": format!("tool_{i:05}"),
            "description": format!("Does thing number {i} to a {w} with the {v} helper."),
            "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "A path."}},
                "required": ["path"]}}});
        if i % 4 == 0 {
            f["route"] =
                json!({"kind": "runner", "runner_executor_public_id": RUNNER, "tool_name": format!("served_{i}")});
            f["defer_loading"] = json!(true);
        }
        out.push(f);
        i += 1;
    }
    let skills = (0..500)
        .map(|k| {
            json!({"callable": format!("tool_{:05}", k * 7), "name": format!("skill_{k}"),
                "description": format!("Skill {k}: handles quarterly reports."), "source": "runner",
                "executor_public_id": RUNNER})
        })
        .collect();
    (out, skills)
}
