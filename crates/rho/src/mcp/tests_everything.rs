//! The bridge against the real `@modelcontextprotocol/server-everything`, at the version
//! `package-lock.json` pins (tool names as its `tools/list` gives them).

use std::sync::atomic::Ordering;

use nexus_sdk::runner::{Block, EffectKind, EffectProfile, EffectScope, Idempotency, Outcome, Reconciliation};
use serde_json::json;

use super::Bridge;
use super::profile::FAIL_CLOSED;
use super::results::tests::FakeStage;
use super::test_support::{eventually, everything_or_skip, input, node_server, start, texts};

async fn everything(test: &str, trusted: bool, env: &[(&str, &str)]) -> Option<Bridge> {
    let entry = everything_or_skip(test)?;
    let (bridge, _) = start(&[node_server("everything", &entry, &["stdio"], env, trusted)])
        .await
        .unwrap();
    Some(bridge)
}

#[tokio::test]
async fn the_pinned_version_lists_the_tools_these_tests_use() {
    let Some(bridge) = everything("the_pinned_version_lists_the_tools_these_tests_use", false, &[]).await else {
        return;
    };
    let specs = bridge.specs();
    for name in [
        "everything_echo",
        "everything_get-sum",
        "everything_get-tiny-image",
        "everything_get-structured-content",
        "everything_get-resource-links",
        "everything_get-resource-reference",
        "everything_get-env",
        "everything_gzip-file-as-resource",
        "everything_toggle-simulated-logging",
        "everything_trigger-long-running-operation",
    ] {
        let spec = specs
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let schema = spec.input_schema.as_ref().unwrap();
        assert_eq!(schema["type"], "object", "{name}");
        assert!(
            spec.description.as_deref().is_some_and(|d| !d.trim().is_empty()),
            "{name}"
        );
    }
    let echo = specs.iter().find(|s| s.name == "everything_echo").unwrap();
    assert_eq!(echo.description.as_deref(), Some("Echoes back the input string"));
    assert_eq!(
        echo.input_schema.as_ref().unwrap()["properties"]["message"]["type"],
        "string"
    );
}

#[tokio::test]
async fn echo_and_sum() {
    let Some(bridge) = everything("echo_and_sum", false, &[]).await else {
        return;
    };
    let stage = FakeStage::default();
    let echo = bridge
        .call_tool("everything_echo", input(json!({"message": "hello nexus"})), &stage)
        .await
        .unwrap();
    assert_eq!(texts(&echo), ["Echo: hello nexus"]);
    assert_eq!(echo.title.as_deref(), Some("everything echo"));
    assert!(!echo.is_error);
    let sum = bridge
        .call_tool("everything_get-sum", input(json!({"a": 2, "b": 40})), &stage)
        .await
        .unwrap();
    assert_eq!(texts(&sum), ["The sum of 2 and 40 is 42."]);
    assert_eq!(sum.structured_content, None);
}

#[tokio::test]
async fn the_tiny_image_becomes_a_staged_png_capture() {
    let Some(bridge) = everything("the_tiny_image_becomes_a_staged_png_capture", false, &[]).await else {
        return;
    };
    let stage = FakeStage::default();
    let out = bridge
        .call_tool("everything_get-tiny-image", json!({}), &stage)
        .await
        .unwrap();
    let staged = stage.staged.lock().unwrap();
    assert_eq!(staged.len(), 1);
    assert!(staged[0].bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not PNG bytes");
    assert_eq!(staged[0].filename, "get-tiny-image.png");
    assert_eq!(staged[0].mime_type, "image/png");
    assert_eq!(out.content.len(), 3);
    match &out.content[1] {
        Block::ResourceLink { uri, name, size, .. } => {
            assert!(uri.starts_with("nexus://uploads/"));
            assert_eq!(name, "get-tiny-image.png");
            assert_eq!(*size, Some(staged[0].bytes.len() as u64));
        }
        other => panic!("the image is not linked: {other:?}"),
    }
    assert_eq!(texts(&out).len(), 2);
}

#[tokio::test]
async fn structured_content_carries_over_beside_the_servers_own_text() {
    let Some(bridge) = everything(
        "structured_content_carries_over_beside_the_servers_own_text",
        false,
        &[],
    )
    .await
    else {
        return;
    };
    let out = bridge
        .call_tool(
            "everything_get-structured-content",
            input(json!({"location": "New York"})),
            &FakeStage::default(),
        )
        .await
        .unwrap();
    let expected = json!({"temperature": 33, "conditions": "Cloudy", "humidity": 82});
    assert_eq!(out.structured_content, Some(expected.clone()));
    // The server itself sends the JSON as text too (MCP's advice); the bridge adds none.
    assert_eq!(texts(&out).len(), 1);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(texts(&out)[0]).unwrap(),
        expected
    );
}

