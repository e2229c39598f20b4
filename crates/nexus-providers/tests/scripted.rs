//! The `scripted` provider end to end (providers.md §7), through the `Provider` trait.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nexus_providers::{
    Entry, ModelReply, ModelRequest, NoBlobs, NoDeltas, Part, Provider, ProviderError, Providers, RawToolCall,
    RequestOptions, Scripted, StopReason, Usage,
};
use serde_json::{Value, json};
use uuid::Uuid;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(format!("{name}.jsonl")), text).unwrap();
}

fn request(model: &str, entries: Vec<Entry>) -> ModelRequest {
    ModelRequest {
        provider: "scripted".into(),
        model: model.into(),
        system: vec!["You are terse.".into(), "Skills available now".into()],
        entries,
        tools_deferred: vec![],
        tools: vec![
            json!({"type":"function","function":{"name":"read","description":"d","parameters":{},"strict":false}}),
            json!({"type":"function","function":{"name":"tool_search","parameters":{},"strict":false}}),
            json!({"type":"web_search_20250305","name":"web_search"}),
        ],
        options: RequestOptions {
            max_output_tokens: Some(1024),
            reasoning_effort: None,
        },
    }
}

fn assistant(calls: &[&str]) -> Entry {
    Entry::Assistant {
        text: None,
        tool_calls: calls
            .iter()
            .map(|id| RawToolCall {
                id: id.to_string(),
                name: "read".into(),
                arguments: "{}".into(),
            })
            .collect(),
        native: None,
    }
}

fn result(call_id: &str, output: &str, is_error: bool) -> Entry {
    Entry::ToolResult {
        call_id: call_id.into(),
        name: "read".into(),
        output: output.into(),
        is_error,
    }
}

async fn run(p: &dyn Provider, req: &ModelRequest) -> Result<ModelReply, ProviderError> {
    let enc = p.encode(req, &NoBlobs)?;
    p.send(&enc, &NoDeltas).await
}

fn detail(e: ProviderError) -> String {
    assert_eq!(e.key, "provider_error", "{e}");
    e.detail.unwrap()
}

#[tokio::test]
async fn every_reply_field() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "fields",
        r#"// the first reply
{"text":"Reading.","tool_calls":[{"id":"c1","name":"read","input":{"path":"README.md","a":1}},{"name":"bad","arguments":"{not json"}],"usage":{"input_tokens":120,"output_tokens":18},"native":[{"type":"thinking","signature":"s"}]}

{"text":"cut","stop":"max_tokens"}
{"tool_calls":[{"name":"read","input":{}}],"stop":"end_turn"}
{"text":"done","delay_ms":60}
"#,
    );
    let p = Scripted::new(dir.path());
    let mut entries = vec![Entry::user_text("go")];
    let r = run(&p, &request("fields", entries.clone())).await.unwrap();
    assert_eq!(r.text.as_deref(), Some("Reading."));
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(
        r.tool_calls,
        vec![
            RawToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: r#"{"a":1,"path":"README.md"}"#.into()
            },
            RawToolCall {
                id: "call_main_0_1".into(),
                name: "bad".into(),
                arguments: "{not json".into()
            },
        ]
    );
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 18,
            ..Usage::default()
        }
    );
    assert_eq!(r.native, Some(json!([{"type":"thinking","signature":"s"}])));

    entries.push(assistant(&["c1", "call_main_0_1"]));
    let r = run(&p, &request("fields", entries.clone())).await.unwrap();
    assert_eq!(r.stop, StopReason::OutputBudgetExhausted);
    assert_eq!(r.usage, Usage::default());
    assert!(r.tool_calls.is_empty());

    entries.push(assistant(&[]));
    let r = run(&p, &request("fields", entries.clone())).await.unwrap();
    assert_eq!(r.stop, StopReason::EndTurn, "an explicit stop wins over the default");
    assert_eq!(r.tool_calls[0].id, "call_main_2_0");
    assert_eq!(r.text, None);

    entries.push(assistant(&[]));
    let started = Instant::now();
    let r = run(&p, &request("fields", entries.clone())).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(60));
    assert_eq!(r.text.as_deref(), Some("done"));
    assert_eq!(r.stop, StopReason::EndTurn);
}

