//! The real adapters end to end (providers.md §9, issue 23): a kernel whose `anthropic` and
//! `openai` instances point at a local fake upstream (`nexus-fake-upstream`), driven through
//! runs on both engines with a real HTTP client. What the upstream received is compared with
//! what the kernel sealed, byte for byte.

mod common;
#[path = "providers/continues.rs"]
mod continues;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{World, shot_tools};
use nexus_fake_upstream::{Expectation, FakeUpstream, Reply, Route, anthropic, openai, schema};
use nexus_kernel::runs::{RequestRead, Stop};
use nexus_providers::{InstanceConfig, Kind, Providers};
use nexus_store::prelude::*;
use nexus_store::testing::{TestStore, engines};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// The key variable of every instance here; its value must never be sealed.
const KEY_ENV: &str = "NEXUS_TEST_PROVIDER_KEY";
const SECRET: &str = "sk-test-secret-0123456789";

fn instance(kind: Kind, base_url: String, stream: bool) -> InstanceConfig {
    let mut c = InstanceConfig::of(kind);
    c.base_url = Some(base_url);
    c.api_key_env = Some(KEY_ENV.into());
    c.stream = Some(stream);
    c.max_attempts = 3;
    c
}

/// A world whose `anthropic` and `openai` instances talk to `upstream`.
async fn world(ts: TestStore, upstream: &FakeUpstream, configure: impl Fn(&mut InstanceConfig)) -> World {
    // SAFETY: each test binary sets the same value before any thread reads it.
    unsafe { std::env::set_var(KEY_ENV, SECRET) };
    let mut configs = BTreeMap::new();
    for (name, kind, url) in [
        ("anthropic", Kind::Anthropic, upstream.base_url()),
        ("openai", Kind::Openai, upstream.openai_base_url()),
    ] {
        let mut c = instance(kind, url, false);
        configure(&mut c);
        configs.insert(name.to_string(), c);
    }
    common::world_with(ts, |b, scripts| {
        b.providers(Providers::from_config(scripts.to_path_buf(), &configs))
    })
    .await
}

impl World {
    /// A run of one model step on `model` declaring three kernel tools, started (not driven).
    async fn kernel_tool_run(&self, model: &str) -> Uuid {
        let (id, _) = self
            .create(json!({
                "approval_mode": "bypass",
                "default_runner_executor_public_id": self.runner.to_string(),
                "steps": [{"model": {
                    "prompt": "List the runners.",
                    "instructions": "Be brief.",
                    "model": model,
                    "kernel_tools": ["nexus.runners.list", "nexus.tools.search", "nexus.tools.call"],
                    "runner_executor_public_ids": [self.runner.to_string()],
                }}],
            }))
            .await;
        self.kernel.runs().start_run(&self.agent, self.ws, id).await.unwrap();
        id
    }

    async fn run_json(&self, id: Uuid) -> Value {
        serde_json::to_value(self.kernel.runs().get_run(&self.agent, self.ws, id).await.unwrap()).unwrap()
    }

    async fn cache(&self, id: Uuid) -> Value {
        serde_json::to_value(self.kernel.runs().run_cache(&self.agent, self.ws, id).await.unwrap()).unwrap()
    }

    async fn provider_bytes(&self, id: Uuid, key: &str) -> (Vec<u8>, String) {
        let RequestRead::Provider { body, body_sha256 } = self
            .kernel
            .runs()
            .get_request(&self.agent, self.ws, id, key, true)
            .await
            .unwrap()
        else {
            panic!("the provider bytes");
        };
        (body, body_sha256)
    }

    /// The key of the run's first model round (the step's key).
    async fn first_round(&self, id: Uuid) -> String {
        self.cache(id).await["rounds"][0]["key"].as_str().unwrap().to_string()
    }
}

/// The exact bytes of the body's top-level `tools` member.
fn tools_bytes(body: &[u8]) -> Vec<u8> {
    #[derive(serde::Deserialize)]
    struct Tools<'a> {
        #[serde(borrow)]
        tools: &'a serde_json::value::RawValue,
    }
    let t: Tools = serde_json::from_slice(body).expect("a body with tools");
    t.tools.get().as_bytes().to_vec()
}

