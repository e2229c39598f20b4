//! The announcement door (executor.md §4) and discovery (§3) over HTTP, on both engines.
//! Every refusal is checked by status, code, `path` and `detail` (or `reason`), and the checks
//! are proven to run in the spec's order: each check over the whole list before the next.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses};
use nexus_kernel::admin::MemberSpec;
use nexus_store::prelude::*;
use nexus_store::{AssignmentScope, MemberKind, Standing};
use serde_json::{Value, json};

const PUT: &str = "/agent_api/v1/executor/announcement";
const LIST: &str = "/agent_api/v1/executors";

fn read() -> Value {
    json!({"kind": "read_only", "destructive": false, "effect_scope": "closed", "idempotency": "intrinsic", "reconciliation": "none"})
}

fn write() -> Value {
    json!({"kind": "write", "destructive": true, "effect_scope": "open", "idempotency": "none", "reconciliation": "lookup"})
}

fn tool(name: &str) -> Value {
    json!({"name": name, "effect_profile": read()})
}

async fn put(h: &Harness, body: &Value) -> Reply {
    h.json(Method::PUT, PUT, Some(&h.runner_token()), body).await
}

/// Asserts a refusal: status, code, path and detail (`None` = not checked).
#[track_caller]
fn refused(r: &Reply, status: u16, code: &str, path: &str, detail: Option<&str>) {
    assert_eq!(r.status.as_u16(), status, "{}", String::from_utf8_lossy(&r.bytes));
    let e = &r.json()["error"];
    assert_eq!(e["code"], code, "{e}");
    assert_eq!(e["path"], path, "{e}");
    if let Some(d) = detail {
        assert_eq!(e["detail"], d, "{e}");
    }
}

#[track_caller]
fn bound(r: &Reply, reason: &str, path: &str) {
    assert_eq!(
        r.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        String::from_utf8_lossy(&r.bytes)
    );
    let e = &r.json()["error"];
    assert_eq!(
        (e["code"].as_str(), e["reason"].as_str(), e["path"].as_str()),
        (Some("validation_failed"), Some(reason), Some(path)),
        "{e}"
    );
}

fn runner_id(h: &Harness) -> String {
    h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string()
}

async fn runner_view(h: &Harness) -> Value {
    let r = h.get(&format!("{LIST}/{}", runner_id(h)), Some(&h.human_token())).await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()["executor"].clone()
}