#[tokio::test]
async fn threads_and_kth_line_and_exhaustion() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "t",
        r#"{"text":"main 0"}
{"thread":"side","text":"side 0","tool_calls":[{"name":"read","input":{}}]}
{"text":"main 1"}
{"thread":"side","text":"side 1"}
"#,
    );
    let p = Scripted::new(dir.path());
    let main0 = vec![Entry::user_text("hello")];
    assert_eq!(
        run(&p, &request("t", main0.clone())).await.unwrap().text.as_deref(),
        Some("main 0")
    );
    let mut main1 = main0.clone();
    main1.extend([assistant(&[]), Entry::user_text("more")]);
    assert_eq!(
        run(&p, &request("t", main1.clone())).await.unwrap().text.as_deref(),
        Some("main 1")
    );
    main1.extend([assistant(&[]), Entry::user_text("again")]);
    assert_eq!(
        detail(run(&p, &request("t", main1)).await.unwrap_err()),
        "script_exhausted"
    );

    let side0 = vec![Entry::User {
        parts: vec![Part::text("brief"), Part::text("[[thread:side]] do it")],
    }];
    let r = run(&p, &request("t", side0.clone())).await.unwrap();
    assert_eq!(r.text.as_deref(), Some("side 0"));
    assert_eq!(r.tool_calls[0].id, "call_side_0_0");
    let mut side1 = side0;
    side1.extend([assistant(&["call_side_0_0"]), result("call_side_0_0", "ok", false)]);
    assert_eq!(
        run(&p, &request("t", side1.clone())).await.unwrap().text.as_deref(),
        Some("side 1")
    );
    side1.push(assistant(&[]));
    assert_eq!(
        detail(run(&p, &request("t", side1)).await.unwrap_err()),
        "script_exhausted"
    );

    // The same request gives the same reply every time (stateless selection).
    for _ in 0..3 {
        assert_eq!(
            run(&p, &request("t", main0.clone())).await.unwrap().text.as_deref(),
            Some("main 0")
        );
    }
    // A thread with no lines is exhausted at once.
    let none = vec![Entry::user_text("[[thread:ghost]]")];
    assert_eq!(
        detail(run(&p, &request("t", none)).await.unwrap_err()),
        "script_exhausted"
    );
}

fn full_request() -> ModelRequest {
    request(
        "e",
        vec![
            Entry::user_text("please read"),
            assistant(&["c0"]),
            result("c0", "file is ok", false),
            Entry::Attachments {
                parts: vec![
                    Part::Image {
                        upload: Uuid::nil(),
                        media_type: "image/png".into(),
                    },
                    Part::Document { upload: Uuid::nil() },
                ],
            },
            Entry::user_text("steer: be quick"),
        ],
    )
}

