//! The fake upstream seen from a real HTTP client: matching order, `times`, mismatches,
//! recordings, retry headers, delays, SSE framing, and abandoned or cut replies.

use std::time::{Duration, Instant};

use nexus_fake_upstream::{Expectation, FakeUpstream, Matcher, Outcome, Reply, Route, SseFrame, anthropic, openai};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(5);

async fn post(url: &str, body: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("X-Api-Key", "test-key")
        .body(body.to_owned())
        .send()
        .await
        .expect("the fake upstream answers")
}

#[tokio::test]
async fn times_answers_n_requests_then_falls_through_in_order() {
    let server = FakeUpstream::start().await;
    server
        .expect(
            Route::Messages,
            Expectation::any(anthropic::overloaded()).times(2).named("busy"),
        )
        .expect(
            Route::Messages,
            Expectation::any(anthropic::Message::new("m").text("ok").reply()),
        );
    let url = server.url(Route::Messages);
    let statuses = [
        post(&url, "{}").await.status().as_u16(),
        post(&url, "{}").await.status().as_u16(),
        post(&url, "{}").await.status().as_u16(),
    ];
    assert_eq!(statuses, [529, 529, 200]);
    server.assert_all_used();
    server.assert_no_mismatches();
    let answered: Vec<_> = server.requests().iter().map(|r| r.answered_by).collect();
    assert_eq!(answered, [Some(0), Some(0), Some(1)]);

    // A fourth request finds every expectation used up: 500, explained and recorded.
    let resp = post(&url, "{}").await;
    assert_eq!(resp.status().as_u16(), 500);
    let text = resp.text().await.unwrap();
    assert!(text.contains(r#"#0 "busy": exhausted (answered 2)"#), "{text}");
    let mismatches = server.mismatches();
    assert_eq!(mismatches.len(), 1);
    assert_eq!(mismatches[0].request, 3);
    assert_eq!(mismatches[0].target, "POST /v1/messages");
}

#[tokio::test]
async fn the_first_matching_expectation_answers_and_refusals_are_explained() {
    let server = FakeUpstream::start().await;
    let r1 = Matcher::json()
        .pointer_eq("/model", json!("a"))
        .pointer_absent("/tools/0/strict");
    let r2 = Matcher::json()
        .pointer_eq("/model", json!("b"))
        .pointer_exists("/tools/0/cache_control")
        .header("anthropic-version", "2023-06-01");
    server
        .expect(
            Route::Messages,
            Expectation::new(r1, Reply::status(200, "one")).named("r1"),
        )
        .expect(
            Route::Messages,
            Expectation::new(r2, Reply::status(200, "two")).named("r2"),
        );
    let url = server.url(Route::Messages);
    let client = reqwest::Client::new();
    let send = |body: Value| {
        client
            .post(&url)
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send()
    };

    // r2 matches while r1 still waits: the first *matching* one answers.
    let resp = send(json!({"model": "b", "tools": [{"cache_control": {"type": "ephemeral"}}]}))
        .await
        .unwrap();
    assert_eq!(resp.text().await.unwrap(), "two");
    // Neither matches: the body says why for each.
    let resp = send(json!({"model": "a", "tools": [{"strict": false}]})).await.unwrap();
    assert_eq!(resp.status().as_u16(), 500);
    let text = resp.text().await.unwrap();
    assert!(
        text.contains(r#"#0 "r1": /tools/0/strict: expected nothing, got false"#),
        "{text}"
    );
    assert!(text.contains(r#"#1 "r2": exhausted"#), "{text}");
    let resp = send(json!({"model": "a", "tools": []})).await.unwrap();
    assert_eq!(resp.text().await.unwrap(), "one");

    assert_eq!(server.mismatches().len(), 1);
    assert_eq!(server.mismatches()[0].request, 1);
    let unmatched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.assert_no_mismatches()));
    assert!(unmatched.is_err());
}

#[tokio::test]
async fn golden_bodies_match_byte_for_byte() {
    let server = FakeUpstream::start().await;
    let golden = r#"{"model":"m","messages":[]}"#;
    server.expect(
        Route::ChatCompletions,
        Expectation::new(Matcher::golden(golden), Reply::status(200, "ok")),
    );
    let url = server.url(Route::ChatCompletions);

    let resp = post(&url, r#"{"model": "m","messages":[]}"#).await;
    assert_eq!(resp.status().as_u16(), 500);
    let text = resp.text().await.unwrap();
    assert!(text.contains("body differs from golden at byte 9"), "{text}");
    assert_eq!(post(&url, golden).await.text().await.unwrap(), "ok");
    server.assert_all_used();
}

#[tokio::test]
async fn every_request_is_recorded_exactly() {
    let server = FakeUpstream::start().await;
    server.expect(
        Route::ChatCompletions,
        Expectation::any(openai::Completion::new("m").reply()).always(),
    );
    // Both OpenAI paths reach the same list; an unserved path is a recorded 404.
    post(&format!("{}/chat/completions", server.base_url()), r#"{"a":1}"#).await;
    post(&format!("{}/chat/completions?x=1", server.openai_base_url()), "abc").await;
    let resp = post(&format!("{}/v1/complete", server.base_url()), "{}").await;
    assert_eq!(resp.status().as_u16(), 404);
    assert!(resp.text().await.unwrap().contains("POST /v1/messages"));

    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].route, Some(Route::ChatCompletions));
    assert_eq!(sent[0].path, "/chat/completions");
    assert_eq!(sent[0].json(), json!({"a": 1}));
    assert_eq!(sent[0].outcome, Outcome::Completed);
    assert_eq!(sent[1].path, "/v1/chat/completions");
    assert_eq!(sent[1].query.as_deref(), Some("x=1"));
    assert_eq!(&sent[1].body[..], b"abc");
    assert!(sent[1].try_json().is_err());
    assert_eq!(
        sent[1].sha256_hex(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(sent[1].header("x-api-key"), Some("test-key"));
    assert!(sent[1].headers.iter().any(|(n, v)| n == "x-api-key" && v == "test-key"));
    assert!(sent[1].headers.iter().all(|(n, _)| *n == n.to_ascii_lowercase()));
    assert!(sent[1].at >= sent[0].at);
    assert_eq!(sent[2].route, None);
    assert_eq!(server.mismatches().len(), 1);
    assert_eq!(server.requests_on(Route::ChatCompletions).len(), 2);
}

#[tokio::test]
async fn retry_headers_and_error_bodies_are_sent() {
    let server = FakeUpstream::start().await;
    let limited = anthropic::rate_limited()
        .retry_after(3)
        .retry_after_ms(2500)
        .should_retry(true);
    server
        .expect(Route::Messages, Expectation::any(limited))
        .expect(Route::Messages, Expectation::any(anthropic::prompt_too_long()))
        .expect(Route::Messages, Expectation::any(Reply::status(404, "no such model")));
    let url = server.url(Route::Messages);

    let resp = post(&url, "{}").await;
    assert_eq!(resp.status().as_u16(), 429);
    let header = |name: &str| resp.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(header("retry-after").as_deref(), Some("3"));
    assert_eq!(header("retry-after-ms").as_deref(), Some("2500"));
    assert_eq!(header("x-should-retry").as_deref(), Some("true"));
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let resp = post(&url, "{}").await;
    assert_eq!(resp.status().as_u16(), 400);
    assert!(resp.text().await.unwrap().contains("prompt is too long"));
    let resp = post(&url, "{}").await;
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(resp.text().await.unwrap(), "no such model");
}

#[tokio::test]
async fn a_delay_holds_the_answer_back() {
    let server = FakeUpstream::start().await;
    let reply = Reply::json(200, &json!({"ok": true})).delay(Duration::from_millis(150));
    server.expect(Route::Messages, Expectation::any(reply));
    let started = Instant::now();
    let resp = post(&server.url(Route::Messages), "{}").await;
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(resp.json::<Value>().await.unwrap(), json!({"ok": true}));
}

/// Splits an SSE body into `(event, data)` pairs (one `data:` line per frame here).
fn parse_sse(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            let mut event = None;
            let mut data = String::new();
            for line in frame.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = d.to_owned();
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            (event, data)
        })
        .collect()
}

#[tokio::test]
async fn sse_frames_arrive_in_order_with_their_framing() {
    let server = FakeUpstream::start().await;
    let msg = anthropic::Message::new("m")
        .text("Hello, world")
        .tool_use("t1", "read", json!({"path": "a"}));
    let completion = openai::Completion::new("m").content("Hi there");
    server
        .expect(Route::Messages, Expectation::any(msg.stream()))
        .expect(Route::ChatCompletions, Expectation::any(completion.stream()));

    let resp = post(&server.url(Route::Messages), "{}").await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let got = parse_sse(&resp.text().await.unwrap());
    let want: Vec<_> = msg
        .events()
        .iter()
        .map(|f| (f.event_name().map(str::to_owned), f.data_text().to_owned()))
        .collect();
    assert_eq!(got, want);
    let names: Vec<_> = got.iter().map(|(e, _)| e.clone().unwrap()).collect();
    assert_eq!(names.first().map(String::as_str), Some("message_start"));
    assert_eq!(names.last().map(String::as_str), Some("message_stop"));
    for (event, data) in &got {
        let data: Value = serde_json::from_str(data).unwrap();
        assert_eq!(
            data["type"].as_str(),
            event.as_deref(),
            "the event name is the data's type"
        );
    }

    let text = post(&server.url(Route::ChatCompletions), "{}")
        .await
        .text()
        .await
        .unwrap();
    let got = parse_sse(&text);
    assert!(got.iter().all(|(event, _)| event.is_none()));
    assert_eq!(got.last().unwrap().1, "[DONE]");
    assert_eq!(got.len(), completion.chunks().len() + 1);
    server.assert_all_used();
}

#[tokio::test]
async fn frames_are_paced_one_chunk_at_a_time() {
    let server = FakeUpstream::start().await;
    let frames = vec![
        SseFrame::event("a", "1"),
        SseFrame::data("two\nlines"),
        SseFrame::raw(": comment\n\n").after(Duration::from_millis(120)),
    ];
    server.expect(
        Route::Messages,
        Expectation::any(Reply::sse(frames).frame_delay(Duration::from_millis(60))),
    );
    let started = Instant::now();
    let mut resp = post(&server.url(Route::Messages), "{}").await;
    let mut chunks = Vec::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        chunks.push((String::from_utf8(chunk.to_vec()).unwrap(), started.elapsed()));
    }
    let texts: Vec<_> = chunks.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts,
        ["event: a\ndata: 1\n\n", "data: two\ndata: lines\n\n", ": comment\n\n"]
    );
    assert!(chunks[0].1 >= Duration::from_millis(60));
    assert!(chunks[2].1 >= Duration::from_millis(240));
}

#[tokio::test]
async fn streams_can_stop_early_or_break() {
    let server = FakeUpstream::start().await;
    let msg = anthropic::Message::new("m").text("Hello");
    server
        .expect(Route::Messages, Expectation::any(msg.stream().stop_after(3)))
        .expect(Route::Messages, Expectation::any(msg.stream().abort_after(2)))
        .expect(Route::Messages, Expectation::any(msg.stream_then_error(2)));
    let url = server.url(Route::Messages);

    let got = parse_sse(&post(&url, "{}").await.text().await.unwrap());
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|(e, _)| e.as_deref() != Some("message_stop")));

    let mut resp = post(&url, "{}").await;
    let mut read = Vec::new();
    let broken = loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => read.extend_from_slice(&chunk),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert!(broken, "an aborted stream is an error for the client");
    assert_eq!(parse_sse(std::str::from_utf8(&read).unwrap()).len(), 2);

    let got = parse_sse(&post(&url, "{}").await.text().await.unwrap());
    let (event, data) = got.last().unwrap();
    assert_eq!(event.as_deref(), Some("error"));
    assert_eq!(
        serde_json::from_str::<Value>(data).unwrap()["error"]["type"],
        "overloaded_error"
    );

    assert!(
        server
            .wait_until(WAIT, |r| r.len() == 3 && r[1].outcome == Outcome::Cut)
            .await
    );
    let outcomes: Vec<_> = server.requests().iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [Outcome::Completed, Outcome::Cut, Outcome::Completed]);
    assert_eq!(server.abandoned_count(), 0);
}

