//! The declaration doors over HTTP (declarations.md §2–§7, §12): `PUT
//! /agent_api/v1/profile/configuration`, `GET /agent_api/v1/profile` and `POST
//! /agent_api/v1/tools/assembly`. Every refusal is checked by status, code and — for
//! `validation_failed` — `error.reason` and `error.path`.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses};
use nexus_core::bounds;
use nexus_kernel::admin::MemberSpec;
use nexus_store::prelude::*;
use nexus_store::{Announcement, AssignmentScope, MemberKind};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

const PUT_PATH: &str = "/agent_api/v1/profile/configuration";
const PROFILE_PATH: &str = "/agent_api/v1/profile";
const ASSEMBLY_PATH: &str = "/agent_api/v1/tools/assembly";
const TOOLS_PATH: &str = "/agent_api/v1/tools";

const READ_PROFILE: &str = r#"{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}"#;

// ---- helpers ---------------------------------------------------------------------------------

/// The catalog `definition` of a kernel tool.
fn def(canonical: &str) -> Value {
    nexus_core::registry::resolve_canonical(canonical)
        .unwrap_or_else(|| panic!("{canonical} is a kernel tool"))
        .definition()
        .clone()
}

/// The flat form of a nested definition: `{type, name, description, parameters}`.
fn flat(nested: &Value) -> Value {
    let f = &nested["function"];
    json!({
        "type": "function",
        "name": f["name"],
        "description": f["description"],
        "parameters": f["parameters"],
    })
}

/// `value` with `key` set (or added at the end) on the object at `pointer`.
fn with(mut value: Value, pointer: &str, key: &str, new: Value) -> Value {
    value
        .pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("{pointer} is an object"))
        .insert(key.to_string(), new);
    value
}

/// A plain function entry (shape 1).
fn function(name: &str) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": format!("The {name} tool."),
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
        }
    })
}

/// A runner-routed function entry (shape 2).
fn routed(name: &str, runner: &str, tool_name: &str) -> Value {
    with(
        function(name),
        "",
        "route",
        json!({"kind": "runner", "runner_executor_public_id": runner, "tool_name": tool_name}),
    )
}

/// `{approval_mode: "ask", tool_definitions: entries}`.
fn tools(entries: Value) -> Value {
    json!({"approval_mode": "ask", "tool_definitions": entries})
}

fn agent_alias() -> Value {
    json!({
        "name": "Agent",
        "canonical": "nexus.graph.delegate_task",
        "params": {
            "run_in_background": {
                "maps_to": "wait",
                "invert": true,
                "description": "false: block until the branch finishes and return its final message."
            }
        }
    })
}

fn bytes(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

fn callables(entries: &Value) -> Vec<String> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e.pointer("/function/name")
                .or_else(|| e.get("name"))
                .or_else(|| e.get("type"))
                .and_then(Value::as_str)
                .unwrap()
                .to_string()
        })
        .collect()
}

fn entry<'a>(entries: &'a Value, callable: &str) -> &'a Value {
    entries
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e.pointer("/function/name").or_else(|| e.get("name")) == Some(&json!(callable)))
        .unwrap_or_else(|| panic!("{callable} in {entries}"))
}

async fn put(h: &Harness, configuration: Value) -> Reply {
    put_body(h, &h.agent_token(), json!({ "configuration": configuration })).await
}

async fn put_body(h: &Harness, token: &str, body: Value) -> Reply {
    h.json(Method::PUT, PUT_PATH, Some(token), &body).await
}

/// An assembly preview selecting runner `id`, as the member holding `token`.
async fn select(h: &Harness, token: String, id: &str) -> Reply {
    let body = json!({ "default_runner_executor_public_id": id });
    h.json(Method::POST, ASSEMBLY_PATH, Some(&token), &body).await
}

async fn assembly(h: &Harness, body: Value) -> Reply {
    h.json(Method::POST, ASSEMBLY_PATH, Some(&h.agent_token()), &body).await
}

async fn stored_configuration(h: &Harness) -> Value {
    let reply = h.get(PROFILE_PATH, Some(&h.agent_token())).await;
    assert_eq!(reply.status, StatusCode::OK);
    reply.json()["configuration"].clone()
}

fn show(reply: &Reply) -> String {
    String::from_utf8_lossy(&reply.bytes[..reply.bytes.len().min(600)]).into_owned()
}

/// Asserts a refusal by status and code, with the envelope's `message`.
fn assert_refused(reply: &Reply, status: StatusCode, code: &str, what: &str) {
    assert_eq!(reply.status, status, "{what}: {}", show(reply));
    assert_eq!(reply.code(), code, "{what}: {}", show(reply));
    assert!(reply.json()["error"]["message"].is_string(), "{what}");
}

/// Asserts 422 `validation_failed` with `reason` and `path`.
fn assert_validation(reply: &Reply, reason: &str, path: &str, what: &str) {
    assert_refused(reply, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed", what);
    let error = &reply.json()["error"];
    assert_eq!(error["reason"], json!(reason), "{what}: {error}");
    assert_eq!(error["path"], json!(path), "{what}: {error}");
}

fn assert_ok(reply: &Reply, what: &str) -> Value {
    assert_eq!(reply.status, StatusCode::OK, "{what}: {}", show(reply));
    reply.json()
}

fn runner_id(h: &Harness) -> String {
    h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string()
}

/// Stores an announcement for the executor `public_id` (tools are sorted by name, as the
/// announcement door stores them).
async fn announce(h: &Harness, public_id: &str, served: Vec<Value>, environment: Value) {
    announce_with_documents(h, public_id, served, environment, json!([])).await;
}

async fn announce_with_documents(
    h: &Harness,
    public_id: &str,
    mut served: Vec<Value>,
    environment: Value,
    documents: Value,
) {
    served.sort_by(|a, b| a["name"].as_str().unwrap().cmp(b["name"].as_str().unwrap()));
    let executor = h
        .kernel
        .store
        .executor_by_public_id(Uuid::parse_str(public_id).unwrap())
        .await
        .unwrap()
        .expect("the executor exists");
    let announcement = Announcement {
        served_tools: bytes(&Value::Array(served)),
        environment: bytes(&environment),
        served_documents: bytes(&documents),
    };
    h.kernel
        .store
        .put_announcement(executor.id, &announcement, nexus_kernel::time::now_ms())
        .await
        .unwrap();
}

/// A model-describable announcement (description and input_schema).
fn describable(name: &str) -> Value {
    json!({
        "name": name,
        "effect_profile": serde_json::from_str::<Value>(READ_PROFILE).unwrap(),
        "description": format!("Serves {name}."),
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    })
}

/// An operator-only announcement (no description).
fn operator_only(name: &str) -> Value {
    json!({
        "name": name,
        "effect_profile": serde_json::from_str::<Value>(READ_PROFILE).unwrap(),
        "timeout_ms": 1000,
        "input_schema": {"type": "object"},
    })
}

/// The import entry §7.2 step 4 builds.
fn import_entry(callable: &str, runner: &str, served: &Value) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": callable,
            "description": served["description"],
            "parameters": served["input_schema"],
        },
        "route": {"kind": "runner", "runner_executor_public_id": runner, "tool_name": served["name"]},
        "defer_loading": true,
    })
}

/// The collision callable: first 49 characters, `__`, 12 hex digits of
/// SHA-256(`<runner lowercase>` + NUL + `<served>`).
fn collision_callable(runner: &str, served: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(runner.to_lowercase().as_bytes());
    hasher.update([0u8]);
    hasher.update(served.as_bytes());
    let digest = hex::encode(hasher.finalize());
    let head: String = served.chars().take(49).collect();
    format!("{head}__{}", &digest[..12])
}

async fn human(h: &Harness, handle: &str) {
    h.kernel
        .admin()
        .create_member(MemberSpec {
            kind: MemberKind::Human,
            handle: handle.into(),
            display_name: None,
            steward: None,
            standing: None,
        })
        .await
        .unwrap();
}

async fn runner(h: &Harness, name: &str, scope: AssignmentScope, manager: &str) -> String {
    let (row, _token) = h.kernel.admin().create_runner(name, scope, manager).await.unwrap();
    row.public_id.to_string()
}

/// A tool_definitions set whose canonical JSON passes 1,048,576 bytes while the raw body stays
/// well under the 2 MiB request bound.
fn oversized_set() -> Value {
    let mut big = function("big");
    big["function"]["description"] = json!("d".repeat(1_100_000));
    json!([big])
}

// ---- PUT /agent_api/v1/profile/configuration ---------------------------------------------------

#[tokio::test]
async fn put_refuses_a_human() {
    for h in harnesses().await {
        let body = json!({"configuration": {"instructions": "hi"}});
        let reply = put_body(&h, &h.human_token(), body).await;
        assert_refused(&reply, StatusCode::FORBIDDEN, "not_agent", h.dialect);
        // The agent's identical body is accepted.
        let reply = put(&h, json!({"instructions": "hi"})).await;
        assert_ok(&reply, h.dialect);
    }
}