#[tokio::test]
async fn each_expectation_passes_and_fails() {
    let cases: Vec<(Value, Option<&str>)> = vec![
        (json!({"tools_include":["read","tool_search","web_search"]}), None),
        (json!({"tools_include":["read","write"]}), Some("tools_include write")),
        (json!({"tools_exclude":["write"]}), None),
        (json!({"tools_exclude":["read"]}), Some("tools_exclude read")),
        (json!({"system_contains":"Skills available"}), None),
        (
            json!({"system_contains":"verbose"}),
            Some("system_contains \"verbose\""),
        ),
        (json!({"last_user_contains":"be quick"}), None),
        (
            json!({"last_user_contains":"please"}),
            Some("last_user_contains \"please\""),
        ),
        (json!({"attachments":2}), None),
        (json!({"attachments":1}), Some("attachments 1 (found 2)")),
        (
            json!({"last_result":{"call_id":"c0","name":"read","contains":"ok","is_error":false}}),
            None,
        ),
        (
            json!({"last_result":{"call_id":"c9"}}),
            Some("last_result.call_id \"c9\" (found \"c0\")"),
        ),
        (
            json!({"last_result":{"name":"write"}}),
            Some("last_result.name \"write\" (found \"read\")"),
        ),
        (
            json!({"last_result":{"contains":"broken"}}),
            Some("last_result.contains \"broken\""),
        ),
        (
            json!({"last_result":{"is_error":true}}),
            Some("last_result.is_error true (found false)"),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let p = Scripted::new(dir.path());
    for (expect, failure) in cases {
        let line = json!({"thread":"main","text":"skip"});
        let line2 = json!({"text":"checked","expect":expect});
        write(dir.path(), "e", &format!("{line}\n{line2}\n"));
        let got = run(&p, &full_request()).await;
        match failure {
            None => assert_eq!(got.unwrap().text.as_deref(), Some("checked"), "{expect}"),
            Some(assertion) => assert_eq!(
                detail(got.unwrap_err()),
                format!("script_expectation_failed: {assertion}"),
                "{expect}"
            ),
        }
    }
    // last_result with no tool result in the request.
    write(dir.path(), "e", r#"{"expect":{"last_result":{}}}"#);
    let got = run(&p, &request("e", vec![Entry::user_text("x")])).await;
    assert_eq!(
        detail(got.unwrap_err()),
        "script_expectation_failed: last_result (no tool result)"
    );
    // attachments 0 holds when there are none.
    write(dir.path(), "e", r#"{"expect":{"attachments":0},"text":"ok"}"#);
    assert!(run(&p, &request("e", vec![Entry::user_text("x")])).await.is_ok());
}

#[tokio::test]
async fn injected_errors_count_attempts() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "err",
        r#"{"text":"finally","error":{"key":"provider_overloaded","times":2,"status":529}}
{"error":{"key":"provider_context_overflow"}}
"#,
    );
    let p = Scripted::new(dir.path());
    let req = request("err", vec![Entry::user_text("x")]);
    let enc = p.encode(&req, &NoBlobs).unwrap();
    for _ in 0..2 {
        let e = p.send(&enc, &NoDeltas).await.unwrap_err();
        assert_eq!(e.key, "provider_overloaded");
        assert_eq!(e.http_status, Some(529));
        assert!(e.is_retryable());
    }
    assert_eq!(p.send(&enc, &NoDeltas).await.unwrap().text.as_deref(), Some("finally"));
    assert_eq!(p.send(&enc, &NoDeltas).await.unwrap().text.as_deref(), Some("finally"));

    // A different request (another body) has its own count.
    let other = p
        .encode(&request("err", vec![Entry::user_text("y")]), &NoBlobs)
        .unwrap();
    assert_eq!(p.send(&other, &NoDeltas).await.unwrap_err().key, "provider_overloaded");

    // A new instance (a restart) starts counting again.
    let restarted = Scripted::new(dir.path());
    assert_eq!(
        restarted.send(&enc, &NoDeltas).await.unwrap_err().key,
        "provider_overloaded"
    );

    // Without times, every attempt fails.
    let second = p
        .encode(&request("err", vec![Entry::user_text("x"), assistant(&[])]), &NoBlobs)
        .unwrap();
    for _ in 0..5 {
        let e = p.send(&second, &NoDeltas).await.unwrap_err();
        assert_eq!(e.key, "provider_context_overflow");
        assert_eq!(e.http_status, None);
        assert!(!e.is_retryable());
    }
}

#[tokio::test]
async fn echo_behaviours() {
    let p = Scripted::new("/nonexistent/scripts");
    // Last user text.
    let r = run(&p, &request("echo", vec![Entry::user_text("hello there")]))
        .await
        .unwrap();
    assert_eq!(r.text.as_deref(), Some("hello there"));
    assert_eq!(r.stop, StopReason::EndTurn);
    assert!(r.usage.input_tokens > 0);

    // Call directives in the last user entry.
    let prompt = r#"do [[call:read {"path":"a.md"}]] then [[call:ls {}]]"#;
    let mut entries = vec![Entry::user_text(prompt)];
    let r = run(&p, &request("echo", entries.clone())).await.unwrap();
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(
        r.tool_calls,
        vec![
            RawToolCall {
                id: "call_echo_0_0".into(),
                name: "read".into(),
                arguments: r#"{"path":"a.md"}"#.into()
            },
            RawToolCall {
                id: "call_echo_0_1".into(),
                name: "ls".into(),
                arguments: "{}".into()
            },
        ]
    );

    // Tool results (attachments after them are skipped) → outputs joined by newlines.
    entries.push(Entry::Assistant {
        text: None,
        tool_calls: r.tool_calls,
        native: None,
    });
    entries.push(result("call_echo_0_0", "contents", false));
    entries.push(result("call_echo_0_1", "a.md\nb.md", false));
    entries.push(Entry::Attachments {
        parts: vec![Part::Document { upload: Uuid::nil() }],
    });
    let r = run(&p, &request("echo", entries.clone())).await.unwrap();
    assert_eq!(r.text.as_deref(), Some("contents\na.md\nb.md"));
    assert_eq!(r.stop, StopReason::EndTurn);

    // A later call directive gets k = the assistant count.
    entries.push(Entry::Assistant {
        text: r.text,
        tool_calls: vec![],
        native: None,
    });
    entries.push(Entry::user_text("[[call:read {}]]"));
    let r = run(&p, &request("echo", entries)).await.unwrap();
    assert_eq!(r.tool_calls[0].id, "call_echo_2_0");
}

#[tokio::test]
async fn encode_is_deterministic_and_canonical() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "d", r#"{"text":"x"}"#);
    let p = Scripted::new(dir.path());
    let a = p.encode(&full_request_for("d"), &NoBlobs).unwrap();
    let b = p.encode(&full_request_for("d"), &NoBlobs).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.body_sha256, b.body_sha256);
    assert_eq!(a.body, full_request_for("d").canonical_bytes());
    assert_eq!(ModelRequest::from_json_bytes(&a.body).unwrap(), full_request_for("d"));
    // Another instance over another directory gives the same bytes.
    let other = Scripted::new(dir.path().join("elsewhere"));
    assert_eq!(
        other.encode(&full_request_for("echo"), &NoBlobs).unwrap().body,
        p.encode(&full_request_for("echo"), &NoBlobs).unwrap().body
    );
    // Member order in tools does not change the canonical bytes.
    let mut reordered = full_request_for("d");
    reordered.tools[0] =
        json!({"function":{"strict":false,"parameters":{},"description":"d","name":"read"},"type":"function"});
    assert_eq!(p.encode(&reordered, &NoBlobs).unwrap().body_sha256, a.body_sha256);
    let caps = p.capabilities("d");
    assert_eq!(caps.context_window, 200_000);
    assert_eq!(caps.max_output_tokens, 8_192);
    assert!(caps.tools && !caps.native_tool_search);
    assert_eq!(
        caps.media.iter().map(String::as_str).collect::<Vec<_>>(),
        ["application/pdf", "image/gif", "image/jpeg", "image/png", "image/webp"]
    );
}

