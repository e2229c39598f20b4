//! The runner framework against a real server on both engines: a run answered end to end
//! (text, title, structured content, checkpoint, a staged capture), the claim extended past
//! the tool's budget, `work_canceled` aborting a handler, refusals, and a panicking handler.

mod runner_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nexus_sdk::runner::{
    Announcement, Block, HandlerFuture, Runner, RunnerHandle, Service, ToolCall, ToolResult, ToolSpec,
};
use runner_support::{Live, eventually, lives, read_tool};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// Runs `runner` in the background.
fn serve(runner: Runner) -> (RunnerHandle, JoinHandle<nexus_sdk::Result<()>>) {
    let handle = runner.handle();
    (handle, tokio::spawn(runner.run(std::future::pending())))
}

async fn stop(live: &Live, handle: RunnerHandle, serving: JoinHandle<nexus_sdk::Result<()>>) {
    handle.shutdown();
    let done = tokio::time::timeout(Duration::from_secs(10), serving).await;
    done.unwrap_or_else(|_| panic!("the runner never returned on {}", live.dialect))
        .unwrap()
        .unwrap();
}

async fn report(call: ToolCall) -> ToolResult {
    // The input names an upload; the claim may read it.
    let Some(id) = call.input["file"]
        .as_str()
        .and_then(|u| u.strip_prefix("nexus://uploads/"))
    else {
        return ToolResult::failed("no file in the input");
    };
    let run = (&call.run_public_id, &call.task_key, &call.claim_token);
    let read = call.client().attachment(run.0, run.1, run.2, id).await;
    let name = match read {
        Ok(upload) => upload.filename,
        Err(e) => return ToolResult::failed(format!("descriptor: {e}")),
    };
    let bytes = match call.attachment_bytes(id).await {
        Ok(bytes) => bytes,
        Err(e) => return ToolResult::failed(format!("bytes: {e}")),
    };
    let link = match call.stage_capture(bytes, &format!("copy-of-{name}")).await {
        Ok(link) => link,
        Err(e) => return ToolResult::failed(format!("staging: {e}")),
    };
    if let Err(e) = call.progress("halfway").await {
        return ToolResult::failed(format!("progress: {e}"));
    }
    let who = call.input["who"].as_str().unwrap_or("nobody");
    ToolResult::text(format!("hello {who}"))
        .with_block(link)
        .with_structured(json!({"n": 1, "flag": false}))
        .with_title(format!("report {who}"))
        .checkpoint("abc123", true)
}

#[tokio::test]
async fn a_one_tool_runner_answers_a_run_end_to_end() {
    for live in lives().await {
        let runner = Runner::builder(&live.base, &live.runner_token())
            .poll_interval(Duration::from_secs(60))
            .tool(read_tool("report"), report)
            .build();
        let (handle, serving) = serve(runner);
        live.wait_served("report").await;
        let input = live.upload(b"captured bytes", "in.txt").await;
        let file = format!("nexus://uploads/{input}");
        let run = live.tool_run("report", json!({"who": "nexus", "file": file})).await;
        let task = live.settled(&run).await;
        let what = format!("{} {task}", live.dialect);
        assert_eq!(task["status"], "completed", "{what}");
        assert_eq!(task["output"], "hello nexus", "{what}");
        assert_eq!(task["title"], "report nexus", "{what}");
        assert_eq!(task["structured_content"], json!({"n": 1, "flag": false}), "{what}");
        assert_eq!(
            task["metadata"]["checkpoint"],
            json!({"hash": "abc123", "dirty": true}),
            "{what}"
        );
        let content = task["content"].as_array().expect("content blocks");
        assert_eq!(content[0], json!({"type": "text", "text": "hello nexus"}), "{what}");
        let link = &content[1];
        assert_eq!(link["type"], "resource_link", "{what}");
        assert_eq!(link["name"], "copy-of-in.txt", "{what}");
        assert_eq!(link["mimeType"], "text/plain", "{what}");
        assert_eq!(link["size"], 14, "{what}");
        let id = link["uri"]
            .as_str()
            .and_then(|u| u.strip_prefix("nexus://uploads/"))
            .unwrap_or_else(|| panic!("a nexus upload link: {what}"));
        assert_ne!(id, input, "a new capture: {what}");
        assert_eq!(live.upload_bytes(id).await, b"captured bytes", "{what}");
        // The channel served it (polls are a minute apart), with one claim.
        assert_eq!(live.events(&run, "task_claimed").await.len(), 1, "{what}");
        stop(&live, handle, serving).await;
    }
}

