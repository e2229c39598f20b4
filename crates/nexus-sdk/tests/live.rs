//! The SDK against a live kernel (declarations.md §13): the real server on a loopback port over
//! each store engine; the catalog is fetched over HTTP, every shipped style and row is applied,
//! and the kernel accepts and renders each result on both declaration doors.

use nexus_sdk::adaptations::{self, Presets, Row};
use nexus_sdk::member::ApprovalMode;
use nexus_sdk::{AssemblyRequest, Catalog, Client, Configuration};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A served kernel over one engine; the server task is aborted on drop.
struct Live {
    dialect: &'static str,
    agent: Client,
    human: Client,
    server: JoinHandle<std::io::Result<()>>,
    _store: nexus_store::testing::TestStore,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn live_servers() -> Vec<Live> {
    let mut out = Vec::new();
    for store in nexus_store::testing::engines().await {
        let kernel = nexus_kernel::Kernel::new(store.store.clone());
        let boot = serde_json::to_value(kernel.admin().bootstrap().await.expect("bootstrap")).expect("JSON");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = nexus_server::AppState::new(kernel);
        let server = tokio::spawn(nexus_server::serve(listener, state, std::future::pending()));
        let token = |who: &str| boot[who]["member_token"].as_str().unwrap().to_string();
        let agent = Client::new(&base, &token("agent"));
        assert_eq!(
            agent.healthz().await.expect("the server answers")["status"],
            json!("ok")
        );
        out.push(Live {
            dialect: store.dialect,
            agent,
            human: Client::new(&base, &token("human")),
            server,
            _store: store,
        });
    }
    out
}

/// Every style combination the presets allow, then each shipped row, with a label.
fn declarations(catalog: &Catalog) -> Vec<(String, Vec<Value>)> {
    let combos: [&[&str]; 7] = [
        &["nexus"],
        &["claude"],
        &["codex"],
        &["nexus", "claude"],
        &["nexus", "codex"],
        &["claude", "codex"],
        &["nexus", "claude", "codex"],
    ];
    let mut out: Vec<(String, Vec<Value>)> = combos
        .iter()
        .map(|styles| {
            let set = adaptations::apply(catalog, styles, &[]).unwrap_or_else(|e| panic!("{styles:?}: {e}"));
            (format!("styles {styles:?}"), set)
        })
        .collect();
    for row in Row::all_shipped() {
        let set = row.apply(catalog).unwrap_or_else(|e| panic!("row {}: {e}", row.row));
        out.push((format!("row {}", row.row), set));
    }
    assert_eq!(out.len(), 10);
    out
}

/// A configuration written as JSON (its declaration entries are free-form).
fn config(value: Value) -> Configuration {
    serde_json::from_value(value).expect("a configuration")
}

/// A typed reply's part as JSON, to compare the free-form declaration entries.
fn json_of<T: serde::Serialize>(typed: &T) -> Value {
    serde_json::to_value(typed).expect("a reply serializes")
}

fn callable(entry: &Value) -> &str {
    entry
        .pointer("/function/name")
        .or_else(|| entry.get("name"))
        .and_then(Value::as_str)
        .expect("every entry has a callable")
}

fn find<'a>(set: &'a Value, name: &str) -> &'a Value {
    set.as_array()
        .unwrap()
        .iter()
        .find(|e| callable(e) == name)
        .unwrap_or_else(|| panic!("{name} is declared"))
}

fn recut_anchor(alias: &str) -> (String, String) {
    let spec = Presets::shipped()
        .aliases()
        .find(|a| a.name == alias)
        .unwrap_or_else(|| panic!("{alias} is shipped"));
    let recut = spec.recut.as_ref().expect("it carries a recut");
    (recut.anchor.clone(), recut.replacement.clone())
}

#[tokio::test]
async fn every_shipped_style_is_accepted_by_the_live_kernel() {
    for live in live_servers().await {
        let catalog = live.agent.tools().await.expect("the catalog over HTTP");
        let registry: Catalog = serde_json::from_value(nexus_core::registry::catalog()).unwrap();
        assert_eq!(
            catalog, registry,
            "the served catalog is the registry's on {}",
            live.dialect
        );
        assert_eq!(catalog.tools.len(), 19);

        for (label, set) in declarations(&catalog) {
            let what = format!("{label} on {}", live.dialect);
            let configuration = config(json!({"tool_definitions": set, "approval_mode": "ask"}));
            let profile = live
                .agent
                .put_configuration(&configuration)
                .await
                .unwrap_or_else(|e| panic!("PUT {what}: {e}"));
            let written = profile.configuration.as_ref().expect("an agent's configuration");
            let stored = &json_of(&written.tool_definitions);
            assert_eq!(stored.as_array().unwrap().len(), set.len(), "{what}");
            assert_eq!(written.approval_mode, Some(ApprovalMode::Ask), "{what}");
            // Sorted by callable.
            let names: Vec<&str> = stored.as_array().unwrap().iter().map(callable).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            assert_eq!(names, sorted, "{what}");
            // GET reads back what PUT answered.
            let read = live.agent.profile().await.unwrap();
            assert_eq!(read.configuration, profile.configuration, "{what}");

            let preview = live
                .agent
                .assembly(&AssemblyRequest::new(None).configuration(config(json!({"tool_definitions": set}))))
                .await
                .unwrap_or_else(|e| panic!("assembly {what}: {e}"));
            // No imports and no kernel_tools: the preview is the stored render.
            assert_eq!(&json_of(&preview.tool_definitions), stored, "{what}");
            assert_eq!(
                json_of(&preview.environment),
                json!({"default_runner_executor_public_id": null, "executors": [], "runner_candidates": []}),
                "{what}"
            );
        }
    }
}

