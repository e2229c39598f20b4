//! Deferred loading in action, end to end on both engines, with a runner import: the bootstrap
//! runner announces `grep_repo`; a model step imports it with eager `tool_search` and
//! `tool_call`, so the sealed request omits it; the model finds it with `tool_search`, calls it
//! through `tool_call` (the child is held, approved, claimed and committed by the runner over
//! HTTP), and the next round carries the runner's result paired with the `tool_call`. Without
//! both eager tools the import is offered directly.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, harnesses_with_scripts, write_script};
use serde_json::{Value, json};

const X: &str = "/agent_api/v1/executor";

fn runner_id(h: &Harness) -> String {
    h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string()
}

async fn announce(h: &Harness) {
    let body = json!({"tools": [{"name": "grep_repo",
        "effect_profile": {"kind": "read_only", "destructive": false, "effect_scope": "closed",
                           "idempotency": "intrinsic", "reconciliation": "none"},
        "description": "Search the repository.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}]});
    let r = h
        .json(
            Method::PUT,
            &format!("{X}/announcement"),
            Some(&h.runner_token()),
            &body,
        )
        .await;
    assert!(r.status.is_success(), "{}", String::from_utf8_lossy(&r.bytes));
}

async fn get_ok(h: &Harness, path: &str) -> Value {
    h.get_ok_as(&h.human_token(), path).await
}

/// Creates and starts (as the agent) a run of one model step importing the runner's tools,
/// then drives the engine. Returns the run id.
async fn start(h: &Harness, script: &str, kernel_tools: Value) -> String {
    let runner = runner_id(h);
    let run = json!({
        "approval_mode": "ask",
        "approval_rules": [{"tool": "tool_search|tool_call", "verdict": "allow"}],
        "default_runner_executor_public_id": runner,
        "steps": [{"model": {"prompt": "Find it.", "model": format!("scripted/{script}"),
            "kernel_tools": kernel_tools,
            "runner_executor_public_ids": [runner], "runner_tool_names": null}}],
    });
    let r = h
        .json(
            Method::POST,
            &format!("{}/runs", h.w()),
            Some(&h.agent_token()),
            &json!({ "run": run }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
    let id = r.json()["run"]["public_id"].as_str().unwrap().to_string();
    let r = h
        .json(
            Method::POST,
            &format!("{}/start", h.r(&id)),
            Some(&h.agent_token()),
            &json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    h.kernel.runs().work_until_idle(50).await.unwrap();
    id
}

async fn request(h: &Harness, run: &str, round: &str) -> Value {
    get_ok(h, &format!("{}/tasks/{round}/request", h.r(run))).await["request"].clone()
}

/// The key of the run's first model round.
async fn first_round(h: &Harness, run: &str) -> String {
    let tasks = get_ok(h, &format!("{}/tasks", h.r(run))).await;
    tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] != "tool_task" && !t["key"].as_str().unwrap().starts_with('r'))
        .unwrap_or_else(|| panic!("no first round in {tasks}"))["key"]
        .as_str()
        .unwrap()
        .to_string()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["request_options"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {request}"))
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()))
        .map(str::to_string)
        .collect()
}

fn results(request: &Value) -> Vec<Value> {
    request["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_deferred_runner_import_is_found_by_search_and_called_through_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "deferred",
        &[
            json!({"text": "Searching.", "tool_calls": [{"id": "c1", "name": "tool_search", "input": {"query": "repository"}}]}),
            json!({"text": "Calling.", "tool_calls": [{"id": "c2", "name": "tool_call", "input": {"name": "grep_repo", "input": {"q": "x"}}}]}),
            json!({"text": "Done."}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        announce(&h).await;
        let runner = runner_id(&h);
        let run = start(&h, "deferred", json!(["nexus.tools.search", "nexus.tools.call"])).await;

        // The sealed first request omits the deferred import.
        let first = first_round(&h, &run).await;
        let names = tool_names(&request(&h, &run, &first).await);
        assert!(names.iter().any(|n| n == "tool_search"), "{} {names:?}", h.dialect);
        assert!(!names.iter().any(|n| n == "grep_repo"), "{} {names:?}", h.dialect);

        // tool_search lists it with its route.
        let r1 = request(&h, &run, "r1").await;
        let found = results(&r1);
        assert_eq!(found.len(), 1, "{}", r1["entries"]);
        let text = found[0].to_string();
        assert!(text.contains("grep_repo"), "{text}");
        let search = get_ok(&h, &format!("{}/tasks/r1t0", h.r(&run))).await["task"].clone();
        let out: Value = serde_json::from_str(search["output"].as_str().unwrap()).unwrap();
        let tool = &out["tools"][0];
        assert_eq!(tool["name"], "grep_repo", "{out}");
        assert_eq!(tool["route"]["runner_executor_public_id"], runner, "{out}");
        assert_eq!(tool["route"]["tool_name"], "grep_repo", "{out}");
        assert_eq!(tool["definition"]["function"]["description"], "Search the repository.");

        // tool_call's child is held under `ask`; a person approves it.
        let child = "r2t0-tool-1";
        let t = get_ok(&h, &format!("{}/tasks/{child}", h.r(&run))).await["task"].clone();
        assert_eq!(t["status"], "needs_approval", "{t}");
        let a = h
            .json(
                Method::POST,
                &format!("{}/tasks/{child}/approve", h.r(&run)),
                Some(&h.human_token()),
                &json!({}),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", String::from_utf8_lossy(&a.bytes));
        h.kernel.runs().work_until_idle(20).await.unwrap();

        // The runner finds it in its inbox, claims and commits over HTTP.
        let inbox = h.get(&format!("{X}/inbox"), Some(&h.runner_token())).await.json();
        let row = inbox["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["task_key"] == child)
            .unwrap_or_else(|| panic!("{child} not in {inbox}"))
            .clone();
        assert_eq!(row["tool_name"], "grep_repo", "{row}");
        assert_eq!(row["tool_input"], json!({"q": "x"}), "{row}");
        let c = h
            .send(
                Method::POST,
                &format!("{X}/inbox/{run}/{child}/claim"),
                Some(&h.runner_token()),
                None,
            )
            .await;
        assert_eq!(c.status, StatusCode::OK, "{}", String::from_utf8_lossy(&c.bytes));
        let token = c.json()["claim"]["claim_token"].as_str().unwrap().to_string();
        let done = h
            .json(
                Method::POST,
                &format!("{X}/inbox/{run}/{child}/commit"),
                Some(&h.runner_token()),
                &json!({"claim_token": token, "content": "found 3"}),
            )
            .await;
        assert_eq!(done.status, StatusCode::OK, "{}", String::from_utf8_lossy(&done.bytes));
        h.kernel.runs().work_until_idle(50).await.unwrap();

        // The next round carries the runner's result as tool_call's paired result.
        let r2 = request(&h, &run, "r2").await;
        let paired = results(&r2);
        assert_eq!(paired.len(), 2, "{}", r2["entries"]);
        // Match on the call id itself: a runner UUID inside the search result may contain "c2".
        let paired: Vec<Value> = paired.into_iter().filter(|r| r["call_id"] == "c2").collect();
        assert_eq!(paired.len(), 1, "{}", r2["entries"]);
        let text = paired[0].to_string();
        assert!(text.contains("c2"), "{text}");
        assert!(text.contains("found 3"), "{text}");
        let status = get_ok(&h, &h.r(&run)).await["run"]["status"].clone();
        assert_eq!(status, "completed", "{}", h.dialect);
    }
}

#[tokio::test]
async fn without_both_eager_search_and_call_the_import_is_offered() {
    let dir = tempfile::tempdir().unwrap();
    write_script(dir.path(), "plain", &[json!({"text": "Done."})]);
    for h in harnesses_with_scripts(dir.path()).await {
        announce(&h).await;
        for kernel_tools in [json!(["nexus.tools.search"]), json!(["nexus.tools.call"]), json!([])] {
            let run = start(&h, "plain", kernel_tools.clone()).await;
            let first = first_round(&h, &run).await;
            let names = tool_names(&request(&h, &run, &first).await);
            assert!(
                names.iter().any(|n| n == "grep_repo"),
                "{} {kernel_tools} {names:?}",
                h.dialect
            );
        }
    }
}
