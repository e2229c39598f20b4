//! The list pages' summaries on both engines: `summary` on each run of `GET W/runs` (prompt,
//! model, rounds, tool calls, tokens, what it waits on) and on each conversation of
//! `GET W/conversations` (turns, last activity, last message), read for a page at once; and the
//! timeline's inputs (`at_ms` on events, `model` on graph nodes).

mod common;

use axum::http::Method;
use common::{Harness, harnesses_with_scripts, write_script};
use serde_json::{Value, json};

async fn run(h: &Harness, mode: &str, prompt: &str) -> String {
    let steps = json!([{"model": {
        "prompt": prompt, "model": "scripted/glance", "kernel_tools": ["nexus.runners.list"]}}]);
    h.start_run(&h.agent_token(), mode, Value::Null, steps).await
}

fn summary_of(page: &Value, id: &str) -> Value {
    page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["public_id"] == id)
        .expect("listed")["summary"]
        .clone()
}

#[tokio::test]
async fn each_listed_run_carries_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "glance",
        &[
            json!({"text": "Listing runners.", "tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}],
                   "usage": {"input_tokens": 7, "output_tokens": 3}}),
            json!({"text": "Done.", "usage": {"input_tokens": 5, "output_tokens": 2}}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        let done = run(&h, "bypass", "\n  Count the runners.\nThen stop.").await;
        let held = run(&h, "ask", "Count them, with leave.").await;
        let (pending, _) = {
            let body = json!({"run": {"approval_mode": "bypass", "steps": [{"model": {"prompt": "later", "model": "scripted/glance"}}]}});
            let r = h
                .json(Method::POST, &format!("{}/runs", h.w()), Some(&h.agent_token()), &body)
                .await;
            (r.json()["run"]["public_id"].as_str().unwrap().to_string(), ())
        };
        for order in ["asc", "desc"] {
            let page = h.get_ok(&format!("{}/runs?order={order}", h.w())).await;
            let s = summary_of(&page, &done);
            assert_eq!(s["prompt"], "Count the runners.", "{}", h.dialect);
            assert_eq!(s["model"], "scripted/glance");
            assert_eq!((s["rounds"].as_i64(), s["tool_calls"].as_i64()), (Some(2), Some(1)));
            assert_eq!(
                (s["input_tokens"].as_i64(), s["output_tokens"].as_i64()),
                (Some(12), Some(5))
            );
            assert_eq!(s["waiting_on"], json!([]));
            assert_eq!(s["conversation_title"], Value::Null);
            let (start, end) = (s["started_at_ms"].as_i64().unwrap(), s["ended_at_ms"].as_i64().unwrap());
            assert!(start <= end && end - start < 60_000, "{s}");
            let s = summary_of(&page, &held);
            assert_eq!(
                s["waiting_on"],
                json!([{"on": "approval", "count": 1}]),
                "{}",
                h.dialect
            );
            // The held call's continuation round is created with it (and waits).
            assert_eq!((s["rounds"].as_i64(), s["tool_calls"].as_i64()), (Some(2), Some(1)));
            let s = summary_of(&page, &pending);
            assert_eq!(s["prompt"], "later");
            assert_eq!(s["rounds"], 1);
        }
        // A page of one keeps its own summary.
        let one = h.get_ok(&format!("{}/runs?order=desc&limit=1", h.w())).await;
        assert_eq!(summary_of(&one, &pending)["prompt"], "later");
        // Events carry their milliseconds; graph nodes their model.
        let events = h.get_ok(&format!("{}/events", h.r(&done))).await;
        for e in events["events"].as_array().unwrap() {
            let ms = e["at_ms"].as_i64().expect("at_ms");
            assert_eq!(e["at"], nexus_kernel::time::iso(ms));
        }
        let graph = h.get_ok(&format!("{}/graph", h.r(&done))).await;
        let models: Vec<&Value> = graph["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["kind"] == "model_task")
            .collect();
        assert!(models.iter().all(|n| n["model"] == "scripted/glance"), "{graph}");
        let tool = graph["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["kind"] == "tool_task")
            .unwrap();
        assert_eq!(tool["tool_name"], "runners_list");
        assert!(tool.get("model").is_none());
    }
}

#[tokio::test]
async fn each_listed_conversation_carries_its_turns_and_last_message() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        let mut ids = Vec::new();
        for text in ["The printer jams.\nSince Monday.", "Order coffee."] {
            let r = h
                .json(
                    Method::POST,
                    &format!("{}/conversations", h.w()),
                    Some(&h.agent_token()),
                    &json!({"conversation": {"title": "Desk chat"}}),
                )
                .await;
            let id = r.json()["conversation"]["public_id"].as_str().unwrap().to_string();
            let r = h
                .json(
                    Method::POST,
                    &format!("{}/conversations/{id}/inputs", h.w()),
                    Some(&h.agent_token()),
                    &json!({"input": {"content": text, "delivery_mode": "queue"}}),
                )
                .await;
            assert!(r.status.is_success(), "{}", String::from_utf8_lossy(&r.bytes));
            ids.push(id);
        }
        let empty = h
            .json(
                Method::POST,
                &format!("{}/conversations", h.w()),
                Some(&h.agent_token()),
                &json!({"conversation": {}}),
            )
            .await
            .json()["conversation"]["public_id"]
            .as_str()
            .unwrap()
            .to_string();
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let page = h.get_ok(&format!("{}/conversations", h.w())).await;
        let of = |id: &str| {
            page["conversations"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["public_id"] == id)
                .unwrap()["summary"]
                .clone()
        };
        let a = of(&ids[0]);
        assert!(a["turn_count"].as_i64().unwrap() >= 1, "{} {a}", h.dialect);
        assert!(a["last_activity_at"].as_str().unwrap().ends_with('Z'));
        let b = of(&ids[1]);
        assert_eq!(
            (a["last_message"].as_str(), a["last_role"].as_str()),
            (Some("The printer jams."), Some("user"))
        );
        assert_eq!(b["last_message"], "Order coffee.");
        let e = of(&empty);
        assert_eq!(
            (e["turn_count"].as_i64(), e["last_message"].clone()),
            (Some(0), Value::Null)
        );
    }
}
