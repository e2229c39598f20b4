//! The graph kernel tools on both engines (kernel-tools.md §0–§3, §12): `tool_call` through
//! search and the approval gate, `delegate_task` (wait true/false, narrowing, depth), `wait`,
//! `ask` and its resolution, every refusal word and the model-facing result text.
//!
//! The deferred target of the search/tool_call run is a kernel tool (`runners_list` behind the
//! deferred alias `list_machines`): a runner-side commit would need the executor plane's commit
//! door, which this suite does not depend on.

mod common;

use common::{World, world};

use nexus_core::codes::Code;
use nexus_kernel::runs::Answer;
use nexus_store::prelude::*;
use nexus_store::testing::engines;
use nexus_store::{RunStatus, Standing, TaskKind, TaskRow, TaskStatus};
use serde_json::{Value, json};
use uuid::Uuid;

const DAY: i64 = 86_400_000;

impl World {
    /// A run of one model step (script `name`) declaring `kernel_tools` plus `tools`.
    async fn model_run(&self, name: &str, mode: &str, kernel_tools: Value, tools: Value) -> Uuid {
        let mut model = json!({"prompt": "Go.", "model": format!("scripted/{name}"), "kernel_tools": kernel_tools});
        if !tools.is_null() {
            model["tools"] = tools;
        }
        self.start(json!({"approval_mode": mode, "steps": [{"model": model}]}))
            .await
    }

    /// The sealed record of the round `key`.
    async fn sealed(&self, id: Uuid, key: &str) -> Value {
        self.sealed_row(id, key).await.0
    }

    /// The `(output, is_error)` the round `key` read for `call_id`.
    async fn result_of(&self, id: Uuid, key: &str, call_id: &str) -> (String, bool) {
        let record = self.sealed(id, key).await;
        let entry = record["entries"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|e| e["type"] == "tool_result" && e["call_id"] == call_id)
            .unwrap_or_else(|| panic!("{key} read no result for {call_id}: {record}"))
            .clone();
        (
            entry["output"].as_str().unwrap().to_string(),
            entry["is_error"].as_bool().unwrap_or(false),
        )
    }
}

/// The text of a settled row's content blocks, a line each.
fn text_of(t: &TaskRow) -> String {
    let blocks: Value = serde_json::from_str(t.content.as_deref().unwrap_or("[]")).unwrap();
    blocks
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"id": id, "name": name, "input": input})
}

fn error_word(output: &str) -> &str {
    let inner = output
        .strip_prefix("<tool_use_error>")
        .unwrap_or_else(|| panic!("not an error result: {output}"));
    inner.split(':').next().unwrap()
}

