//! Reads of runs on both engines (runs.md §1, §9–§11): task projections, the sealed request,
//! the transcript, the graph with its mermaid flowchart, the event feed, and the results of
//! the kernel tools `runners_list` and `tool_search` (kernel-tools.md §11, §13).

mod common;

use common::World;

use nexus_core::codes::Code;
use nexus_core::registry::EffectProfile;
use nexus_kernel::admin::MemberSpec;
use nexus_kernel::runs::{RequestRead, RunsQuery};
use nexus_store::MemberKind;
use nexus_store::testing::{TestStore, engines};
use serde_json::{Value, json};
use sha2::Digest;
use uuid::Uuid;

/// A reply as it goes on the wire.
fn wire(reply: impl serde::Serialize) -> Value {
    serde_json::to_value(reply).expect("a reply serializes")
}

async fn world(ts: TestStore) -> World {
    let w = common::world(ts).await;
    let tools = json!([
        {"name": "read", "effect_profile": EffectProfile::READ.to_json(), "description": "Read a file from the workspace.", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"name": "grep", "effect_profile": EffectProfile::READ.to_json(), "description": "Search file contents.", "input_schema": {"type": "object"}},
    ]);
    w.announce(tools, json!({"os": "linux", "root": "/srv"})).await;
    w
}

impl World {
    /// A run whose one model step (imports from the runner, kernel tools declared) makes
    /// `calls` and then ends.
    async fn kernel_tool_run(&self, name: &str, calls: Value) -> Uuid {
        self.script(
            name,
            &[
                json!({"text": "Looking.", "tool_calls": calls}),
                json!({"text": "Finished."}),
            ],
        );
        self.start(json!({
            "approval_mode": "bypass",
            "default_runner_executor_public_id": self.runner.to_string(),
            "steps": [{"model": {
                "prompt": "Find the tools.",
                "model": format!("scripted/{name}"),
                "kernel_tools": ["nexus.runners.list", "nexus.tools.search", "nexus.tools.call"],
                "runner_executor_public_ids": [self.runner.to_string()],
            }}],
        }))
        .await
    }
}

fn output_json(task: &Value) -> Value {
    serde_json::from_str(task["output"].as_str().unwrap()).unwrap_or_else(|e| panic!("{e}: {task}"))
}

#[tokio::test]
async fn runners_list_reads_the_frozen_environment() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .kernel_tool_run(
                "runners",
                json!([{"id": "c1", "name": "runners_list", "input": {}}, {"id": "c2", "name": "runners_list", "input": {"x": 1}}]),
            )
            .await;
        let t = w.task_read(id, "r1t0").await;
        assert_eq!(t["status"], "completed", "{t}");
        assert!(t.get("is_error").is_none());
        assert_eq!(t["approval"]["origin"], "mode");
        assert_eq!(t["effect_profile"], EffectProfile::READ.to_json());
        assert!(t.get("addressed_to").is_none());
        assert_eq!(
            output_json(&t),
            json!({"current_runner_executor_public_id": w.runner.to_string(),
                   "runners": [{"runner_executor_public_id": w.runner.to_string(), "display_name": "default-runner",
                                "environment": {"os": "linux", "root": "/srv"}}]})
        );
        assert_eq!(t["content"], json!([{"type": "text", "text": t["output"]}]));
        let bad = w.task_read(id, "r1t1").await;
        assert_eq!(bad["status"], "completed");
        assert_eq!(bad["is_error"], true);
        assert!(
            bad["output"].as_str().unwrap().starts_with("parameter_invalid: `x`"),
            "{bad}"
        );
        assert_eq!(w.task_read(id, "r1").await["status"], "completed");
    }
}

#[tokio::test]
async fn tool_search_finds_deferred_imports_with_their_wire_definition() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .kernel_tool_run(
                "search",
                json!([
                    {"id": "c1", "name": "tool_search", "input": {"query": "read"}},
                    {"id": "c2", "name": "tool_search", "input": {"query": "FILE"}},
                    {"id": "c3", "name": "tool_search", "input": {"query": "   "}},
                    {"id": "c4", "name": "tool_search", "input": {"query": "s", "limit": 1}},
                ]),
            )
            .await;
        let exact = w.task_read(id, "r1t0").await;
        assert_eq!(exact["status"], "completed", "{exact}");
        let v = output_json(&exact);
        assert_eq!(v["truncated"], false);
        let tools = v["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1, "{v}");
        assert_eq!(tools[0]["name"], "read");
        assert_eq!(tools[0]["definition"]["type"], "function");
        assert_eq!(tools[0]["definition"]["function"]["name"], "read");
        assert_eq!(tools[0]["definition"]["function"]["strict"], false);
        assert!(tools[0]["definition"].get("route").is_none());
        assert!(tools[0]["definition"].get("defer_loading").is_none());
        assert_eq!(
            tools[0]["route"],
            json!({"kind": "runner", "runner_executor_public_id": w.runner.to_string(), "tool_name": "read"})
        );
        assert_eq!(tools[0]["skills"], json!([]));
        // Terms match descriptions, case-folded, in declaration order.
        let v = output_json(&w.task_read(id, "r1t1").await);
        let names: Vec<&str> = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"read") && names.contains(&"grep"), "{v}");
        let blank = w.task_read(id, "r1t2").await;
        assert_eq!(blank["is_error"], true);
        assert!(blank["output"].as_str().unwrap().starts_with("parameter_invalid: "));
        let limited = output_json(&w.task_read(id, "r1t3").await);
        assert_eq!(limited["tools"].as_array().unwrap().len(), 1);
        assert_eq!(limited["truncated"], true);
    }
}