#[tokio::test]
async fn put_needs_a_configuration_object() {
    for h in harnesses().await {
        let token = h.agent_token();
        for (what, body) in [
            ("absent", json!({})),
            ("other key only", json!({"tool_definitions": []})),
            ("misspelled", json!({"Configuration": {}})),
            ("null", json!({"configuration": null})),
            ("array", json!({"configuration": []})),
            ("string", json!({"configuration": "{}"})),
            ("number", json!({"configuration": 1})),
        ] {
            let reply = put_body(&h, &token, body).await;
            assert_refused(&reply, StatusCode::BAD_REQUEST, "parameter_missing", what);
        }
        // An empty object is a valid whole replacement.
        assert_ok(&put(&h, json!({})).await, "empty configuration");
    }
}

/// One PUT refusal: (what, configuration, reason, path).
type Case = (&'static str, Value, &'static str, &'static str);

async fn run_cases(h: &Harness, cases: Vec<Case>) {
    for (what, configuration, reason, path) in cases {
        let reply = put(h, configuration).await;
        assert_validation(&reply, reason, path, &format!("{what} on {}", h.dialect));
    }
}

#[tokio::test]
async fn put_refuses_invalid_grammar() {
    let uuid = Uuid::new_v4().to_string();
    let long = "a".repeat(129);
    let cases: Vec<Case> = vec![
        (
            "defer_loading string",
            tools(json!([with(function("f"), "", "defer_loading", json!("yes"))])),
            "invalid",
            "/configuration/tool_definitions/0/defer_loading",
        ),
        (
            "defer_loading null",
            tools(json!([
                function("a"),
                with(function("f"), "", "defer_loading", Value::Null)
            ])),
            "invalid",
            "/configuration/tool_definitions/1/defer_loading",
        ),
        (
            "defer_loading on an alias",
            tools(json!([{"name": "W", "canonical": "nexus.graph.wait", "defer_loading": 1}])),
            "invalid",
            "/configuration/tool_definitions/0/defer_loading",
        ),
        (
            "defer_loading on a plain kernel entry",
            tools(json!([with(
                def("nexus.graph.wait"),
                "",
                "defer_loading",
                json!("true")
            )])),
            "invalid",
            "/configuration/tool_definitions/0/defer_loading",
        ),
        (
            "empty nested name",
            tools(json!([function("")])),
            "invalid",
            "/configuration/tool_definitions/0/function/name",
        ),
        (
            "empty flat name",
            tools(json!([flat(&function(""))])),
            "invalid",
            "/configuration/tool_definitions/0/name",
        ),
        (
            "empty alias name",
            tools(json!([{"name": "", "canonical": "nexus.graph.wait"}])),
            "invalid",
            "/configuration/tool_definitions/0/name",
        ),
        (
            "name of 129 characters",
            tools(json!([function("ok"), function(&long)])),
            "invalid",
            "/configuration/tool_definitions/1/function/name",
        ),
        (
            "name with NUL",
            tools(json!([function("a\u{0}b")])),
            "invalid",
            "/configuration/tool_definitions/0/function/name",
        ),
        (
            "name not a string",
            tools(json!([{"type": "function", "function": {"name": 7, "parameters": {}}}])),
            "invalid",
            "/configuration/tool_definitions/0/function/name",
        ),
        (
            "entry not an object",
            tools(json!(["read"])),
            "invalid",
            "/configuration/tool_definitions/0",
        ),
        (
            "tool_definitions not an array",
            tools(json!({"read": {}})),
            "invalid",
            "/configuration/tool_definitions",
        ),
        (
            "kernel_tools element not a string",
            json!({"approval_mode": "ask", "kernel_tools": ["nexus.graph.wait", 2]}),
            "invalid",
            "/configuration/kernel_tools/1",
        ),
        (
            "kernel_tools not an array",
            json!({"approval_mode": "ask", "kernel_tools": "nexus.graph.wait"}),
            "invalid",
            "/configuration/kernel_tools",
        ),
        (
            "kernel_tools unknown canonical",
            json!({"approval_mode": "ask", "kernel_tools": ["nexus.graph.nope"]}),
            "invalid",
            "/configuration/kernel_tools/0",
        ),
        (
            "kernel_tools duplicate",
            json!({"approval_mode": "ask", "kernel_tools": ["nexus.graph.wait", "nexus.graph.wait"]}),
            "invalid",
            "/configuration/kernel_tools/1",
        ),
        (
            "kernel_tools family wildcard",
            json!({"approval_mode": "ask", "kernel_tools": ["nexus.graph.*"]}),
            "invalid",
            "/configuration/kernel_tools/0",
        ),
        (
            "kernel_tools bare wildcard",
            json!({"approval_mode": "ask", "kernel_tools": ["nexus.human.ask", "*"]}),
            "invalid",
            "/configuration/kernel_tools/1",
        ),
        (
            "kernel_tools wire spelling",
            json!({"approval_mode": "ask", "kernel_tools": ["delegate_task"]}),
            "invalid",
            "/configuration/kernel_tools/0",
        ),
        (
            "kernel_tools wire spelling of memory",
            json!({"approval_mode": "ask", "kernel_tools": ["nexus.memory.read", "memory_read"]}),
            "invalid",
            "/configuration/kernel_tools/1",
        ),
        (
            "malformed runner id",
            json!({"approval_mode": "ask", "runner_executor_public_ids": ["not-a-uuid"]}),
            "invalid",
            "/configuration/runner_executor_public_ids/0",
        ),
        (
            "runner id not a string",
            json!({"approval_mode": "ask", "runner_executor_public_ids": [uuid, 5]}),
            "invalid",
            "/configuration/runner_executor_public_ids/1",
        ),
        (
            "runner id listed twice, differing in case",
            json!({"approval_mode": "ask", "runner_executor_public_ids": [uuid, uuid.to_uppercase()]}),
            "invalid",
            "/configuration/runner_executor_public_ids/1",
        ),
        (
            "runner ids not an array",
            json!({"approval_mode": "ask", "runner_executor_public_ids": uuid}),
            "invalid",
            "/configuration/runner_executor_public_ids",
        ),
        (
            "runner_tool_names empty name",
            json!({"approval_mode": "ask", "runner_tool_names": [""]}),
            "invalid",
            "/configuration/runner_tool_names/0",
        ),
        (
            "runner_tool_names duplicate",
            json!({"approval_mode": "ask", "runner_tool_names": ["read", "grep", "read"]}),
            "invalid",
            "/configuration/runner_tool_names/2",
        ),
        (
            "runner_tool_names not strings",
            json!({"approval_mode": "ask", "runner_tool_names": [7]}),
            "invalid",
            "/configuration/runner_tool_names/0",
        ),
        (
            "runner_tool_names 129 characters",
            json!({"approval_mode": "ask", "runner_tool_names": [long]}),
            "invalid",
            "/configuration/runner_tool_names/0",
        ),
        (
            "runner_tool_names not an array",
            json!({"approval_mode": "ask", "runner_tool_names": "read"}),
            "invalid",
            "/configuration/runner_tool_names",
        ),
        (
            "approval_mode unknown word",
            json!({"approval_mode": "sometimes"}),
            "invalid",
            "/configuration/approval_mode",
        ),
    ];
    for h in harnesses().await {
        run_cases(&h, cases.clone()).await;
        // The boundaries are accepted.
        let ok = [
            tools(json!([function(&"a".repeat(128))])),
            json!({"approval_mode": "ask", "runner_tool_names": ["r".repeat(128)]}),
            json!({"approval_mode": "ask", "kernel_tools": ["nexus.graph.wait", "nexus.memory.read"]}),
            tools(json!([with(function("f"), "", "defer_loading", json!(false))])),
        ];
        for configuration in ok {
            assert_ok(&put(&h, configuration.clone()).await, &configuration.to_string());
        }
    }
}

#[tokio::test]
async fn put_refuses_duplicate_callables() {
    let cases: Vec<Case> = vec![
        (
            "two functions",
            tools(json!([function("x"), function("y"), function("x")])),
            "duplicate_tool_name",
            "/configuration/tool_definitions/2",
        ),
        (
            "nested and flat",
            tools(json!([function("x"), flat(&function("x"))])),
            "duplicate_tool_name",
            "/configuration/tool_definitions/1",
        ),
        (
            "plain kernel and identity alias",
            tools(json!([def("nexus.graph.wait"), {"name": "wait", "canonical": "nexus.graph.wait"}])),
            "duplicate_tool_name",
            "/configuration/tool_definitions/1",
        ),
        (
            "alias and function",
            tools(json!([agent_alias(), function("Agent")])),
            "duplicate_tool_name",
            "/configuration/tool_definitions/1",
        ),
        (
            "provider tools by type",
            tools(json!([{"type": "web_search_20250305"}, {"type": "web_search_20250305"}])),
            "duplicate_tool_name",
            "/configuration/tool_definitions/1",
        ),
        (
            "provider tool name and a function",
            tools(json!([{"type": "web_search_20250305", "name": "web_search"}, function("web_search")])),
            "duplicate_tool_name",
            "/configuration/tool_definitions/1",
        ),
        (
            // Row 1 is checked for the whole set first: a later duplicate wins over an
            // earlier grammar failure.
            "duplicate before per-entry grammar",
            tools(json!([{"name": "A", "canonical": "nexus.nope"}, function("x"), function("x")])),
            "duplicate_tool_name",
            "/configuration/tool_definitions/2",
        ),
    ];
    for h in harnesses().await {
        run_cases(&h, cases.clone()).await;
        let distinct = tools(json!([
            {"type": "web_search_20250305", "name": "web_search"},
            {"type": "web_search_20250305", "name": "web_search_2"},
            function("x"),
        ]));
        assert_ok(&put(&h, distinct).await, "distinct names");
    }
}

#[tokio::test]
async fn put_holds_kernel_entries_to_the_catalog_bytes() {
    let delegate = def("nexus.graph.delegate_task");
    let changed_prose = {
        let mut d = delegate.clone();
        let text = d["function"]["description"]
            .as_str()
            .unwrap()
            .replace("bounded", "limited");
        d["function"]["description"] = json!(text);
        d
    };
    let reordered = {
        let mut d = delegate.clone();
        let props = d["function"]["parameters"]["properties"].as_object().unwrap();
        let mut reversed = Map::new();
        for (k, v) in props.iter().rev() {
            reversed.insert(k.clone(), v.clone());
        }
        d["function"]["parameters"]["properties"] = Value::Object(reversed);
        d
    };
    let cases: Vec<Case> = vec![
        (
            "changed prose",
            tools(json!([changed_prose])),
            "kernel_tool_redefined",
            "/configuration/tool_definitions/0",
        ),
        (
            "reordered properties",
            tools(json!([function("a"), reordered])),
            "kernel_tool_redefined",
            "/configuration/tool_definitions/1",
        ),
        (
            "added strict false",
            tools(json!([with(delegate.clone(), "/function", "strict", json!(false))])),
            "kernel_tool_redefined",
            "/configuration/tool_definitions/0",
        ),
        (
            "added strict at the top level",
            tools(json!([with(delegate.clone(), "", "strict", json!(true))])),
            "kernel_tool_redefined",
            "/configuration/tool_definitions/0",
        ),
        (
            "extra schema key",
            tools(json!([with(
                delegate.clone(),
                "/function/parameters",
                "$schema",
                json!("x")
            )])),
            "kernel_tool_redefined",
            "/configuration/tool_definitions/0",
        ),
        (
            "flat form with a changed description",
            tools(json!([with(
                flat(&delegate),
                "",
                "description",
                json!("Start a branch.")
            )])),
            "kernel_tool_redefined",
            "/configuration/tool_definitions/0",
        ),
        (
            "canonical spelling as a function callable",
            tools(json!([with(
                delegate.clone(),
                "/function",
                "name",
                json!("nexus.graph.delegate_task")
            )])),
            "kernel_tool_redefined",
            "/configuration/tool_definitions/0/function/name",
        ),
        (
            "alias with a function block that is not its render",
            tools(json!([{
                "name": "Agent",
                "canonical": "nexus.graph.delegate_task",
                "function": {"name": "Agent", "description": "Delegate.", "parameters": {"type": "object"}},
            }])),
            "kernel_tool_redefined",
            "/configuration/tool_definitions/0/function",
        ),
    ];
    for h in harnesses().await {
        run_cases(&h, cases.clone()).await;
        // The exact catalog definition is accepted nested, flat, and with defer_loading; a set
        // without aliases is stored with each entry's bytes exactly as given.
        let accepted = [
            delegate.clone(),
            flat(&delegate),
            with(delegate.clone(), "", "defer_loading", json!(true)),
            with(flat(&delegate), "", "defer_loading", json!(false)),
        ];
        for given in accepted {
            let reply = put(&h, tools(json!([given.clone(), function("zz")]))).await;
            let body = assert_ok(&reply, &given.to_string());
            let stored = &body["configuration"]["tool_definitions"];
            assert_eq!(callables(stored), ["delegate_task", "zz"], "{}", h.dialect);
            assert_eq!(bytes(&stored[0]), bytes(&given), "stored as given on {}", h.dialect);
        }
    }
}

#[tokio::test]
async fn put_refuses_bad_aliases() {
    let alias = |extra: Value| {
        let mut a = json!({"name": "Agent", "canonical": "nexus.graph.delegate_task"});
        for (k, v) in extra.as_object().unwrap() {
            a[k] = v.clone();
        }
        tools(json!([function("a"), a]))
    };
    let cases: Vec<Case> = vec![
        (
            "unknown canonical",
            alias(json!({"canonical": "nexus.graph.nope"})),
            "alias_canonical_unknown",
            "/configuration/tool_definitions/1/canonical",
        ),
        (
            "canonical not a string",
            alias(json!({"canonical": 5})),
            "alias_canonical_unknown",
            "/configuration/tool_definitions/1/canonical",
        ),
        (
            "canonical is a wildcard",
            alias(json!({"canonical": "nexus.graph.*"})),
            "alias_canonical_unknown",
            "/configuration/tool_definitions/1/canonical",
        ),
        (
            "name is another kernel tool's wire name",
            alias(json!({"name": "wait"})),
            "alias_name_reserved",
            "/configuration/tool_definitions/1/name",
        ),
        (
            "name is another kernel tool's canonical",
            alias(json!({"name": "nexus.human.ask"})),
            "alias_name_reserved",
            "/configuration/tool_definitions/1/name",
        ),
        (
            "description not a string",
            alias(json!({"description": ["x"]})),
            "invalid",
            "/configuration/tool_definitions/1/description",
        ),
        (
            "omit not an array",
            alias(json!({"omit": "wait"})),
            "invalid",
            "/configuration/tool_definitions/1/omit",
        ),
        (
            "omit names no kernel parameter",
            alias(json!({"omit": ["wait", "nope"]})),
            "alias_param_unknown",
            "/configuration/tool_definitions/1/omit/1",
        ),
        (
            "unknown maps_to",
            alias(json!({"params": {"bg": {"maps_to": "background"}}})),
            "alias_param_unknown",
            "/configuration/tool_definitions/1/params/bg/maps_to",
        ),
        (
            "missing maps_to",
            alias(json!({"params": {"bg": {"description": "x"}}})),
            "alias_param_unknown",
            "/configuration/tool_definitions/1/params/bg/maps_to",
        ),
        (
            "duplicate target",
            alias(json!({"params": {"a": {"maps_to": "wait"}, "b": {"maps_to": "wait"}}})),
            "alias_param_unknown",
            "/configuration/tool_definitions/1/params/b/maps_to",
        ),
        (
            "target in omit",
            alias(json!({"omit": ["wait"], "params": {"a": {"maps_to": "wait"}}})),
            "alias_param_unknown",
            "/configuration/tool_definitions/1/params/a/maps_to",
        ),
        (
            "shadowing an unmapped kernel parameter",
            alias(json!({"params": {"wait": {"maps_to": "prompt"}}})),
            "alias_param_unknown",
            "/configuration/tool_definitions/1/params/wait",
        ),
        (
            "params not an object",
            alias(json!({"params": ["wait"]})),
            "alias_param_unknown",
            "/configuration/tool_definitions/1/params",
        ),
        (
            "invert not a boolean",
            alias(json!({"params": {"bg": {"maps_to": "wait", "invert": "yes", "description": "d"}}})),
            "invalid",
            "/configuration/tool_definitions/1/params/bg/invert",
        ),
        (
            "parameter description not a string",
            alias(json!({"params": {"p": {"maps_to": "prompt", "description": 3}}})),
            "invalid",
            "/configuration/tool_definitions/1/params/p/description",
        ),
        (
            "invert of a string parameter",
            alias(json!({"params": {"p": {"maps_to": "prompt", "invert": true, "description": "d"}}})),
            "alias_invert_needs_boolean",
            "/configuration/tool_definitions/1/params/p/invert",
        ),
        (
            "invert without a description",
            alias(json!({"params": {"bg": {"maps_to": "wait", "invert": true}}})),
            "alias_param_description_required",
            "/configuration/tool_definitions/1/params/bg/description",
        ),
        (
            "invert with a blank description",
            alias(json!({"params": {"bg": {"maps_to": "wait", "invert": true, "description": "  "}}})),
            "alias_param_description_required",
            "/configuration/tool_definitions/1/params/bg/description",
        ),
        (
            "route on an alias",
            alias(
                json!({"route": {"kind": "runner", "runner_executor_public_id": Uuid::new_v4().to_string(), "tool_name": "x"}}),
            ),
            "invalid_tool_route",
            "/configuration/tool_definitions/1/route",
        ),
    ];
    for h in harnesses().await {
        run_cases(&h, cases.clone()).await;
        // Valid: the identity alias, an alias renaming in place, and an omit.
        for ok in [
            tools(json!([{"name": "skill", "canonical": "nexus.skill.load"}])),
            tools(json!([agent_alias()])),
            tools(json!([{"name": "spawn_agent", "canonical": "spawn", "omit": ["wait"]}])),
            tools(
                json!([{"name": "Agent", "canonical": "nexus.graph.delegate_task", "params": {"wait": {"maps_to": "wait"}}}]),
            ),
        ] {
            assert_ok(&put(&h, ok.clone()).await, &ok.to_string());
        }
    }
}

#[tokio::test]
async fn put_refuses_bad_routes() {
    let id = Uuid::new_v4().to_string();
    let route = |r: Value| tools(json!([with(function("deploy"), "", "route", r)]));
    let cases: Vec<Case> = vec![
        (
            "malformed runner id",
            route(json!({"kind": "runner", "runner_executor_public_id": "runner-1", "tool_name": "deploy"})),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route/runner_executor_public_id",
        ),
        (
            "runner id not a string",
            route(json!({"kind": "runner", "runner_executor_public_id": 5, "tool_name": "deploy"})),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route/runner_executor_public_id",
        ),
        (
            "tool_name is a kernel wire name",
            route(json!({"kind": "runner", "runner_executor_public_id": id, "tool_name": "delegate_task"})),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route/tool_name",
        ),
        (
            "tool_name is a kernel canonical",
            route(json!({"kind": "runner", "runner_executor_public_id": id, "tool_name": "nexus.graph.wait"})),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route/tool_name",
        ),
        (
            "tool_name is a memory wire name outside an import",
            route(json!({"kind": "runner", "runner_executor_public_id": id, "tool_name": "memory_read"})),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route/tool_name",
        ),
        (
            "empty tool_name",
            route(json!({"kind": "runner", "runner_executor_public_id": id, "tool_name": ""})),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route/tool_name",
        ),
        (
            "missing tool_name",
            route(json!({"kind": "runner", "runner_executor_public_id": id})),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route/tool_name",
        ),
        (
            "route kind is not runner",
            route(json!({"kind": "kernel", "runner_executor_public_id": id, "tool_name": "deploy"})),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route/kind",
        ),
        (
            "route not an object",
            route(json!("runner")),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route",
        ),
        (
            "route on a kernel wire callable",
            tools(json!([with(
                def("nexus.graph.wait"),
                "",
                "route",
                json!({"kind": "runner", "runner_executor_public_id": id, "tool_name": "wait2"})
            )])),
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route",
        ),
        (
            "missing runner id",
            route(json!({"kind": "runner", "tool_name": "deploy"})),
            "runner_target_required",
            "/configuration/tool_definitions/0/route/runner_executor_public_id",
        ),
        (
            "null runner id",
            route(json!({"kind": "runner", "runner_executor_public_id": null, "tool_name": "deploy"})),
            "runner_target_required",
            "/configuration/tool_definitions/0/route/runner_executor_public_id",
        ),
    ];
    for h in harnesses().await {
        run_cases(&h, cases.clone()).await;
        // Valid routes: a served name, `skill`, and a runner that does not exist (eligibility
        // is checked at acceptance, not by the writer).
        for tool_name in ["deploy", "skill"] {
            let ok = route(json!({"kind": "runner", "runner_executor_public_id": id, "tool_name": tool_name}));
            let body = assert_ok(&put(&h, ok).await, tool_name);
            assert_eq!(
                body["configuration"]["tool_definitions"][0]["route"]["tool_name"],
                json!(tool_name)
            );
        }
    }
}

#[tokio::test]
async fn put_requires_an_approval_mode_when_it_declares_tools() {
    let id = Uuid::new_v4().to_string();
    let cases: Vec<Case> = vec![
        (
            "explicit tools",
            json!({"tool_definitions": [function("f")]}),
            "approval_mode_required",
            "/configuration/approval_mode",
        ),
        (
            "explicit tools with a null mode",
            json!({"tool_definitions": [function("f")], "approval_mode": null}),
            "approval_mode_required",
            "/configuration/approval_mode",
        ),
        (
            "kernel_tools",
            json!({"kernel_tools": ["nexus.graph.wait"]}),
            "approval_mode_required",
            "/configuration/approval_mode",
        ),
        (
            "candidates importing everything",
            json!({"runner_executor_public_ids": [id]}),
            "approval_mode_required",
            "/configuration/approval_mode",
        ),
        (
            "candidates importing some",
            json!({"runner_executor_public_ids": [id], "runner_tool_names": ["read"]}),
            "approval_mode_required",
            "/configuration/approval_mode",
        ),
    ];
    for h in harnesses().await {
        run_cases(&h, cases.clone()).await;
        for ok in [
            json!({"kernel_tools": []}),
            json!({"tool_definitions": []}),
            json!({"runner_executor_public_ids": [id], "runner_tool_names": []}),
            json!({"runner_executor_public_ids": [], "runner_tool_names": null}),
            json!({"runner_tool_names": ["read"]}),
        ] {
            assert_ok(&put(&h, ok.clone()).await, &ok.to_string());
        }
        for mode in ["bypass", "ask", "rules"] {
            let body = assert_ok(
                &put(&h, json!({"kernel_tools": ["nexus.graph.wait"], "approval_mode": mode})).await,
                mode,
            );
            assert_eq!(body["configuration"]["approval_mode"], json!(mode));
        }
    }
}

#[tokio::test]
async fn put_checks_rules_model_and_instructions() {
    let cases: Vec<Case> = vec![
        (
            "rule verdict",
            json!({"approval_rules": [{"tool": "read", "verdict": "allow"}, {"tool": "*", "verdict": "maybe"}]}),
            "verdict_invalid",
            "/configuration/approval_rules/1/verdict",
        ),
        (
            "rules not a list",
            json!({"approval_rules": {"tool": "*", "verdict": "ask"}}),
            "not_a_list",
            "/configuration/approval_rules",
        ),
        (
            "rule unknown key",
            json!({"approval_rules": [{"tool": "*", "verdict": "ask", "when": "now"}]}),
            "unknown_key",
            "/configuration/approval_rules/0/when",
        ),
        (
            "rule without tool",
            json!({"approval_rules": [{"verdict": "ask"}]}),
            "tool_required",
            "/configuration/approval_rules/0/tool",
        ),
        (
            "unknown provider",
            json!({"default_model": "nope/x"}),
            "unknown_provider",
            "/configuration/default_model",
        ),
        (
            "no provider part",
            json!({"default_model": "echo"}),
            "unknown_provider",
            "/configuration/default_model",
        ),
        (
            "default_model not a string",
            json!({"default_model": 4}),
            "invalid",
            "/configuration/default_model",
        ),
        (
            "instructions one byte over the bound",
            json!({"instructions": "a".repeat(bounds::INSTRUCTIONS + 1)}),
            "invalid",
            "/configuration/instructions",
        ),
        (
            "instructions over the bound in bytes, not characters",
            json!({"instructions": "é".repeat(bounds::INSTRUCTIONS / 2 + 1)}),
            "invalid",
            "/configuration/instructions",
        ),
        (
            "instructions with NUL",
            json!({"instructions": "a\u{0}b"}),
            "invalid",
            "/configuration/instructions",
        ),
        (
            "instructions not a string",
            json!({"instructions": ["a"]}),
            "invalid",
            "/configuration/instructions",
        ),
    ];
    for h in harnesses().await {
        run_cases(&h, cases.clone()).await;
        let rules = json!([{"tool": "read|glob", "verdict": "allow"}, {"tool": "*", "verdict": "ask"}]);
        let body = assert_ok(
            &put(
                &h,
                json!({
                    "default_model": "scripted/echo",
                    "instructions": "é".repeat(bounds::INSTRUCTIONS / 2),
                    "approval_mode": "rules",
                    "approval_rules": rules,
                }),
            )
            .await,
            "accepted",
        );
        let conf = &body["configuration"];
        assert_eq!(conf["default_model"], json!("scripted/echo"));
        assert_eq!(conf["instructions"].as_str().unwrap().len(), bounds::INSTRUCTIONS);
        assert_eq!(conf["approval_rules"], rules);
    }
}

#[tokio::test]
async fn put_refuses_a_set_over_the_declaration_bound() {
    for h in harnesses().await {
        let configuration = tools(oversized_set());
        let raw = serde_json::to_vec(&json!({ "configuration": configuration })).unwrap();
        assert!(
            raw.len() > bounds::TOOL_DEFINITIONS && raw.len() < bounds::REQUEST_BODY,
            "{}",
            raw.len()
        );
        let reply = put(&h, configuration).await;
        assert_refused(&reply, StatusCode::PAYLOAD_TOO_LARGE, "content_too_large", h.dialect);
        // Just under the bound is stored.
        let mut fits = function("big");
        let room = bounds::TOOL_DEFINITIONS - nexus_core::jcs::to_string(&json!([fits])).len();
        fits["function"]["description"] = json!(format!("The big tool.{}", "d".repeat(room)));
        assert_eq!(
            nexus_core::jcs::to_string(&json!([fits])).len(),
            bounds::TOOL_DEFINITIONS
        );
        assert_ok(&put(&h, tools(json!([fits.clone()]))).await, "at the bound");
        fits["function"]["description"] = json!(format!("The big tool.{}", "d".repeat(room + 1)));
        let reply = put(&h, tools(json!([fits]))).await;
        assert_refused(&reply, StatusCode::PAYLOAD_TOO_LARGE, "content_too_large", "one past");
        // Nothing was stored by the refusals.
        let stored = stored_configuration(&h).await;
        assert_eq!(
            stored["tool_definitions"][0]["function"]["description"]
                .as_str()
                .unwrap()
                .len(),
            13 + room
        );
    }
}

#[tokio::test]
async fn a_put_is_read_back_rendered_and_sorted() {
    for h in harnesses().await {
        let candidate = Uuid::new_v4();
        let configuration = json!({
            "tool_definitions": [
                function("zeta"),
                def("nexus.graph.wait"),
                {"type": "web_search_20250305", "name": "web_search"},
                agent_alias(),
                function("alpha"),
            ],
            "kernel_tools": ["nexus.human.ask"],
            "runner_executor_public_ids": [candidate.to_string().to_uppercase()],
            "runner_tool_names": ["read"],
            "approval_mode": "ask",
            "approval_rules": [{"tool": "*", "verdict": "ask"}],
            "default_model": "scripted/echo",
            "instructions": "Be brief.",
            "ignored_key": true,
        });
        let put_reply = assert_ok(&put(&h, configuration).await, "put");
        let read = stored_configuration(&h).await;
        assert_eq!(put_reply["configuration"], read, "PUT answers with the profile read");
        assert_eq!(put_reply["member"]["kind"], json!("agent"));

        let keys: Vec<&str> = read.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "tool_definitions",
                "kernel_tools",
                "runner_executor_public_ids",
                "runner_tool_names",
                "approval_mode",
                "approval_rules",
                "default_model",
                "instructions",
            ]
        );
        let defs = &read["tool_definitions"];
        // Sorted by callable in byte order (upper case first).
        assert_eq!(callables(defs), ["Agent", "alpha", "wait", "web_search", "zeta"]);
        // The Agent alias renders run_in_background at wait's position, default inverted.
        let agent = entry(defs, "Agent");
        assert_eq!(agent["type"], json!("function"));
        assert_eq!(agent["canonical"], json!("nexus.graph.delegate_task"));
        assert_eq!(agent["params"], agent_alias()["params"]);
        let props = agent["function"]["parameters"]["properties"].as_object().unwrap();
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["prompt", "model", "lifetime", "wake", "run_in_background", "tools"]
        );
        assert_eq!(
            bytes(&props["run_in_background"]),
            bytes(&json!({
                "type": "boolean",
                "default": true,
                "description": "false: block until the branch finishes and return its final message."
            }))
        );
        assert_eq!(
            agent["function"]["parameters"]["required"],
            json!(["prompt"]),
            "required is kept"
        );
        // Other kernel text that spells delegate_task now reads Agent: the plain wait entry is
        // re-rendered with the spelling map, so its bytes differ from the catalog's.
        let wait = entry(defs, "wait");
        let wait_text = wait["function"]["description"].as_str().unwrap();
        assert!(wait_text.contains("started with Agent"), "{wait_text}");
        assert!(!wait_text.contains("delegate_task"), "{wait_text}");
        let agent_text = agent["function"]["description"].as_str().unwrap();
        assert!(agent_text.contains("call wait with the reference"), "{agent_text}");
        // Untouched entries keep their bytes.
        assert_eq!(bytes(entry(defs, "zeta")), bytes(&function("zeta")));
        // The import fields as stored: ids lowercase, kernel_tools not folded into the set.
        assert_eq!(read["kernel_tools"], json!(["nexus.human.ask"]));
        assert_eq!(read["runner_executor_public_ids"], json!([candidate.to_string()]));
        assert_eq!(read["runner_tool_names"], json!(["read"]));
        assert_eq!(read["approval_mode"], json!("ask"));
        assert_eq!(read["default_model"], json!("scripted/echo"));
        assert_eq!(read["instructions"], json!("Be brief."));

        // The render is idempotent: PUT the stored set back and read the same bytes. Its plain
        // wait entry now equals this set's own render (§3 rule 2), not the catalog's.
        let again = json!({"tool_definitions": defs, "approval_mode": "ask"});
        let reread = assert_ok(&put(&h, again).await, "re-put")["configuration"]["tool_definitions"].clone();
        assert_eq!(bytes(&reread), bytes(defs), "idempotent render on {}", h.dialect);

        // A second PUT replaces the whole configuration: omitted fields are cleared.
        assert_ok(&put(&h, json!({"instructions": "Only this."})).await, "replace");
        let read = stored_configuration(&h).await;
        assert_eq!(
            read,
            json!({
                "tool_definitions": [],
                "kernel_tools": null,
                "runner_executor_public_ids": null,
                "runner_tool_names": null,
                "approval_mode": null,
                "approval_rules": null,
                "default_model": null,
                "instructions": "Only this.",
            })
        );
        // A human's profile has no configuration.
        let human = h.get(PROFILE_PATH, Some(&h.human_token())).await.json();
        assert!(human.get("configuration").is_none(), "{human}");
    }
}

