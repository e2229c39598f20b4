//! The live feeds: a runner-routed tool run followed frame by frame (durable events and an
//! ephemeral progress frame), a resume after the connection is cut, `after`, and a refusal;
//! a conversation's feed followed live and resumed after a cut.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use nexus_sdk::Client;
use nexus_sdk::member::{
    ApprovalMode, ConversationEvent, ConversationEventKind, ConversationEventStream, EventStream, Frame,
    NewConversation, NewInput, NewRun, Resolution, RunStatus, Step, TaskStatus,
};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::harness::{PATIENCE, Served, refusal, served, task_when};

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

    /// A proxy to `s`, and the agent's client through it.
    async fn agent_client(s: &Served) -> (Proxy, Client) {
        let upstream: SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
        let proxy = Proxy::to(upstream).await;
        let token = s.boot["agent"]["member_token"].as_str().unwrap();
        let client = Client::new(&format!("http://{}", proxy.addr), token);
        (proxy, client)
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
        let (proxy, proxied) = Proxy::agent_client(&s).await;

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

/// Reads conversation events until `n` in all, failing after [`PATIENCE`].
async fn conversation_events(
    feed: &mut ConversationEventStream,
    n: usize,
    mut out: Vec<ConversationEvent>,
) -> Vec<ConversationEvent> {
    tokio::time::timeout(PATIENCE, async {
        while out.len() < n {
            out.push(feed.next().await.expect("the feed ended").expect("an event"));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out; read {out:?}"));
    out
}

#[tokio::test]
async fn a_conversation_feed_follows_live_and_resumes_after_a_cut() {
    for s in served(&[]).await {
        let d = s.dialect;
        let (proxy, proxied) = Proxy::agent_client(&s).await;

        let ws = s.ws();
        let made = ws.create_conversation(&NewConversation::new()).await.unwrap();
        let conv = ws.conversation(&made.conversation.public_id);
        let first = conv
            .create_input(&NewInput::text("a").deliver_in("1h"))
            .await
            .unwrap()
            .input;
        let mut feed = proxied
            .workspace(&s.ws_id())
            .conversation(conv.public_id())
            .events_stream(0)
            .await
            .unwrap();
        // The backlog, then a live event.
        let seen = conversation_events(&mut feed, 1, Vec::new()).await;
        let second = conv
            .create_input(&NewInput::text("b").deliver_in("1h"))
            .await
            .unwrap()
            .input;
        let seen = conversation_events(&mut feed, 2, seen).await;
        assert_eq!(seen[0].kind, ConversationEventKind::InputAccepted, "{d}");
        assert_eq!(seen[0].data["input_public_id"], first.public_id.as_str());
        assert_eq!(seen[1].data["input_public_id"], second.public_id.as_str());
        assert_eq!(seen[1].conversation_public_id.as_deref(), Some(conv.public_id()));

        // Cut: what commits meanwhile arrives after the reconnect, with no gap or repeat.
        assert!(proxy.cut() >= 1, "{d}: the feed's connection went through the proxy");
        conv.create_input(&NewInput::text("c").deliver_in("1h")).await.unwrap();
        conv.archive().await.unwrap();
        let seen = conversation_events(&mut feed, 4, seen).await;
        let sequences: Vec<i64> = seen.iter().map(|e| e.sequence).collect();
        assert_eq!(sequences, [1, 2, 3, 4], "{d}");
        assert_eq!(seen[3].kind, ConversationEventKind::ConversationArchived);
        assert_eq!(feed.last_sequence(), 4);
        assert_eq!(conv.events(0, None).await.unwrap().events, seen, "{d}");

        // `after` skips what was seen; an unknown conversation is refused at open.
        let mut later = conv.events_stream(3).await.unwrap();
        let next = conversation_events(&mut later, 1, Vec::new()).await;
        assert_eq!(next[0].sequence, 4, "{d}");
        let ghost = ws.conversation("00000000-0000-7000-8000-000000000000");
        assert_eq!(refusal(ghost.events_stream(0).await), (404, "not_found".into()));
    }
}