/// The trace members of every task read, in order (runs.md §9), and a settled row's outcome.
const TRACE: [&str; 10] = [
    "key",
    "kind",
    "status",
    "generation",
    "on_failure",
    "visibility",
    "after",
    "created_at",
    "started_at",
    "settled_at",
];
const OUTCOME: [&str; 3] = ["output_preview", "output", "content"];

/// An object's member names, in order.
fn members(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[tokio::test]
async fn task_reads_transcript_graph_and_events() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .kernel_tool_run("reads", json!([{"id": "c1", "name": "runners_list", "input": {}}]))
            .await;

        // The model row.
        let m = w.task_read(id, "s1-model-1").await;
        assert_eq!(m["kind"], "model_task");
        assert_eq!(m["status"], "completed");
        assert_eq!(m["mainline"], true);
        assert_eq!(m["model"], "scripted/reads");
        assert_eq!(m["prompt"], "Find the tools.");
        assert_eq!(
            m["tool_calls"],
            json!([{"call_id": "c1", "name": "runners_list", "task_key": "r1t0"}])
        );
        let names: Vec<&str> = m["tool_definitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["function"]["name"].as_str())
            .collect();
        assert!(names.contains(&"runners_list") && names.contains(&"read"), "{names:?}");
        assert_eq!(
            m["environment"]["default_runner_executor_public_id"],
            w.runner.to_string()
        );
        assert_eq!(m["skills"], json!([]));
        assert!(m["request_bytes"].as_i64().unwrap() > 0);
        assert_eq!(m["after"], json!([]));
        assert!(m["created_at"].as_str().unwrap().ends_with('Z'));
        assert!(m.get("deadline_at").is_none());
        // Members come in the task read's order (runs.md §9): the trace, the kind's own, the
        // outcome.
        let own = [
            "mainline",
            "model",
            "tool_calls",
            "usage",
            "prompt",
            "tool_definitions",
            "environment",
            "skills",
            "request_bytes",
        ];
        assert_eq!(members(&m), [&TRACE[..], &own, &OUTCOME].concat());

        // The tool row.
        let t = w.task_read(id, "r1t0").await;
        assert_eq!(t["kind"], "tool_task");
        assert_eq!(t["tool_name"], "runners_list");
        assert_eq!(t["tool_input"], json!({}));
        assert_eq!(t["tool_call_id"], "c1");
        assert_eq!(t["declaring_task_key"], "s1-model-1");
        assert_eq!(t["after"], json!(["s1-model-1"]));
        let output = t["output"].as_str().unwrap();
        assert!(output.chars().count() > 200);
        assert_eq!(
            t["output_preview"].as_str().unwrap(),
            output.chars().take(200).collect::<String>()
        );
        assert!(t.get("structured_content").is_none());
        assert!(t.get("title").is_none() && t.get("metadata").is_none());
        let own = [
            "tool_name",
            "tool_input",
            "tool_call_id",
            "declaring_task_key",
            "approval",
            "effect_profile",
        ];
        assert_eq!(members(&t), [&TRACE[..], &own, &OUTCOME].concat());
        let r1 = w.task_read(id, "r1").await;
        assert_eq!(r1["after"], json!(["r1t0"]));

        // Unknown keys and runs are 404; a member without standing sees nothing.
        let e = w.kernel.runs().get_task(&w.agent, w.ws, id, "nope").await.unwrap_err();
        assert_eq!(e.code, Code::NotFound);
        let e = w
            .kernel
            .runs()
            .get_run(&w.agent, w.ws, Uuid::now_v7())
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotFound);
        let outsider = w
            .kernel
            .admin()
            .create_member(MemberSpec {
                kind: MemberKind::Human,
                handle: "outsider".into(),
                display_name: None,
                steward: None,
                standing: None,
            })
            .await
            .unwrap();
        let outsider = w
            .kernel
            .admin()
            .authenticate_member(Some(&format!("Bearer {}", outsider.member_token)))
            .await
            .unwrap();
        for e in [
            w.kernel.runs().get_run(&outsider, w.ws, id).await.unwrap_err(),
            w.kernel.runs().graph(&outsider, w.ws, id).await.unwrap_err(),
            w.kernel
                .runs()
                .events(&outsider, w.ws, id, None, None)
                .await
                .unwrap_err(),
        ] {
            assert_eq!(e.code, Code::NotFound);
        }

        // The run and the list of runs.
        let run =
            serde_json::to_value(w.kernel.runs().get_run(&w.agent, w.ws, id).await.unwrap()).unwrap()["run"].clone();
        assert_eq!(run["public_id"], id.to_string());
        assert_eq!(run["workspace_public_id"], w.ws.to_string());
        assert_eq!(run["status"], "completed");
        assert_eq!(run["hosting"], json!({"kind": "standalone"}));
        assert_eq!(run["created_by"], w.agent.member.public_id.to_string());
        assert_eq!(run["declaring_agent"], w.agent.member.public_id.to_string());
        assert_eq!(run["default_runner_executor_public_id"], w.runner.to_string());
        assert_eq!(run["deliverable_task_key"], "r1");
        assert_eq!(run["approval_mode"], "bypass");
        assert!(run["ended_at"].as_str().unwrap().ends_with('Z'));
        let runs = wire(
            w.kernel
                .runs()
                .list_runs(
                    &w.agent,
                    w.ws,
                    &RunsQuery {
                        status: Some("completed"),
                        ..Default::default()
                    },
                )
                .await
                .unwrap(),
        );
        assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
        assert_eq!(
            wire(
                w.kernel
                    .runs()
                    .list_runs(
                        &w.agent,
                        w.ws,
                        &RunsQuery {
                            status: Some("running"),
                            ..Default::default()
                        }
                    )
                    .await
                    .unwrap()
            )["runs"],
            json!([])
        );
        let e = w
            .kernel
            .runs()
            .list_runs(
                &w.agent,
                w.ws,
                &RunsQuery {
                    status: Some("bogus"),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::ParameterInvalid);

        // Tasks, paged in creation order.
        let page = wire(
            w.kernel
                .runs()
                .list_tasks(&w.agent, w.ws, id, None, Some(2))
                .await
                .unwrap(),
        );
        let keys: Vec<&str> = page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["s1-model-1", "r1t0"]);
        let rows = page["tasks"].as_array().unwrap();
        // A model row names its model (the console's lists and timeline label it by it).
        assert_eq!(members(&rows[0]), [&TRACE[..], &["model"]].concat());
        assert_eq!(rows[0]["model"], "scripted/reads");
        assert_eq!(members(&rows[1]), [&TRACE[..], &["tool_name"]].concat());
        let next = page["pagination"]["next_after"].as_str().unwrap().to_string();
        let rest = wire(
            w.kernel
                .runs()
                .list_tasks(&w.agent, w.ws, id, Some(&next), Some(2))
                .await
                .unwrap(),
        );
        let keys: Vec<&str> = rest["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["r1"]);
        assert_eq!(rest["pagination"]["next_after"], Value::Null);

        // The sealed request.
        let RequestRead::Json(req) = w
            .kernel
            .runs()
            .get_request(&w.agent, w.ws, id, "s1-model-1", false)
            .await
            .unwrap()
        else {
            panic!("json expected");
        };
        assert!(req["request"]["entries"].is_array(), "{req}");
        assert!(req["request"]["body_sha256"].is_string());
        assert!(req["request"]["request_bytes"].as_i64().unwrap() > 0);
        let RequestRead::Provider {
            body: bytes,
            body_sha256,
        } = w
            .kernel
            .runs()
            .get_request(&w.agent, w.ws, id, "s1-model-1", true)
            .await
            .unwrap()
        else {
            panic!("bytes expected");
        };
        assert_eq!(bytes.len() as i64, req["request"]["request_bytes"].as_i64().unwrap());
        assert_eq!(body_sha256, req["request"]["body_sha256"].as_str().unwrap());
        let digest: [u8; 32] = sha2::Sha256::digest(&bytes).into();
        assert_eq!(body_sha256, hex::encode(digest));
        let e = w
            .kernel
            .runs()
            .get_request(&w.agent, w.ws, id, "r1t0", false)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::RequestNotSealed);

        // The transcript: the prompt, the reply with its calls, the tool row, the continuation.
        let rows = wire(w.kernel.runs().transcript(&w.agent, w.ws, id, false).await.unwrap())["rows"].clone();
        let shape: Vec<(String, String)> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["key"].as_str().unwrap().to_string(),
                    r["role"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let expected = [
            ("s1-model-1", "user"),
            ("s1-model-1", "assistant"),
            ("r1t0", "tool"),
            ("r1", "assistant"),
        ];
        assert_eq!(shape, expected.map(|(k, r)| (k.to_string(), r.to_string())));
        assert_eq!(rows[0]["text"], "Find the tools.");
        assert_eq!(rows[1]["text"], "Looking.");
        assert_eq!(rows[1]["tool_calls"][0]["task_key"], "r1t0");
        assert_eq!(rows[2]["tool_name"], "runners_list");
        assert_eq!(rows[2]["visibility"], "collapsed");
        assert!(
            rows[2]["output_preview"]
                .as_str()
                .unwrap()
                .starts_with("{\"current_runner")
        );
        assert_eq!(rows[3]["text"], "Finished.");

        // The graph.
        let g = wire(w.kernel.runs().graph(&w.agent, w.ws, id).await.unwrap());
        assert_eq!(
            g["nodes"],
            json!([
                {"id": "n0", "key": "s1-model-1", "kind": "model_task", "status": "completed", "mainline": true, "model": "scripted/reads"},
                {"id": "n1", "key": "r1t0", "kind": "tool_task", "status": "completed", "mainline": true, "tool_name": "runners_list"},
                {"id": "n2", "key": "r1", "kind": "model_task", "status": "completed", "mainline": true, "model": "scripted/reads"},
            ])
        );
        assert_eq!(
            g["edges"],
            json!([{"from": "n0", "to": "n1", "kind": "after"}, {"from": "n1", "to": "n2", "kind": "after"}])
        );
        assert_eq!(
            g["mermaid"],
            "flowchart TD\n  n0[\"s1-model-1 · model_task · completed\"]\n  n1[\"r1t0 · tool_task · completed · runners_list\"]\n  n2[\"r1 · model_task · completed\"]\n  n0 --> n1\n  n1 --> n2\n  classDef completed fill:#dfd\n  class n0 completed\n  class n1 completed\n  class n2 completed"
        );

        // Events, paged by sequence.
        let all = wire(w.kernel.runs().events(&w.agent, w.ws, id, None, None).await.unwrap());
        let events = all["events"].as_array().unwrap();
        assert!(events.len() > 5);
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e["sequence"], i as i64 + 1);
            assert_eq!(e["run_public_id"], id.to_string());
            assert!(e["at"].as_str().unwrap().ends_with('Z'));
            assert!(e["data"].is_object());
        }
        assert_eq!(all["next_after"], events.len() as i64);
        let tool_changes: Vec<Value> = events
            .iter()
            .filter(|e| e["type"] == "task_status_changed" && e["task_key"] == "r1t0")
            .map(|e| json!([e["data"]["from"], e["data"]["to"]]))
            .collect();
        assert_eq!(
            tool_changes,
            [
                json!(["waiting", "needs_approval"]),
                json!(["needs_approval", "running"]),
                json!(["running", "completed"])
            ]
        );
        let two = wire(
            w.kernel
                .runs()
                .events(&w.agent, w.ws, id, Some(1), Some(2))
                .await
                .unwrap(),
        );
        assert_eq!(two["events"].as_array().unwrap().len(), 2);
        assert_eq!(two["events"][0]["sequence"], 2);
        assert_eq!(two["next_after"], 3);
        let end = wire(
            w.kernel
                .runs()
                .events(&w.agent, w.ws, id, Some(10_000), None)
                .await
                .unwrap(),
        );
        assert_eq!(end["events"], json!([]));
        assert_eq!(end["next_after"], 10_000);
    }
}

#[tokio::test]
async fn hidden_rows_leave_the_transcript_unless_asked() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script("hidden", &[json!({"text": "Seen."})]);
        let id = w
            .start(json!({
                "approval_mode": "bypass",
                "steps": [
                    {"model": {"prompt": "One.", "model": "scripted/hidden"}},
                    {"model": {"prompt": "Two.", "model": "scripted/echo"}, "visibility": "hidden"},
                ],
            }))
            .await;
        let rows = wire(w.kernel.runs().transcript(&w.agent, w.ws, id, false).await.unwrap())["rows"].clone();
        assert!(
            rows.as_array().unwrap().iter().all(|r| r["key"] == "s1-model-1"),
            "{rows}"
        );
        let all = wire(w.kernel.runs().transcript(&w.agent, w.ws, id, true).await.unwrap())["rows"].clone();
        assert!(
            all.as_array()
                .unwrap()
                .iter()
                .any(|r| r["key"] == "s1-model-2" && r["visibility"] == "hidden")
        );
    }
}