#[tokio::test]
async fn the_claim_is_extended_while_a_handler_outlives_the_tools_budget() {
    for live in lives().await {
        // The budget is 3 s and the sweep runs every 100 ms: without extensions the row times
        // out and the late commit is discarded.
        let runner = Runner::builder(&live.base, &live.runner_token())
            .poll_interval(Duration::from_millis(500))
            .tool(read_tool("slow").timeout_ms(3000), |_call| async {
                tokio::time::sleep(Duration::from_millis(7000)).await;
                ToolResult::text("slow but done")
            })
            .build();
        let (handle, serving) = serve(runner);
        live.wait_served("slow").await;
        let run = live.tool_run("slow", json!({})).await;
        let task = live.settled(&run).await;
        assert_eq!(task["status"], "completed", "{} {task}", live.dialect);
        assert_eq!(task["output"], "slow but done");
        let extended = live.events(&run, "task_deadline_extended").await;
        assert!(extended.len() >= 2, "{} {extended:?}", live.dialect);
        stop(&live, handle, serving).await;
    }
}

/// Sets its flag when dropped (the handler's future was dropped).
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn work_canceled_fires_the_cancel_token_and_drops_the_handler() {
    for live in lives().await {
        let started = Arc::new(AtomicUsize::new(0));
        let canceled = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicBool::new(false));
        let (s, c, d) = (started.clone(), canceled.clone(), dropped.clone());
        // One slot: the canceled call must give it back for the second run to be served.
        let runner = Runner::builder(&live.base, &live.runner_token())
            .concurrency(1)
            .poll_interval(Duration::from_millis(300))
            .tool(read_tool("hang"), move |call: ToolCall| {
                let (s, c, d) = (s.clone(), c.clone(), d.clone());
                async move {
                    if call.input["finish"] == true {
                        return ToolResult::text("finished");
                    }
                    let token = call.cancel.clone();
                    tokio::spawn(async move {
                        token.cancelled().await;
                        c.store(true, Ordering::SeqCst);
                    });
                    let _guard = DropFlag(d);
                    s.fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<ToolResult>().await
                }
            })
            .build();
        let (handle, serving) = serve(runner);
        live.wait_served("hang").await;
        let run = live.tool_run("hang", json!({})).await;
        eventually("the handler started", || started.load(Ordering::SeqCst) == 1).await;
        live.stop(&run, true).await;
        eventually("the cancel token fired", || canceled.load(Ordering::SeqCst)).await;
        eventually("the handler's future was dropped", || dropped.load(Ordering::SeqCst)).await;
        let task = live.task(&run).await;
        assert_eq!(task["status"], "canceled", "{} {task}", live.dialect);
        assert_eq!(task["error"]["key"], "run_canceled");
        let content = task.get("content").cloned().unwrap_or(json!([]));
        assert_eq!(content, json!([]), "nothing was committed: {task}");
        let next = live.tool_run("hang", json!({"finish": true})).await;
        assert_eq!(live.settled(&next).await["output"], "finished", "{}", live.dialect);
        stop(&live, handle, serving).await;
    }
}

#[tokio::test]
async fn a_refused_first_announcement_is_returned_as_a_typed_error() {
    for live in lives().await {
        let runner = Runner::builder(&live.base, &live.runner_token())
            .tool(read_tool("not a valid name"), |_call| async {
                ToolResult::text("never")
            })
            .build();
        let outcome = tokio::time::timeout(Duration::from_secs(10), runner.run(std::future::pending()))
            .await
            .expect("a refusal is final, not retried");
        let error = outcome.expect_err("the kernel refuses the name");
        assert_eq!(error.code(), Some("invalid_announcement"), "{}: {error}", live.dialect);
        assert!(!error.is_transient());
    }
}

