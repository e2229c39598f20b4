//! A server's `tools/list` as announced entries: the served name, the derived profile, the MCP
//! `inputSchema` and a description a model can read.

use std::collections::{BTreeMap, BTreeSet};

use nexus_sdk::runner::ToolSpec;
use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

use super::naming::{Collision, Origin, served_name};
use super::profile;
use crate::config::McpServer;

/// One bridged tool: the name the server knows it by and the entry rho announces.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgedTool {
    /// The tool's name on its server.
    pub mcp_name: String,
    /// The announced entry (before the config's overrides).
    pub spec: ToolSpec,
}

/// The entry for one listed tool.
pub fn bridged(server: &McpServer, tool: &Tool) -> BridgedTool {
    let mut spec = ToolSpec::new(
        served_name(&server.name, &tool.name),
        profile::derive(server.trusted, tool.annotations.as_ref()),
    );
    spec.description = Some(description(&server.name, tool));
    spec.input_schema = input_schema(&server.name, &tool.name, &tool.input_schema);
    BridgedTool {
        mcp_name: tool.name.to_string(),
        spec,
    }
}

/// The MCP description, else its title, else a sentence naming the tool: a bridged tool is
/// always offered to models (an entry without a description would be operator-only).
fn description(server: &str, tool: &Tool) -> String {
    let annotated_title = tool.annotations.as_ref().and_then(|a| a.title.as_deref());
    [tool.description.as_deref(), tool.title.as_deref(), annotated_title]
        .into_iter()
        .flatten()
        .find(|text| !text.trim().is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("The `{}` tool of the MCP server `{server}`.", tool.name))
}

/// The MCP `inputSchema` with `"type": "object"` ensured. A schema that declares another type
/// breaks the MCP contract and would make the kernel refuse the whole announcement, so that
/// tool is announced without a schema (operator-only) instead.
fn input_schema(server: &str, tool: &str, schema: &JsonObject) -> Option<Value> {
    let mut schema = schema.clone();
    match schema.get("type") {
        None => {
            schema.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            tracing::warn!(
                server, tool, declared = %other,
                "an MCP tool's inputSchema is not an object schema; announcing it without one (operator-only)"
            );
            return None;
        }
    }
    Some(Value::Object(schema))
}

/// Keeps the tools whose served names are free: not in `taken` (other servers' names) and
/// not shared within `tools`. Every tool in a clash is left out, and each clash is returned.
pub fn admit(
    server: &str,
    tools: Vec<BridgedTool>,
    taken: &BTreeMap<String, Origin>,
) -> (Vec<BridgedTool>, Vec<Collision>) {
    let mut clashes = Vec::new();
    let mut first: BTreeMap<&str, &BridgedTool> = BTreeMap::new();
    let mut clashing: BTreeSet<String> = BTreeSet::new();
    for tool in &tools {
        let origin = Origin {
            server: server.to_owned(),
            tool: tool.mcp_name.clone(),
        };
        if let Some(other) = taken.get(&tool.spec.name) {
            clashes.push(Collision {
                served: tool.spec.name.clone(),
                first: other.clone(),
                second: origin,
            });
            clashing.insert(tool.spec.name.clone());
        } else if let Some(earlier) = first.get(tool.spec.name.as_str()) {
            clashes.push(Collision {
                served: tool.spec.name.clone(),
                first: Origin {
                    server: server.to_owned(),
                    tool: earlier.mcp_name.clone(),
                },
                second: origin,
            });
            clashing.insert(tool.spec.name.clone());
        } else {
            first.insert(&tool.spec.name, tool);
        }
    }
    let kept = tools.into_iter().filter(|t| !clashing.contains(&t.spec.name)).collect();
    (kept, clashes)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use nexus_sdk::runner::{EffectKind, EffectScope, Idempotency};
    use serde_json::json;

    use super::*;

    fn server(name: &str, trusted: bool) -> McpServer {
        McpServer {
            name: name.into(),
            command: "x".into(),
            args: vec![],
            env: BTreeMap::new(),
            trusted,
        }
    }

    fn tool(value: serde_json::Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn an_entry_carries_the_served_name_schema_and_description() {
        let t = tool(json!({
            "name": "get-sum", "title": "Get Sum", "description": "Adds two numbers",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}},
            "annotations": {"readOnlyHint": true, "openWorldHint": false, "idempotentHint": true}
        }));
        let b = bridged(&server("everything", false), &t);
        assert_eq!(b.mcp_name, "get-sum");
        assert_eq!(b.spec.name, "everything_get-sum");
        assert_eq!(b.spec.description.as_deref(), Some("Adds two numbers"));
        assert_eq!(
            b.spec.input_schema,
            Some(json!({"type": "object", "properties": {"a": {"type": "number"}}}))
        );
        assert_eq!(b.spec.effect_profile, profile::FAIL_CLOSED);
        assert_eq!(b.spec.timeout_ms, None);
        let trusted = bridged(&server("everything", true), &t).spec.effect_profile;
        assert_eq!(
            (
                trusted.kind,
                trusted.destructive,
                trusted.effect_scope,
                trusted.idempotency
            ),
            (EffectKind::ReadOnly, false, EffectScope::Closed, Idempotency::Intrinsic)
        );
    }

    #[test]
    fn a_missing_type_is_added_and_a_wrong_one_drops_the_schema() {
        let t = tool(json!({"name": "t", "description": "d", "inputSchema": {"properties": {}}}));
        assert_eq!(
            bridged(&server("s", false), &t).spec.input_schema,
            Some(json!({"properties": {}, "type": "object"}))
        );
        let t = tool(json!({"name": "t", "description": "d", "inputSchema": {"type": "array"}}));
        assert_eq!(bridged(&server("s", false), &t).spec.input_schema, None);
    }

    #[test]
    fn the_description_falls_back_to_the_title_then_a_sentence() {
        let t = tool(json!({"name": "t", "title": "A Title", "description": "  ", "inputSchema": {"type": "object"}}));
        assert_eq!(
            bridged(&server("s", false), &t).spec.description.as_deref(),
            Some("A Title")
        );
        let t = tool(json!({"name": "t", "inputSchema": {"type": "object"}, "annotations": {"title": "Annotated"}}));
        assert_eq!(
            bridged(&server("s", false), &t).spec.description.as_deref(),
            Some("Annotated")
        );
        let t = tool(json!({"name": "t", "inputSchema": {"type": "object"}}));
        assert_eq!(
            bridged(&server("s", false), &t).spec.description.as_deref(),
            Some("The `t` tool of the MCP server `s`.")
        );
    }

    #[test]
    fn admission_leaves_out_every_tool_in_a_clash() {
        let s = server("s", false);
        let tools: Vec<BridgedTool> = ["a.b", "ok", "a_b", "taken"]
            .iter()
            .map(|name| bridged(&s, &tool(json!({"name": name, "inputSchema": {"type": "object"}}))))
            .collect();
        let mut taken = BTreeMap::new();
        let other = Origin {
            server: "s_taken".into(),
            tool: "x".into(),
        };
        taken.insert("s_taken".to_owned(), other.clone());
        let (kept, clashes) = admit("s", tools, &taken);
        assert_eq!(
            kept.iter().map(|t| t.spec.name.as_str()).collect::<Vec<_>>(),
            vec!["s_ok"]
        );
        assert_eq!(clashes.len(), 2);
        assert_eq!(clashes[0].served, "s_a_b");
        assert_eq!(clashes[1].first, other);
    }
}