// ---------------------------------------------------------------------------------------------
// tool_search + tool_call
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn tool_call_reaches_a_deferred_tool_through_search_and_the_approval_gate() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "deferred",
            &[
                json!({"text": "Searching.", "tool_calls": [call("c1", "tool_search", json!({"query": "list_machines"}))]}),
                json!({"text": "Calling.", "tool_calls": [call("c2", "tool_call", json!({"name": "list_machines", "input": {}}))]}),
                json!({"text": "Done."}),
            ],
        );
        let rules = json!([{"tool": "tool_search|tool_call", "verdict": "allow"}]);
        let id = w
            .start(json!({
                "approval_mode": "ask",
                "approval_rules": rules,
                "steps": [{"model": {
                    "prompt": "Go.", "model": "scripted/deferred",
                    "kernel_tools": ["nexus.tools.search", "nexus.tools.call"],
                    "tools": [{"name": "list_machines", "canonical": "nexus.runners.list", "defer_loading": true}],
                }}],
            }))
            .await;
        // The deferred alias is omitted from the projection, but search finds it.
        let s1 = w.sealed(id, "s1-model-1").await;
        let projected: Vec<&str> = s1["request_options"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(!projected.contains(&"list_machines"), "{projected:?}");
        let (found, is_error) = w.result_of(id, "r1", "c1").await;
        assert!(!is_error, "{found}");
        let found: Value = serde_json::from_str(&found).unwrap();
        assert_eq!(found["tools"][0]["name"], "list_machines", "{found}");

        // The wrapper crossed the gate (rule grant); its child is held for a person.
        let wrapper = w.task(id, "r2t0").await;
        assert_eq!(wrapper.status, TaskStatus::Completed);
        assert_eq!(wrapper.pairs_with.as_deref(), Some("r2t0-tool-1"));
        let child = w.task(id, "r2t0-tool-1").await;
        assert_eq!(child.kind, TaskKind::Tool);
        assert_eq!(child.status, TaskStatus::NeedsApproval);
        assert_eq!(child.origin, nexus_store::Origin::Model);
        assert_eq!(child.tool_name.as_deref(), Some("runners_list"));
        assert_eq!(child.tool_alias.as_deref(), Some("list_machines"));
        assert_eq!(child.declaring_task_id, Some(wrapper.id));
        assert_eq!(child.addressed_executor_id, Some(w.executor_id(w.agent_app).await));
        assert_eq!(w.task(id, "r2").await.status, TaskStatus::Waiting);
        assert_eq!(w.run_row(id).await.status, RunStatus::Running);

        let out = w
            .kernel
            .runs()
            .approve(&w.human, w.ws, id, "r2t0-tool-1")
            .await
            .unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "running");
        w.drive().await;
        let child = w.task(id, "r2t0-tool-1").await;
        assert_eq!(child.status, TaskStatus::Completed);
        // The continuation reads the child's result as the wrapper's.
        let (output, is_error) = w.result_of(id, "r2", "c2").await;
        assert!(!is_error);
        assert_eq!(output, text_of(&child));
        let listed: Value = serde_json::from_str(&output).unwrap();
        assert!(listed.get("runners").is_some(), "{listed}");
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
    }
}

#[tokio::test]
async fn search_and_tool_call_never_reach_an_undeclared_tool() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "narrow",
            &[
                json!({"tool_calls": [
                    call("c1", "tool_search", json!({"query": "memory_read"})),
                    call("c2", "tool_search", json!({"query": "memory"})),
                    call("c3", "tool_call", json!({"name": "memory_read", "input": {"path": "workspace/x"}})),
                    call("c4", "tool_call", json!({"name": "tool_call", "input": {}})),
                    call("c5", "tool_call", json!({"name": "runners_list"})),
                    call("c6", "tool_call", json!({"input": {}})),
                    call("c7", "tool_call", json!({"name": "runners_list", "input": {"x": "a\u{0}b"}})),
                    call("c8", "tool_call", json!({"name": "runners_list", "input": {}})),
                ]}),
                json!({"text": "ok"}),
            ],
        );
        let id = w
            .model_run(
                "narrow",
                "bypass",
                json!(["nexus.tools.search", "nexus.tools.call", "nexus.runners.list"]),
                Value::Null,
            )
            .await;
        let (out, _) = w.result_of(id, "r1", "c1").await;
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["tools"], json!([]));
        let (out, _) = w.result_of(id, "r1", "c2").await;
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["tools"], json!([]));
        let (out, is_error) = w.result_of(id, "r1", "c3").await;
        assert!(is_error);
        assert_eq!(error_word(&out), "unknown_tool", "{out}");
        assert!(out.contains("\"memory_read\""), "{out}");
        assert!(w.maybe_task(id, "r1t2-tool-1").await.is_none());
        let (out, _) = w.result_of(id, "r1", "c4").await;
        assert_eq!(error_word(&out), "recursive_tool_call", "{out}");
        let (out, _) = w.result_of(id, "r1", "c5").await;
        assert_eq!(error_word(&out), "parameter_invalid", "{out}");
        let (out, _) = w.result_of(id, "r1", "c6").await;
        assert_eq!(error_word(&out), "parameter_invalid", "{out}");
        // A NUL in the wrapped input fails the wrapper itself at birth (round expansion): no
        // child is placed.
        let birth = w.task(id, "r1t6").await;
        assert_eq!(birth.status, TaskStatus::Failed);
        assert_eq!(birth.error_key.as_deref(), Some("invalid_tool_input"));
        let (out, is_error) = w.result_of(id, "r1", "c7").await;
        assert!(is_error);
        assert!(out.contains("(invalid_tool_input)"), "{out}");
        let (out, is_error) = w.result_of(id, "r1", "c8").await;
        assert!(!is_error);
        assert!(out.contains("runners"), "{out}");
        // Only the valid wrapper placed a child.
        let children: Vec<String> = w
            .tasks(id)
            .await
            .into_iter()
            .filter(|t| t.key.ends_with("-tool-1"))
            .map(|t| t.key)
            .collect();
        assert_eq!(children, ["r1t7-tool-1"]);
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
    }
}