// ---- POST /agent_api/v1/tools/assembly ---------------------------------------------------------

#[tokio::test]
async fn assembly_refuses_a_human_and_bad_bodies() {
    for h in harnesses().await {
        let body = json!({"default_runner_executor_public_id": null});
        let reply = h.json(Method::POST, ASSEMBLY_PATH, Some(&h.human_token()), &body).await;
        assert_refused(&reply, StatusCode::FORBIDDEN, "not_agent", "human");
        assert_ok(&assembly(&h, body).await, "the agent's identical body");

        for (what, body) in [
            ("empty body", json!({})),
            ("configuration only", json!({"configuration": {}})),
            ("misspelled selector", json!({"default_runner_executor_id": null})),
            (
                "configuration null",
                json!({"default_runner_executor_public_id": null, "configuration": null}),
            ),
            (
                "configuration array",
                json!({"default_runner_executor_public_id": null, "configuration": []}),
            ),
            (
                "configuration string",
                json!({"default_runner_executor_public_id": null, "configuration": "x"}),
            ),
        ] {
            let reply = assembly(&h, body).await;
            assert_refused(&reply, StatusCode::BAD_REQUEST, "parameter_missing", what);
        }
        for (what, selector) in [
            ("not a uuid", json!("runner-1")),
            ("a number", json!(42)),
            ("an object", json!({"id": runner_id(&h)})),
            // Only the hyphenated form, as for every other runner id of a declaration.
            ("braced", json!(format!("{{{}}}", runner_id(&h)))),
            ("simple", json!(runner_id(&h).replace('-', ""))),
            ("urn", json!(format!("urn:uuid:{}", runner_id(&h)))),
        ] {
            let reply = assembly(&h, json!({ "default_runner_executor_public_id": selector })).await;
            assert_refused(&reply, StatusCode::BAD_REQUEST, "parameter_invalid", what);
        }
        // Grammar words come back as validation_failed under /configuration.
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": null, "configuration": {"kernel_tools": ["delegate_task"]}}),
        )
        .await;
        assert_validation(&reply, "invalid", "/configuration/kernel_tools/0", "wire kernel_tools");
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": null,
                   "configuration": {"tool_definitions": [agent_alias(), {"name": "Agent", "canonical": "wait"}]}}),
        )
        .await;
        assert_validation(
            &reply,
            "duplicate_tool_name",
            "/configuration/tool_definitions/1",
            "duplicate",
        );
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": null,
                   "configuration": {"tool_definitions": [], "runner_executor_public_ids": ["x"]}}),
        )
        .await;
        assert_validation(
            &reply,
            "invalid",
            "/configuration/runner_executor_public_ids/0",
            "candidates",
        );
        // Oversized set: 413.
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": null, "configuration": {"tool_definitions": oversized_set()}}),
        )
        .await;
        assert_refused(&reply, StatusCode::PAYLOAD_TOO_LARGE, "content_too_large", "oversized");
    }
}

