//! The live feed: a runner-routed tool run followed frame by frame (durable events and an
//! ephemeral progress frame), a resume after the connection is cut, `after`, and a refusal.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use nexus_sdk::Client;
use nexus_sdk::member::{ApprovalMode, EventStream, Frame, NewRun, Resolution, RunStatus, Step, TaskStatus};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::harness::{PATIENCE, refusal, served, task_when};

/// Reads frames until `stop` holds on one; returns every frame read, that one included.
async fn frames_until(feed: &mut EventStream, stop: impl Fn(&Frame) -> bool) -> Vec<Frame> {
    let mut out = Vec::new();
    tokio::time::timeout(PATIENCE, async {
        while let Some(frame) = feed.next().await {
            let frame = frame.expect("a frame");
            let done = stop(&frame);
            out.push(frame);
            if done {
                return;
            }
        }
        panic!("the feed ended");
    })
    .await
    .unwrap_or_else(|_| panic!("timed out; read {out:?}"));
    out
}

fn task_entered(key: &'static str, status: TaskStatus) -> impl Fn(&Frame) -> bool {
    move |frame| match frame {
        Frame::Event(e) => e.task_key.as_deref() == Some(key) && e.task_status_change().is_some_and(|c| c.to == status),
        Frame::Ephemeral(_) => false,
    }
}

fn run_entered(status: RunStatus) -> impl Fn(&Frame) -> bool {
    move |frame| matches!(frame, Frame::Event(e) if e.run_status_change().is_some_and(|c| c.to == status))
}