/// A link naming an upload that is no capture of this runner.
fn foreign_link() -> Block {
    Block::ResourceLink {
        uri: "nexus://uploads/0190f5a2-7c3e-7000-8000-000000000001".into(),
        name: "ghost.txt".into(),
        mime_type: None,
        size: None,
        title: None,
        description: None,
    }
}

async fn odd(call: ToolCall) -> ToolResult {
    match call.input["case"].as_str() {
        Some("foreign") => ToolResult::text("see the file").with_block(foreign_link()),
        Some("nul") => ToolResult::text("a\u{0}b"),
        Some("panic") => panic!("boom"),
        _ => ToolResult::text("fine"),
    }
}

#[tokio::test]
async fn refused_results_and_panics_fail_the_call_and_the_runner_carries_on() {
    for live in lives().await {
        let runner = Runner::builder(&live.base, &live.runner_token())
            .concurrency(1)
            .poll_interval(Duration::from_millis(300))
            .tool(read_tool("odd"), odd)
            .build();
        let (handle, serving) = serve(runner);
        live.wait_served("odd").await;
        let dialect = live.dialect;
        // A payload refusal leaves the park open: the framework commits a failure in its place
        // instead of waiting for the deadline.
        let run = live.tool_run("odd", json!({"case": "foreign"})).await;
        let task = live.settled(&run).await;
        assert_eq!(task["status"], "failed", "{dialect} {task}");
        assert_eq!(task["error"]["key"], "tool_failed");
        let detail = task["error"]["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("unknown_result_upload"), "{dialect} {task}");
        // `result_unstorable` settled the task itself; it is final.
        let run = live.tool_run("odd", json!({"case": "nul"})).await;
        let task = live.settled(&run).await;
        assert_eq!(task["status"], "failed", "{dialect} {task}");
        assert_eq!(task["error"]["key"], "result_unstorable", "{dialect} {task}");
        // A panic fails the call with its message.
        let run = live.tool_run("odd", json!({"case": "panic"})).await;
        let task = live.settled(&run).await;
        assert_eq!(task["status"], "failed", "{dialect} {task}");
        let detail = task["error"]["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("panicked: boom"), "{dialect} {task}");
        // And the runner still serves.
        let run = live.tool_run("odd", json!({})).await;
        let task: Value = live.settled(&run).await;
        assert_eq!(task["output"], "fine", "{dialect} {task}");
        stop(&live, handle, serving).await;
    }
}

/// A service whose tool list grows.
struct Growing {
    tools: Mutex<Vec<ToolSpec>>,
}

impl Service for Growing {
    fn announcement(&self) -> Announcement {
        Announcement {
            tools: self.tools.lock().unwrap().clone(),
            ..Announcement::default()
        }
    }

    fn call(&self, call: ToolCall) -> HandlerFuture {
        Box::pin(async move { ToolResult::text(format!("{} served", call.tool_name)) })
    }
}

#[tokio::test]
async fn reannounce_sends_the_services_new_tool_list() {
    for live in lives().await {
        let service = Arc::new(Growing {
            tools: Mutex::new(vec![read_tool("first")]),
        });
        let runner = Runner::builder(&live.base, &live.runner_token())
            .poll_interval(Duration::from_millis(300))
            .service(service.clone())
            .build();
        let (handle, serving) = serve(runner);
        live.wait_served("first").await;
        service.tools.lock().unwrap().push(read_tool("second"));
        handle.reannounce();
        live.wait_served("second").await;
        let run = live.tool_run("second", json!({})).await;
        assert_eq!(live.settled(&run).await["output"], "second served", "{}", live.dialect);
        stop(&live, handle, serving).await;
    }
}