// ---------------------------------------------------------------------------------------------
// delegate_task
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn delegate_task_wait_true_returns_the_branch_final_text() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "fg",
            &[
                json!({"text": "Delegating.", "tool_calls": [call("c1", "delegate_task", json!({
                    "prompt": "[[thread:b]] Count the runners.", "wait": true, "tools": ["runners_list"]}))]}),
                json!({"text": "Thanks.", "expect": {"last_result": {"call_id": "c1"}}}),
                json!({"thread": "b", "text": "Looking.", "tool_calls": [call("b1", "runners_list", json!({}))]}),
                json!({"thread": "b", "text": "There are no runners."}),
            ],
        );
        let id = w
            .model_run(
                "fg",
                "bypass",
                json!(["nexus.graph.delegate_task", "nexus.runners.list"]),
                Value::Null,
            )
            .await;
        let branch = w.task(id, "r1t0-model-1").await;
        assert_eq!(branch.kind, TaskKind::Model);
        assert_eq!(branch.branch_of.as_deref(), Some("r1t0"));
        assert!(!branch.mainline);
        assert_eq!(branch.on_failure, nexus_store::OnFailure::Absorb);
        assert_eq!(branch.visibility, nexus_store::Visibility::Hidden);
        assert_eq!(branch.status, TaskStatus::Completed);
        // Narrowed: the branch holds only runners_list.
        let frozen: Value = serde_json::from_str(branch.frozen_context.as_deref().unwrap()).unwrap();
        let names: Vec<&str> = frozen["tool_definitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["runners_list"]);
        assert_eq!(frozen["prompt"], "[[thread:b]] Count the runners.");
        // The branch grew its own round (mainline false, same branch mark).
        let final_round = w.task(id, "r2").await;
        assert_eq!(final_round.branch_of.as_deref(), Some("r1t0"));
        assert!(!final_round.mainline);
        assert_eq!(w.task(id, "r2t0").await.branch_of.as_deref(), Some("r1t0"));
        // The mainline continuation reads the branch's final message.
        let (output, is_error) = w.result_of(id, "r1", "c1").await;
        assert!(!is_error);
        assert_eq!(output, "There are no runners.");
        let run = w.run_row(id).await;
        assert_eq!(run.status, RunStatus::Completed);
        assert_eq!(
            w.kernel
                .store
                .task_by_id(run.deliverable_task_id.unwrap())
                .await
                .unwrap()
                .unwrap()
                .key,
            "r1"
        );
    }
}

#[tokio::test]
async fn delegate_task_wait_false_delivers_in_the_background() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "bg",
            &[
                json!({"text": "Delegating.", "tool_calls": [call("c1", "delegate_task", json!({"prompt": "[[thread:b]] Say hi."}))]}),
                json!({"text": "Started it."}),
                json!({"text": "Read the mail."}),
                json!({"thread": "b", "text": "hi from the branch"}),
            ],
        );
        let id = w
            .model_run("bg", "bypass", json!(["nexus.graph.delegate_task"]), Value::Null)
            .await;
        let (output, is_error) = w.result_of(id, "r1", "c1").await;
        assert!(!is_error);
        assert!(output.contains("background"), "{output}");
        assert!(
            output.ends_with(&format!(
                "Task reference: run_public_id=\"{id}\", task=\"r1t0-model-1\""
            )),
            "{output}"
        );
        assert!(w.task(id, "r1t0").await.pairs_with.is_none());
        let obligation = w.task(id, "r1t0-delegation-1").await;
        assert_eq!(obligation.kind, TaskKind::Await);
        assert_eq!(obligation.visibility, nexus_store::Visibility::Hidden);
        assert_eq!(obligation.status, TaskStatus::Completed);
        assert!(text_of(&obligation).contains("hi from the branch"));
        // The mainline reads the result in a kernel continuation, which is the deliverable.
        let mail = w.sealed(id, "r1t0-mail-1").await;
        let last = mail["entries"].as_array().unwrap().last().unwrap().clone();
        let parts: Vec<&str> = last["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect();
        assert!(
            parts.iter().any(
                |p| p.starts_with("<task_result task=\"r1t0-model-1\" status=\"completed\">")
                    && p.contains("hi from the branch")
            ),
            "{parts:?}"
        );
        let run = w.run_row(id).await;
        assert_eq!(run.status, RunStatus::Completed);
        assert_eq!(
            w.kernel
                .store
                .task_by_id(run.deliverable_task_id.unwrap())
                .await
                .unwrap()
                .unwrap()
                .key,
            "r1t0-mail-1"
        );
    }
}

