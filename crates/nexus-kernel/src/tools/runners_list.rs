//! `runners_list` (`nexus.runners.list`, kernel-tools.md §13): the accepted runner environment
//! of the calling execution, read from its frozen `environment` only.

use serde_json::{Map, Value, json};

use super::params::{self, Params};
use super::{KernelToolOutcome, ToolContext};

/// `runners_list {}`: any key is refused (an input that is no object has none).
fn parse(input: &Value) -> Result<(), KernelToolOutcome> {
    match Params::lenient("runners_list", input).unknown_key(&[]) {
        Some(key) => Err(params::invalid(&format!(
            "`{key}` is not a parameter of runners_list, which takes no arguments; call it with {{}}"
        ))),
        None => Ok(()),
    }
}

/// Runs `runners_list` over the frozen environment.
pub(crate) fn run(input: &Value, ctx: &ToolContext<'_>) -> KernelToolOutcome {
    if let Err(refusal) = parse(input) {
        return refusal;
    }
    let env = ctx.environment;
    let current = match env.get("default_runner_executor_public_id") {
        Some(Value::String(s)) => Value::String(s.clone()),
        _ => Value::Null,
    };
    let runners: Vec<Value> = env
        .get("runner_candidates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let mut r = Map::new();
            r.insert(
                "runner_executor_public_id".into(),
                c.get("runner_executor_public_id").cloned().unwrap_or(Value::Null),
            );
            r.insert(
                "display_name".into(),
                c.get("display_name").cloned().unwrap_or(Value::Null),
            );
            r.insert(
                "environment".into(),
                c.get("environment")
                    .filter(|e| e.is_object())
                    .cloned()
                    .unwrap_or_else(|| json!({})),
            );
            Value::Object(r)
        })
        .collect();
    let body = json!({
        "current_runner_executor_public_id": current,
        "runners": runners,
    });
    KernelToolOutcome::json_text(&body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(env: &Value) -> ToolContext<'_> {
        ToolContext {
            tool_definitions: &[],
            environment: env,
            skills: &[],
            callable: "runners_list",
        }
    }

    #[test]
    fn lists_candidates_in_order_with_the_frozen_default() {
        let env = json!({
            "default_runner_executor_public_id": "0190aaaa-0000-7000-8000-000000000001",
            "executors": [],
            "runner_candidates": [
                {"runner_executor_public_id": "0190aaaa-0000-7000-8000-000000000002", "display_name": "b", "environment": {"os": "linux"}},
                {"runner_executor_public_id": "0190aaaa-0000-7000-8000-000000000001", "display_name": "a", "environment": {}}
            ]
        });
        let out = run(&json!({}), &ctx(&env));
        assert!(!out.is_error);
        assert_eq!(
            out.content.as_str().unwrap(),
            r#"{"current_runner_executor_public_id":"0190aaaa-0000-7000-8000-000000000001","runners":[{"runner_executor_public_id":"0190aaaa-0000-7000-8000-000000000002","display_name":"b","environment":{"os":"linux"}},{"runner_executor_public_id":"0190aaaa-0000-7000-8000-000000000001","display_name":"a","environment":{}}]}"#
        );
    }

    #[test]
    fn null_default_and_empty_environment() {
        let env = json!({});
        let out = run(&json!({}), &ctx(&env));
        assert_eq!(
            out.content.as_str().unwrap(),
            r#"{"current_runner_executor_public_id":null,"runners":[]}"#
        );
    }

    #[test]
    fn any_key_is_parameter_invalid() {
        let env = json!({});
        let out = run(&json!({"x": 1}), &ctx(&env));
        assert!(out.is_error);
        assert!(out.content.as_str().unwrap().starts_with("parameter_invalid: `x`"));
        // An input that is not an object has no keys to refuse.
        assert!(parse(&json!("x")).is_ok() && parse(&json!({})).is_ok());
    }
}