#[tokio::test]
async fn assembly_runner_refusals() {
    for h in harnesses().await {
        let own = runner_id(&h);
        announce(&h, &own, vec![describable("read")], json!({})).await;
        human(&h, "bob").await;
        let bobs = runner(&h, "bobs-runner", AssignmentScope::UserPrivate, "bob").await;
        announce(&h, &bobs, vec![describable("read")], json!({})).await;
        let wide = runner(&h, "wide-runner", AssignmentScope::AccountWide, "bob").await;
        announce(&h, &wide, vec![describable("read")], json!({})).await;
        let agent_app = h.boot["agent"]["executor_public_id"].as_str().unwrap().to_string();
        let unknown = Uuid::new_v4().to_string();

        // runner_not_declared: candidates non-empty, allowlist not [], S not a candidate.
        for allowlist in [Value::Null, json!(["read"])] {
            let reply = assembly(
                &h,
                json!({
                    "default_runner_executor_public_id": own,
                    "configuration": {"runner_executor_public_ids": [wide], "runner_tool_names": allowlist},
                }),
            )
            .await;
            assert_refused(
                &reply,
                StatusCode::UNPROCESSABLE_ENTITY,
                "runner_not_declared",
                &format!("allowlist {allowlist}"),
            );
        }
        // ... but not when nothing is imported, or when there are no candidates.
        for configuration in [
            json!({"runner_executor_public_ids": [wide], "runner_tool_names": []}),
            json!({"runner_executor_public_ids": [], "runner_tool_names": null}),
            json!({}),
        ] {
            let reply = assembly(
                &h,
                json!({"default_runner_executor_public_id": own, "configuration": configuration}),
            )
            .await;
            let body = assert_ok(&reply, &configuration.to_string());
            assert_eq!(body["tool_definitions"], json!([]), "{configuration}");
        }
        // Candidates compare case-insensitively with the selector.
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": own.to_uppercase(),
                "configuration": {"runner_executor_public_ids": [own.to_uppercase()]},
            }),
        )
        .await;
        let body = assert_ok(&reply, "upper-case ids");
        assert_eq!(body["environment"]["default_runner_executor_public_id"], json!(own));
        assert_eq!(callables(&body["tool_definitions"]), ["read"]);

        // runner_not_eligible: the selected runner is another human's private runner, an
        // unknown id, or an agent_application address.
        for (what, selected) in [
            ("bob's private runner", &bobs),
            ("unknown", &unknown),
            ("agent_application", &agent_app),
        ] {
            let reply = assembly(&h, json!({"default_runner_executor_public_id": selected})).await;
            assert_refused(&reply, StatusCode::UNPROCESSABLE_ENTITY, "runner_not_eligible", what);
        }
        // A routed entry to an ineligible runner.
        for (what, target) in [("bob's private runner", &bobs), ("unknown", &unknown)] {
            let reply = assembly(
                &h,
                json!({
                    "default_runner_executor_public_id": null,
                    "configuration": {"tool_definitions": [routed("bob_read", target, "read")]},
                }),
            )
            .await;
            assert_refused(&reply, StatusCode::UNPROCESSABLE_ENTITY, "runner_not_eligible", what);
        }
        // A revoked runner is not eligible either.
        let revoked = runner(&h, "gone-runner", AssignmentScope::AccountWide, "admin").await;
        announce(&h, &revoked, vec![describable("read")], json!({})).await;
        let body = json!({"default_runner_executor_public_id": revoked});
        assert_ok(&assembly(&h, body.clone()).await, "before revoke");
        h.kernel.admin().revoke_executor(&revoked).await.unwrap();
        let reply = assembly(&h, body).await;
        assert_refused(
            &reply,
            StatusCode::UNPROCESSABLE_ENTITY,
            "runner_not_eligible",
            "revoked",
        );

        // tool_not_served: a routed entry whose runner does not announce that tool.
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": null,
                "configuration": {"tool_definitions": [routed("my_grep", &own, "grep")]},
            }),
        )
        .await;
        assert_refused(&reply, StatusCode::UNPROCESSABLE_ENTITY, "tool_not_served", "grep");
        // The account-wide runner of another human is eligible, and serves read.
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": null,
                "configuration": {"tool_definitions": [routed("wide_read", &wide, "read")]},
            }),
        )
        .await;
        let body = assert_ok(&reply, "wide runner route");
        assert_eq!(
            body["environment"]["executors"][0]["runner_executor_public_id"],
            json!(wide)
        );
        assert_eq!(
            body["environment"]["executors"][0]["display_name"],
            json!("wide-runner")
        );
    }
}

