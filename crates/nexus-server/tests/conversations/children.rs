//! Child conversations and the conversation tools (kernel-tools.md §4–§7, §10), on both
//! engines with the scripted provider: a parent that spawns two children (one inheriting its
//! runner, one with none), waits on one, reads the other's reply as mail and finds an earlier
//! turn with `session_search`; a background branch's result as mail; `send` and `status` by
//! label; and the tools' refusals on a standalone run.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::common::{harnesses_with_scripts, write_script};
use super::turns::{tools_profile, turns};
use super::{c, input, new_conversation, ok};

#[tokio::test]
async fn a_parent_spawns_children_waits_on_one_and_reads_the_other_as_mail() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(
            dir.path(),
            "family",
            &[
                json!({"text": "Spawning.", "tool_calls": [
                    {"id": "a", "name": "spawn", "input": {"prompt": "[[thread:a]] Do A", "label": "a", "wait": true}},
                    {"id": "b", "name": "spawn", "input": {"prompt": "[[thread:b]] Do B", "label": "b",
                                                           "default_runner_executor_public_id": null}}]}),
                json!({"text": "A said its piece."}),
                json!({"text": "B's mail read.", "expect": {"last_user_contains": "B done"}}),
                json!({"text": "Looking back.", "tool_calls": [
                    {"id": "s", "name": "session_search", "input": {"query": "piece"}}]}),
                json!({"text": "Found it.", "expect": {"last_result": {"name": "session_search", "contains": "A said its piece."}}}),
                json!({"thread": "a", "text": "A done."}),
                json!({"thread": "b", "text": "B done."}),
            ],
        );
        let configuration = json!({"approval_mode": "bypass", "default_model": "scripted/family",
                                   "kernel_tools": ["nexus.conversation.spawn", "nexus.conversation.status",
                                                    "nexus.conversation.search"]});
        let r = h
            .json(
                Method::PUT,
                "/agent_api/v1/profile/configuration",
                Some(&h.agent_token()),
                &json!({"configuration": configuration}),
            )
            .await;
        assert!(r.status.is_success(), "{}", String::from_utf8_lossy(&r.bytes));
        let agent = h.agent_token();
        let runner_id = h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string();
        let conv = new_conversation(&h, &agent, json!({"default_runner_executor_public_id": runner_id})).await;
        ok(
            &input(&h, &agent, &conv, json!({"content": "Go"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(100).await.unwrap();
        // A later turn finds the first reply by its words.
        ok(
            &input(&h, &agent, &conv, json!({"content": "What did A say?"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(100).await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        let replies: Vec<&Value> = t
            .iter()
            .filter(|t| t["role"] == "assistant")
            .map(|t| &t["content"])
            .collect();
        assert_eq!(
            replies,
            [
                &json!("A said its piece."),
                &json!("B's mail read."),
                &json!("Found it.")
            ],
            "{} {t:?}",
            h.dialect
        );
        let children = ok(
            &h.get(&format!("{}/children", c(&h, &conv)), Some(&agent)).await,
            StatusCode::OK,
        );
        let children = children["conversations"].as_array().unwrap();
        assert_eq!(children.len(), 2, "{children:?}");
        assert_eq!(children[0]["parent"]["label"], "a");
        // `a` omitted the key and inherits the parent's runner; `b` chose none.
        assert_eq!(children[0]["default_runner_executor_public_id"], runner_id.as_str());
        assert_eq!(children[1]["default_runner_executor_public_id"], Value::Null);
        let feed = ok(
            &h.get(&format!("{}/events", c(&h, &conv)), Some(&agent)).await,
            StatusCode::OK,
        );
        let spawned = feed["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "child_spawned")
            .count();
        assert_eq!(spawned, 2, "{feed}");
    }
}

#[tokio::test]
async fn a_background_branch_result_arrives_as_mail_in_a_later_turn() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(
            dir.path(),
            "bg",
            &[
                json!({"text": "Delegating.", "tool_calls": [{"id": "d", "name": "delegate_task",
                       "input": {"prompt": "[[thread:x]] Work", "wait": false}}]}),
                json!({"text": "Started it."}),
                json!({"text": "Read the mail.", "expect": {"last_user_contains": "Branch result."}}),
                json!({"thread": "x", "text": "Branch result."}),
            ],
        );
        tools_profile(&h, "scripted/bg", &["nexus.graph.delegate_task"]).await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        ok(
            &input(&h, &agent, &conv, json!({"content": "Go"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(100).await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        let roles: Vec<(&str, &Value)> = t.iter().map(|t| (t["role"].as_str().unwrap(), &t["content"])).collect();
        assert_eq!(roles.len(), 4, "{} {t:?}", h.dialect);
        assert_eq!(roles[1].1, "Started it.");
        assert!(roles[2].1.as_str().unwrap().contains("Branch result."), "{t:?}");
        assert_eq!(roles[3].1, "Read the mail.", "{} {t:?}", h.dialect);
        let inputs = ok(
            &h.get(&format!("{}/inputs", c(&h, &conv)), Some(&agent)).await,
            StatusCode::OK,
        );
        let kinds: Vec<&str> = inputs["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["user", "task_result"], "{inputs}");
    }
}

#[tokio::test]
async fn send_and_status_reach_a_child_by_its_label() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(
            dir.path(),
            "talk",
            &[
                json!({"text": "Spawning.", "tool_calls": [{"id": "s", "name": "spawn",
                       "input": {"prompt": "[[thread:c]] Start", "label": "c", "wake": "passive"}}]}),
                json!({"text": "Checking.", "tool_calls": [
                    {"id": "st", "name": "status", "input": {"to": "c"}},
                    {"id": "se", "name": "send", "input": {"to": "c", "message": "More please"}},
                    {"id": "up", "name": "send", "input": {"to": "nobody", "message": "x"}}]}),
                json!({"text": "Checking again.", "expect": {"last_result": {"call_id": "up", "is_error": true,
                                                                   "contains": "unknown_conversation"}},
                       "tool_calls": [{"id": "st2", "name": "status", "input": {"to": "c"}}]}),
                json!({"text": "Sent."}),
                json!({"thread": "c", "text": "Started."}),
                json!({"thread": "c", "text": "More done.", "expect": {"last_user_contains": "More please"}}),
            ],
        );
        tools_profile(
            &h,
            "scripted/talk",
            &[
                "nexus.conversation.spawn",
                "nexus.conversation.status",
                "nexus.conversation.send",
            ],
        )
        .await;
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        ok(
            &input(&h, &agent, &conv, json!({"content": "Go"})).await,
            StatusCode::CREATED,
        );
        h.kernel.runs().work_until_idle(100).await.unwrap();
        let t = turns(&h, &agent, &conv).await;
        assert_eq!(t[1]["content"], "Sent.", "{} {t:?}", h.dialect);
        // The child's first reply was passive mail: it waits for the parent's next turn.
        let inputs = ok(
            &h.get(&format!("{}/inputs", c(&h, &conv)), Some(&agent)).await,
            StatusCode::OK,
        );
        let mail: Vec<&Value> = inputs["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["kind"] == "task_result")
            .collect();
        assert_eq!(mail.len(), 1, "{inputs}");
        assert_eq!(mail[0]["state"], "pending", "{inputs}");
        assert_eq!(t.len(), 2, "passive mail opened no turn: {t:?}");
        let children = ok(
            &h.get(&format!("{}/children", c(&h, &conv)), Some(&agent)).await,
            StatusCode::OK,
        );
        let child = children["conversations"][0]["public_id"].as_str().unwrap().to_string();
        let ct = turns(&h, &agent, &child).await;
        let replies: Vec<&Value> = ct
            .iter()
            .filter(|t| t["role"] == "assistant")
            .map(|t| &t["content"])
            .collect();
        assert_eq!(
            replies,
            [&json!("Started."), &json!("More done.")],
            "{} {ct:?}",
            h.dialect
        );
        // The status call's JSON names the child.
        let run = t[1]["run_public_id"].as_str().unwrap();
        let rows = ok(
            &h.get(&format!("{}/tasks?limit=100", h.r(run)), Some(&agent)).await,
            StatusCode::OK,
        );
        let statuses: Vec<String> = rows["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tool_name"] == "status")
            .map(|r| r["key"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(statuses.len(), 2, "{rows}");
        let mut reports = Vec::new();
        for key in &statuses {
            let row = ok(
                &h.get(&format!("{}/tasks/{key}", h.r(run)), Some(&agent)).await,
                StatusCode::OK,
            );
            let text = row["task"]["content"][0]["text"].as_str().unwrap_or_default();
            reports.push(serde_json::from_str::<Value>(text).unwrap_or_else(|_| panic!("{row}")));
        }
        let status = &reports[0];
        assert_eq!(status["conversation_public_id"], child.as_str(), "{status}");
        assert_eq!(status["label"], "c");
        // The call is evaluated by the worker that applied the parent's reply, right after it
        // (a kernel tool a reply calls is handed to that worker): the child's first turn is
        // open and its model call still queued, so it is running and has not replied yet.
        assert_eq!(status["state"], "running", "{status}");
        assert_eq!(status["pending_inputs"], 0, "{status}");
        assert_eq!(status["last_reply"], Value::Null, "{status}");
        // The second call, a round later, comes after the child's first reply.
        let later = &reports[1];
        assert_eq!(later["conversation_public_id"], child.as_str(), "{later}");
        assert_eq!(later["last_reply"]["excerpt"], "Started.", "{later}");
    }
}

#[tokio::test]
async fn the_conversation_tools_refuse_on_a_standalone_run_and_check_their_parameters() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(
            dir.path(),
            "alone",
            &[
                json!({"text": "Trying.", "tool_calls": [
                    {"id": "a", "name": "spawn", "input": {"prompt": "do x"}},
                    {"id": "b", "name": "spawn", "input": {"prompt": " "}},
                    {"id": "c", "name": "spawn", "input": {"prompt": "x", "wait": "yes"}},
                    {"id": "d", "name": "send", "input": {"to": "build-bot", "message": "hi"}},
                    {"id": "e", "name": "send", "input": {"to": "child"}},
                    {"id": "f", "name": "status", "input": {"to": "build-bot"}},
                    {"id": "g", "name": "status", "input": {}},
                    {"id": "h", "name": "cancel", "input": {"to": "child", "x": 1}},
                    {"id": "i", "name": "cancel", "input": {"to": "child"}}]}),
                json!({"text": "Done."}),
            ],
        );
        let human = h.human_token();
        let steps = json!([{"model": {"prompt": "Go.", "model": "scripted/alone", "kernel_tools": [
            "nexus.conversation.spawn", "nexus.conversation.send", "nexus.conversation.status",
            "nexus.conversation.cancel"]}}]);
        let id = h.start_run(&human, "bypass", Value::Null, steps).await;
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let want = [
            ("r1t0", "spawn_needs_conversation"),
            ("r1t1", "parameter_invalid"),
            ("r1t2", "parameter_invalid"),
            ("r1t3", "unknown_conversation"),
            ("r1t4", "parameter_invalid"),
            ("r1t5", "unknown_conversation"),
            ("r1t6", "parameter_invalid"),
            ("r1t7", "parameter_invalid"),
            ("r1t8", "unknown_conversation"),
        ];
        for (key, word) in want {
            let row = ok(
                &h.get(&format!("{}/tasks/{key}", h.r(&id)), Some(&human)).await,
                StatusCode::OK,
            );
            let text = row["task"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(text.starts_with(&format!("{word}:")), "{key}: {row}");
            assert_eq!(row["task"]["is_error"], true, "{key}: {row}");
            if key == "r1t5" {
                assert!(text.contains("\"build-bot\""), "the sentence names the value: {text}");
            }
        }
    }
}
