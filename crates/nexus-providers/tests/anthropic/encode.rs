//! The bytes `encode` seals (providers.md §5.1, §5.3).

use std::collections::HashMap;

use base64::Engine as _;
use nexus_providers::{Anthropic, Entry, InstanceConfig, NoBlobs, Part, Provider};
use serde_json::json;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::support::*;

#[test]
fn the_whole_body_member_order_and_headers() {
    let mut req = request(vec![
        Entry::user_text("hi"),
        assistant(Some("ok"), vec![call("c1", "read", r#"{"path":"a"}"#)]),
        result("c1", "done", false),
    ]);
    req.options.reasoning_effort = Some("low".into());
    let enc = encode(config(), &req);
    let expected = [
        r#"{"model":"claude-x","max_tokens":4096,"tools":["#,
        READ,
        CC,
        r#"}],"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Skills: none""#,
        CC,
        r#"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"c1","name":"read","input":{"path":"a"}}]},"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"done""#,
        CC,
        r#"}]}],"thinking":{"type":"enabled","budget_tokens":2048},"stream":false}"#,
    ]
    .concat();
    assert_eq!(body(&enc), expected);
    assert_eq!(enc.body_sha256, <[u8; 32]>::from(Sha256::digest(&enc.body)));
    assert_eq!(enc.url, "http://127.0.0.1:9/v1/messages");
    let names: Vec<&str> = enc.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["content-type", "anthropic-version"]);
    assert_eq!(enc.headers[0].1, "application/json");
    assert_eq!(enc.headers[1].1, "2023-06-01");

    // Beta and extra headers follow, in that order; streaming by default; no tools, no system.
    let mut c = config();
    c.stream = None;
    c.beta_headers = Some("advanced-tool-use-2025-11-20".into());
    c.extra_headers.insert("x-b".into(), "2".into());
    c.extra_headers.insert("x-a".into(), "1".into());
    let mut bare = request(vec![Entry::user_text("hi")]);
    bare.tools.clear();
    bare.system = vec![String::new(), " \n".into()];
    bare.options.max_output_tokens = None;
    let enc = encode(c, &bare);
    assert_eq!(
        body(&enc),
        r#"{"model":"claude-x","max_tokens":8192,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],"stream":true}"#
    );
    let headers: Vec<(&str, &str)> = enc.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        headers,
        [
            ("content-type", "application/json"),
            ("anthropic-version", "2023-06-01"),
            ("anthropic-beta", "advanced-tool-use-2025-11-20"),
            ("x-a", "1"),
            ("x-b", "2")
        ]
    );
}

#[test]
fn tools_bytes_are_identical_across_growing_rounds() {
    let provider = Anthropic::new(config());
    let mut req = request(vec![Entry::user_text("go")]);
    req.tools = (0..60).map(|i| func(&format!("t{i}"), i % 3 == 0)).collect();
    let mut seen = Vec::new();
    for round in 0..3 {
        // The kernel projects a new list every round: equal values, new allocations.
        req.tools = req
            .tools
            .iter()
            .map(|t| serde_json::from_str(&t.to_string()).unwrap())
            .collect();
        let enc = provider.encode(&req, &NoBlobs).unwrap();
        seen.push(tools(&enc).to_string());
        req.entries
            .push(assistant(None, vec![call(&format!("c{round}"), "t1", "{}")]));
        req.entries.push(result(&format!("c{round}"), "ok", false));
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[1], seen[2]);
    // A fresh adapter (a restart) gives the same bytes.
    assert_eq!(tools(&encode(config(), &req)), seen[0]);
    assert!(seen[0].ends_with(&format!(r#"{{"name":"t59","description":"The t59 tool.","input_schema":{{"type":"object","properties":{{"path":{{"type":"string"}}}},"required":["path"]}}{CC}}}]"#)));
}

#[test]
fn strict_only_when_true_and_shape_five_verbatim() {
    let mut req = request(vec![Entry::user_text("go")]);
    let web = json!({"type":"web_search_20250305","name":"web_search","max_uses":3});
    req.tools = vec![func("read", true), func("read", false), web];
    let mut c = config();
    c.prompt_caching = false;
    let enc = encode(c, &req);
    assert_eq!(
        tools(&enc),
        [
            "[",
            READ,
            r#","strict":true},"#,
            READ,
            r#"},{"type":"web_search_20250305","name":"web_search","max_uses":3}]"#
        ]
        .concat()
    );
}

#[test]
fn breakpoints_sit_on_exactly_three_places() {
    let req = request(vec![
        Entry::user_text("first"),
        assistant(Some("a"), vec![call("c1", "read", "{}")]),
        result("c1", "r1", false),
        Entry::user_text("steer"),
    ]);
    let enc = encode(config(), &req);
    let b = body(&enc);
    assert_eq!(b.matches("cache_control").count(), 3, "{b}");
    assert!(tools(&enc).ends_with(&format!("{CC}}}]")));
    assert!(b.contains(&format!(r#""text":"Skills: none"{CC}}}],"messages""#)));
    assert!(messages(&enc).ends_with(&format!(r#"{{"type":"text","text":"steer"{CC}}}]}}]"#)));
    let mut off = config();
    off.prompt_caching = false;
    assert!(!body(&encode(off, &req)).contains("cache_control"));
}

#[test]
fn results_attachments_and_steer_merge_in_order() {
    let image = Uuid::from_u128(7);
    let pdf = Uuid::from_u128(8);
    let blobs: HashMap<Uuid, Vec<u8>> = [(image, b"PNGDATA".to_vec()), (pdf, b"%PDF-1.7".to_vec())].into();
    let req = request(vec![
        Entry::user_text("look"),
        assistant(
            None,
            vec![call("c1", "read", r#"{"path":"a"}"#), call("c2", "read", "{broken")],
        ),
        result("c1", "   ", false),
        result("c2", "denied", true),
        Entry::Attachments {
            parts: vec![
                Part::Image {
                    upload: image,
                    media_type: "image/png".into(),
                },
                Part::Document { upload: pdf },
            ],
        },
        Entry::user_text("steer: be quick"),
    ]);
    let mut c = config();
    c.prompt_caching = false;
    let enc = Anthropic::new(c).encode(&req, &blobs).unwrap();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let expected = [
        r#"[{"role":"user","content":[{"type":"text","text":"look"}]},"#,
        r#"{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"read","input":{"path":"a"}},"#,
        r#"{"type":"tool_use","id":"c2","name":"read","input":{}}]},"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1"},"#,
        r#"{"type":"tool_result","tool_use_id":"c2","content":"denied","is_error":true},"#,
        r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":""#,
        &b64(b"PNGDATA"),
        r#""}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":""#,
        &b64(b"%PDF-1.7"),
        r#""}},{"type":"text","text":"steer: be quick"}]}]"#,
    ]
    .concat();
    assert_eq!(messages(&enc), expected);

    // A missing upload names it.
    let err = Anthropic::new(config()).encode(&req, &NoBlobs).unwrap_err();
    assert_eq!(err.key, "provider_error");
    assert!(err.detail.unwrap().contains(&image.to_string()));
}

#[test]
fn roles_alternate_when_entries_of_one_role_follow_each_other() {
    let req = request(vec![
        Entry::user_text("a"),
        assistant(None, vec![]),
        Entry::User {
            parts: vec![Part::text(""), Part::text("b")],
        },
        assistant(Some("x"), vec![]),
        assistant(Some("  "), vec![call("c1", "read", "[1]")]),
    ]);
    let mut c = config();
    c.prompt_caching = false;
    assert_eq!(
        messages(&encode(c, &req)),
        concat!(
            r#"[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"c1","name":"read","input":{}}]}]"#
        )
    );
    // With caching, the breakpoint is on the final user message even when an assistant
    // message ends the list.
    let m = messages(&encode(config(), &req)).to_string();
    assert!(m.contains(&format!(r#"{{"type":"text","text":"b"{CC}}}]}}"#)), "{m}");
}

#[test]
fn native_blocks_are_replayed_first_verbatim() {
    let req = request(vec![
        Entry::user_text("q"),
        Entry::Assistant {
            text: Some("answer".into()),
            tool_calls: vec![call("c1", "read", r#"{"z":1,"a":2}"#)],
            native: Some(json!([
                {"type":"thinking","thinking":"hm","signature":"s1"},
                {"type":"server_tool_use","id":"srv","name":"tool_search_tool_regex","input":{"pattern":"r"}},
                {"type":"tool_search_tool_result","tool_use_id":"srv","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"read"}]}}
            ])),
        },
        result("c1", "ok", false),
    ]);
    let enc = encode(config(), &req);
    let m = messages(&enc);
    let assistant = r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s1"},{"type":"server_tool_use","id":"srv","name":"tool_search_tool_regex","input":{"pattern":"r"}},{"type":"tool_search_tool_result","tool_use_id":"srv","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"read"}]}},{"type":"text","text":"answer"},{"type":"tool_use","id":"c1","name":"read","input":{"z":1,"a":2}}]}"#;
    assert!(m.contains(assistant), "{m}");
}

fn search_config(native: bool) -> InstanceConfig {
    let mut c = config();
    c.server_tool_search = true;
    c.defaults.native_tool_search = Some(native);
    c
}

#[test]
fn server_tool_search_marks_deferred_entries_or_falls_back() {
    let mut req = request(vec![Entry::user_text("go")]);
    req.tools = vec![func("tool_search", false), func("tool_call", false)];
    req.tools_deferred = vec![func("read", false), json!({"type":"custom","name":"shape5"})];
    let enc = encode(search_config(true), &req);
    let t = tools(&enc);
    let search = r#"{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}"#;
    assert!(t.starts_with(r#"[{"name":"tool_search","#), "{t}");
    assert!(
        t.contains(&format!(r#""required":["path"]}}{CC}}},{{"name":"read""#)),
        "{t}"
    );
    assert!(t.ends_with(&format!(
        r#""required":["path"]}},"defer_loading":true}},{{"type":"custom","name":"shape5","defer_loading":true}},{search}]"#
    )));
    assert_eq!(t.matches("defer_loading").count(), 2);
    assert_eq!(body(&enc).matches("cache_control").count(), 3);

    // The model without native search, or the instance without the setting: omission.
    let plain = tools(&encode(config(), &req)).to_string();
    assert_eq!(tools(&encode(search_config(false), &req)), plain);
    assert!(!plain.contains("defer_loading") && !plain.contains("tool_search_tool_regex"));
    // Nothing eager would remain: omission for this round (no tools at all here).
    req.tools.clear();
    assert!(!body(&encode(search_config(true), &req)).contains(r#""tools""#));
}

#[test]
fn the_key_never_reaches_the_encoded_request() {
    let mut c = config();
    c.api_key_env = Some(key_env());
    c.extra_headers.insert("x-trace".into(), "t".into());
    let enc = encode(c, &request(vec![Entry::user_text("hi")]));
    assert!(!enc.url.contains(KEY));
    assert!(
        enc.headers
            .iter()
            .all(|(k, v)| !k.contains(KEY) && !v.contains(KEY) && k != "x-api-key")
    );
    assert!(!body(&enc).contains(KEY));
}

#[test]
fn capabilities_and_attempts_come_from_config() {
    let mut c = config();
    c.max_attempts = 7;
    c.defaults.context_window = Some(1000);
    let p = Anthropic::new(c);
    assert_eq!(p.kind(), "anthropic");
    assert_eq!(p.max_attempts(), Some(7));
    assert_eq!(p.capabilities("any").context_window, 1000);
}
