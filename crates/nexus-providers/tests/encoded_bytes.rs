//! Guard: the exact bytes `scripted` seals (providers.md §4, §7).
//!
//! The digests below were recorded with the original encoder (`serde_jcs::to_vec` of the whole
//! `ModelRequest`), before `encode` was made incremental. Any change to the encoded body, its
//! URL or its headers for one of these requests fails here. The cases cover every entry and
//! part shape, every string escape, `native` values whose keys sort differently in UTF-16 and
//! UTF-8, numbers of every kind, echo, a branch thread, tools of both shapes and a 1,000-round
//! history; each is encoded cold, then again after its prefix has been encoded (the path that
//! reuses earlier work), and through a fresh provider.

use std::path::Path;

use nexus_providers::{Entry, ModelRequest, NoBlobs, Part, Provider, RawToolCall, RequestOptions, Scripted};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

fn base(model: &str) -> ModelRequest {
    ModelRequest {
        provider: "scripted".into(),
        model: model.into(),
        system: vec!["You are terse.".into(), "Skills available now".into()],
        entries: vec![Entry::user_text("hello")],
        tools_deferred: vec![],
        tools: vec![
            json!({"type":"function","function":{"name":"read","description":"d","parameters":{},"strict":false}}),
            json!({"type":"web_search_20250305","name":"web_search"}),
        ],
        options: RequestOptions {
            max_output_tokens: Some(1024),
            reasoning_effort: None,
        },
    }
}

