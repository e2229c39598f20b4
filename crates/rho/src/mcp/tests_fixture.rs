//! The bridge against a scripted MCP server (`testdata/fixture.mjs`): pagination, clashes,
//! JSON-RPC errors, list changes, an exit during a call and the restart after it.

use std::sync::atomic::Ordering;

use nexus_sdk::runner::{Block, EffectKind, EffectScope, Idempotency, Outcome};
use serde_json::json;

use super::profile::FAIL_CLOSED;
use super::results::tests::FakeStage;
use super::test_support::{eventually, fixture_or_skip, input, node_server, start, texts};

fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -9 {pid}");
}

#[tokio::test]
async fn every_page_is_listed_and_served_under_the_server_prefix() {
    let Some(script) = fixture_or_skip("every_page_is_listed_and_served_under_the_server_prefix") else {
        return;
    };
    let (bridge, _) = start(&[node_server("fx", &script, &[], &[], false)]).await.unwrap();
    let mut names: Vec<String> = bridge.specs().into_iter().map(|s| s.name).collect();
    names.sort();
    // Nine tools over three pages of three.
    assert_eq!(
        names,
        [
            "fx_annotated",
            "fx_bare",
            "fx_echo",
            "fx_exit",
            "fx_grow",
            "fx_media",
            "fx_oops",
            "fx_refuse",
            "fx_structured"
        ]
    );
    let bare = bridge.specs().into_iter().find(|s| s.name == "fx_bare").unwrap();
    assert_eq!(bare.input_schema, Some(json!({"properties": {}, "type": "object"})));
    assert_eq!(
        bare.description.as_deref(),
        Some("The `bare` tool of the MCP server `fx`.")
    );

    let stage = FakeStage::default();
    let out = bridge
        .call_tool("fx_echo", input(json!({"text": "hi"})), &stage)
        .await
        .unwrap();
    assert_eq!(texts(&out), ["echo: hi"]);
    assert_eq!(out.title.as_deref(), Some("fx echo"));
    assert_eq!(out.outcome, Outcome::Completed);
    assert!(bridge.call_tool("read", json!({}), &stage).await.is_none());
    assert!(bridge.call_tool("fx_nothing", json!({}), &stage).await.is_none());
    let bad = bridge.call_tool("fx_echo", json!("text"), &stage).await.unwrap();
    assert_eq!(bad.outcome, Outcome::Failed);
}

#[tokio::test]
async fn blocks_errors_and_structured_content_map_over_the_wire() {
    let Some(script) = fixture_or_skip("blocks_errors_and_structured_content_map_over_the_wire") else {
        return;
    };
    let (bridge, _) = start(&[node_server("fx", &script, &[], &[], false)]).await.unwrap();
    let stage = FakeStage::default();

    let media = bridge.call_tool("fx_media", json!({}), &stage).await.unwrap();
    {
        let staged = stage.staged.lock().unwrap();
        assert_eq!(staged.len(), 2);
        assert_eq!(staged[0].bytes, b"RIFF-fake-wav");
        assert_eq!(
            (staged[0].filename.as_str(), staged[0].mime_type.as_str()),
            ("media.wav", "audio/wav")
        );
        assert_eq!(staged[1].bytes, [0u8, 1, 2]);
        assert_eq!(staged[1].filename, "data.bin");
    }
    assert_eq!(media.content.len(), 5);
    assert!(matches!(&media.content[1], Block::ResourceLink { name, .. } if name == "media.wav"));
    assert!(matches!(&media.content[2], Block::ResourceLink { name, .. } if name == "data.bin"));
    let text = texts(&media);
    assert_eq!(text[0], "media follows");
    assert_eq!(text[1], "an embedded note");
    let link: serde_json::Value = serde_json::from_str(text[2]).unwrap();
    assert_eq!(link["type"], "resource_link");
    assert_eq!(link["uri"], "fixture://elsewhere/2");

    let refused = bridge.call_tool("fx_refuse", json!({}), &stage).await.unwrap();
    assert_eq!(refused.outcome, Outcome::Failed);
    assert!(texts(&refused)[0].starts_with("the fixture refuses"), "{refused:?}");

    let oops = bridge.call_tool("fx_oops", json!({}), &stage).await.unwrap();
    assert!(oops.is_error);
    assert_eq!(oops.outcome, Outcome::Completed);
    assert_eq!(texts(&oops), ["it went wrong"]);

    let structured = bridge.call_tool("fx_structured", json!({}), &stage).await.unwrap();
    assert_eq!(structured.structured_content, Some(json!({"n": 1, "ok": true})));
    assert!(structured.content.is_empty());
}

#[tokio::test]
async fn annotations_count_only_for_a_trusted_server() {
    let Some(script) = fixture_or_skip("annotations_count_only_for_a_trusted_server") else {
        return;
    };
    let (bridge, _) = start(&[
        node_server("plain", &script, &[], &[], false),
        node_server("trusted", &script, &[], &[], true),
    ])
    .await
    .unwrap();
    let specs = bridge.specs();
    let profile = |name: &str| specs.iter().find(|s| s.name == name).unwrap().effect_profile;
    assert_eq!(profile("plain_annotated"), FAIL_CLOSED);
    let trusted = profile("trusted_annotated");
    assert_eq!(
        (
            trusted.kind,
            trusted.destructive,
            trusted.effect_scope,
            trusted.idempotency
        ),
        (EffectKind::ReadOnly, false, EffectScope::Closed, Idempotency::Intrinsic)
    );
    // A trusted tool without annotations stays fail-closed.
    assert_eq!(profile("trusted_echo"), FAIL_CLOSED);
}