fn sha_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Three rounds (two calls, one call, an answer) answered by `replies`; then every check that
/// holds for both adapters: the tools bytes identical in all three bodies, each received body
/// the sealed one (digest and bytes), the key sent but never sealed, the cache report and the
/// summed usage.
async fn three_rounds(w: &World, upstream: &FakeUpstream, route: Route, model: &str, replies: [Reply; 3]) -> Uuid {
    for r in replies {
        upstream.expect(route, Expectation::any(r));
    }
    let id = w.kernel_tool_run(model).await;
    w.drive().await;
    upstream.assert_no_mismatches();
    upstream.assert_all_used();
    let received = upstream.requests_on(route);
    assert_eq!(received.len(), 3);
    let run = w.run_json(id).await;
    assert_eq!(run["run"]["status"], "completed", "{run}");

    let cache = w.cache(id).await;
    let rounds = cache["rounds"].as_array().unwrap().clone();
    assert_eq!(rounds.len(), 3, "{cache}");
    let first_tools = tools_bytes(&received[0].body);
    for (i, (req, round)) in received.iter().zip(&rounds).enumerate() {
        let key = round["key"].as_str().unwrap();
        // Identical tools bytes, round after round, and the report's digest is theirs.
        assert_eq!(tools_bytes(&req.body), first_tools, "round {i}");
        assert_eq!(round["tools_sha256"], sha_hex(&first_tools), "round {i}");
        assert_eq!(round["tools_changed"], false);
        // The received body is the sealed one.
        let sealed = w.request_read(id, key).await;
        assert_eq!(sealed["body_sha256"], req.sha256_hex(), "round {i}");
        assert_eq!(sealed["request_bytes"], req.body.len());
        let (bytes, digest) = w.provider_bytes(id, key).await;
        assert_eq!(bytes, req.body.to_vec());
        assert_eq!(digest, req.sha256_hex());
        // The key went out with the request, and is nowhere in what was sealed.
        let sent = [req.header("x-api-key"), req.header("authorization")];
        assert!(
            sent.iter().flatten().any(|v| v.contains(SECRET)),
            "the key was not sent"
        );
        assert!(!sealed.to_string().contains(SECRET));
        assert!(!String::from_utf8_lossy(&bytes).contains(SECRET));
        assert_eq!(sealed["attempts"].as_array().unwrap().len(), 1);
    }
    assert_eq!(cache["tools_changes"], 0);
    id
}