#[tokio::test]
async fn checks_run_in_order_with_their_codes_paths_and_details() {
    for h in harnesses().await {
        // 1. tools present.
        let r = put(&h, &json!({"environment": {}})).await;
        assert_eq!((r.status.as_u16(), r.code().as_str()), (400, "parameter_missing"));
        // 2. a list of objects.
        refused(
            &put(&h, &json!({"tools": {}})).await,
            422,
            "invalid_announcement",
            "tools",
            None,
        );
        refused(
            &put(&h, &json!({"tools": "read"})).await,
            422,
            "invalid_announcement",
            "tools",
            None,
        );
        refused(
            &put(&h, &json!({"tools": [tool("read"), "x"]})).await,
            422,
            "invalid_announcement",
            "tools[1]",
            None,
        );
        // 2 before 3: a non-object entry after a reserved name.
        refused(
            &put(&h, &json!({"tools": [tool("ask"), 7]})).await,
            422,
            "invalid_announcement",
            "tools[1]",
            None,
        );
        // 3. kernel classification, before format, across the list: entry 0 has a malformed
        // name and no profile, entry 1 is delegate_task.
        let r = put(
            &h,
            &json!({"tools": [{"name": "bad name!"}, {"name": "delegate_task"}]}),
        )
        .await;
        refused(&r, 422, "reserved_namespace", "tools[1].name", Some("nexus.graph"));
        for (name, family) in [
            ("nexus.graph.delegate_task", "nexus.graph"),
            ("wait", "nexus.graph"),
            ("ask", "nexus.human"),
            ("nexus.human.ask", "nexus.human"),
            ("spawn", "nexus.conversation"),
            ("session_search", "nexus.conversation"),
            ("tool_search", "nexus.tools"),
            ("nexus.tools.call", "nexus.tools"),
            ("runners_list", "nexus.runners"),
        ] {
            let r = put(&h, &json!({"tools": [tool("read"), tool("read"), tool(name)]})).await;
            refused(&r, 422, "reserved_namespace", "tools[2].name", Some(family));
        }
        // Memory wire names and `skill` pass the gate (and are served).
        let r = put(
            &h,
            &json!({"tools": [tool("memory_read"), tool("memory_delete"), tool("skill")]}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
        // 4. name grammar (a dotted memory canonical fails here, not at 3).
        for bad in [
            json!("nexus.memory.read"),
            json!(""),
            json!("x".repeat(65)),
            json!("a b"),
            json!(3),
        ] {
            let r = put(
                &h,
                &json!({"tools": [tool("read"), {"name": bad, "effect_profile": read()}]}),
            )
            .await;
            refused(&r, 422, "invalid_announcement", "tools[1].name", None);
        }
        let r = put(&h, &json!({"tools": [{"effect_profile": read()}]})).await;
        refused(&r, 422, "invalid_announcement", "tools[0].name", None);
        // 4 before 6: entry 0 lacks a profile, entry 1 has a bad name.
        let r = put(
            &h,
            &json!({"tools": [{"name": "a"}, {"name": "b.c", "effect_profile": read()}]}),
        )
        .await;
        refused(&r, 422, "invalid_announcement", "tools[1].name", None);
        // 5. unique names (5 before 6).
        let r = put(&h, &json!({"tools": [{"name": "a"}, tool("b"), {"name": "a"}]})).await;
        refused(&r, 422, "invalid_announcement", "tools[2].name", None);
        // 6. effect profiles.
        let mut extra = read();
        extra["x"] = json!(1);
        let mut bad_value = read();
        bad_value["kind"] = json!("delete");
        let mut destructive_read = read();
        destructive_read["destructive"] = json!(true);
        let mut missing = read();
        missing.as_object_mut().unwrap().shift_remove("reconciliation");
        for profile in [
            None,
            Some(json!("READ")),
            Some(extra),
            Some(bad_value),
            Some(destructive_read),
            Some(missing),
        ] {
            let mut entry = json!({"name": "b"});
            if let Some(p) = profile {
                entry["effect_profile"] = p;
            }
            let r = put(&h, &json!({"tools": [tool("a"), entry]})).await;
            refused(&r, 422, "invalid_announcement", "tools[1].effect_profile", None);
        }
        // 6 before 7: entry 0 has a bad timeout, entry 1 a bad profile.
        let r = put(
            &h,
            &json!({"tools": [{"name": "a", "effect_profile": read(), "timeout_ms": 0},
                                          {"name": "b", "effect_profile": {}}]}),
        )
        .await;
        refused(&r, 422, "invalid_announcement", "tools[1].effect_profile", None);
        // 7. timeout_ms.
        for bad in [json!(0), json!(-5), json!(1.5), json!("1000"), json!(null)] {
            let r = put(
                &h,
                &json!({"tools": [tool("a"), {"name": "b", "effect_profile": read(), "timeout_ms": bad}]}),
            )
            .await;
            refused(&r, 422, "invalid_announcement", "tools[1].timeout_ms", None);
        }
        // 7 before 8.
        let r = put(
            &h,
            &json!({"tools": [{"name": "a", "effect_profile": read(), "description": ""},
                                          {"name": "b", "effect_profile": read(), "timeout_ms": 0}]}),
        )
        .await;
        refused(&r, 422, "invalid_announcement", "tools[1].timeout_ms", None);
        // 8. description.
        for bad in [json!(""), json!("  \n"), json!(3), json!(null)] {
            let r = put(
                &h,
                &json!({"tools": [tool("a"), {"name": "b", "effect_profile": read(), "description": bad}]}),
            )
            .await;
            refused(&r, 422, "invalid_announcement", "tools[1].description", None);
        }
        // 8 before 9.
        let r = put(
            &h,
            &json!({"tools": [{"name": "a", "effect_profile": read(), "input_schema": {}},
                                          {"name": "b", "effect_profile": read(), "description": " "}]}),
        )
        .await;
        refused(&r, 422, "invalid_announcement", "tools[1].description", None);
        // 9. input_schema.
        for bad in [json!({}), json!({"type": "string"}), json!([]), json!("object")] {
            let r = put(
                &h,
                &json!({"tools": [tool("a"), {"name": "b", "effect_profile": read(), "input_schema": bad}]}),
            )
            .await;
            refused(&r, 422, "invalid_announcement", "tools[1].input_schema", None);
        }
        // 9 before 10.
        let r = put(
            &h,
            &json!({"tools": [{"name": "a", "effect_profile": read(), "input_schema": {}}], "environment": []}),
        )
        .await;
        refused(&r, 422, "invalid_announcement", "tools[0].input_schema", None);
        // 10. environment.
        for bad in [json!([]), json!("linux"), json!(null)] {
            let r = put(&h, &json!({"tools": [], "environment": bad})).await;
            refused(&r, 422, "invalid_announcement", "environment", None);
        }
        let big_env = json!({"blob": "x".repeat(65_536)});
        bound(
            &put(&h, &json!({"tools": [], "environment": big_env})).await,
            "executor_environment_bound",
            "/environment",
        );
        // 10 before 11.
        let r = put(&h, &json!({"tools": [], "environment": 1, "documents": 1})).await;
        refused(&r, 422, "invalid_announcement", "environment", None);
        // 11. documents.
        let doc = |name: &str| json!({"name": name, "description": "A skill."});
        refused(
            &put(&h, &json!({"tools": [], "documents": {}})).await,
            422,
            "invalid_announcement",
            "documents",
            None,
        );
        let r = put(&h, &json!({"tools": [], "documents": [doc("a"), []]})).await;
        refused(&r, 422, "invalid_announcement", "documents[1]", None);
        for bad in ["Build", "a_b", "-a", "a-", "a--b", "", &"a".repeat(65)] {
            let r = put(&h, &json!({"tools": [], "documents": [doc("ok"), doc(bad)]})).await;
            refused(&r, 422, "invalid_announcement", "documents[1].name", None);
        }
        let r = put(&h, &json!({"tools": [], "documents": [doc("a"), doc("b"), doc("a")]})).await;
        refused(&r, 422, "invalid_announcement", "documents[2].name", None);
        for bad in [json!(""), json!("   "), json!(5), json!("d".repeat(1_025))] {
            let r = put(
                &h,
                &json!({"tools": [], "documents": [doc("a"), {"name": "b", "description": bad}]}),
            )
            .await;
            refused(&r, 422, "invalid_announcement", "documents[1].description", None);
        }
        let r = put(&h, &json!({"tools": [], "documents": [{"name": "a"}]})).await;
        refused(&r, 422, "invalid_announcement", "documents[0].description", None);
        // A 1,024-byte description is at the bound.
        let r = put(
            &h,
            &json!({"tools": [], "documents": [{"name": "a", "description": "d".repeat(1_024)}]}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        // 12. list bounds: the tools list, then the documents list.
        let long = "t".repeat(2_000);
        let many: Vec<Value> = (0..40)
            .map(|i| json!({"name": format!("tool{i}"), "effect_profile": read(), "description": long}))
            .collect();
        bound(&put(&h, &json!({"tools": many})).await, "envelope_bound", "/tools");
        // 11 before 12.
        let r = put(
            &h,
            &json!({"tools": many, "documents": [{"name": "A", "description": "x"}]}),
        )
        .await;
        refused(&r, 422, "invalid_announcement", "documents[0].name", None);
        let docs: Vec<Value> = (0..70)
            .map(|i| json!({"name": format!("doc-{i}"), "description": "d".repeat(1_000)}))
            .collect();
        bound(
            &put(&h, &json!({"tools": [], "documents": docs})).await,
            "envelope_bound",
            "/documents",
        );

        // A refusal stores nothing: the last good announcement stands.
        let view = runner_view(&h).await;
        assert_eq!(
            view["served_documents"],
            json!([{"name": "a", "description": "d".repeat(1_024)}])
        );
    }
}

#[tokio::test]
async fn stores_the_canonical_form_and_re_puts_idempotently() {
    for h in harnesses().await {
        let before = runner_view(&h).await;
        assert_eq!(
            (before["presence"].as_str(), &before["last_seen_at"]),
            (Some("not_yet_seen"), &Value::Null)
        );
        assert_eq!(before["served_tools"], json!([]));
        assert_eq!(before["environment"], json!({}));
        let profile_shuffled = json!({"reconciliation": "lookup", "idempotency": "none", "effect_scope": "open",
                                      "destructive": true, "kind": "write"});
        let body = json!({
            "tools": [
                {"name": "write", "effect_profile": profile_shuffled, "timeout_ms": 120000.0,
                 "description": "Write a file.", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                 "annotations": {"x": 1}},
                {"name": "Read", "effect_profile": read(), "description": "  Read.  "},
                {"name": "grep", "effect_profile": read(), "input_schema": {"required": [], "type": "object"}},
            ],
            "environment": {"os": "linux", "arch": "x86_64", "git": {"head": "abc", "branch": "main"}},
            "documents": [{"name": "build", "description": "How to build.", "body": "dropped"},
                          {"name": "a-deploy", "description": "Deploys."}],
            "extra": true,
        });
        let r = put(&h, &body).await;
        assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
        let described = r.json();
        assert_eq!(described["executor"]["public_id"], runner_id(&h));
        assert_eq!(described["executor"]["kind"], "runner");
        assert!(described["measured_at"].is_string());
        let keys: Vec<&str> = described.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["executor", "measured_at"]);

        let expected_tools = json!([
            {"name": "Read", "effect_profile": read(), "description": "  Read.  "},
            {"name": "grep", "effect_profile": read(), "input_schema": {"required": [], "type": "object"}},
            {"name": "write", "effect_profile": write(), "timeout_ms": 120000, "description": "Write a file.",
             "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        ]);
        let stored = h
            .kernel
            .store
            .executor_by_public_id(runner_id(&h).parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        // Byte-exact: sorted by name, profile keys in the fixed order, verbatim schemas.
        assert_eq!(stored.served_tools, expected_tools.to_string());
        assert_eq!(stored.environment, body["environment"].to_string());
        assert_eq!(
            stored.served_documents,
            json!([{"name": "a-deploy", "description": "Deploys."}, {"name": "build", "description": "How to build."}])
                .to_string()
        );
        let first_seen = stored.last_seen_at.expect("a PUT sets last_seen_at");

        let view = runner_view(&h).await;
        assert_eq!(view["served_tools"], expected_tools);
        assert_eq!(view["presence"], "offline");
        assert!(view["last_seen_at"].is_string());

        // Re-PUT: identical stored bytes; last_seen_at moves forward (or stays within the ms).
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        assert_eq!(put(&h, &body).await.status, StatusCode::OK);
        let again = h
            .kernel
            .store
            .executor_by_public_id(runner_id(&h).parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (&again.served_tools, &again.environment, &again.served_documents),
            (&stored.served_tools, &stored.environment, &stored.served_documents)
        );
        assert!(again.last_seen_at.unwrap() > first_seen);

        // The three lists are replaced at once: absent environment = {}, absent documents = [].
        assert_eq!(put(&h, &json!({"tools": []})).await.status, StatusCode::OK);
        let cleared = runner_view(&h).await;
        assert_eq!(
            (
                &cleared["served_tools"],
                &cleared["environment"],
                &cleared["served_documents"]
            ),
            (&json!([]), &json!({}), &json!([]))
        );

        // Planes: a member bearer gets the uniform 401; so does no bearer.
        let r = h
            .json(Method::PUT, PUT, Some(&h.human_token()), &json!({"tools": []}))
            .await;
        assert_eq!((r.status.as_u16(), r.code().as_str()), (401, "unauthorized"));
        let r = h.json(Method::PUT, PUT, None, &json!({"tools": []})).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        // The agent application announces too (its own address).
        let r = h
            .json(
                Method::PUT,
                PUT,
                Some(&h.agent_transport_token()),
                &json!({"tools": [tool("lookup")]}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json()["executor"]["kind"], "agent_application");
    }
}

#[tokio::test]
async fn discovery_lists_only_runners_eligible_for_the_caller() {
    for h in harnesses().await {
        let bob = h
            .kernel
            .admin()
            .create_member(MemberSpec {
                kind: MemberKind::Human,
                handle: "bob".into(),
                display_name: None,
                steward: None,
                standing: Some(Standing::Write),
            })
            .await
            .unwrap();
        let (bobs_private, _) = h
            .kernel
            .admin()
            .create_runner("bobs-box", AssignmentScope::UserPrivate, "bob")
            .await
            .unwrap();
        let (shared, _) = h
            .kernel
            .admin()
            .create_runner("shared", AssignmentScope::AccountWide, "bob")
            .await
            .unwrap();
        let ids = |r: &Reply| -> Vec<String> {
            r.json()["executors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["public_id"].as_str().unwrap().to_string())
                .collect()
        };

        // The bootstrap human sees its own runner and the account-wide one, never bob's private
        // runner, and never an agent_application address.
        let r = h.get(&format!("{LIST}?kind=runner"), Some(&h.human_token())).await;
        assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
        assert_eq!(ids(&r), [runner_id(&h), shared.public_id.to_string()]);
        let entry = &r.json()["executors"][0];
        let keys: Vec<&str> = entry.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "public_id",
                "kind",
                "display_name",
                "status",
                "assignment_scope",
                "served_tools",
                "environment",
                "served_documents",
                "presence",
                "last_seen_at"
            ]
        );
        assert_eq!(
            (
                entry["kind"].as_str(),
                entry["display_name"].as_str(),
                entry["status"].as_str(),
                entry["assignment_scope"].as_str()
            ),
            (
                Some("runner"),
                Some("default-runner"),
                Some("active"),
                Some("user_private")
            )
        );
        // `kind` may be omitted; the agent (stewarded by the human) sees the same.
        assert_eq!(ids(&h.get(LIST, Some(&h.human_token())).await), ids(&r));
        assert_eq!(ids(&h.get(LIST, Some(&h.agent_token())).await), ids(&r));
        // Bob sees his two runners, not the bootstrap human's private one.
        let r = h.get(&format!("{LIST}?kind=runner"), Some(&bob.member_token)).await;
        assert_eq!(
            ids(&r),
            [bobs_private.public_id.to_string(), shared.public_id.to_string()]
        );

        // The single-id route: eligible → {executor}; ineligible, agent_application, unknown,
        // malformed → 404 not_found.
        let r = h
            .get(&format!("{LIST}/{}", shared.public_id), Some(&h.human_token()))
            .await;
        assert_eq!(r.json()["executor"]["assignment_scope"], "account_wide");
        let agent_app = h.boot["agent"]["executor_public_id"].as_str().unwrap().to_string();
        for id in [
            bobs_private.public_id.to_string(),
            agent_app,
            uuid::Uuid::new_v4().to_string(),
            "nope".into(),
        ] {
            let r = h.get(&format!("{LIST}/{id}"), Some(&h.human_token())).await;
            assert_eq!((r.status.as_u16(), r.code().as_str()), (404, "not_found"), "{id}");
        }
        // Another kind is refused.
        for kind in ["agent_application", "", "Runner"] {
            let r = h.get(&format!("{LIST}?kind={kind}"), Some(&h.human_token())).await;
            assert_eq!(
                (r.status.as_u16(), r.code().as_str()),
                (400, "parameter_invalid"),
                "{kind:?}"
            );
        }
        // A revoked runner is no longer listed.
        h.kernel
            .admin()
            .revoke_executor(&shared.public_id.to_string())
            .await
            .unwrap();
        let r = h.get(&format!("{LIST}?kind=runner"), Some(&h.human_token())).await;
        assert_eq!(ids(&r), [runner_id(&h)]);
        // Discovery is on the member plane: a transport bearer gets the uniform 401.
        let r = h.get(LIST, Some(&h.runner_token())).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    }
}
