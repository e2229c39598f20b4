//! Two real `nexus serve` processes on one PostgreSQL database (storage-and-scale.md §5, §6;
//! issue 27): signals cross nodes (`work_available`, the live feed, a stop's abort,
//! `work_canceled`), the approvals queue is shared, a node killed with SIGKILL mid-round has its
//! job taken over by the other once the lease lapses, and a node whose process clock is an
//! hour ahead agrees with the other on every deadline. Each test gets its own schema; without
//! PostgreSQL they skip (and fail under `NEXUS_REQUIRE_POSTGRES=1`, as every PostgreSQL test).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::pair::*;
use common::poll;
use futures_util::StreamExt;
use nexus_sdk::member::{ApprovalMode, Frame, NewConversation, NewInput, NewRun, Page, Reconnect, Step};
use nexus_sdk::runner::{Runner, ToolResult};
use nexus_sdk::{Client, Configuration};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_run_on_a_is_served_by_a_runner_on_b_and_followed_live_on_b() {
    let Some(pair) = Pair::new().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let a = pair.start(0, &[]).await;
    let b = pair.start(1, &[]).await;

    // The runner lives on B and never polls after its first look: it learns of work only
    // through B's push channel.
    let handled = Arc::new(AtomicUsize::new(0));
    let count = handled.clone();
    let runner = Runner::builder(&b.base, &pair.runner_token)
        .poll_interval(Duration::from_secs(3600))
        .tool(slow_spec(), move |_call| {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                ToolResult::text("served on B")
            }
        })
        .build();
    let serving = tokio::spawn(runner.run(std::future::pending()));
    let member_b = Client::new(&b.base, &pair.member_token);
    poll(30, || member_b.runner(&pair.runner_id), |r| r.tool_names().count() > 0).await;
    // Let the runner's first inbox look pass, so the work below reaches it by push only.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Created on A; its feed followed on B (never reconnecting, so nothing is re-read).
    let ws_a = pair.workspace(&a);
    let ws_b = pair.workspace(&b);
    let step = Step::runner_tool("slow", json!({})).timeout_ms(60_000);
    let model = Step::model("Say done.").model("scripted/echo").after(["s1-tool-1"]);
    let created = ws_a
        .create_run(
            &NewRun::new(ApprovalMode::Bypass)
                .default_runner(&pair.runner_id)
                .step(step)
                .step(model),
        )
        .await
        .expect("create on A");
    let id = created.run.public_id.clone();
    let mut feed = ws_b
        .run(&id)
        .stream_with(0, Reconnect::never())
        .await
        .expect("stream on B");
    ws_a.run(&id).start().await.expect("start on A");

    let mut sequences = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let frame = tokio::time::timeout_at(deadline, feed.next())
            .await
            .unwrap_or_else(|_| panic!("B's feed stalled after {sequences:?}"))
            .expect("B's feed ended")
            .expect("B's feed broke");
        let Frame::Event(event) = frame else { continue };
        sequences.push(event.sequence);
        if event.run_status_change().is_some_and(|c| c.to.as_str() == "completed") {
            break;
        }
    }
    let expected: Vec<i64> = (1..=sequences.len() as i64).collect();
    assert_eq!(sequences, expected, "in order, without gaps");
    assert_eq!(
        handled.load(Ordering::SeqCst),
        1,
        "the runner on B served the call once"
    );

    // A reads the same finished run: the commit on B continued it.
    let done = ws_a.run(&id).get().await.unwrap();
    assert_eq!(done.run.status.as_str(), "completed");
    let tool = ws_a.run(&id).task("s1-tool-1").await.unwrap();
    assert_eq!(tool.output.as_deref(), Some("served on B"), "{tool:?}");
    let events = ws_a.run(&id).events(0, Some(500)).await.unwrap().events;
    assert_eq!(events.len(), sequences.len(), "B's feed held every event");
    serving.abort();
    drop((a, b));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_sent_to_b_aborts_the_model_call_on_a() {
    let Some(pair) = Pair::new().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    // A alone takes the round; B starts once the call is in flight on A.
    let a = pair.start(0, &[]).await;
    let ws_a = pair.agent_workspace(&a);
    let created = ws_a
        .create_run(&NewRun::new(ApprovalMode::Bypass).step(Step::model("Take your time.").model("scripted/slow")))
        .await
        .unwrap();
    let id = created.run.public_id;
    ws_a.run(&id).start().await.unwrap();
    let run_a = ws_a.run(&id);
    poll(20, || run_a.task("s1-model-1"), |t| t.status.as_str() == "running").await;
    let b = pair.start(1, &[]).await;
    assert_eq!(rows(&pair._pg, "jobs").await, 1, "A holds the round's job");

    let ws_b = pair.agent_workspace(&b);
    let run_b = ws_b.run(&id);
    run_b.stop(true).await.expect("stop on B");
    poll(10, || run_b.get(), |r| r.run.status.as_str() == "canceled").await;
    // The call on A was aborted, not left to finish its 30 s: A ended the job at once.
    let deadline = Instant::now() + Duration::from_secs(8);
    while rows(&pair._pg, "jobs").await > 0 {
        assert!(Instant::now() < deadline, "the call on A was not aborted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let round = ws_a.run(&id).task("s1-model-1").await.unwrap();
    assert_eq!(round.status.as_str(), "canceled", "{round:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn work_canceled_reaches_a_claimant_on_the_other_node() {
    let Some(pair) = Pair::new().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let a = pair.start(0, &[]).await;
    let b = pair.start(1, &[]).await;
    pair.announce(&b).await;
    let mut push = channel(&pair, &b).await;

    let ws_a = pair.workspace(&a);
    let id = pair.tool_run(&ws_a, 600_000).await;
    ws_a.run(&id).start().await.unwrap();
    // Parked by A's commit; the frame reaches the channel on B.
    let available = next_frame(&mut push, 10).await;
    assert_eq!(available["type"], "work_available", "{available}");
    assert_eq!(available["run_public_id"], id.as_str(), "{available}");

    let executor = pair.executor(&b);
    executor.claim(&id, "s1-tool-1").await.expect("claim on B");
    ws_a.run(&id).stop(true).await.expect("stop on A");
    let canceled = next_frame(&mut push, 10).await;
    assert_eq!(canceled["type"], "work_canceled", "{canceled}");
    assert_eq!(canceled["run_public_id"], id.as_str(), "{canceled}");
    assert_eq!(canceled["task_key"], "s1-tool-1", "{canceled}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_of_a_mid_round_and_b_finishes_the_run() {
    let Some(pair) = Pair::new().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let mut a = pair.start(0, &[]).await;
    let ws_a = pair.agent_workspace(&a);
    let created = ws_a
        .create_run(&NewRun::new(ApprovalMode::Bypass).step(Step::model("Briefly.").model("scripted/brief")))
        .await
        .unwrap();
    let id = created.run.public_id;
    ws_a.run(&id).start().await.unwrap();
    let run_a = ws_a.run(&id);
    poll(20, || run_a.task("s1-model-1"), |t| t.status.as_str() == "running").await;
    let b = pair.start(1, &[]).await;
    let sealed_before = ws_a.run(&id).request("s1-model-1").await.unwrap();

    a.server.kill_9();
    let killed = Instant::now();
    let ws_b = pair.agent_workspace(&b);
    let run_b = ws_b.run(&id);
    let done = poll(60, || run_b.get(), |r| r.run.status.is_terminal()).await;
    assert_eq!(done.run.status.as_str(), "completed", "{done:?}");
    // Not before A's lease lapsed: B waited for it, then re-sent the same sealed bytes.
    assert!(
        killed.elapsed() >= Duration::from_millis(LEASE_MS / 2),
        "taken over before the lease lapsed: {:?}",
        killed.elapsed()
    );
    let round = ws_b.run(&id).task("s1-model-1").await.unwrap();
    assert_eq!(round.status.as_str(), "completed");
    assert_eq!(round.generation, 1, "{round:?}");
    let sealed_after = ws_b.run(&id).request("s1-model-1").await.unwrap();
    assert_eq!(sealed_after.body_sha256, sealed_before.body_sha256);
    let events = ws_b.run(&id).events(0, Some(500)).await.unwrap().events;
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.sequence, i as i64 + 1, "gapless: {events:?}");
    }
    let completions = events
        .iter()
        .filter(|e| e.task_status_change().is_some_and(|c| c.to.as_str() == "completed"))
        .count();
    assert_eq!(completions, 1, "the round completed once: {events:?}");
    assert_eq!(rows(&pair._pg, "jobs").await, 0, "no job left behind");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_approvals_queue_on_b_shows_a_hold_made_on_a() {
    let Some(pair) = Pair::new().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    // The hold is made on A, the only node while it is made.
    let a = pair.start(0, &[]).await;
    let ws_a = pair.workspace(&a);
    let step = Step::model("[[call:runners_list {}]]")
        .model("scripted/echo")
        .kernel_tools([nexus_sdk::tools::RUNNERS_LIST]);
    let created = ws_a
        .create_run(&NewRun::new(ApprovalMode::Ask).step(step))
        .await
        .unwrap();
    let id = created.run.public_id;
    ws_a.run(&id).start().await.unwrap();
    let first = Page::default();
    poll(20, || ws_a.approvals(&first), |p| !p.approvals.is_empty()).await;

    let b = pair.start(1, &[]).await;
    let ws_b = pair.workspace(&b);
    let page = ws_b.approvals(&Default::default()).await.unwrap();
    assert_eq!(page.approvals.len(), 1, "{page:?}");
    assert_eq!(page.approvals[0].run_public_id, id);
    assert_eq!(page.approvals[0].tool_name.as_deref(), Some("runners_list"));
    let key = page.approvals[0].task_key.clone();
    ws_b.run(&id).approve(&key).await.expect("approve on B");
    let run_a = ws_a.run(&id);
    let done = poll(30, || run_a.get(), |r| r.run.status.is_terminal()).await;
    assert_eq!(done.run.status.as_str(), "completed", "{done:?}");
}

/// The time a wire timestamp names, in Unix seconds.
fn unix_secs(iso: &str) -> i64 {
    chrono_secs(iso).unwrap_or_else(|| panic!("not a timestamp: {iso}"))
}

fn chrono_secs(iso: &str) -> Option<i64> {
    // `2026-01-05T10:00:00Z`: whole seconds, UTC.
    let (date, time) = iso.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, min, s) = (t.next()??, t.next()??, t.next()??);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3_600 + min * 60 + s)
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_whose_clock_is_an_hour_ahead_agrees_on_every_deadline() {
    let Some(pair) = Pair::new().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    // A's process clock runs an hour ahead; it sweeps every 200 ms.
    let a = pair.start(0, &[("NEXUS_CLOCK_SKEW_MS", "3600000")]).await;
    let b = pair.start(1, &[]).await;
    pair.announce(&b).await;

    // Parked through B with a 60 s deadline: on A's own clock it expired long ago.
    let ws_b = pair.workspace(&b);
    let on_b = pair.tool_run(&ws_b, 60_000).await;
    ws_b.run(&on_b).start().await.unwrap();
    // Parked through A: on A's own clock its deadline would be an hour out.
    let ws_a = pair.workspace(&a);
    let on_a = pair.tool_run(&ws_a, 60_000).await;
    ws_a.run(&on_a).start().await.unwrap();
    let started = now_secs();

    // Many of A's sweep passes later, neither has expired, and both deadlines are a minute out.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for run in [&on_b, &on_a] {
        let task = ws_a.run(run).task("s1-tool-1").await.unwrap();
        assert_eq!(task.status.as_str(), "dispatched", "{task:?}");
        let deadline = unix_secs(task.deadline_at.as_deref().expect("a parked row's deadline"));
        assert!(
            (deadline - (started + 60)).abs() <= 10,
            "deadline {deadline} is not a minute after {started}: {task:?}"
        );
    }
}

/// A one-pixel PNG (an image a model round may carry).
const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8,
    6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89,
];

