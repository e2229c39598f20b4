//! The MCP bridge inside real runs, against the pinned `@modelcontextprotocol/server-everything`
//! (tool names from its `tools/list`): echo and sum answer the model; the tiny image becomes a
//! capture that rides in the next round's sealed request as an attachment; structured content
//! lands on the task read; resource links become text; annotations are ignored until the
//! server is trusted, as the frozen effect profile on the task shows.

mod common;

use common::{World, everything_server, worlds};
use serde_json::{Value, json};

fn mcp_entry(entry: &std::path::Path, trusted: bool) -> String {
    format!(
        "[[mcp]]\nname = \"everything\"\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\ntrusted = {trusted}\n",
        entry.display()
    )
}

fn fail_closed() -> Value {
    json!({"kind": "write", "destructive": true, "effect_scope": "open", "idempotency": "none", "reconciliation": "none"})
}

async fn served(w: &World, root: &std::path::Path, trusted: bool) -> Option<common::Rho> {
    let entry = everything_server()?;
    Some(
        w.rho(
            root,
            &mcp_entry(&entry, trusted),
            &["everything_echo", "everything_get-tiny-image"],
        )
        .await,
    )
}

#[tokio::test]
async fn bridged_tools_answer_a_model_with_text_captures_and_structured_content() {
    for w in worlds().await {
        let root = tempfile::tempdir().unwrap();
        let Some(_rho) = served(&w, root.path(), false).await else {
            return;
        };
        w.script(
            "bridge",
            &[
                json!({"tool_calls": [
                    {"id": "c1", "name": "everything_echo", "input": {"message": "hello bridge"}},
                    {"id": "c2", "name": "everything_get-sum", "input": {"a": 2, "b": 40}},
                ]}),
                json!({"expect": {"last_result": {"call_id": "c2", "contains": "42"}},
                       "tool_calls": [{"id": "c3", "name": "everything_get-tiny-image", "input": {}}]}),
                // The capture rides in this round's request as an attachment.
                json!({"expect": {"attachments": 1},
                "tool_calls": [
                    {"id": "c4", "name": "everything_get-structured-content", "input": {"location": "New York"}},
                    {"id": "c5", "name": "everything_get-resource-links", "input": {"count": 1}},
                ]}),
                json!({"text": "done"}),
            ],
        );
        let (run, done) = w.model_run("bridge").await;
        assert_eq!(done.status.as_str(), "completed", "{}: {done:?}", w.dialect);

        let echo = run.task("r1t0").await.unwrap();
        assert!(
            echo.output.as_deref().unwrap_or("").contains("hello bridge"),
            "{}: {echo:?}",
            w.dialect
        );
        assert!(!echo.is_error);
        assert!(echo.title.is_some(), "{}: every result has a title", w.dialect);
        // Untrusted: the frozen profile is fail-closed whatever the server's hints say.
        assert_eq!(echo.rest.get("effect_profile"), Some(&fail_closed()), "{}", w.dialect);

        let image = run.task("r2t0").await.unwrap();
        let content = image.content.clone().unwrap_or_default();
        let link = content
            .iter()
            .find(|b| b["type"] == "resource_link")
            .unwrap_or_else(|| panic!("{}: the image became a capture link: {content:?}", w.dialect));
        assert!(link["uri"].as_str().unwrap().starts_with("nexus://uploads/"), "{link}");
        let sealed = run.request("r2").await.unwrap();
        let entries = serde_json::to_string(&sealed.entries).unwrap();
        assert!(
            entries.contains("image/png"),
            "{}: the next round carries the image: {entries}",
            w.dialect
        );

        let structured = run.task("r3t0").await.unwrap();
        let value = structured
            .structured_content
            .clone()
            .expect("structured_content on the task read");
        assert!(value.get("temperature").is_some(), "{}: {value}", w.dialect);

        let links = run.task("r3t1").await.unwrap();
        let text = links.output.clone().unwrap_or_default();
        assert!(
            text.contains("\"uri\""),
            "{}: a foreign resource_link is text holding its JSON: {text}",
            w.dialect
        );
    }
}

#[tokio::test]
async fn a_trusted_servers_annotations_derive_the_frozen_profile() {
    for w in worlds().await {
        let root = tempfile::tempdir().unwrap();
        let Some(_rho) = served(&w, root.path(), true).await else {
            return;
        };
        w.script(
            "trusted",
            &[
                json!({"tool_calls": [{"id": "c1", "name": "everything_echo", "input": {"message": "x"}}]}),
                json!({"text": "done"}),
            ],
        );
        let (run, done) = w.model_run("trusted").await;
        assert_eq!(done.status.as_str(), "completed", "{}: {done:?}", w.dialect);
        let echo = run.task("r1t0").await.unwrap();
        assert_eq!(
            echo.rest.get("effect_profile"),
            Some(
                &json!({"kind": "read_only", "destructive": false, "effect_scope": "closed",
                         "idempotency": "intrinsic", "reconciliation": "none"})
            ),
            "{}",
            w.dialect
        );
    }
}
