//! A claim the kernel granted whose answer never reached the runner (the node died after the
//! commit, or the answer was lost on the way back): the runner claims the row again with the
//! same `Idempotency-Key`, gets the standing grant, and serves the call once. Without that,
//! the row stayed claimed by nobody until its deadline (the fault run's `needs_attention`).
//!
//! A proxy between the runner and a real server (both engines) forwards every request and
//! answers the first claim, after the kernel granted it, with a 503 instead of the grant.

mod runner_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use nexus_sdk::runner::{Runner, ToolResult};
use runner_support::{lives, read_tool};
use serde_json::json;

struct Proxy {
    upstream: String,
    http: reqwest::Client,
    /// The first claim's answer has been dropped.
    dropped: AtomicBool,
}

async fn forward(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if parts.uri.path().ends_with("/channel") {
        // No push channel: the runner finds its work by polling.
        return StatusCode::NOT_FOUND.into_response();
    }
    let bytes = to_bytes(body, 1 << 20).await.unwrap();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut sent = proxy
        .http
        .request(parts.method.clone(), format!("{}{path}", proxy.upstream))
        .body(bytes);
    for (name, value) in &parts.headers {
        if name != header::HOST && name != header::CONTENT_LENGTH {
            sent = sent.header(name, value);
        }
    }
    let Ok(answer) = sent.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status = answer.status();
    let headers = answer.headers().clone();
    let body = answer.bytes().await.unwrap_or_default();
    let claim = parts.method == Method::POST && parts.uri.path().ends_with("/claim");
    if claim && status.is_success() && !proxy.dropped.swap(true, Ordering::SeqCst) {
        let lost = json!({"error": {"code": "unavailable", "message": "the answer was lost"}});
        return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(lost)).into_response();
    }
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    for (name, value) in &headers {
        if name != header::CONTENT_LENGTH && name != header::TRANSFER_ENCODING {
            response.headers_mut().insert(name, value.clone());
        }
    }
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_claim_whose_answer_was_lost_is_claimed_again_and_served_once() {
    for live in lives().await {
        let proxy = Arc::new(Proxy {
            upstream: live.base.clone(),
            http: reqwest::Client::new(),
            dropped: AtomicBool::new(false),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(forward).with_state(proxy.clone());
        let serving = tokio::spawn(async move { axum::serve(listener, app).await });

        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let runner = Runner::builder(&base, &live.runner_token())
            .poll_interval(Duration::from_millis(100))
            .tool(read_tool("work"), move |_call| {
                counted.fetch_add(1, Ordering::SeqCst);
                async { ToolResult::text("worked") }
            })
            .build();
        let handle = runner.handle();
        let running = tokio::spawn(runner.run(std::future::pending()));
        live.wait_served("work").await;

        let run = live.tool_run("work", json!({})).await;
        let task = live.settled(&run).await;
        assert_eq!(task["status"], "completed", "{}: {task}", live.dialect);
        assert!(
            proxy.dropped.load(Ordering::SeqCst),
            "the first claim's answer was dropped"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{}: served once", live.dialect);
        assert_eq!(live.events(&run, "task_claimed").await.len(), 1, "{}", live.dialect);

        handle.shutdown();
        let _ = tokio::time::timeout(Duration::from_secs(10), running).await;
        serving.abort();
    }
}
