//! Turns that do not answer (runs.md §12, docs/decisions/020-turns-without-an-answer.md), on both
//! engines with the scripted provider: a turn that failed at birth or was canceled before its
//! first round was sent leaves the earlier turns in the next turn's history; abandoning the
//! failed round of a turn ends it `failed` and the queued input opens the next turn.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::common::{Harness, harnesses_with_scripts, write_script};
use super::turns::{tools_profile, turns};
use super::{c, input, new_conversation, ok};

/// Sends an input and runs the kernel until it is idle.
async fn say(h: &Harness, token: &str, conv: &str, body: Value) {
    ok(&input(h, token, conv, body).await, StatusCode::CREATED);
    h.kernel.runs().work_until_idle(50).await.unwrap();
}

/// The entries of the sealed request of a hosted run's seed round, as `(type, text)`: a user
/// entry's first text part, an assistant entry's text.
async fn seed_entries(h: &Harness, token: &str, run: &Value) -> Vec<(String, String)> {
    let run = run.as_str().expect("the turn has a run");
    let read = ok(
        &h.get(&format!("{}/tasks/r1/request", h.r(run)), Some(token)).await,
        StatusCode::OK,
    );
    let entries = read["request"]["entries"].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .map(|e| {
            let text = match e["type"].as_str() {
                Some("user") => e["parts"][0]["text"].clone(),
                _ => e["text"].clone(),
            };
            (
                e["type"].as_str().unwrap_or_default().to_string(),
                text.as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn entry(kind: &str, text: &str) -> (String, String) {
    (kind.to_string(), text.to_string())
}

/// `(role, status)` of each turn.
fn states(turns: &[Value]) -> Vec<(String, String)> {
    turns
        .iter()
        .map(|t| (t["role"].as_str().unwrap().into(), t["status"].as_str().unwrap().into()))
        .collect()
}

/// A conversation whose first turn answered "Hi, first." to "Hello", with a script (`name`)
/// whose line k answers a request holding k assistant entries: the third turn gets line 1
/// ("Hi, third.") only when it replays the first turn's reply.
async fn answered_once(h: &Harness, dir: &std::path::Path, name: &str) -> (String, String) {
    write_script(
        dir,
        name,
        &[
            json!({"text": "Hi, first.", "expect": {"last_user_contains": "Hello"}}),
            json!({"text": "Hi, third.", "expect": {"last_user_contains": "Third"}}),
        ],
    );
    tools_profile(h, &format!("scripted/{name}"), &["nexus.runners.list"]).await;
    let agent = h.agent_token();
    let conv = new_conversation(h, &agent, json!({})).await;
    say(h, &agent, &conv, json!({"content": "Hello"})).await;
    (agent, conv)
}

/// Sends "Third" and checks its turn answered from the first turn's history, without the
/// second turn's input. Returns the turns.
async fn third_turn_replays_the_first(h: &Harness, agent: &str, conv: &str) -> Vec<Value> {
    say(h, agent, conv, json!({"content": "Third"})).await;
    let t = turns(h, agent, conv).await;
    assert_eq!(t.len(), 6, "{} {t:?}", h.dialect);
    assert_eq!(t[5]["content"], "Hi, third.", "{} {t:?}", h.dialect);
    assert_eq!(
        seed_entries(h, agent, &t[5]["run_public_id"]).await,
        [
            entry("user", "Hello"),
            entry("assistant", "Hi, first."),
            entry("user", "Third")
        ],
        "{}: the second input is left out, the turn before it is not",
        h.dialect
    );
    t
}

#[tokio::test]
async fn a_turn_that_could_not_start_leaves_the_earlier_turns_in_the_history() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        let (agent, conv) = answered_once(&h, dir.path(), "past").await;
        // A model that does not resolve: the turn fails at birth, with no run.
        say(&h, &agent, &conv, json!({"content": "Broken", "model": "nosuch/model"})).await;
        let t = third_turn_replays_the_first(&h, &agent, &conv).await;
        assert_eq!(
            (&t[3]["status"], &t[3]["run_public_id"]),
            (&json!("failed"), &Value::Null)
        );
    }
}

#[tokio::test]
async fn a_turn_canceled_before_its_first_round_leaves_the_earlier_turns_in_the_history() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        let (agent, conv) = answered_once(&h, dir.path(), "stopped").await;
        ok(
            &input(&h, &agent, &conv, json!({"content": "Stopped"})).await,
            StatusCode::CREATED,
        );
        // The turn opens; it is canceled before its seed round is sealed.
        h.kernel.conversations().open_due_turns().await.unwrap();
        let cancel = h
            .json(
                Method::POST,
                &format!("{}/cancellation", c(&h, &conv)),
                Some(&agent),
                &json!({}),
            )
            .await;
        ok(&cancel, StatusCode::OK);
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let t = third_turn_replays_the_first(&h, &agent, &conv).await;
        assert_eq!(t[3]["status"], "canceled", "{} {t:?}", h.dialect);
    }
}