#[tokio::test]
async fn anthropic_rounds_send_identical_tools_and_the_sealed_bytes() {
    for ts in engines().await {
        let upstream = FakeUpstream::start().await;
        let w = world(ts, &upstream, |_| {}).await;
        let m = "claude-test";
        let id = three_rounds(
            &w,
            &upstream,
            Route::Messages,
            "anthropic/claude-test",
            [
                anthropic::Message::new(m)
                    .text("Listing twice.")
                    .tool_use("c1", "runners_list", json!({}))
                    .tool_use("c2", "runners_list", json!({"x": 1}))
                    .usage(100, 10)
                    .cache(0, 90)
                    .reply(),
                anthropic::Message::new(m)
                    .tool_use("c3", "runners_list", json!({}))
                    .usage(130, 8)
                    .cache(90, 30)
                    .reply(),
                anthropic::Message::new(m)
                    .text("Done.")
                    .usage(150, 3)
                    .cache(120, 0)
                    .reply(),
            ],
        )
        .await;
        let second = upstream.requests_on(Route::Messages)[1].json();
        // Member order: model, max_tokens, tools, system, messages, …, stream last.
        let keys: Vec<&str> = second.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            &keys[..5],
            ["model", "max_tokens", "tools", "system", "messages"],
            "{keys:?}"
        );
        assert_eq!(keys.last(), Some(&"stream"));
        assert_eq!(second["stream"], false);
        assert_eq!(second["model"], m);
        // No strict on Anthropic tools (stored strict is false).
        assert!(
            second["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("strict").is_none())
        );
        // Breakpoints: the last tool, the last system block, the final user message's last block.
        let tools = second["tools"].as_array().unwrap();
        let marked: Vec<bool> = tools.iter().map(|t| t.get("cache_control").is_some()).collect();
        assert_eq!(marked.last(), Some(&true));
        assert_eq!(marked.iter().filter(|b| **b).count(), 1);
        assert_eq!(second["system"][0]["text"], "Be brief.");
        assert_eq!(second["system"][0]["cache_control"], json!({"type": "ephemeral"}));
        let messages = second["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "user");
        let blocks = last["content"].as_array().unwrap();
        assert_eq!(blocks.last().unwrap()["cache_control"], json!({"type": "ephemeral"}));
        let body_text = String::from_utf8(upstream.requests_on(Route::Messages)[1].body.to_vec()).unwrap();
        assert_eq!(body_text.matches("cache_control").count(), 3, "{body_text}");
        // Pairing in call order: the assistant's tool_use c1, c2, then their results.
        assert_eq!(messages[1]["role"], "assistant");
        let uses: Vec<&Value> = messages[1]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .collect();
        assert_eq!(
            uses.iter().map(|b| &b["id"]).collect::<Vec<_>>(),
            [&json!("c1"), &json!("c2")]
        );
        let results: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "tool_result").collect();
        assert_eq!(
            results.iter().map(|b| &b["tool_use_id"]).collect::<Vec<_>>(),
            [&json!("c1"), &json!("c2")]
        );
        // c2 was refused (parameter_invalid), so its result is an error; c1's is not.
        assert!(results[0].get("is_error").is_none());
        assert_eq!(results[1]["is_error"], true);
        // The usage of the three rounds, summed on GET R, and per round on the report.
        let run = w.run_json(id).await;
        assert_eq!(
            run["usage"],
            json!({"input_tokens": 380, "output_tokens": 21,
                   "cache_read_input_tokens": 210, "cache_creation_input_tokens": 120})
        );
        let cache = w.cache(id).await;
        assert_eq!(cache["rounds"][1]["usage"]["cache_read_input_tokens"], 90);
        let key = w.first_round(id).await;
        assert_eq!(w.task_read(id, &key).await["usage"]["cache_creation_input_tokens"], 90);
    }
}

