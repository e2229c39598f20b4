//! Refusal messages name the value that was refused and what would work, on both engines:
//! an `approval_mode` outside the three words, a model ref naming no configured instance, and
//! a `kernel_tools` entry that is not a live canonical name. The codes and envelope members
//! are the contract (checked elsewhere); here the `message` a person reads.

mod common;

use axum::http::StatusCode;
use common::{Harness, harnesses};
use serde_json::{Value, json};

/// `POST W/runs` with `run`; the refusal's `error` object, after its status and code.
async fn refusal(h: &Harness, run: Value, code: &str) -> Value {
    let r = h.post_run(&h.agent_token(), run).await;
    assert_eq!(
        r.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.code(), code, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()["error"].clone()
}

fn message(error: &Value) -> &str {
    error["message"].as_str().expect("a message")
}

fn step(model: &str) -> Value {
    json!({"model": {"prompt": "hello", "model": model}})
}

#[tokio::test]
async fn refusals_name_the_value_and_the_choices() {
    for h in harnesses().await {
        // approval_mode: a wrong word is not reported as a missing one.
        let e = refusal(
            &h,
            json!({"approval_mode": "yolo", "steps": [step("scripted/echo")]}),
            "invalid_approval_mode",
        )
        .await;
        assert_eq!(message(&e), "approval_mode \"yolo\" is not one of bypass, ask, rules");
        let e = refusal(&h, json!({"steps": [step("scripted/echo")]}), "invalid_approval_mode").await;
        assert_eq!(message(&e), "approval_mode is required: one of bypass, ask, rules");

        // A model ref without an instance, and one naming none configured: the message lists
        // the configured instances; `steps` keeps only code and path.
        let e = refusal(
            &h,
            json!({"approval_mode": "bypass", "steps": [step("gpt4")]}),
            "invalid_steps",
        )
        .await;
        assert_eq!(
            message(&e),
            "the steps were refused: unknown_provider at run.steps[0].model: \"gpt4\" is not \
             <instance>/<model>; the configured instances are: scripted (for example scripted/echo)"
        );
        assert_eq!(
            e["steps"],
            json!([{"code": "unknown_provider", "path": "run.steps[0].model"}])
        );
        let e = refusal(
            &h,
            json!({"approval_mode": "bypass", "steps": [step("openai/gpt-4o")]}),
            "invalid_steps",
        )
        .await;
        assert!(
            message(&e).ends_with(
                "no provider instance is named \"openai\"; the configured ones are: scripted \
                 ([providers.<name>] in nexus.toml)"
            ),
            "{e}"
        );

        // kernel_tools: the name refused, and its canonical spelling when it is a wire name.
        let tools = |names: Value| {
            json!({"approval_mode": "bypass", "steps": [
                {"model": {"prompt": "hello", "model": "scripted/echo", "kernel_tools": names}}]})
        };
        let e = refusal(&h, tools(json!(["nexus.tools.nope"])), "invalid_steps").await;
        assert!(
            message(&e).contains("\"nexus.tools.nope\" is not the canonical name"),
            "{e}"
        );
        assert!(message(&e).contains("GET /agent_api/v1/tools"), "{e}");
        let e = refusal(&h, tools(json!(["runners_list"])), "invalid_steps").await;
        assert!(
            message(&e).ends_with(
                "\"runners_list\" is not the canonical name of a live kernel tool: write \"nexus.runners.list\""
            ),
            "{e}"
        );
    }
}