fn full_request_for(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        ..full_request()
    }
}

#[tokio::test]
async fn script_written_after_start_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let scripts = dir.path().join("scripts");
    let providers = Providers::new(scripts.clone());
    let (p, model) = providers.resolve("scripted/late").unwrap();
    let req = request(&model, vec![Entry::user_text("x")]);
    assert_eq!(
        detail(p.encode(&req, &NoBlobs).unwrap_err()),
        format!(
            "script_not_found: late.jsonl (looked in {}; write it there, or use scripted/echo)",
            scripts.display()
        )
    );
    std::fs::create_dir_all(&scripts).unwrap();
    write(&scripts, "late", r#"{"text":"now here"}"#);
    assert_eq!(run(p.as_ref(), &req).await.unwrap().text.as_deref(), Some("now here"));
    // Edited between runs: the next encode/send reads the new text.
    write(&scripts, "late", r#"{"text":"edited"}"#);
    assert_eq!(run(p.as_ref(), &req).await.unwrap().text.as_deref(), Some("edited"));
    // Sub-directories work.
    std::fs::create_dir_all(scripts.join("suite")).unwrap();
    write(&scripts.join("suite"), "one", r#"{"text":"nested"}"#);
    let (p, model) = providers.resolve("scripted/suite/one").unwrap();
    let req = request(&model, vec![Entry::user_text("x")]);
    assert_eq!(run(p.as_ref(), &req).await.unwrap().text.as_deref(), Some("nested"));
    let _: Arc<dyn Provider> = p;
}

#[tokio::test]
async fn malformed_lines_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "bad", "{\"text\":\"fine\"}\n\n// note\n{\"text\": oops}\n");
    let p = Scripted::new(dir.path());
    let req = request("bad", vec![Entry::user_text("x")]);
    let d = detail(p.encode(&req, &NoBlobs).unwrap_err());
    assert!(d.starts_with("script_malformed: bad.jsonl line 4: "), "{d}");

    // A script broken after sealing fails at send the same way.
    write(dir.path(), "bad", "{\"text\":\"fine\"}\n");
    let enc = p.encode(&req, &NoBlobs).unwrap();
    write(dir.path(), "bad", "{\"text\":\"fine\"}\n{\"stop\":\"whenever\"}\n");
    let d = detail(p.send(&enc, &NoDeltas).await.unwrap_err());
    assert!(d.starts_with("script_malformed: bad.jsonl line 2: stop must be"), "{d}");

    // A body that is not a neutral request.
    let junk = nexus_providers::EncodedRequest::new("scripted:bad", vec![], b"[]".to_vec());
    assert!(detail(p.send(&junk, &NoDeltas).await.unwrap_err()).starts_with("undecodable_body"));
}