#[tokio::test]
async fn delegate_task_refusals_in_order() {
    for ts in engines().await {
        let w = world(ts).await;
        let cases = [
            (
                json!({"prompt": "x", "kernel_tools": ["nexus.runners.list"], "bogus": 1}),
                "context_not_authorable",
            ),
            (json!({"prompt": "x", "bogus": 1}), "parameter_invalid"),
            (json!({"prompt": "  ", "wait": "yes"}), "prompt_required"),
            (json!({"prompt": "x", "wait": "yes"}), "invalid_wait"),
            (json!({"prompt": "x", "lifetime": "forever"}), "invalid_lifetime"),
            (json!({"prompt": "x", "wake": "now"}), "invalid_wake"),
            (json!({"prompt": "x", "tools": ["memory_read"]}), "tool_not_declared"),
            (json!({"prompt": "x", "model": "nope/none"}), "model_not_authorized"),
        ];
        let calls: Vec<Value> = cases
            .iter()
            .enumerate()
            .map(|(i, (input, _))| call(&format!("c{i}"), "delegate_task", input.clone()))
            .collect();
        w.script("refuse", &[json!({"tool_calls": calls}), json!({"text": "ok"})]);
        let id = w
            .model_run("refuse", "bypass", json!(["nexus.graph.delegate_task"]), Value::Null)
            .await;
        for (i, (_, word)) in cases.iter().enumerate() {
            let (out, is_error) = w.result_of(id, "r1", &format!("c{i}")).await;
            assert!(is_error, "{out}");
            assert_eq!(error_word(&out), *word, "{out}");
        }
        assert!(w.tasks(id).await.iter().all(|t| t.branch_of.is_none()));
    }
}

#[tokio::test]
async fn delegation_stops_at_depth_eight() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "deep",
            &[
                json!({"tool_calls": [call("c1", "delegate_task", json!({"prompt": "[[thread:b]] deeper", "wait": true}))]}),
                json!({"text": "top"}),
                json!({"thread": "b", "tool_calls": [call("d", "delegate_task", json!({"prompt": "[[thread:b]] deeper", "wait": true}))]}),
                json!({"thread": "b", "text": "level done"}),
            ],
        );
        let id = w
            .model_run("deep", "bypass", json!(["nexus.graph.delegate_task"]), Value::Null)
            .await;
        let tasks = w.tasks(id).await;
        let branches = tasks
            .iter()
            .filter(|t| t.branch_of.is_some() && t.key.ends_with("-model-1"))
            .count();
        assert_eq!(branches, 8);
        let refused: Vec<&TaskRow> = tasks
            .iter()
            .filter(|t| t.tool_name.as_deref() == Some("delegate_task") && t.is_error)
            .collect();
        assert_eq!(refused.len(), 1);
        assert!(
            text_of(refused[0]).starts_with("delegation_too_deep: "),
            "{}",
            text_of(refused[0])
        );
        let (out, _) = w.result_of(id, "r1", "c1").await;
        assert_eq!(out, "level done");
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
    }
}