#[tokio::test]
async fn assembly_imports_model_describable_announcements() {
    for h in harnesses().await {
        let own = runner_id(&h);
        let read = describable("read");
        let glob = describable("glob");
        let environment = json!({"os": "linux", "arch": "x86_64", "root": "/srv/work"});
        announce(
            &h,
            &own,
            vec![read.clone(), operator_only("secret_op"), glob.clone()],
            environment.clone(),
        )
        .await;
        let snapshot = json!({
            "runner_executor_public_id": own,
            "display_name": "default-runner",
            "environment": environment,
        });

        // Import everything model-describable: read and glob; secret_op is operator-only.
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": own,
                "configuration": {"runner_executor_public_ids": [own], "runner_tool_names": null},
            }),
        )
        .await;
        let body = assert_ok(&reply, "import all");
        let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["tool_definitions", "environment", "skills"]);
        assert_eq!(
            bytes(&body["tool_definitions"]),
            bytes(&json!([
                import_entry("glob", &own, &glob),
                import_entry("read", &own, &read)
            ])),
            "on {}",
            h.dialect
        );
        assert_eq!(
            bytes(&body["environment"]),
            bytes(&json!({
                "default_runner_executor_public_id": own,
                "executors": [snapshot],
                "runner_candidates": [snapshot],
            }))
        );
        assert_eq!(body["skills"], json!([]));

        // `runner_tool_names: []` imports none; the candidate is still listed.
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": own,
                "configuration": {"runner_executor_public_ids": [own], "runner_tool_names": []},
            }),
        )
        .await;
        let body = assert_ok(&reply, "import none");
        assert_eq!(body["tool_definitions"], json!([]));
        assert_eq!(body["environment"]["runner_candidates"], json!([snapshot]));
        assert_eq!(body["environment"]["executors"], json!([snapshot]));

        // `["read"]` imports only read; an operator-only or unannounced name is ignored.
        for allowlist in [json!(["read"]), json!(["secret_op", "read", "ghost"])] {
            let reply = assembly(
                &h,
                json!({
                    "default_runner_executor_public_id": own,
                    "configuration": {"runner_executor_public_ids": [own], "runner_tool_names": allowlist},
                }),
            )
            .await;
            let body = assert_ok(&reply, &allowlist.to_string());
            assert_eq!(
                bytes(&body["tool_definitions"]),
                bytes(&json!([import_entry("read", &own, &read)])),
                "{allowlist}"
            );
        }

        // No selected runner: nothing is imported, and the snapshot has no executors.
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": null,
                "configuration": {"runner_executor_public_ids": [own]},
            }),
        )
        .await;
        let body = assert_ok(&reply, "no selector");
        assert_eq!(body["tool_definitions"], json!([]));
        assert_eq!(
            body["environment"],
            json!({"default_runner_executor_public_id": null, "executors": [], "runner_candidates": [snapshot]})
        );
    }
}