fn call(id: &str, name: &str, arguments: &str) -> RawToolCall {
    RawToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

/// Every control character, the JSON escapes, DEL, `/`, non-ASCII, U+2028/9 and an astral one.
fn awkward() -> String {
    let mut s: String = (0u8..0x20).map(char::from).collect();
    s.push_str("\"\\/\u{7f} é ü 日本 \u{2028}\u{2029} 😀 </script> \u{fffd}");
    s
}

/// One tool call and its result per round, like the kernel's per-round benchmark.
fn long_history(rounds: usize) -> Vec<Entry> {
    let mut entries = vec![Entry::user_text("Search the tools, one query a round.")];
    for i in 1..=rounds {
        let id = format!("c{i}");
        entries.push(Entry::Assistant {
            text: Some(format!("Round {i}.")),
            tool_calls: vec![call(&id, "tool_search", &format!(r#"{{"query":"round {i}"}}"#))],
            native: None,
        });
        entries.push(Entry::ToolResult {
            call_id: id,
            name: "tool_search".into(),
            output: format!(r#"{{"matches":[{{"name":"nexus.tools.search","score":{i}}}],"query":"round {i}"}}"#),
            is_error: i % 7 == 0,
        });
    }
    entries
}

fn cases() -> Vec<(&'static str, ModelRequest)> {
    let uuid_a = Uuid::parse_str("0190e3f2-7c4b-7a10-8f00-0123456789ab").unwrap();
    let mut out = Vec::new();

    out.push((
        "empty",
        ModelRequest {
            provider: "scripted".into(),
            model: "g".into(),
            system: vec![],
            entries: vec![],
            tools_deferred: vec![],
            tools: vec![],
            options: RequestOptions::default(),
        },
    ));
    out.push(("one_user", base("g")));

    let mut full = base("g");
    full.entries = vec![
        Entry::user_text("please read"),
        Entry::Assistant {
            text: Some("reading".into()),
            tool_calls: vec![call("c0", "read", r#"{"path":"a"}"#), call("c1", "ls", "{not json")],
            native: None,
        },
        Entry::ToolResult {
            call_id: "c0".into(),
            name: "read".into(),
            output: "file is ok".into(),
            is_error: false,
        },
        Entry::ToolResult {
            call_id: "c1".into(),
            name: "ls".into(),
            output: "denied".into(),
            is_error: true,
        },
        Entry::Attachments {
            parts: vec![
                Part::Image {
                    upload: uuid_a,
                    media_type: "image/png".into(),
                },
                Part::Document { upload: Uuid::nil() },
                Part::text("caption"),
            ],
        },
        Entry::User {
            parts: vec![
                Part::text("steer: be quick"),
                Part::Image {
                    upload: Uuid::max(),
                    media_type: "image/webp".into(),
                },
            ],
        },
        Entry::Assistant {
            text: None,
            tool_calls: vec![],
            native: None,
        },
    ];
    out.push(("full", full));

    let mut escapes = base("g");
    escapes.system = vec![awkward(), String::new()];
    escapes.entries = vec![
        Entry::user_text(awkward()),
        Entry::Assistant {
            text: Some(awkward()),
            tool_calls: vec![call(&awkward(), &awkward(), &awkward())],
            native: None,
        },
        Entry::ToolResult {
            call_id: awkward(),
            name: awkward(),
            output: awkward(),
            is_error: false,
        },
        Entry::Attachments {
            parts: vec![Part::Image {
                upload: uuid_a,
                media_type: awkward(),
            }],
        },
    ];
    escapes.tools = vec![json!({ awkward(): awkward(), "name": awkward() })];
    escapes.options.reasoning_effort = Some(awkward());
    out.push(("escapes", escapes));

    let mut native = base("g");
    native.entries.push(Entry::Assistant {
        text: Some("thinking".into()),
        tool_calls: vec![],
        native: Some(json!([
            {"type":"thinking","signature":"s","z":1,"a":{"y":[3,2,1],"b":null}},
            {"\u{e000}":"private use","\u{10000}":"astral","a":"ascii","é":"latin","":"empty"},
            {"ints":[0,-1,1,9007199254740993u64,-9007199254740993i64,u64::MAX,i64::MIN],
             "floats":[0.5,-0.0,1e21,1e-7,123456789.125,1.0,2.5e-300,-1.7976931348623157e308]},
            true, false, null, "text", 42
        ])),
    });
    native.entries.push(Entry::Assistant {
        text: None,
        tool_calls: vec![call("x", "y", "{}")],
        native: Some(Value::Null),
    });
    native.entries.push(Entry::Assistant {
        text: None,
        tool_calls: vec![],
        native: Some(json!({})),
    });
    out.push(("native", native));

    let mut tools = base("g");
    tools.tools = vec![
        json!({"type":"function","function":{"name":"tool_search","description":"Search the tools.",
            "parameters":{"type":"object","properties":{"query":{"type":"string","maxLength":200},
            "limit":{"type":"integer","minimum":1,"maximum":50,"default":10}},"required":["query"],
            "additionalProperties":false},"strict":true}}),
        json!({"type":"web_search_20250305","name":"web_search","max_uses":3.0}),
        json!({}),
        json!([1, "two", [3]]),
        json!("bare"),
    ];
    out.push(("tools", tools));

    let mut options = base("g");
    options.options = RequestOptions {
        max_output_tokens: Some(u32::MAX),
        reasoning_effort: Some("high".into()),
    };
    out.push(("options_max", options));
    let mut options = base("g");
    options.options = RequestOptions {
        max_output_tokens: Some(0),
        reasoning_effort: Some(String::new()),
    };
    out.push(("options_zero", options));
    let mut options = base("g");
    options.options.max_output_tokens = Some(9_007);
    out.push(("options_mid", options));

    let mut echo = base("echo");
    echo.entries = vec![Entry::user_text(
        r#"do [[call:read {"path":"a.md","b":{"x":[1]}}]] then [[call:ls {}]]"#,
    )];
    out.push(("echo_directives", echo));

    let mut thread = base("g");
    thread.entries = vec![
        Entry::User {
            parts: vec![Part::text("brief"), Part::text("[[thread: side ]] do it")],
        },
        Entry::Assistant {
            text: None,
            tool_calls: vec![call("call_side_0_0", "read", "{}")],
            native: None,
        },
        Entry::ToolResult {
            call_id: "call_side_0_0".into(),
            name: "read".into(),
            output: "ok".into(),
            is_error: false,
        },
    ];
    out.push(("thread", thread));

    let mut nested = base("suite/one");
    nested.provider = "my-scripted".into();
    out.push(("nested_name", nested));

    let mut long = base("g");
    long.entries = long_history(1_000);
    out.push(("long_1000", long));

    out
}

/// (case, body length, body SHA-256), recorded with the original encoder.
const EXPECTED: &[(&str, usize, &str)] = &[
    (
        "empty",
        132,
        "8d3a79a87b9eaad77de7b33983e1b0824c94a72b7e4318c6633ac1402c4d78e9",
    ),
    (
        "one_user",
        373,
        "0111bfd8e27fc75de7b91991764a07e872ff3d939bdd7d618b2f72a8e8318ba8",
    ),
    (
        "full",
        1143,
        "02b7f3d8f6f4772be957153d4c13ded139463f9645a38cba1b39c78fe82d3987",
    ),
    (
        "escapes",
        3511,
        "1b8d34ad27689782d0577cb3c1e29cd82d894bfb007e56f1a74f9dc505708378",
    ),
    (
        "native",
        943,
        "3d2ec8dedfb1f10578bf6a083fa32622e2f0b30031ef63fbae82f5ab1bd28c5f",
    ),
    (
        "tools",
        619,
        "0f9f930d7d123f512b070292d7ce00d1a7ce587f9aba30274233eabc0ca6b03b",
    ),
    (
        "options_max",
        381,
        "9678c1b896143a70f88ce60cb7db9150cf6a28dc1d33b7ae79368b4dae28b9c1",
    ),
    (
        "options_zero",
        368,
        "af2b7ce6c2bd3d72d7ab67cdba2087ba91236ecf89ab9ee1c3f8733cdbb844d8",
    ),
    (
        "options_mid",
        373,
        "97822acd89c85c4aa24e8a3dd483298222b593a4d0da494f0178d0cadbea23b2",
    ),
    (
        "echo_directives",
        445,
        "1282ac2f29908d327ee6b26fade2777fe6bf8ffadacebb4f0458553beabf00b6",
    ),
    (
        "thread",
        618,
        "d6256b1fe2a2f5fe483dd144777ee4427aa66b97d45948466335085fa30411d4",
    ),
    (
        "nested_name",
        384,
        "d7fe54e9c68548d2ad0d367c4311306f150d230334fc5f775ae75e3f33fd6433",
    ),
    (
        "long_1000",
        307620,
        "564fada6e7c3320d33719aa179a1cc1f22a28434eac62d14cf1c96a5b83cb186",
    ),
];

/// The whole body of the two smallest cases, recorded with the original encoder.
const EMPTY_BODY: &str = r#"{"entries":[],"model":"g","options":{"max_output_tokens":null,"reasoning_effort":null},"provider":"scripted","system":[],"tools":[]}"#;
const ONE_USER_BODY: &str = r#"{"entries":[{"parts":[{"text":"hello","type":"text"}],"type":"user"}],"model":"g","options":{"max_output_tokens":1024,"reasoning_effort":null},"provider":"scripted","system":["You are terse.","Skills available now"],"tools":[{"function":{"description":"d","name":"read","parameters":{},"strict":false},"type":"function"},{"name":"web_search","type":"web_search_20250305"}]}"#;

fn scripts(dir: &Path) {
    std::fs::write(dir.join("g.jsonl"), "{\"text\":\"x\"}\n").unwrap();
    std::fs::create_dir_all(dir.join("suite")).unwrap();
    std::fs::write(dir.join("suite/one.jsonl"), "{\"text\":\"x\"}\n").unwrap();
}

fn digest(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// Checks one encoding of `req` against the recorded figures.
fn check(p: &Scripted, name: &str, req: &ModelRequest, how: &str) {
    let enc = p
        .encode(req, &NoBlobs)
        .unwrap_or_else(|e| panic!("{name} ({how}): {e}"));
    assert_eq!(enc.url, format!("scripted:{}", req.model), "{name} ({how})");
    assert_eq!(
        enc.headers,
        vec![("content-type".to_string(), "application/json".to_string())],
        "{name} ({how})"
    );
    assert_eq!(
        enc.body_sha256,
        <[u8; 32]>::from(Sha256::digest(&enc.body)),
        "{name} ({how})"
    );
    assert_eq!(
        enc.body,
        req.canonical_bytes(),
        "{name} ({how}): canonical_bytes agrees"
    );
    assert_eq!(
        enc.body,
        serde_jcs::to_vec(req).unwrap(),
        "{name} ({how}): serde_jcs agrees"
    );
    let got = (enc.body.len(), digest(&enc.body));
    let want = EXPECTED
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, len, sha)| (*len, sha.to_string()));
    assert_eq!(Some(got), want, "{name} ({how})");
}

#[test]
fn sealed_bytes_are_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    scripts(dir.path());
    let all = cases();
    // `NEXUS_PRINT_GUARD=1` prints the current figures, to diagnose a failure. They are not to
    // be re-recorded unless the sealed bytes are meant to change (which breaks stored seals).
    if std::env::var_os("NEXUS_PRINT_GUARD").is_some() {
        for (name, req) in &all {
            let body = req.canonical_bytes();
            println!("    (\"{name}\", {}, \"{}\"),", body.len(), digest(&body));
        }
    }
    assert_eq!(all.len(), EXPECTED.len(), "one recorded digest per case");

    // Cold, on one provider.
    let p = Scripted::new(dir.path());
    for (name, req) in &all {
        check(&p, name, req, "cold");
    }
    // Warm: every prefix of each case's entries first, then the case itself, then again.
    let warm = Scripted::new(dir.path());
    for (name, req) in &all {
        for n in 0..req.entries.len().min(40) {
            let mut prefix = req.clone();
            prefix.entries.truncate(n);
            warm.encode(&prefix, &NoBlobs).unwrap();
        }
        if req.entries.len() > 40 {
            let mut prefix = req.clone();
            prefix.entries.truncate(req.entries.len() - 2);
            warm.encode(&prefix, &NoBlobs).unwrap();
        }
        check(&warm, name, req, "after its prefixes");
        check(&warm, name, req, "again");
    }
    // Interleaved cases on one provider, in reverse order.
    for (name, req) in all.iter().rev() {
        check(&warm, name, req, "interleaved");
    }

    let by_name = |n: &str| all.iter().find(|(name, _)| *name == n).map(|(_, r)| r.clone()).unwrap();
    assert_eq!(
        String::from_utf8(by_name("empty").canonical_bytes()).unwrap(),
        EMPTY_BODY
    );
    assert_eq!(
        String::from_utf8(by_name("one_user").canonical_bytes()).unwrap(),
        ONE_USER_BODY
    );
}

/// A request that differs from an earlier one only deep inside an early entry must not reuse
/// the earlier bytes.
#[test]
fn an_edited_history_is_encoded_afresh() {
    let dir = tempfile::tempdir().unwrap();
    scripts(dir.path());
    let p = Scripted::new(dir.path());
    let mut req = base("g");
    req.entries = long_history(50);
    let first = p.encode(&req, &NoBlobs).unwrap();
    let mut edited = req.clone();
    let Some(Entry::ToolResult { output, .. }) = edited.entries.get_mut(2) else {
        panic!("entry 2 is the first round's result");
    };
    output.push('!');
    edited.entries.extend(long_history(1).into_iter().skip(1));
    let enc = p.encode(&edited, &NoBlobs).unwrap();
    assert_eq!(enc.body, edited.canonical_bytes());
    assert_ne!(enc.body_sha256, first.body_sha256);
    // The same history with other tools, system, options or model.
    let mut other = req.clone();
    other.tools.pop();
    assert_eq!(p.encode(&other, &NoBlobs).unwrap().body, other.canonical_bytes());
    let mut other = req.clone();
    other.system.push("more".into());
    assert_eq!(p.encode(&other, &NoBlobs).unwrap().body, other.canonical_bytes());
    let mut other = req.clone();
    other.options.max_output_tokens = None;
    assert_eq!(p.encode(&other, &NoBlobs).unwrap().body, other.canonical_bytes());
    let mut other = req.clone();
    other.model = "echo".into();
    assert_eq!(p.encode(&other, &NoBlobs).unwrap().body, other.canonical_bytes());
    // A shorter history after a longer one.
    let mut shorter = req.clone();
    shorter.entries.truncate(10);
    assert_eq!(p.encode(&shorter, &NoBlobs).unwrap().body, shorter.canonical_bytes());
    assert_eq!(p.encode(&req, &NoBlobs).unwrap(), first);
}