// ---------------------------------------------------------------------------------------------
// wait
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn wait_on_a_settled_task_returns_at_once_and_refusals() {
    for ts in engines().await {
        let w = world(ts).await;
        let other = Uuid::max();
        w.script(
            "wait",
            &[
                json!({"tool_calls": [call("c1", "runners_list", json!({}))]}),
                json!({"tool_calls": [
                    call("w1", "wait", json!({"task": "r1t0"})),
                    call("w2", "wait", json!({"task": "nope"})),
                    call("w3", "wait", json!({"task": "r1"})),
                    call("w4", "wait", json!({"task": "s1-model-1"})),
                    call("w5", "wait", json!({"task": "r1t0", "run_public_id": other.to_string()})),
                    call("w6", "wait", json!({})),
                    call("w7", "wait", json!({"task": "r1t0", "timeout_ms": 0})),
                    call("w8", "wait", json!({"task": "r2t7"})),
                ]}),
                json!({"text": "ok"}),
            ],
        );
        let id = w
            .model_run(
                "wait",
                "bypass",
                json!(["nexus.graph.wait", "nexus.runners.list"]),
                Value::Null,
            )
            .await;
        let child = w.task(id, "r2t0-wait-1").await;
        assert_eq!(child.kind, TaskKind::Await);
        assert_eq!(child.status, TaskStatus::Completed);
        assert_eq!(child.timeout_ms, Some(3_600_000));
        let (out, is_error) = w.result_of(id, "r2", "w1").await;
        assert!(!is_error);
        let listed = text_of(&w.task(id, "r1t0").await);
        assert_eq!(
            out,
            format!(
                "<task_result task=\"r1t0\" status=\"completed\">\n<call>runners_list {{}}</call>\n{listed}\n</task_result>"
            )
        );
        for (c, word) in [
            ("w2", "wait_target_not_found"),
            ("w3", "wait_cycle"),
            ("w4", "wait_cycle"),
            ("w5", "wait_target_not_found"),
            ("w6", "parameter_invalid"),
            ("w7", "parameter_invalid"),
            ("w8", "wait_cycle"),
        ] {
            let (out, is_error) = w.result_of(id, "r2", c).await;
            assert!(is_error, "{c}: {out}");
            assert_eq!(error_word(&out), word, "{c}: {out}");
        }
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
    }
}

#[tokio::test]
async fn wait_on_an_answered_ask_returns_its_envelope() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "waitask",
            &[
                json!({"tool_calls": [call("c1", "ask", json!({"prompt": "Go on?"}))]}),
                json!({"tool_calls": [call("c2", "wait", json!({"task": "r1t0-ask-1", "timeout_ms": 5000}))]}),
                json!({"text": "ok"}),
            ],
        );
        let id = w
            .model_run(
                "waitask",
                "bypass",
                json!(["nexus.human.ask", "nexus.graph.wait"]),
                Value::Null,
            )
            .await;
        // r1 waits for the ask: nothing more happens until it is answered.
        assert_eq!(w.task(id, "r1t0-ask-1").await.status, TaskStatus::AwaitingInput);
        assert!(w.maybe_task(id, "r2t0").await.is_none());
        w.kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                "r1t0-ask-1",
                Answer::parse(&json!({"content": "yes"})),
            )
            .await
            .unwrap();
        w.drive().await;
        // r1 waited on the settled ask: completes at once with the answer envelope.
        let waited = w.task(id, "r2t0-wait-1").await;
        assert_eq!(waited.status, TaskStatus::Completed);
        assert_eq!(waited.timeout_ms, Some(5000));
        assert!(text_of(&waited).contains("yes"));
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
    }
}