#[tokio::test]
async fn a_list_change_is_re_listed_and_reported() {
    let Some(script) = fixture_or_skip("a_list_change_is_re_listed_and_reported") else {
        return;
    };
    let (bridge, changes) = start(&[node_server("fx", &script, &[], &[], false)]).await.unwrap();
    assert_eq!(changes.load(Ordering::SeqCst), 0);
    assert!(!bridge.specs().iter().any(|s| s.name == "fx_extra"));
    let grown = bridge
        .call_tool("fx_grow", json!({}), &FakeStage::default())
        .await
        .unwrap();
    assert_eq!(texts(&grown), ["grown"]);
    eventually("the re-listed tool", || {
        bridge.specs().iter().any(|s| s.name == "fx_extra")
    })
    .await;
    assert!(changes.load(Ordering::SeqCst) >= 1);
    let extra = bridge
        .call_tool("fx_extra", json!({"text": "x"}), &FakeStage::default())
        .await
        .unwrap();
    assert_eq!(texts(&extra), ["extra ran"]);
}

#[tokio::test]
async fn an_exit_fails_the_call_in_flight_and_the_server_is_restarted() {
    let Some(script) = fixture_or_skip("an_exit_fails_the_call_in_flight_and_the_server_is_restarted") else {
        return;
    };
    let (bridge, changes) = start(&[node_server("fx", &script, &[], &[], false)]).await.unwrap();
    let first = bridge.pid("fx").unwrap();
    bridge
        .call_tool("fx_grow", json!({}), &FakeStage::default())
        .await
        .unwrap();
    eventually("the grown list", || bridge.specs().iter().any(|s| s.name == "fx_extra")).await;
    let before = changes.load(Ordering::SeqCst);

    let out = bridge
        .call_tool("fx_exit", json!({}), &FakeStage::default())
        .await
        .unwrap();
    assert!(out.is_error, "{out:?}");
    let message = texts(&out)[0];
    assert!(message.contains("`fx`") && message.contains("exited"), "{message}");

    eventually("a new process", || bridge.pid("fx").is_some_and(|pid| pid != first)).await;
    let again = bridge
        .call_tool("fx_echo", json!({"text": "back"}), &FakeStage::default())
        .await
        .unwrap();
    assert_eq!(texts(&again), ["echo: back"]);
    // The fresh process lists its nine tools again; `extra` is gone and the change reported.
    assert!(!bridge.specs().iter().any(|s| s.name == "fx_extra"));
    assert!(changes.load(Ordering::SeqCst) > before);

    // A kill -9 from outside is survived the same way.
    let second = bridge.pid("fx").unwrap();
    kill(second);
    eventually("a third process", || bridge.pid("fx").is_some_and(|pid| pid != second)).await;
    let third = bridge
        .call_tool("fx_echo", json!({"text": "3"}), &FakeStage::default())
        .await
        .unwrap();
    assert_eq!(texts(&third), ["echo: 3"]);
}

#[tokio::test]
async fn a_call_while_the_server_is_down_is_an_error_naming_it() {
    let Some(script) = fixture_or_skip("a_call_while_the_server_is_down_is_an_error_naming_it") else {
        return;
    };
    let (bridge, _) = start(&[node_server("fx", &script, &[], &[], false)]).await.unwrap();
    bridge.shared.mark_down(0);
    let out = bridge
        .call_tool("fx_echo", json!({}), &FakeStage::default())
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(texts(&out)[0].contains("`fx` is not running"), "{out:?}");
    assert_eq!(out.title.as_deref(), Some("fx echo"));
}

#[tokio::test]
async fn clashing_names_refuse_the_start_and_name_both_tools() {
    let Some(script) = fixture_or_skip("clashing_names_refuse_the_start_and_name_both_tools") else {
        return;
    };
    let within = start(&[node_server("fx", &script, &[], &[("FIXTURE_MODE", "collide")], false)]).await;
    let err = within
        .err()
        .expect("a clash within a server refuses the start")
        .to_string();
    assert!(
        err.contains("`a.b`") && err.contains("`a_b`") && err.contains("`fx_a_b`"),
        "{err}"
    );

    let across = start(&[
        node_server("f.x", &script, &[], &[], false),
        node_server("f_x", &script, &[], &[], false),
    ])
    .await;
    let err = across
        .err()
        .expect("a clash across servers refuses the start")
        .to_string();
    assert!(err.contains("server `f.x`") && err.contains("server `f_x`"), "{err}");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_a_clear_error() {
    let Some(script) = fixture_or_skip("a_server_that_cannot_start_is_a_clear_error") else {
        return;
    };
    let crash = start(&[node_server("fx", &script, &[], &[("FIXTURE_MODE", "crash")], false)]).await;
    let err = format!("{:#}", crash.err().expect("a crashing server refuses the start"));
    assert!(
        err.contains("`fx`") && err.contains("fixture: refusing to start"),
        "{err}"
    );

    let missing = crate::config::McpServer {
        name: "ghost".into(),
        command: "/nonexistent/no-such-mcp-server".into(),
        args: vec![],
        env: Default::default(),
        trusted: false,
    };
    let err = format!(
        "{:#}",
        start(&[missing])
            .await
            .err()
            .expect("a missing command refuses the start")
    );
    assert!(err.contains("`ghost`") && err.contains("no-such-mcp-server"), "{err}");
}