#[tokio::test]
async fn openai_rounds_send_identical_tools_and_the_sealed_bytes() {
    for ts in engines().await {
        let upstream = FakeUpstream::start().await;
        let w = world(ts, &upstream, |_| {}).await;
        let m = "gpt-test";
        let id = three_rounds(
            &w,
            &upstream,
            Route::ChatCompletions,
            "openai/gpt-test",
            [
                openai::Completion::new(m)
                    .tool_call("c1", "runners_list", "{}")
                    .tool_call("c2", "runners_list", r#"{"x":1}"#)
                    .usage(100, 10)
                    .reply(),
                openai::Completion::new(m)
                    .tool_call("c3", "runners_list", "{}")
                    .usage(130, 8)
                    .cached_tokens(90)
                    .reply(),
                openai::Completion::new(m).content("Done.").usage(150, 3).reply(),
            ],
        )
        .await;
        // Every body sent is a valid CreateChatCompletionRequest (the published schema).
        for req in upstream.requests_on(Route::ChatCompletions) {
            schema::assert_valid_bytes(schema::REQUEST, &req.body);
        }
        let second = upstream.requests_on(Route::ChatCompletions)[1].json();
        let keys: Vec<&str> = second.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(&keys[..3], ["model", "tools", "messages"], "{keys:?}");
        assert_eq!(keys.last(), Some(&"stream"));
        // strict is carried as stored: false.
        assert!(
            second["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["function"]["strict"] == false)
        );
        // System, user, assistant with c1 and c2, then the tool messages in call order.
        let messages = second["messages"].as_array().unwrap();
        assert_eq!(messages[0], json!({"role": "system", "content": "Be brief."}));
        assert_eq!(messages[1]["role"], "user");
        let calls: Vec<&Value> = messages[2]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["id"])
            .collect();
        assert_eq!(calls, [&json!("c1"), &json!("c2")]);
        assert_eq!(messages[3]["tool_call_id"], "c1");
        assert_eq!(messages[4]["tool_call_id"], "c2");
        assert!(messages[4]["content"].as_str().unwrap().contains("tool_use_error"));
        let run = w.run_json(id).await;
        assert_eq!(run["usage"]["input_tokens"], 380);
        assert_eq!(run["usage"]["cache_read_input_tokens"], 90);
    }
}

/// One round answered by `replies` in order; the round's task afterwards.
async fn one_round(w: &World, upstream: &FakeUpstream, replies: Vec<Reply>) -> (Value, Value) {
    for r in replies {
        upstream.expect(Route::Messages, Expectation::any(r));
    }
    let id = w.kernel_tool_run("anthropic/claude-test").await;
    w.drive().await;
    let key = w.first_round(id).await;
    let task = w.task_read(id, &key).await;
    let sealed = w.request_read(id, &key).await;
    (task, sealed)
}

fn attempt_statuses(sealed: &Value) -> Vec<Value> {
    sealed["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.get("http_status").cloned().unwrap_or(Value::Null))
        .collect()
}

#[tokio::test]
async fn every_error_row_fails_or_retries_as_the_table_says() {
    for ts in engines().await {
        let upstream = FakeUpstream::start().await;
        let w = world(ts, &upstream, |_| {}).await;
        let done = || anthropic::Message::new("claude-test").text("Done.").reply();

        // 529, 429 (retry-after-ms), then success: three attempts, the same bytes each time.
        let (task, sealed) = one_round(
            &w,
            &upstream,
            vec![
                anthropic::overloaded(),
                anthropic::rate_limited().retry_after_ms(20),
                done(),
            ],
        )
        .await;
        assert_eq!(task["status"], "completed", "{task}");
        assert_eq!(attempt_statuses(&sealed), [json!(529), json!(429), Value::Null]);
        let sent = upstream.requests();
        assert!(sent.iter().all(|r| r.body == sent[0].body));
        assert_eq!(sent[0].sha256_hex(), sealed["body_sha256"]);

        // 500 three times: the budget (max_attempts = 3) is spent, the last key stays.
        let (task, sealed) = one_round(&w, &upstream, vec![anthropic::api_error(); 3]).await;
        assert_eq!(task["status"], "failed");
        assert_eq!(task["error"]["key"], "provider_overloaded");
        assert_eq!(attempt_statuses(&sealed).len(), 3);

        // x-should-retry: false stops at once.
        let (task, sealed) = one_round(&w, &upstream, vec![anthropic::overloaded().should_retry(false)]).await;
        assert_eq!(task["error"]["key"], "provider_overloaded");
        assert_eq!(attempt_statuses(&sealed), [json!(529)]);

        // Not retried: context overflow, an unknown model, any other status, a malformed 2xx.
        for (reply, key, status) in [
            (anthropic::prompt_too_long(), "provider_context_overflow", json!(400)),
            // An error body beyond the 64 KiB read is classified by its head, never read whole.
            (
                Reply::status(400, format!("prompt is too long: {}", "x".repeat(200_000))),
                "provider_context_overflow",
                json!(400),
            ),
            (
                anthropic::model_not_found("claude-test"),
                "provider_model_unavailable",
                json!(404),
            ),
            (Reply::status(418, "teapot"), "provider_http_error", json!(418)),
            (Reply::json(200, &json!({"nope": true})), "provider_error", Value::Null),
        ] {
            let (task, sealed) = one_round(&w, &upstream, vec![reply]).await;
            assert_eq!(task["status"], "failed", "{key}");
            assert_eq!(task["error"]["key"], key);
            assert_eq!(attempt_statuses(&sealed), [status], "{key}");
        }
        let (task, _) = one_round(&w, &upstream, vec![Reply::status(418, "teapot")]).await;
        assert!(task["error"]["detail"].as_str().unwrap().contains("teapot"), "{task}");
        upstream.assert_no_mismatches();
    }
}

#[tokio::test]
async fn retry_after_seconds_is_honoured_and_a_timeout_is_an_attempt() {
    let ts = engines().await.remove(0);
    let upstream = FakeUpstream::start().await;
    let w = world(ts, &upstream, |c| c.request_timeout_ms = 300).await;
    // `retry-after: 1`: the second request comes at least a second after the first.
    let (task, _) = one_round(
        &w,
        &upstream,
        vec![
            anthropic::overloaded().retry_after(1),
            anthropic::Message::new("claude-test").text("ok").reply(),
        ],
    )
    .await;
    assert_eq!(task["status"], "completed");
    let sent = upstream.requests();
    let gap = sent[1].at.duration_since(sent[0].at);
    assert!(gap >= Duration::from_millis(950), "{gap:?}");
    // A reply that never comes: each attempt ends at request_timeout_ms, and is retried.
    let (task, sealed) = one_round(&w, &upstream, vec![Reply::hang(); 3]).await;
    assert_eq!(task["error"]["key"], "provider_overloaded", "{task}");
    assert_eq!(sealed["attempts"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_streamed_reply_sends_model_delta_frames_on_the_live_feed() {
    for ts in engines().await {
        let upstream = FakeUpstream::start().await;
        let w = world(ts, &upstream, |c| c.stream = Some(true)).await;
        for (route, model, reply) in [
            (
                Route::Messages,
                "anthropic/claude-test",
                anthropic::Message::new("claude-test")
                    .text("Hello from the stream.")
                    .pieces(4)
                    .usage(10, 5)
                    .stream(),
            ),
            (
                Route::ChatCompletions,
                "openai/gpt-test",
                openai::Completion::new("gpt-test")
                    .content("Hello from the stream.")
                    .usage(10, 5)
                    .stream(),
            ),
        ] {
            upstream.expect(route, Expectation::any(reply));
            let id = w.kernel_tool_run(model).await;
            let mut feed = w.kernel.runs().event_stream(&w.agent, w.ws, id, 0).await.unwrap();
            w.drive().await;
            let key = w.first_round(id).await;
            let mut deltas = String::new();
            let mut frames = 0;
            while let Ok(Some(item)) = tokio::time::timeout(Duration::from_millis(300), feed.next()).await {
                if let nexus_kernel::runs::stream::FeedItem::Ephemeral {
                    kind: "model_delta",
                    json,
                } = item
                {
                    assert_eq!(json["task_key"], key);
                    deltas.push_str(json["delta"].as_str().unwrap());
                    frames += 1;
                }
            }
            assert_eq!(deltas, "Hello from the stream.", "{model}");
            assert!(frames >= 2, "{model}: {frames} frames");
            let body = upstream.requests_on(route).last().unwrap().json();
            assert_eq!(body["stream"], true);
            if route == Route::ChatCompletions {
                schema::assert_valid(schema::REQUEST, &body);
            }
            let task = w.task_read(id, &key).await;
            assert_eq!(task["status"], "completed", "{task}");
            assert_eq!(task["usage"]["output_tokens"], 5);
            // Deltas are never stored: the run's events hold none.
            let events = w
                .kernel
                .store
                .events_after(w.run_row(id).await.id, 0, 500)
                .await
                .unwrap();
            assert!(events.iter().all(|e| !e.kind.as_str().contains("delta")));
        }
    }
}

#[tokio::test]
async fn a_stop_aborts_a_streaming_call() {
    for ts in engines().await {
        let upstream = FakeUpstream::start().await;
        let w = world(ts, &upstream, |c| c.stream = Some(true)).await;
        let reply = anthropic::Message::new("claude-test")
            .text("Never finished.")
            .pieces(4)
            .stream();
        upstream.expect(Route::Messages, Expectation::any(reply.hang_after(3)));
        let id = w.kernel_tool_run("anthropic/claude-test").await;
        let kernel = w.kernel.clone();
        let worker = tokio::spawn(async move { kernel.runs().work_until_idle(100).await });
        assert!(upstream.wait_for_requests(1, Duration::from_secs(10)).await);
        let stopped = w
            .kernel
            .runs()
            .stop_run(&w.agent, w.ws, id, Stop::parse(&json!({})))
            .await
            .unwrap();
        assert!(
            upstream.wait_for_abandoned(1, Duration::from_secs(10)).await,
            "{stopped:?}"
        );
        worker.await.unwrap().unwrap();
        w.drive().await;
        let run = w.run_json(id).await;
        assert_eq!(run["run"]["status"], "canceled", "{run}");
        let key = w.first_round(id).await;
        assert_eq!(w.task_read(id, &key).await["status"], "canceled");
        assert_eq!(upstream.requests().len(), 1);
    }
}

#[tokio::test]
async fn server_side_tool_search_marks_deferred_entries_and_replays_native_blocks() {
    for ts in engines().await {
        let upstream = FakeUpstream::start().await;
        let w = world(ts, &upstream, |c| {
            c.server_tool_search = true;
            c.models.insert(
                "claude-search".into(),
                nexus_providers::config::ModelConfig {
                    native_tool_search: Some(true),
                    ..Default::default()
                },
            );
        })
        .await;
        let m = "claude-search";
        upstream.expect(
            Route::Messages,
            Expectation::any(
                anthropic::Message::new(m)
                    .server_tool_use("srv1", "tool_search_tool_regex", json!({"pattern": "shot"}))
                    .tool_search_result("srv1", &["shot"])
                    .tool_use("c1", "runners_list", json!({}))
                    .reply(),
            ),
        );
        upstream.expect(
            Route::Messages,
            Expectation::any(anthropic::Message::new(m).text("Done.").reply()),
        );
        w.announce(shot_tools(), json!({})).await;
        let deferred = json!({"type": "function", "defer_loading": true,
            "function": {"name": "shot", "description": "Take a screenshot.", "parameters": {"type": "object"}},
            "route": {"kind": "runner", "runner_executor_public_id": w.runner.to_string(), "tool_name": "shot"}});
        let id = w
            .start(json!({"approval_mode": "bypass",
            "default_runner_executor_public_id": w.runner.to_string(),
            "steps": [{"model": {"prompt": "Find the screenshot tool.", "model": "anthropic/claude-search",
                "tools": [deferred],
                "kernel_tools": ["nexus.runners.list", "nexus.tools.search", "nexus.tools.call"],
                "runner_executor_public_ids": [w.runner.to_string()]}}]}))
            .await;
        upstream.assert_no_mismatches();
        let sent = upstream.requests_on(Route::Messages);
        assert_eq!(sent.len(), 2);
        let first = sent[0].json();
        let tools = first["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        // The deferred entry is sent marked, after the eager ones; the regex search tool last.
        assert_eq!(names.last(), Some(&"tool_search_tool_regex"), "{names:?}");
        let shot = tools
            .iter()
            .find(|t| t["name"] == "shot")
            .expect("the deferred entry is sent");
        assert_eq!(shot["defer_loading"], true);
        // The breakpoint is on the last eager tool, not on a deferred one.
        let marked: Vec<&str> = tools
            .iter()
            .filter(|t| t.get("cache_control").is_some())
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(marked.len(), 1);
        assert!(
            tools
                .iter()
                .any(|t| t["name"] == marked[0] && t.get("defer_loading").is_none())
        );
        // The second request replays the server-tool blocks verbatim, before the tool_use.
        let second = sent[1].json();
        let assistant = &second["messages"][1];
        assert_eq!(assistant["role"], "assistant");
        let kinds: Vec<&str> = assistant["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["server_tool_use", "tool_search_tool_result", "tool_use"],
            "{assistant}"
        );
        // The sealed tools show the native form.
        let key = w.first_round(id).await;
        let sealed = w.request_read(id, &key).await;
        assert!(sealed.to_string().contains("shot"), "{sealed}");
    }
}

const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8,
    6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89,
];

/// A run on `model` whose round calls the runner's `shot`; the runner commits a PNG capture;
/// the continuation's body as the upstream received it.
async fn shot_round(w: &World, upstream: &FakeUpstream, route: Route, model: &str, replies: [Reply; 2]) -> Value {
    for r in replies {
        upstream.expect(route, Expectation::any(r));
    }
    let runner = w.runner_principal().await;
    let mut writer = w.kernel.uploads().begin_upload().await.unwrap();
    writer.write(PNG).await.unwrap();
    let capture = w
        .kernel
        .uploads()
        .create_upload(nexus_kernel::uploads::Creator::Executor(&runner), "screen.png", writer)
        .await
        .map(|created| serde_json::to_value(created.upload).unwrap())
        .unwrap();
    let routed = w.routed("shot", "shot");
    let (id, _) = w
        .create(json!({"approval_mode": "bypass", "steps": [
            {"model": {"prompt": "Take a shot.", "model": model, "tools": [routed]}}]}))
        .await;
    w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
    w.drive().await;
    let tool = w
        .tasks(id)
        .await
        .into_iter()
        .find(|t| t.kind == nexus_store::TaskKind::Tool)
        .expect("the call's tool row");
    let claimed = w.kernel.executor().claim(&runner, id, &tool.key).await.unwrap();
    let link = json!({"type": "resource_link", "name": "screen",
        "uri": format!("nexus://uploads/{}", capture["public_id"].as_str().unwrap())});
    w.kernel
        .executor().commit(
            &runner,
            id,
            &tool.key,
            &nexus_kernel::executor::commit::CommitRequest::parse(
                &json!({"claim_token": claimed.claim.claim_token, "content": [{"type": "text", "text": "Here."}, link]}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    w.drive().await;
    upstream.assert_no_mismatches();
    let sent = upstream.requests_on(route);
    assert_eq!(sent.len(), 2, "two rounds reached the upstream");
    sent[1].json()
}

#[tokio::test]
async fn a_capture_is_an_image_block_for_capable_models_and_an_index_line_otherwise() {
    use base64::Engine as _;
    let png64 = base64::engine::general_purpose::STANDARD.encode(PNG);
    for ts in engines().await {
        let upstream = FakeUpstream::start().await;
        // `anthropic` takes images; `openai` is configured text-only.
        let w = world(ts, &upstream, |c| {
            if c.kind == Kind::Openai {
                c.defaults.media = Some(vec![]);
            }
        })
        .await;
        w.announce(shot_tools(), json!({})).await;
        let body = shot_round(
            &w,
            &upstream,
            Route::Messages,
            "anthropic/claude-test",
            [
                anthropic::Message::new("claude-test")
                    .tool_use("c1", "shot", json!({}))
                    .reply(),
                anthropic::Message::new("claude-test").text("Seen.").reply(),
            ],
        )
        .await;
        // The result, then the image, in the same (last) user message.
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        let blocks = last["content"].as_array().unwrap();
        let kinds: Vec<&str> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["tool_result", "image"], "{last}");
        assert_eq!(
            blocks[1]["source"],
            json!({"type": "base64", "media_type": "image/png", "data": png64})
        );

        let body = shot_round(
            &w,
            &upstream,
            Route::ChatCompletions,
            "openai/gpt-test",
            [
                openai::Completion::new("gpt-test")
                    .tool_call("c1", "shot", "{}")
                    .reply(),
                openai::Completion::new("gpt-test").content("Seen.").reply(),
            ],
        )
        .await;
        schema::assert_valid(schema::REQUEST, &body);
        let text = body.to_string();
        assert!(!text.contains("image_url"), "{text}");
        assert!(!text.contains(&png64));
        assert!(text.contains("[attachment: screen (image/png"), "{text}");
    }
}