#[tokio::test]
async fn a_wait_on_live_work_times_out_and_the_target_keeps_running() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "waitlive",
            &[
                json!({"tool_calls": [
                    call("c1", "ask", json!({"prompt": "Anything?"})),
                    call("c2", "wait", json!({"task": "r1t0-ask-1", "timeout_ms": 5000})),
                ]}),
                json!({"text": "ok"}),
            ],
        );
        let id = w
            .model_run(
                "waitlive",
                "bypass",
                json!(["nexus.human.ask", "nexus.graph.wait"]),
                Value::Null,
            )
            .await;
        let waiting = w.task(id, "r1t1-wait-1").await;
        assert_eq!(waiting.status, TaskStatus::Running);
        assert_eq!(waiting.deadline_at, Some(waiting.await_started_at.unwrap() + 5000));
        let e = w
            .kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                "r1t1-wait-1",
                Answer::parse(&json!({"content": "x"})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotResolvable);
        w.kernel.runs().sweep_at(waiting.deadline_at.unwrap()).await.unwrap();
        let waited = w.task(id, "r1t1-wait-1").await;
        assert_eq!(waited.status, TaskStatus::TimedOut);
        assert_eq!(waited.error_key.as_deref(), Some("await_timeout"));
        assert_eq!(w.task(id, "r1t0-ask-1").await.status, TaskStatus::AwaitingInput);
        w.kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                "r1t0-ask-1",
                Answer::parse(&json!({"content": "fine"})),
            )
            .await
            .unwrap();
        w.drive().await;
        let (out, is_error) = w.result_of(id, "r1", "c2").await;
        assert!(is_error);
        assert!(out.contains("(await_timeout)"), "{out}");
        let (out, _) = w.result_of(id, "r1", "c1").await;
        assert_eq!(out, "fine");
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
    }
}

// ---------------------------------------------------------------------------------------------
// ask and resolution
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn ask_parks_for_a_person_and_the_answer_is_the_result() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "ask",
            &[
                json!({"tool_calls": [
                    call("c1", "ask", json!({"prompt": "Which colour?", "options": ["red", "blue"], "multi": true})),
                    call("c2", "ask", json!({"question": "Which?"})),
                    call("c3", "ask", json!({"prompt": "x", "options": ["", "b"]})),
                    call("c4", "ask", json!({"prompt": "x", "options": "red"})),
                    call("c5", "ask", json!({"prompt": "x", "multi": "yes"})),
                    call("c6", "ask", json!({"prompt": " "})),
                ]}),
                json!({"text": "ok"}),
            ],
        );
        let id = w
            .model_run("ask", "bypass", json!(["nexus.human.ask"]), Value::Null)
            .await;
        let call_row = w.task(id, "r1t0").await;
        assert_eq!(call_row.status, TaskStatus::Completed);
        assert_eq!(call_row.pairs_with.as_deref(), Some("r1t0-ask-1"));
        let ask = w.task(id, "r1t0-ask-1").await;
        assert_eq!(ask.kind, TaskKind::Await);
        assert_eq!(ask.status, TaskStatus::AwaitingInput);
        assert_eq!(ask.on_failure, nexus_store::OnFailure::Halt);
        assert!(ask.resolution_token_sha256.is_none());
        assert_eq!(ask.deadline_at, Some(ask.await_started_at.unwrap() + DAY));
        assert_eq!(ask.addressed_executor_id, Some(w.executor_id(w.agent_app).await));
        let attention: Vec<Value> = w
            .events(id)
            .await
            .iter()
            .filter(|e| e.kind.as_str() == "attention_required")
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .collect();
        assert_eq!(
            attention,
            [json!({"reason": "awaiting_human", "task_key": "r1t0-ask-1"})]
        );
        assert_eq!(w.task(id, "r1").await.status, TaskStatus::Waiting);

        // Resolution refusals, in order.
        let reader = w.member("reader", Some(Standing::Read)).await;
        let outsider = w.member("outsider", None).await;
        let answer = json!({"content": "blue\nred"});
        let e = w
            .kernel
            .runs()
            .resolve_task(&reader, w.ws, id, "r1t0-ask-1", Answer::parse(&answer))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotAuthorized);
        let e = w
            .kernel
            .runs()
            .resolve_task(&outsider, w.ws, id, "r1t0-ask-1", Answer::parse(&answer))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotFound);
        let e = w
            .kernel
            .runs()
            .resolve_task(&w.human, w.ws, id, "nope", Answer::parse(&answer))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotFound);
        let e = w
            .kernel
            .runs()
            .resolve_task(&w.human, w.ws, id, "r1t0", Answer::parse(&answer))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotResolvable);
        let e = w
            .kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                "r1t0-ask-1",
                Answer::parse(&json!({"outcome": "maybe"})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::InvalidOutcome);
        let e = w
            .kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                "r1t0-ask-1",
                Answer::parse(&json!({"content": [{"type": "image", "data": "x"}]})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::UnsupportedContentKind);
        let e = w
            .kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                "r1t0-ask-1",
                Answer::parse(&json!({"content": [{"text": "x"}]})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::InvalidContent);
        let e = w
            .kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                "r1t0-ask-1",
                Answer::parse(&json!({"content": "a\u{0}b"})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::ResultUnstorable);
        // The park stands.
        assert_eq!(w.task(id, "r1t0-ask-1").await.status, TaskStatus::AwaitingInput);

        let out = w
            .kernel
            .runs()
            .resolve_task(&w.human, w.ws, id, "r1t0-ask-1", Answer::parse(&answer))
            .await
            .unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "completed", "{out}");
        assert!(out.get("idle").is_none());
        let again = w
            .kernel
            .runs()
            .resolve_task(
                &w.agent,
                w.ws,
                id,
                "r1t0-ask-1",
                Answer::parse(&json!({"content": "green"})),
            )
            .await
            .unwrap();
        assert!(again.idle);
        w.drive().await;
        let (out, is_error) = w.result_of(id, "r1", "c1").await;
        assert!(!is_error);
        assert_eq!(out, "blue\nred");
        for (c, word) in [
            ("c2", "parameter_invalid"),
            ("c3", "invalid_ask_options"),
            ("c4", "invalid_ask_options"),
            ("c5", "invalid_ask_multi"),
            ("c6", "parameter_invalid"),
        ] {
            let (out, is_error) = w.result_of(id, "r1", c).await;
            assert!(is_error, "{c}: {out}");
            assert_eq!(error_word(&out), word, "{c}: {out}");
        }
        let (out, _) = w.result_of(id, "r1", "c2").await;
        assert!(out.contains("`prompt`"), "{out}");
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
    }
}