#[tokio::test]
async fn a_client_giving_up_on_a_hang_is_observed() {
    let server = FakeUpstream::start().await;
    server.expect(Route::Messages, Expectation::any(Reply::hang()));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let err = client
        .post(server.url(Route::Messages))
        .body("{}")
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout());
    assert!(
        server.wait_for_abandoned(1, WAIT).await,
        "the server sees the client go"
    );
    assert_eq!(server.abandoned(), [0]);
    assert_eq!(server.request(0).unwrap().outcome, Outcome::Abandoned);
}

#[tokio::test]
async fn a_stream_dropped_mid_way_is_observed() {
    let server = FakeUpstream::start().await;
    let msg = anthropic::Message::new("m").text("Hello, world");
    server
        .expect(Route::Messages, Expectation::any(msg.stream().hang_after(2)))
        .expect(
            Route::Messages,
            Expectation::any(msg.stream().delay(Duration::from_secs(60))),
        );
    let url = server.url(Route::Messages);

    // A call cancelled while the stream hangs, as a stop would cancel it.
    let mut resp = post(&url, "{}").await;
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(first.starts_with(b"event: message_start\n"));
    assert_eq!(server.request(0).unwrap().outcome, Outcome::Pending);
    drop(resp);
    assert!(server.wait_for_abandoned(1, WAIT).await);

    // A call cancelled before the status line (the request future dropped).
    let pending = tokio::spawn(post_owned(url));
    assert!(server.wait_for_requests(2, WAIT).await);
    pending.abort();
    assert!(server.wait_for_abandoned(2, WAIT).await);
    assert_eq!(server.abandoned(), [0, 1]);
}

async fn post_owned(url: String) -> reqwest::Response {
    post(&url, "{}").await
}

#[tokio::test]
async fn shutdown_cuts_pending_replies_and_stops_serving() {
    let mut server = FakeUpstream::start().await;
    server.expect(Route::Messages, Expectation::any(Reply::hang()));
    let url = server.url(Route::Messages);
    let call = tokio::spawn(post_owned(url.clone()));
    assert!(server.wait_for_requests(1, WAIT).await);
    tokio::time::timeout(WAIT, server.shutdown())
        .await
        .expect("shutdown does not wait on a hang");
    assert_eq!(call.await.unwrap().status().as_u16(), 503);
    assert_eq!(server.request(0).unwrap().outcome, Outcome::Cut);
    assert!(
        reqwest::Client::new().post(&url).send().await.is_err(),
        "nothing listens any more"
    );
}