#[tokio::test]
async fn abandoning_a_turns_failed_round_ends_the_turn_and_opens_the_next() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        // The first turn answers in part (a text and a call), then its continuation's request
        // fails the expectation (provider_error): the round fails and the run needs attention.
        // The second turn's request passes it.
        write_script(
            dir.path(),
            "fragile",
            &[
                json!({"text": "Looking.", "tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
                json!({"text": "Answered two.", "expect": {"last_user_contains": "Two"}}),
            ],
        );
        tools_profile(&h, "scripted/fragile", &["nexus.runners.list"]).await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        say(&h, &agent, &conv, json!({"content": "One"})).await;
        say(&h, &agent, &conv, json!({"content": "Two"})).await;
        let t = turns(&h, &agent, &conv).await;
        assert_eq!(
            states(&t),
            [entry("user", "completed"), entry("assistant", "running")],
            "{} {t:?}",
            h.dialect
        );
        let run = t[1]["run_public_id"].as_str().unwrap().to_string();
        let read = ok(&h.get(&h.r(&run), Some(&agent)).await, StatusCode::OK);
        assert_eq!(read["run"]["status"], "needs_attention", "{read}");
        let failed = read["run"]["attention"]["task_key"].as_str().unwrap().to_string();

        let abandon = h
            .json(
                Method::POST,
                &format!("{}/tasks/{failed}/abandon", h.r(&run)),
                Some(&agent),
                &json!({}),
            )
            .await;
        assert_eq!(ok(&abandon, StatusCode::OK)["task"]["failure_resolution"], "abandoned");
        h.kernel.runs().work_until_idle(50).await.unwrap();

        let t = turns(&h, &agent, &conv).await;
        assert_eq!(
            states(&t),
            [
                entry("user", "completed"),
                entry("assistant", "failed"),
                entry("user", "completed"),
                entry("assistant", "completed"),
            ],
            "{} {t:?}",
            h.dialect
        );
        // The failed turn keeps its partial answer.
        assert_eq!(t[1]["error"]["key"], "provider_error", "{t:?}");
        assert_eq!(t[1]["content"], "Looking.", "{t:?}");
        assert_eq!(t[3]["content"], "Answered two.", "{t:?}");
        let read = ok(&h.get(&h.r(&run), Some(&agent)).await, StatusCode::OK);
        assert_eq!(read["run"]["status"], "completed", "{read}");
        // The failed round was sent: the history replays it as it was sent (the input, the
        // partial answer and its result), then the next prompt.
        assert_eq!(
            seed_entries(&h, &agent, &t[3]["run_public_id"]).await,
            [
                entry("user", "One"),
                entry("assistant", "Looking."),
                entry("tool_result", ""),
                entry("user", "Two")
            ],
            "{}",
            h.dialect
        );
        let feed = ok(
            &h.get(&format!("{}/events", c(&h, &conv)), Some(&agent)).await,
            StatusCode::OK,
        );
        let ended: Vec<&Value> = feed["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "turn_ended")
            .collect();
        assert_eq!(ended.len(), 2, "{feed}");
        assert_eq!(ended[0]["data"]["turn_public_id"], t[1]["public_id"], "{feed}");
        assert_eq!(ended[0]["data"]["status"], "failed", "{feed}");
        assert_eq!(ended[0]["data"]["error"]["key"], "provider_error", "{feed}");
    }
}