#[tokio::test]
async fn resolution_of_authored_asks_tokens_waiting_and_deadline() {
    for ts in engines().await {
        let w = world(ts).await;
        // Not started: the ask is still waiting.
        let (id, body) = w
            .create(json!({"approval_mode": "bypass", "steps": [{"ask": {"prompt": "First?"}}, {"ask": {"prompt": "Second?"}}]}))
            .await;
        let keys = body["receipt"]["accepted_task_keys"].clone();
        let first = keys[0].as_str().unwrap().to_string();
        let second = keys[1].as_str().unwrap().to_string();
        let token = body["receipt"]["resolution_tokens"][&first]
            .as_str()
            .unwrap()
            .to_string();
        let token2 = body["receipt"]["resolution_tokens"][&second]
            .as_str()
            .unwrap()
            .to_string();
        let e = w
            .kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                &first,
                Answer::parse(&json!({"resolution_token": token, "content": "a"})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::TaskNotRunning);
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        assert_eq!(w.task(id, &first).await.status, TaskStatus::Dispatched);
        for bad in [
            json!({"content": "a"}),
            json!({"content": "a", "resolution_token": "wrong"}),
        ] {
            let e = w
                .kernel
                .runs()
                .resolve_task(&w.human, w.ws, id, &first, Answer::parse(&bad))
                .await
                .unwrap_err();
            assert_eq!(e.code, Code::StaleClaim);
        }
        let out = w
            .kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                &first,
                Answer::parse(&json!({"resolution_token": token, "content": "a"})),
            )
            .await
            .unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "completed");
        w.drive().await;
        // The second ask: its deadline passes before the answer.
        let mut t = w.task(id, &second).await;
        assert_eq!(t.status, TaskStatus::Dispatched);
        let past = nexus_kernel::time::now_ms() - 1;
        t.deadline_at = Some(past);
        let mut tx = w.kernel.store.begin().await.unwrap();
        assert!(
            tx.update_task(nexus_store::TaskUpdate::new(
                &t,
                t.generation,
                &[TaskStatus::Dispatched]
            ))
            .await
            .unwrap()
        );
        tx.commit().await.unwrap();
        let out = w
            .kernel
            .runs()
            .resolve_task(
                &w.human,
                w.ws,
                id,
                &second,
                Answer::parse(&json!({"resolution_token": token2, "content": "late"})),
            )
            .await
            .unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "timed_out");
        let t = w.task(id, &second).await;
        assert_eq!(t.error_key.as_deref(), Some("await_timeout"));
        assert!(text_of(&t).is_empty());
    }
}