#[tokio::test]
async fn foreign_resource_links_become_text_holding_their_json() {
    let Some(bridge) = everything("foreign_resource_links_become_text_holding_their_json", false, &[]).await else {
        return;
    };
    let stage = FakeStage::default();
    let out = bridge
        .call_tool("everything_get-resource-links", input(json!({"count": 2})), &stage)
        .await
        .unwrap();
    let text = texts(&out);
    assert_eq!(text.len(), 3, "{out:?}");
    assert!(text[0].contains("2 resource links"));
    for link in &text[1..] {
        let value: serde_json::Value = serde_json::from_str(link).unwrap();
        assert_eq!(value["type"], "resource_link");
        assert!(value["uri"].as_str().unwrap().starts_with("demo://"), "{value}");
        assert!(value["name"].as_str().is_some_and(|n| n.contains("Resource")));
    }
    assert!(stage.staged.lock().unwrap().is_empty());

    // An embedded blob is a capture; an embedded text resource is its text.
    let blob = bridge
        .call_tool(
            "everything_get-resource-reference",
            input(json!({"resourceType": "Blob", "resourceId": 3})),
            &stage,
        )
        .await
        .unwrap();
    {
        let staged = stage.staged.lock().unwrap();
        assert_eq!(staged.len(), 1, "{blob:?}");
        let bytes = String::from_utf8(staged[0].bytes.clone()).unwrap();
        assert!(bytes.starts_with("Resource 3: This is a base64 blob"), "{bytes}");
        assert_eq!(staged[0].mime_type, "text/plain");
    }
    assert!(blob.content.iter().any(|b| matches!(b, Block::ResourceLink { .. })));
    let text = bridge
        .call_tool(
            "everything_get-resource-reference",
            input(json!({"resourceType": "Text", "resourceId": 2})),
            &stage,
        )
        .await
        .unwrap();
    assert!(
        texts(&text)
            .iter()
            .any(|t| t.starts_with("Resource 2: This is a plaintext resource")),
        "{text:?}"
    );
}

#[tokio::test]
async fn annotations_are_ignored_until_the_server_is_trusted() {
    let test = "annotations_are_ignored_until_the_server_is_trusted";
    let Some(untrusted) = everything(test, false, &[]).await else {
        return;
    };
    assert!(untrusted.specs().iter().all(|s| s.effect_profile == FAIL_CLOSED));
    drop(untrusted);

    let Some(trusted) = everything(test, true, &[]).await else {
        return;
    };
    let specs = trusted.specs();
    let profile = |name: &str| {
        specs
            .iter()
            .find(|s| s.name == format!("everything_{name}"))
            .unwrap()
            .effect_profile
    };
    let p = |kind, destructive, effect_scope, idempotency| EffectProfile {
        kind,
        destructive,
        effect_scope,
        idempotency,
        reconciliation: Reconciliation::None,
    };
    // readOnly, not destructive, closed world, idempotent.
    assert_eq!(
        profile("echo"),
        p(EffectKind::ReadOnly, false, EffectScope::Closed, Idempotency::Intrinsic)
    );
    // Not read-only, not destructive, open world, idempotent.
    assert_eq!(
        profile("gzip-file-as-resource"),
        p(EffectKind::Write, false, EffectScope::Open, Idempotency::Intrinsic)
    );
    // Not read-only, not destructive, closed world, not idempotent.
    assert_eq!(
        profile("toggle-simulated-logging"),
        p(EffectKind::Write, false, EffectScope::Closed, Idempotency::None)
    );
}

#[tokio::test]
async fn the_configured_environment_reaches_the_server() {
    let Some(bridge) = everything(
        "the_configured_environment_reaches_the_server",
        false,
        &[("NEXUS_BRIDGE_PROBE", "probe-7")],
    )
    .await
    else {
        return;
    };
    let out = bridge
        .call_tool("everything_get-env", json!({}), &FakeStage::default())
        .await
        .unwrap();
    let env: serde_json::Value = serde_json::from_str(texts(&out)[0]).unwrap();
    assert_eq!(env["NEXUS_BRIDGE_PROBE"], "probe-7");
}

#[tokio::test]
async fn its_list_change_after_initialize_is_re_listed() {
    // The server registers its capability-dependent tools after `initialized` and says so
    // with `notifications/tools/list_changed`.
    let Some(entry) = everything_or_skip("its_list_change_after_initialize_is_re_listed") else {
        return;
    };
    let (bridge, changes) = start(&[node_server("everything", &entry, &["stdio"], &[], false)])
        .await
        .unwrap();
    eventually("a re-list after list_changed", || changes.load(Ordering::SeqCst) >= 1).await;
    assert!(bridge.specs().iter().any(|s| s.name == "everything_echo"));
}

#[tokio::test]
async fn a_killed_server_fails_the_call_in_flight_and_comes_back() {
    let Some(entry) = everything_or_skip("a_killed_server_fails_the_call_in_flight_and_comes_back") else {
        return;
    };
    let (bridge, _) = start(&[node_server("everything", &entry, &["stdio"], &[], false)])
        .await
        .unwrap();
    let bridge = std::sync::Arc::new(bridge);
    let first = bridge.pid("everything").unwrap();
    let running = {
        let bridge = bridge.clone();
        tokio::spawn(async move {
            bridge
                .call_tool(
                    "everything_trigger-long-running-operation",
                    input(json!({"duration": 30, "steps": 30})),
                    &FakeStage::default(),
                )
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let status = std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::time::timeout(std::time::Duration::from_secs(10), running)
        .await
        .expect("the call in flight ends when its server dies")
        .unwrap();
    assert!(out.is_error, "{out:?}");
    assert_eq!(out.outcome, Outcome::Completed);
    let message = texts(&out)[0];
    assert!(
        message.contains("`everything`") && message.contains("exited"),
        "{message}"
    );

    eventually("a restarted server", || {
        bridge.pid("everything").is_some_and(|pid| pid != first)
    })
    .await;
    let echo = bridge
        .call_tool(
            "everything_echo",
            input(json!({"message": "again"})),
            &FakeStage::default(),
        )
        .await
        .unwrap();
    assert_eq!(texts(&echo), ["Echo: again"]);
}