#[tokio::test]
async fn same_length_edits_are_seen_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = Scripted::new(dir.path());
    let req = request("quick", vec![Entry::user_text("x")]);
    // Rewrites of equal length, faster than file timestamps tick.
    for round in 0..10 {
        let text = format!("{{\"text\":\"v{round}\"}}\n");
        write(dir.path(), "quick", &text);
        assert_eq!(
            run(&p, &req).await.unwrap().text,
            Some(format!("v{round}")),
            "encode and send read the new text"
        );
    }
    // Edited between encode and send: send reads the new text.
    let enc = p.encode(&req, &NoBlobs).unwrap();
    write(dir.path(), "quick", "{\"text\":\"vX\"}\n");
    assert_eq!(p.send(&enc, &NoDeltas).await.unwrap().text.as_deref(), Some("vX"));
    // Removed: both fail as for a script never written.
    std::fs::remove_file(dir.path().join("quick.jsonl")).unwrap();
    let gone = format!(
        "script_not_found: quick.jsonl (looked in {}; write it there, or use scripted/echo)",
        dir.path().display()
    );
    assert_eq!(detail(p.send(&enc, &NoDeltas).await.unwrap_err()), gone);
    assert_eq!(detail(p.encode(&req, &NoBlobs).unwrap_err()), gone);
}

/// `send` on the provider that encoded a request (which remembers what it needs) and on a
/// fresh one (which decodes the body) give the same outcome.
#[tokio::test]
async fn remembered_and_decoded_sends_agree() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "e",
        r#"{"text":"skip"}
{"text":"checked","expect":{"tools_include":["read"],"system_contains":"terse","last_user_contains":"quick","attachments":2,"last_result":{"call_id":"c0","name":"read","contains":"ok","is_error":false}}}
{"thread":"side","tool_calls":[{"name":"read","input":{"b":1,"a":2}}]}
{"expect":{"tools_exclude":["read"]}}
"#,
    );
    let mut side = request("e", vec![Entry::user_text("[[thread:side]] go")]);
    side.entries.push(Entry::Attachments { parts: vec![] });
    let mut failing = full_request();
    failing.entries.push(assistant(&[]));
    let mut echo_results = full_request_for("echo");
    echo_results.entries.truncate(4);
    let cases = vec![
        full_request(),
        side,
        failing,
        full_request_for("echo"),
        echo_results,
        request("echo", vec![Entry::user_text(r#"[[call:read {"z":[1],"a":"b"}]]"#)]),
    ];
    let p = Scripted::new(dir.path());
    for req in cases {
        let enc = p.encode(&req, &NoBlobs).unwrap();
        let remembered = p.send(&enc, &NoDeltas).await;
        let decoded = Scripted::new(dir.path()).send(&enc, &NoDeltas).await;
        assert_eq!(remembered, decoded, "{:?}", req.entries);
    }
}