fn sequences(frames: &[Frame]) -> Vec<i64> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event(e) => Some(e.sequence),
            Frame::Ephemeral(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn the_feed_follows_a_runner_tool_run() {
    for s in served(&[]).await {
        let d = s.dialect;
        s.announce_echo().await;
        let ws = s.ws();
        let step = Step::runner_tool("echo", json!({"text": "hi"}))
            .runner(s.runner_id())
            .key("t");
        let created = ws
            .create_run(&NewRun::new(ApprovalMode::Bypass).step(step))
            .await
            .unwrap();
        let run = ws.run(&created.run.public_id);
        // Opened before the start: the feed sees the run progress.
        let mut feed = run.stream(0).await.unwrap();
        run.start().await.unwrap();
        let mut frames = frames_until(&mut feed, task_entered("t", TaskStatus::Dispatched)).await;
        assert!(frames.iter().any(run_entered(RunStatus::Running)), "{d}: {frames:?}");

        let token = s.claim(run.public_id(), "t").await;
        let progress = json!({"frame": {"run_public_id": run.public_id(), "task_key": "t",
                                        "claim_token": token, "text_tail": "half way"}});
        let (status, reply) = s.executor(reqwest::Method::POST, "/progress", Some(progress)).await;
        assert_eq!(status, 202, "{reply}");
        frames.extend(frames_until(&mut feed, |f| matches!(f, Frame::Ephemeral(_))).await);
        let Some(Frame::Ephemeral(ephemeral)) = frames.last() else {
            unreachable!()
        };
        assert_eq!(ephemeral.kind, "executor_progress", "{d}");
        assert_eq!(ephemeral.data["task_key"], "t");
        assert_eq!(ephemeral.data["text_tail"], "half way");

        let commit = json!({"claim_token": token, "content": [{"type": "text", "text": "hi"}],
                            "structured_content": {"echoed": "hi"}, "title": "echo hi",
                            "metadata": {"lines": 1}});
        let (status, reply) = s
            .executor(
                reqwest::Method::POST,
                &format!("/inbox/{}/t/commit", run.public_id()),
                Some(commit),
            )
            .await;
        assert_eq!(status, 200, "{reply}");
        frames.extend(frames_until(&mut feed, run_entered(RunStatus::Completed)).await);

        // Durable frames: gapless from 1, exactly the stored events.
        let seen = sequences(&frames);
        assert_eq!(seen, (1..=seen.len() as i64).collect::<Vec<_>>(), "{d}");
        assert_eq!(feed.last_sequence(), *seen.last().unwrap());
        let stored = run.events(0, Some(500)).await.unwrap();
        let durable: Vec<_> = frames
            .iter()
            .filter_map(|f| match f {
                Frame::Event(e) => Some(e.clone()),
                Frame::Ephemeral(_) => None,
            })
            .collect();
        assert_eq!(durable, stored.events, "{d}");

        let t = run.task("t").await.unwrap();
        assert_eq!(t.status, TaskStatus::Completed, "{d}");
        assert_eq!(t.tool_name.as_deref(), Some("echo"));
        assert_eq!(t.title.as_deref(), Some("echo hi"));
        assert_eq!(t.structured_content, Some(json!({"echoed": "hi"})));
        assert_eq!(t.metadata, Some(json!({"lines": 1})));
        assert_eq!(t.output.as_deref(), Some("hi"));
        let transcript = run.transcript(true).await.unwrap();
        let row = transcript.rows.iter().find(|r| r.key == "t").expect("the tool row");
        assert_eq!(row.heading().as_deref(), Some("echo hi"), "{d}");

        // `after` skips what was seen; an unknown run is refused at open.
        let mut later = run.stream(3).await.unwrap();
        let first = frames_until(&mut later, |_| true).await;
        assert_eq!(sequences(&first), [4], "{d}");
        let ghost = ws.run("00000000-0000-7000-8000-000000000000");
        assert_eq!(refusal(ghost.stream(0).await), (404, "not_found".into()));
    }
}

/// A TCP forwarder whose open connections can be cut at once.
struct Proxy {
    addr: SocketAddr,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    async fn to(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let list = connections.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let forward = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                list.lock().unwrap().push(forward);
            }
        });
        Proxy {
            addr,
            connections,
            accept,
        }
    }

    /// Drops every open connection (both ends see the socket close).
    fn cut(&self) -> usize {
        let open: Vec<_> = self.connections.lock().unwrap().drain(..).collect();
        for connection in &open {
            connection.abort();
        }
        open.len()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

#[tokio::test]
async fn the_feed_resumes_after_its_connection_is_cut() {
    for s in served(&[]).await {
        let d = s.dialect;
        let upstream: SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
        let proxy = Proxy::to(upstream).await;
        let token = s.boot["agent"]["member_token"].as_str().unwrap();
        let proxied = Client::new(&format!("http://{}", proxy.addr), token);

        let ws = s.ws();
        let (run, created) = ws
            .start_run(&NewRun::new(ApprovalMode::Bypass).step(Step::ask("Go on?").key("q")))
            .await
            .unwrap();
        let mut feed = proxied
            .workspace(&s.ws_id())
            .run(run.public_id())
            .stream(0)
            .await
            .unwrap();
        let mut frames = frames_until(&mut feed, task_entered("q", TaskStatus::Dispatched)).await;
        let before = feed.last_sequence();

        assert!(proxy.cut() >= 1, "{d}: the feed's connection went through the proxy");
        // Progress while the feed is disconnected.
        let answer = Resolution::text("yes").token(created.receipt.resolution_token("q").unwrap());
        run.resolve("q", &answer).await.unwrap();
        task_when(&run, "q", |t| t.status == TaskStatus::Completed).await;

        frames.extend(frames_until(&mut feed, run_entered(RunStatus::Completed)).await);
        let seen = sequences(&frames);
        assert!(seen.len() as i64 > before, "{d}: events arrived after the cut");
        assert_eq!(
            seen,
            (1..=seen.len() as i64).collect::<Vec<_>>(),
            "{d}: no gap, no repeat"
        );
        let stored = run.events(0, Some(500)).await.unwrap();
        assert_eq!(seen.len(), stored.events.len(), "{d}");
    }
}