#[tokio::test(flavor = "multi_thread")]
async fn an_upload_made_on_a_is_read_and_bound_on_b() {
    let Some(pair) = Pair::new().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let a = pair.start(0, &[]).await;
    let b = pair.start(1, &[]).await;
    let agent_a = Client::new(&a.base, &pair.agent_token);
    let agent_b = Client::new(&b.base, &pair.agent_token);
    let upload = agent_a.upload("pixel.png", PNG.to_vec()).await.expect("upload on A");
    // Read on B: the bytes are in the database, in no node's data dir.
    let read = agent_b.upload_bytes(&upload.public_id).await.expect("read on B");
    assert_eq!(read.bytes, PNG);
    assert_eq!(rows(&pair._pg, "blob_bodies").await, 1);
    for dir in &pair.dirs {
        let blobs = dir.path().join("blobs");
        let kept: Vec<_> = std::fs::read_dir(&blobs)
            .map(|d| d.flatten().map(|e| e.file_name()).filter(|n| n != "tmp").collect())
            .unwrap_or_default();
        assert!(kept.is_empty(), "{} holds {kept:?}", blobs.display());
    }
    // Bound on B by a conversation input; the turn's round (on either node) reads the image.
    agent_b
        .put_configuration(&Configuration {
            approval_mode: Some(ApprovalMode::Bypass),
            default_model: Some("scripted/echo".into()),
            ..Configuration::default()
        })
        .await
        .expect("profile");
    let ws_b = agent_b.workspace(&pair.ws);
    let made = ws_b
        .create_conversation(&NewConversation::new().title("Pixel"))
        .await
        .expect("conversation on B");
    let conversation = ws_b.conversation(&made.conversation.public_id);
    conversation
        .create_input(&NewInput::text("Look.").attach(upload.public_id.clone()))
        .await
        .expect("bind on B");
    let on_a = agent_a.workspace(&pair.ws).conversation(&made.conversation.public_id);
    let turns = poll(
        30,
        || on_a.turns(0, Some(10)),
        |p| p.turns.len() == 2 && p.turns[1].status.as_str() == "completed",
    )
    .await;
    assert_eq!(turns.turns[0].status.as_str(), "completed", "{turns:?}");
    assert_eq!(
        rows(&pair._pg, "upload_bindings").await,
        1,
        "the input bound the upload"
    );
}