#[tokio::test]
async fn assembly_import_collisions() {
    for h in harnesses().await {
        let own = runner_id(&h);
        let long = format!("deploy_{}", "x".repeat(57));
        assert_eq!(long.len(), 64);
        let served = [
            describable("memory_read"),
            describable("glob"),
            describable(&long),
            describable("read"),
            describable("skill"),
        ];
        announce(&h, &own, served.to_vec(), json!({})).await;
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": own,
                "configuration": {
                    "tool_definitions": [function("glob"), function(&long)],
                    "runner_executor_public_ids": [own],
                },
            }),
        )
        .await;
        let body = assert_ok(&reply, "collisions");
        let defs = &body["tool_definitions"];
        let memory = collision_callable(&own, "memory_read");
        let glob = collision_callable(&own, "glob");
        let deploy = collision_callable(&own, &long);
        let skill = collision_callable(&own, "skill");
        assert_eq!(deploy.len(), 63);
        assert!(deploy.starts_with(&long[..49]));
        let mut expected = vec![
            "glob".to_string(),
            glob.clone(),
            long.clone(),
            deploy.clone(),
            memory.clone(),
            "read".to_string(),
            skill.clone(),
        ];
        expected.sort();
        assert_eq!(callables(defs), expected, "on {}", h.dialect);
        // The collision keeps the served name in the route.
        for (callable, served_name) in [
            (&memory, "memory_read"),
            (&glob, "glob"),
            (&deploy, long.as_str()),
            (&skill, "skill"),
        ] {
            let e = entry(defs, callable);
            let source = served.iter().find(|s| s["name"] == served_name).unwrap();
            assert_eq!(bytes(e), bytes(&import_entry(callable, &own, source)), "{callable}");
        }
        // The explicit entries are untouched and unrouted.
        assert_eq!(bytes(entry(defs, "glob")), bytes(&function("glob")));
        assert!(entry(defs, "read").get("route").is_some());
    }
}

