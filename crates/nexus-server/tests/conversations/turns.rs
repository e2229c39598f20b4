//! Turns hosted by runs (runs.md §12), on both engines with the scripted provider: a turn per
//! input with its reply, history replayed into the next turn, the hosted run's refusals, a
//! human answerer, a turn that cannot start, a steer that lands mid-turn and one that falls back
//! to the queue, cancellation, a scheduled input that opens its turn after a restart, history
//! trimmed to its budget, and a turn's memory. Children and the conversation tools: `children.rs`.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::common::{Harness, harnesses_with_scripts, write_script};
use super::{c, input, new_conversation, ok, refused};

/// The agent's profile: no declared tools but `runners_list`, approval `bypass`.
async fn agent_profile(h: &Harness, default_model: Option<&str>) {
    let mut configuration = json!({"approval_mode": "bypass", "kernel_tools": ["nexus.runners.list"]});
    if let Some(m) = default_model {
        configuration["default_model"] = json!(m);
    }
    let body = json!({"configuration": configuration});
    let r = h
        .json(
            Method::PUT,
            "/agent_api/v1/profile/configuration",
            Some(&h.agent_token()),
            &body,
        )
        .await;
    assert!(r.status.is_success(), "{}", String::from_utf8_lossy(&r.bytes));
}

pub(crate) async fn turns(h: &Harness, token: &str, conv: &str) -> Vec<Value> {
    ok(
        &h.get(&format!("{}/turns", c(h, conv)), Some(token)).await,
        StatusCode::OK,
    )["turns"]
        .as_array()
        .unwrap()
        .clone()
}

/// Puts the agent's profile with these kernel tools and model.
pub(crate) async fn tools_profile(h: &Harness, model: &str, tools: &[&str]) {
    let configuration = json!({"approval_mode": "bypass", "default_model": model, "kernel_tools": tools});
    let r = h
        .json(
            Method::PUT,
            "/agent_api/v1/profile/configuration",
            Some(&h.agent_token()),
            &json!({"configuration": configuration}),
        )
        .await;
    assert!(r.status.is_success(), "{}", String::from_utf8_lossy(&r.bytes));
}

