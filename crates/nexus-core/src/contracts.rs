//! The contract pack `contracts/nexus/v1/tools.json` (registry.md §8), rendered by the same
//! renderer the catalog route uses. `nexus contracts generate` writes it; the drift test and
//! `nexus contracts check` compare it byte for byte.

use serde_json::{Value, json};

use crate::registry;

/// Where the pack lives, relative to the repository root.
pub const TOOLS_PACK_PATH: &str = "contracts/nexus/v1/tools.json";

/// The pack, as pretty-printed JSON with a trailing newline.
pub fn tools_pack() -> String {
    let delegate = registry::resolve_canonical("nexus.graph.delegate_task")
        .expect("delegate_task is registered")
        .catalog_entry();
    let pack = json!({
        "listing_envelope": ["tools"],
        "entry_keys": ["canonical_name", "name", "effect_profile", "definition", "template"],
        "valid_listing_fixture": { "tools": [delegate] },
        "valid_assembly_fixture": assembly_fixture(),
        "unknown_field_behavior": "ignore",
    });
    let mut out = serde_json::to_string_pretty(&pack).expect("the pack serializes");
    out.push('\n');
    out
}

/// A `POST /agent_api/v1/tools/assembly` response with one imported runner tool: the runner
/// `build-mac` announces `read`, is selected and a candidate, and `kernel_tools` is `[]`, so the
/// response shows `read` routed with `defer_loading: true` and the runner's environment.
fn assembly_fixture() -> Value {
    use crate::declaration::{AssemblyInput, RunnerFacts, assemble};
    let runner = uuid::Uuid::parse_str("0190a000-0000-7000-8000-000000000001").expect("a UUID");
    let input = AssemblyInput {
        entries: json!([]),
        kernel_tools: json!([]),
        runner_executor_public_ids: json!([runner.to_string()]),
        runner_tool_names: Value::Null,
        default_runner_executor_public_id: Some(runner),
        runners: vec![RunnerFacts {
            public_id: runner,
            display_name: "build-mac".into(),
            eligible: true,
            served_tools: json!([{
                "name": "read",
                "effect_profile": {"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"},
                "description": "Read a file from the runner's workspace.",
                "input_schema": {
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "The file to read."}},
                    "required": ["path"]
                }
            }]),
            environment: json!({"os": "macos"}),
            documents: json!([]),
        }],
        ..AssemblyInput::default()
    };
    assemble(&input).expect("the fixture assembles").to_response_json()
}