#[tokio::test]
async fn assembly_kernel_tools_explicit_entries_and_narrowing() {
    for h in harnesses().await {
        let own = runner_id(&h);
        let read = describable("read");
        announce(&h, &own, vec![read.clone(), describable("glob")], json!({})).await;
        let served = h.get(TOOLS_PATH, Some(&h.agent_token())).await.json();
        let served_def = |canonical: &str| {
            served["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["canonical_name"] == canonical)
                .unwrap()["definition"]
                .clone()
        };

        // kernel_tools adds the plain catalog definitions, byte-equal to the served ones.
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": null,
                "configuration": {"kernel_tools": ["nexus.graph.wait", "nexus.human.ask", "nexus.memory.read"]},
            }),
        )
        .await;
        let body = assert_ok(&reply, "kernel_tools");
        assert_eq!(
            bytes(&body["tool_definitions"]),
            bytes(&json!([
                served_def("nexus.human.ask"),
                served_def("nexus.memory.read"),
                served_def("nexus.graph.wait"),
            ])),
            "on {}",
            h.dialect
        );

        // Explicit entries win over kernel_tools: a deferred plain wait, and an identity alias
        // of skill, each appear once.
        let deferred_wait = with(def("nexus.graph.wait"), "", "defer_loading", json!(true));
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": null,
                "configuration": {
                    "tool_definitions": [deferred_wait, {"name": "skill", "canonical": "nexus.skill.load"}],
                    "kernel_tools": ["nexus.graph.wait", "nexus.skill.load", "nexus.human.ask"],
                },
            }),
        )
        .await;
        let body = assert_ok(&reply, "explicit wins");
        let defs = &body["tool_definitions"];
        assert_eq!(callables(defs), ["ask", "skill", "wait"]);
        assert_eq!(entry(defs, "wait")["defer_loading"], json!(true));
        assert_eq!(entry(defs, "skill")["canonical"], json!("nexus.skill.load"));
        // kernel_tools never overrides an alias's spelling, and it is no deny list: an alias
        // over delegate_task and kernel_tools delegate_task give both callables.
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": null,
                "configuration": {"tool_definitions": [agent_alias()], "kernel_tools": ["nexus.graph.delegate_task"]},
            }),
        )
        .await;
        let body = assert_ok(&reply, "alias and plain");
        assert_eq!(callables(&body["tool_definitions"]), ["Agent", "delegate_task"]);

        // tool_names narrows: the order is the stored order, whatever the order of names.
        let configuration = json!({
            "tool_definitions": [agent_alias(), {"name": "Wait", "canonical": "nexus.graph.wait"}, function("note")],
            "kernel_tools": ["nexus.human.ask"],
            "runner_executor_public_ids": [own],
        });
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": own, "configuration": configuration}),
        )
        .await;
        let full = assert_ok(&reply, "full");
        assert_eq!(
            callables(&full["tool_definitions"]),
            ["Agent", "Wait", "ask", "glob", "note", "read"]
        );
        let full_agent = entry(&full["tool_definitions"], "Agent")["function"]["description"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(full_agent.contains("call Wait with the reference"), "{full_agent}");

        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": own, "configuration": configuration,
                   "tool_names": ["read", "Agent"]}),
        )
        .await;
        let narrowed = assert_ok(&reply, "narrowed");
        let defs = &narrowed["tool_definitions"];
        assert_eq!(callables(defs), ["Agent", "read"]);
        assert_eq!(bytes(entry(defs, "read")), bytes(&import_entry("read", &own, &read)));
        // Removing the Wait alias re-renders Agent with the plain spelling of wait.
        let agent_text = entry(defs, "Agent")["function"]["description"].as_str().unwrap();
        assert!(agent_text.contains("call wait with the reference"), "{agent_text}");

        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": own, "configuration": configuration, "tool_names": []}),
        )
        .await;
        assert_eq!(assert_ok(&reply, "narrowed to none")["tool_definitions"], json!([]));

        // tool_not_declared names the first missing name.
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": own, "configuration": configuration,
                   "tool_names": ["read", "delegate_task", "ghost", "Agent"]}),
        )
        .await;
        assert_refused(&reply, StatusCode::UNPROCESSABLE_ENTITY, "tool_not_declared", "missing");
        assert_eq!(reply.json()["error"]["detail"], json!("delegate_task"));
    }
}

#[tokio::test]
async fn assembly_uses_the_stored_profile_and_creates_nothing() {
    for h in harnesses().await {
        let own = runner_id(&h);
        let read = describable("read");
        announce(&h, &own, vec![read.clone()], json!({"os": "linux"})).await;
        let stored = json!({
            "tool_definitions": [agent_alias()],
            "kernel_tools": ["nexus.graph.wait"],
            "runner_executor_public_ids": [own],
            "approval_mode": "ask",
        });
        assert_ok(&put(&h, stored).await, "put");
        let before = h.get(PROFILE_PATH, Some(&h.agent_token())).await.json();

        // An omitted configuration means the stored profile.
        let reply = assembly(&h, json!({"default_runner_executor_public_id": own})).await;
        let body = assert_ok(&reply, "stored profile");
        let body_first = body["tool_definitions"].clone();
        let defs = &body["tool_definitions"];
        assert_eq!(callables(defs), ["Agent", "read", "wait"]);
        assert_eq!(
            bytes(entry(defs, "Agent")),
            bytes(entry(&before["configuration"]["tool_definitions"], "Agent"))
        );
        assert_eq!(bytes(entry(defs, "read")), bytes(&import_entry("read", &own, &read)));
        // kernel_tools' wait is rendered with the set's spelling map.
        let wait_text = entry(defs, "wait")["function"]["description"].as_str().unwrap();
        assert!(wait_text.contains("started with Agent"), "{wait_text}");
        assert_eq!(
            body["environment"]["executors"][0]["environment"],
            json!({"os": "linux"})
        );

        // The stored profile's candidates still need the selector to be one of them.
        human(&h, "bob").await;
        let wide = runner(&h, "wide-runner", AssignmentScope::AccountWide, "bob").await;
        let reply = assembly(&h, json!({"default_runner_executor_public_id": wide})).await;
        assert_refused(
            &reply,
            StatusCode::UNPROCESSABLE_ENTITY,
            "runner_not_declared",
            "stored candidates",
        );

        // A preview with an explicit configuration ignores the stored one.
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": null, "configuration": {"kernel_tools": ["nexus.human.ask"]}}),
        )
        .await;
        assert_eq!(callables(&assert_ok(&reply, "explicit")["tool_definitions"]), ["ask"]);

        // The stored render of an alias is re-rendered with the assembled set's spelling map:
        // stored [Agent, Wait] reads "call Wait"; kernel_tools adding plain wait re-spells it.
        let two_aliases = json!({
            "tool_definitions": [agent_alias(), {"name": "Wait", "canonical": "nexus.graph.wait"}],
            "approval_mode": "ask",
        });
        let stored_render = assert_ok(&put(&h, two_aliases).await, "two aliases")["configuration"].clone();
        let stored_text = entry(&stored_render["tool_definitions"], "Agent")["function"]["description"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(stored_text.contains("call Wait with the reference"), "{stored_text}");
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": null,
                   "configuration": {"tool_definitions": stored_render["tool_definitions"], "kernel_tools": ["nexus.graph.wait"]}}),
        )
        .await;
        let body = assert_ok(&reply, "stored render plus kernel_tools");
        assert_eq!(callables(&body["tool_definitions"]), ["Agent", "Wait", "wait"]);
        let text = entry(&body["tool_definitions"], "Agent")["function"]["description"]
            .as_str()
            .unwrap();
        assert!(text.contains("call wait with the reference"), "{text}");
        // Restore the first profile for the read-back below.
        let stored = json!({
            "tool_definitions": [agent_alias()],
            "kernel_tools": ["nexus.graph.wait"],
            "runner_executor_public_ids": [own],
            "approval_mode": "ask",
        });
        assert_ok(&put(&h, stored).await, "put again");
        let before = h.get(PROFILE_PATH, Some(&h.agent_token())).await.json();
        let reply = assembly(&h, json!({"default_runner_executor_public_id": own})).await;
        assert_eq!(assert_ok(&reply, "again")["tool_definitions"], body_first);

        // The assembly creates nothing: the profile reads back unchanged.
        let after = h.get(PROFILE_PATH, Some(&h.agent_token())).await.json();
        assert_eq!(bytes(&after["configuration"]), bytes(&before["configuration"]));
        assert_eq!(after["member"], before["member"]);
    }
}