#[tokio::test]
async fn the_claude_agent_alias_renders_with_its_recut() {
    let (anchor, replacement) = recut_anchor("Agent");
    for live in live_servers().await {
        let catalog = live.agent.tools().await.unwrap();
        let template = catalog.template_for("nexus.graph.delegate_task").unwrap();
        assert_eq!(
            template.matches(&anchor).count(),
            1,
            "the anchor is in the live template"
        );

        let set = adaptations::apply(&catalog, &["claude"], &[]).unwrap();
        let profile = live
            .agent
            .put_configuration(&config(json!({"tool_definitions": set, "approval_mode": "ask"})))
            .await
            .unwrap();
        let stored = &json_of(&profile.configuration.unwrap().tool_definitions);
        // The claude style supersedes delegate_task, ask and skill.
        for gone in ["delegate_task", "ask", "skill"] {
            assert!(
                stored.as_array().unwrap().iter().all(|e| callable(e) != gone),
                "{gone} is superseded on {}",
                live.dialect
            );
        }
        let agent = find(stored, "Agent");
        assert_eq!(agent["canonical"], json!("nexus.graph.delegate_task"));
        let props = agent["function"]["parameters"]["properties"].as_object().unwrap();
        let order: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(
            order,
            ["prompt", "model", "lifetime", "wake", "run_in_background", "tools"]
        );
        assert_eq!(props["run_in_background"]["default"], json!(true));
        assert_eq!(props["run_in_background"]["type"], json!("boolean"));

        // The description is the template with the recut paragraph in place of the `wait: true`
        // paragraph, macros rendered by the kernel (wait stays plain in this style).
        let description = agent["function"]["description"].as_str().unwrap();
        assert!(description.contains(&replacement), "{description}");
        assert!(!description.contains(&anchor), "{description}");
        let expected = template.replacen(&anchor, &replacement, 1).replace("{{wait}}", "wait");
        assert_eq!(description, expected);

        // Skill renames `name` to `skill` in place.
        let skill = find(stored, "Skill");
        let props: Vec<&str> = skill["function"]["parameters"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert!(props.contains(&"skill") && !props.contains(&"name"), "{props:?}");
    }
}

#[tokio::test]
async fn the_codex_spawn_recut_anchor_is_in_the_live_template() {
    let (anchor, replacement) = recut_anchor("spawn_agent");
    for live in live_servers().await {
        let catalog = live.agent.tools().await.unwrap();
        let template = catalog
            .template_for("nexus.conversation.spawn")
            .expect("spawn is served");
        assert_eq!(template.matches(&anchor).count(), 1, "on {}", live.dialect);

        let set = adaptations::apply(&catalog, &["codex"], &[]).unwrap();
        let profile = live
            .agent
            .put_configuration(&config(json!({"tool_definitions": set, "approval_mode": "ask"})))
            .await
            .unwrap();
        let stored = json_of(&profile.configuration.unwrap().tool_definitions);
        let spawn = find(&stored, "spawn_agent");
        let description = spawn["function"]["description"].as_str().unwrap();
        assert!(
            description.contains(&replacement) && !description.contains(&anchor),
            "{description}"
        );
        // send is aliased too, so the spawn text spells it send_message.
        assert!(
            description.contains("send_message gives it more input"),
            "{description}"
        );
        assert!(spawn["function"]["parameters"]["properties"].get("wait").is_none());
    }
}

#[tokio::test]
async fn refusals_reach_the_sdk_as_typed_errors() {
    for live in live_servers().await {
        let bad = config(json!({
            "tool_definitions": [{"name": "Agent", "canonical": "nexus.graph.nope"}],
            "approval_mode": "ask",
        }));
        let err = live.agent.put_configuration(&bad).await.unwrap_err();
        let api = err.api().expect("an API refusal");
        assert_eq!(api.status, 422, "{}", live.dialect);
        assert_eq!(api.code, "validation_failed");
        assert_eq!(api.reason(), Some("alias_canonical_unknown"));
        assert_eq!(api.path(), Some("/configuration/tool_definitions/0/canonical"));

        let err = live
            .human
            .put_configuration(&config(json!({"instructions": "x"})))
            .await
            .unwrap_err();
        let api = err.api().expect("an API refusal");
        assert_eq!((api.status, api.code.as_str()), (403, "not_agent"));

        let err = live
            .agent
            .assembly(
                &AssemblyRequest::new(None)
                    .configuration(config(json!({"kernel_tools": ["nexus.graph.wait"]})))
                    .tool_names(["wait", "ghost"]),
            )
            .await
            .unwrap_err();
        let api = err.api().expect("an API refusal");
        assert_eq!((api.status, api.code.as_str()), (422, "tool_not_declared"));
        assert_eq!(api.detail(), Some("ghost"));
    }
}