fn summary(turns: &[Value]) -> Vec<(String, String, Value)> {
    turns
        .iter()
        .map(|t| {
            (
                t["role"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
                t["content"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn each_input_opens_a_turn_whose_run_replies_with_history() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        // k counts the assistant entries already in the request: the second turn's request
        // must replay the first turn's reply to get line 1.
        write_script(
            dir.path(),
            "conv",
            &[
                json!({"text": "Hi, first.", "expect": {"last_user_contains": "Hello"}}),
                json!({"text": "Hi, second.", "expect": {"last_user_contains": "Again"}}),
            ],
        );
        agent_profile(&h, Some("scripted/conv")).await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({"title": "Chat"})).await;
        ok(
            &input(&h, &agent, &conv, json!({"content": "Hello"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let first = turns(&h, &agent, &conv).await;
        assert_eq!(
            summary(&first),
            vec![
                ("user".into(), "completed".into(), json!("Hello")),
                ("assistant".into(), "completed".into(), json!("Hi, first.")),
            ],
            "{} {first:?}",
            h.dialect
        );
        assert_eq!(first[1]["position"], 2);
        let run = first[1]["run_public_id"].as_str().unwrap().to_string();
        let read = ok(&h.get(&h.r(&run), Some(&agent)).await, StatusCode::OK);
        assert_eq!(read["run"]["hosting"]["kind"], "conversation", "{read}");
        assert_eq!(read["run"]["hosting"]["conversation_public_id"], conv.as_str());
        assert_eq!(read["run"]["status"], "completed");

        // Standalone-only routes refuse a hosted run, naming the conversation and the turn.
        let put = h
            .json(
                Method::PUT,
                &format!("{}/default_runner", h.r(&run)),
                Some(&agent),
                &json!({"default_runner": {"executor_public_id": null}}),
            )
            .await;
        let e = refused(&put, StatusCode::CONFLICT, "conversation_hosted");
        assert_eq!(e["conversation_public_id"], conv.as_str(), "{e}");
        assert_eq!(e["turn_public_id"], first[1]["public_id"], "{e}");

        ok(
            &input(&h, &agent, &conv, json!({"content": "Again"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let all = turns(&h, &agent, &conv).await;
        assert_eq!(all.len(), 4, "{all:?}");
        assert_eq!(all[3]["content"], "Hi, second.", "{} {all:?}", h.dialect);
        let inputs = ok(
            &h.get(&format!("{}/inputs", c(&h, &conv)), Some(&agent)).await,
            StatusCode::OK,
        );
        for i in inputs["inputs"].as_array().unwrap() {
            assert_eq!(i["state"], "consumed", "{i}");
        }
        let feed = ok(
            &h.get(&format!("{}/events", c(&h, &conv)), Some(&agent)).await,
            StatusCode::OK,
        );
        let types: Vec<&str> = feed["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "input_accepted",
                "turn_started",
                "turn_started",
                "turn_ended",
                "input_accepted",
                "turn_started",
                "turn_started",
                "turn_ended"
            ],
            "{feed}"
        );
    }
}

#[tokio::test]
async fn a_human_answerer_records_user_turns_and_a_turn_without_a_model_fails() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        let human = h.human_token();
        let conv = new_conversation(&h, &human, json!({})).await;
        ok(
            &input(&h, &human, &conv, json!({"content": "Note one"})).await,
            StatusCode::CREATED,
        );
        ok(
            &input(&h, &human, &conv, json!({"content": "Note two"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(50).await.unwrap();
        assert_eq!(
            summary(&turns(&h, &human, &conv).await),
            vec![
                ("user".into(), "completed".into(), json!("Note one")),
                ("user".into(), "completed".into(), json!("Note two")),
            ]
        );

        // The agent's profile names no model, and neither does the input.
        agent_profile(&h, None).await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        ok(
            &input(&h, &agent, &conv, json!({"content": "Hello"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(t[1]["status"], "failed", "{t:?}");
        assert_eq!(t[1]["error"]["key"], "model_required", "{t:?}");
    }
}

#[tokio::test]
async fn a_steer_lands_after_the_next_results_or_falls_back_to_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(
            dir.path(),
            "steer",
            &[
                json!({"text": "Looking.", "tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
                json!({"text": "Steered.", "expect": {"last_user_contains": "Use the blue one"}}),
                // The second turn: a reply without calls, so a steer sent meanwhile falls back.
                json!({"text": "Plain reply."}),
                json!({"text": "Answering the late steer.", "expect": {"last_user_contains": "Too late"}}),
            ],
        );
        agent_profile(&h, Some("scripted/steer")).await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        ok(
            &input(&h, &agent, &conv, json!({"content": "Pick a runner"})).await,
            StatusCode::CREATED,
        );
        // Open the turn only: its run is live when the steer arrives.
        h.kernel.conversations().open_due_turns().await.unwrap();
        let steer = ok(
            &input(
                &h,
                &agent,
                &conv,
                json!({"content": "Use the blue one", "delivery_mode": "steer"}),
            )
            .await,
            StatusCode::CREATED,
        );
        assert_eq!(steer["input"]["state"], "steering", "{steer}");
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        assert_eq!(t.len(), 2, "the steer opened no turn of its own: {t:?}");
        let run = t[1]["run_public_id"].as_str().unwrap();
        let rows = ok(
            &h.get(&format!("{}/tasks?limit=100", h.r(run)), Some(&agent)).await,
            StatusCode::OK,
        );
        assert_eq!(t[1]["content"], "Steered.", "{} {t:?} {rows}", h.dialect);

        ok(
            &input(&h, &agent, &conv, json!({"content": "Second"})).await,
            StatusCode::CREATED,
        );
        h.kernel.conversations().open_due_turns().await.unwrap();
        let late = ok(
            &input(
                &h,
                &agent,
                &conv,
                json!({"content": "Too late", "delivery_mode": "steer"}),
            )
            .await,
            StatusCode::CREATED,
        );
        assert_eq!(late["input"]["state"], "steering");
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        assert_eq!(
            summary(&t[2..]),
            vec![
                ("user".into(), "completed".into(), json!("Second")),
                ("assistant".into(), "completed".into(), json!("Plain reply.")),
                ("user".into(), "completed".into(), json!("Too late")),
                (
                    "assistant".into(),
                    "completed".into(),
                    json!("Answering the late steer.")
                ),
            ],
            "{} {t:?}",
            h.dialect
        );
    }
}

#[tokio::test]
async fn cancellation_stops_the_running_turn() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(dir.path(), "slow", &[json!({"text": "Never read."})]);
        agent_profile(&h, Some("scripted/slow")).await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        let idle = ok(
            &h.json(
                Method::POST,
                &format!("{}/cancellation", c(&h, &conv)),
                Some(&agent),
                &json!({}),
            )
            .await,
            StatusCode::OK,
        );
        assert_eq!(idle["canceled_turn_public_id"], Value::Null, "{idle}");
        ok(
            &input(&h, &agent, &conv, json!({"content": "Go"})).await,
            StatusCode::CREATED,
        );
        h.kernel.conversations().open_due_turns().await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        let canceled = ok(
            &h.json(
                Method::POST,
                &format!("{}/cancellation", c(&h, &conv)),
                Some(&agent),
                &json!({}),
            )
            .await,
            StatusCode::OK,
        );
        assert_eq!(canceled["canceled_turn_public_id"], t[1]["public_id"], "{canceled}");
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        assert_eq!(t[1]["status"], "canceled", "{} {t:?}", h.dialect);
        let run = t[1]["run_public_id"].as_str().unwrap();
        let read = ok(&h.get(&h.r(run), Some(&agent)).await, StatusCode::OK);
        assert_eq!(read["run"]["status"], "canceled");
    }
}

#[tokio::test]
async fn a_scheduled_input_opens_its_turn_when_due_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(dir.path(), "later", &[json!({"text": "On time."})]);
        agent_profile(&h, Some("scripted/later")).await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        ok(
            &input(&h, &agent, &conv, json!({"content": "Remind me", "deliver_in": "1s"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(10).await.unwrap();
        assert!(turns(&h, &agent, &conv).await.is_empty(), "not due yet");
        // A new kernel over the same store: nothing in memory carries the schedule.
        let kernel = nexus_kernel::Kernel::builder(h.kernel.store.clone())
            .scripts_dir(dir.path())
            .build();
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        kernel.runs().work_until_idle(50).await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        assert_eq!(
            summary(&t),
            vec![
                ("user".into(), "completed".into(), json!("Remind me")),
                ("assistant".into(), "completed".into(), json!("On time.")),
            ],
            "{} {t:?}",
            h.dialect
        );
    }
}

#[tokio::test]
async fn history_past_its_budget_drops_whole_oldest_turns() {
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    for ts in nexus_store::testing::engines().await {
        // A model of 700 tokens with a 100-token output reserve: 2,400 body bytes of history.
        let mut caps = nexus_providers::Scripted::default_capabilities();
        caps.context_window = 700;
        caps.max_output_tokens = 100;
        let mut providers = nexus_providers::Providers::new(dir.path().to_path_buf());
        providers.insert(
            "tiny",
            Arc::new(nexus_providers::Scripted::new(dir.path()).with_capabilities(caps)),
            nexus_providers::Instance::scripted(),
        );
        let kernel = nexus_kernel::Kernel::builder(ts.store.clone())
            .providers(providers)
            .build();
        let boot = serde_json::to_value(kernel.admin().bootstrap().await.unwrap()).unwrap();
        let app = nexus_server::router(nexus_server::AppState::new(kernel.clone()));
        let h = Harness {
            dialect: ts.dialect,
            kernel,
            app,
            boot,
            _store: ts,
        };
        agent_profile(&h, Some("tiny/echo")).await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        for i in 1..=8 {
            let content = format!("Turn {i}: {}", "words ".repeat(40));
            ok(
                &input(&h, &agent, &conv, json!({"content": content})).await,
                StatusCode::CREATED,
            );
            h.kernel.runs().work_until_idle(20).await.unwrap();
        }
        let t = turns(&h, &agent, &conv).await;
        assert_eq!(t.len(), 16, "{t:?}");
        let last_run = t[15]["run_public_id"].as_str().unwrap();
        let request = ok(
            &h.get(&format!("{}/tasks/r1/request", h.r(last_run)), Some(&agent))
                .await,
            StatusCode::OK,
        )["request"]
            .clone();
        let entries = request["entries"].as_array().unwrap();
        let texts: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
        // The latest prompt is last; the history holds whole turns (user then assistant), the
        // newest ones, and not the oldest.
        assert!(texts.last().unwrap().contains("Turn 8"), "{texts:?}");
        assert!(
            entries.len() % 2 == 1 && entries.len() < 15,
            "{} entries: {texts:?}",
            entries.len()
        );
        assert!(!texts.iter().any(|e| e.contains("Turn 1:")), "{texts:?}");
        assert!(texts[texts.len() - 2].contains("Turn 7"), "{texts:?}");
        assert!(request["request_bytes"].as_u64().unwrap() <= 2_400, "{request}");
        // Every turn still answered.
        assert_eq!(t[15]["status"], "completed", "{} {t:?}", h.dialect);
    }
}

#[tokio::test]
async fn a_turn_writes_its_conversations_memory() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(
            dir.path(),
            "notes",
            &[
                json!({"text": "Noting.", "tool_calls": [{"id": "m", "name": "memory_write",
                       "input": {"path": "conversation/notes.md", "content": "remember the blue one"}}]}),
                json!({"text": "Noted.", "expect": {"last_result": {"call_id": "m", "is_error": false}}}),
            ],
        );
        tools_profile(&h, "scripted/notes", &["nexus.memory.write"]).await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        ok(
            &input(&h, &agent, &conv, json!({"content": "Note it"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        assert_eq!(t[1]["content"], "Noted.", "{} {t:?}", h.dialect);
        let doc = ok(
            &h.get(
                &format!(
                    "{}/memory/doc?path=conversation/notes.md&conversation_public_id={conv}",
                    h.w()
                ),
                Some(&agent),
            )
            .await,
            StatusCode::OK,
        );
        assert_eq!(doc["document"]["content"], "remember the blue one", "{doc}");
        // Another conversation's scope is its own.
        let other = new_conversation(&h, &agent, json!({})).await;
        let missing = h
            .get(
                &format!(
                    "{}/memory/doc?path=conversation/notes.md&conversation_public_id={other}",
                    h.w()
                ),
                Some(&agent),
            )
            .await;
        refused(&missing, StatusCode::NOT_FOUND, "not_found");
    }
}