#[tokio::test]
async fn assembly_environment_drops_ineligible_candidates() {
    for h in harnesses().await {
        let own = runner_id(&h);
        human(&h, "bob").await;
        let bobs = runner(&h, "bobs-runner", AssignmentScope::UserPrivate, "bob").await;
        let wide = runner(&h, "wide-runner", AssignmentScope::AccountWide, "bob").await;
        let mine = runner(&h, "admin-second", AssignmentScope::UserPrivate, "admin").await;
        let unknown = Uuid::new_v4().to_string();
        announce(&h, &own, vec![describable("read")], json!({"os": "linux"})).await;
        announce(&h, &bobs, vec![describable("read")], json!({"os": "bob"})).await;
        announce(&h, &wide, vec![describable("deploy")], json!({"os": "wide"})).await;
        let snap = |id: &str, name: &str, env: Value| json!({"runner_executor_public_id": id, "display_name": name, "environment": env});
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": own,
                "configuration": {
                    "tool_definitions": [routed("ship", &wide, "deploy")],
                    "runner_executor_public_ids": [bobs, wide, unknown, mine, own],
                    "runner_tool_names": ["read"],
                },
            }),
        )
        .await;
        let body = assert_ok(&reply, "candidates");
        assert_eq!(
            bytes(&body["environment"]),
            bytes(&json!({
                "default_runner_executor_public_id": own,
                "executors": [snap(&own, "default-runner", json!({"os": "linux"})), snap(&wide, "wide-runner", json!({"os": "wide"}))],
                "runner_candidates": [
                    snap(&wide, "wide-runner", json!({"os": "wide"})),
                    // A runner that never announced reads an empty environment.
                    snap(&mine, "admin-second", json!({})),
                    snap(&own, "default-runner", json!({"os": "linux"})),
                ],
            })),
            "on {}",
            h.dialect
        );
        assert_eq!(callables(&body["tool_definitions"]), ["read", "ship"]);
    }
}

#[tokio::test]
async fn eligibility_follows_the_controlling_human_and_the_transport_credential() {
    for h in harnesses().await {
        let own = runner_id(&h);
        human(&h, "bob").await;
        let bobs = runner(&h, "bobs-runner", AssignmentScope::UserPrivate, "bob").await;
        let bobs_agent = h
            .kernel
            .admin()
            .create_member(MemberSpec {
                kind: MemberKind::Agent,
                handle: "bobs-agent".into(),
                display_name: None,
                steward: Some("bob".into()),
                standing: None,
            })
            .await
            .unwrap();
        // Bob's agent may use bob's private runner and not admin's; the bootstrap agent the
        // other way round.
        assert_ok(
            &select(&h, bobs_agent.member_token.clone(), &bobs).await,
            "bob's agent, bob's runner",
        );
        let reply = select(&h, bobs_agent.member_token.clone(), &own).await;
        assert_refused(
            &reply,
            StatusCode::UNPROCESSABLE_ENTITY,
            "runner_not_eligible",
            "bob's agent, admin's runner",
        );
        assert_ok(&select(&h, h.agent_token(), &own).await, "agent, admin's runner");
        let reply = select(&h, h.agent_token(), &bobs).await;
        assert_refused(
            &reply,
            StatusCode::UNPROCESSABLE_ENTITY,
            "runner_not_eligible",
            "agent, bob's runner",
        );

        // A runner with no transport credential at its current epoch is not eligible; a
        // repair mints one at the new epoch.
        let (row, token) = h
            .kernel
            .admin()
            .create_runner("fleeting", AssignmentScope::UserPrivate, "admin")
            .await
            .unwrap();
        let id = row.public_id.to_string();
        assert_ok(&select(&h, h.agent_token(), &id).await, "fresh runner");
        h.kernel.admin().revoke_token(&token).await.unwrap();
        let reply = select(&h, h.agent_token(), &id).await;
        assert_refused(
            &reply,
            StatusCode::UNPROCESSABLE_ENTITY,
            "runner_not_eligible",
            "no credential",
        );
        h.kernel.admin().repair_executor(&id).await.unwrap();
        assert_ok(&select(&h, h.agent_token(), &id).await, "repaired runner");
    }
}

#[tokio::test]
async fn the_spelling_map_takes_the_first_alias_by_byte_order() {
    for h in harnesses().await {
        let wait_alias = |name: &str| json!({"name": name, "canonical": "nexus.graph.wait"});
        let description = |defs: &Value| {
            entry(defs, "Agent")["function"]["description"]
                .as_str()
                .unwrap()
                .to_string()
        };
        // Two aliases of wait: "Bee" sorts before "Zed" (and before "bee"), whatever the order
        // given.
        let body = assert_ok(
            &put(
                &h,
                tools(json!([
                    wait_alias("Zed"),
                    agent_alias(),
                    wait_alias("bee"),
                    wait_alias("Bee")
                ])),
            )
            .await,
            "three aliases",
        );
        let text = description(&body["configuration"]["tool_definitions"]);
        assert!(text.contains("call Bee with the reference"), "{text}");
        // A plain declaration of wait takes precedence over every alias.
        let body = assert_ok(
            &put(
                &h,
                tools(json!([wait_alias("Bee"), agent_alias(), def("nexus.graph.wait")])),
            )
            .await,
            "plain and alias",
        );
        let text = description(&body["configuration"]["tool_definitions"]);
        assert!(text.contains("call wait with the reference"), "{text}");
        // An alias named through `function: {name}` is the same alias.
        let nested_name = json!({
            "type": "function",
            "function": {"name": "Agent"},
            "canonical": "nexus.graph.delegate_task",
            "params": agent_alias()["params"],
        });
        let a = assert_ok(&put(&h, tools(json!([nested_name]))).await, "function name form");
        let b = assert_ok(&put(&h, tools(json!([agent_alias()]))).await, "flat name form");
        assert_eq!(
            bytes(&a["configuration"]["tool_definitions"]),
            bytes(&b["configuration"]["tool_definitions"])
        );
    }
}

#[tokio::test]
async fn assembly_builds_the_skill_catalog() {
    for h in harnesses().await {
        let own = runner_id(&h);
        let app = h.boot["agent"]["executor_public_id"].as_str().unwrap().to_string();
        let runner_docs = json!([
            {"name": "deploy-notes", "description": "How to deploy."},
            {"name": "release-notes", "description": "Drafts release notes."},
        ]);
        announce_with_documents(
            &h,
            &own,
            vec![describable("skill"), describable("read")],
            json!({}),
            runner_docs,
        )
        .await;
        let app_docs = json!([{"name": "style-guide", "description": "House writing rules."}]);
        announce_with_documents(&h, &app, vec![], json!({}), app_docs).await;

        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": own,
                "configuration": {
                    "tool_definitions": [{"name": "skill", "canonical": "nexus.skill.load"}],
                    "runner_executor_public_ids": [own],
                    "runner_tool_names": ["skill"],
                },
            }),
        )
        .await;
        let body = assert_ok(&reply, "skills");
        let runner_skill = collision_callable(&own, "skill");
        assert_eq!(
            callables(&body["tool_definitions"]),
            ["skill".to_string(), runner_skill.clone()]
        );
        assert_eq!(
            body["skills"],
            json!([
                {"callable": "skill", "name": "style-guide", "description": "House writing rules.",
                 "source": "agent_application", "executor_public_id": app},
                {"callable": runner_skill, "name": "deploy-notes", "description": "How to deploy.",
                 "source": "runner", "executor_public_id": own},
                {"callable": runner_skill, "name": "release-notes", "description": "Drafts release notes.",
                 "source": "runner", "executor_public_id": own},
            ]),
            "on {}",
            h.dialect
        );
        // Without a skill callable there is no catalog.
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": own,
                   "configuration": {"runner_executor_public_ids": [own], "runner_tool_names": ["read"]}}),
        )
        .await;
        assert_eq!(assert_ok(&reply, "no skills")["skills"], json!([]));
    }
}

#[tokio::test]
async fn assembly_ignores_other_configuration_keys() {
    for h in harnesses().await {
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": null,
                "configuration": {
                    "kernel_tools": ["nexus.graph.wait"],
                    "approval_mode": "nonsense",
                    "approval_rules": 5,
                    "default_model": "nope/x",
                    "instructions": ["not", "a", "string"],
                },
            }),
        )
        .await;
        let body = assert_ok(&reply, "other keys");
        assert_eq!(callables(&body["tool_definitions"]), ["wait"]);
        // tool_names must be strings.
        let reply = assembly(
            &h,
            json!({"default_runner_executor_public_id": null, "configuration": {}, "tool_names": ["a", 1]}),
        )
        .await;
        assert_validation(&reply, "invalid", "/tool_names", "tool_names types");
    }
}

/// §7.2 step 4 hashes an imported name that equals "a callable in base"; a shape-5 entry has no
/// callable, yet §2 names it for duplicate checks. The collision rule exists so an import never
/// refuses the set (docs/decisions/104-declaration-collisions.md): the import takes the collision
/// callable instead.
#[tokio::test]
async fn an_import_named_like_a_provider_tool_takes_the_collision_callable() {
    for h in harnesses().await {
        let own = runner_id(&h);
        announce(&h, &own, vec![describable("web_search")], json!({})).await;
        let reply = assembly(
            &h,
            json!({
                "default_runner_executor_public_id": own,
                "configuration": {
                    "tool_definitions": [{"type": "web_search_20250305", "name": "web_search"}],
                    "runner_executor_public_ids": [own],
                },
            }),
        )
        .await;
        let body = assert_ok(&reply, "provider tool and import");
        assert_eq!(
            callables(&body["tool_definitions"]),
            ["web_search".to_string(), collision_callable(&own, "web_search")]
        );
    }
}
