//! The push channel (executor.md §10) and progress frames (§11) on both engines: the
//! WebSocket handshake (101 with a transport bearer, the uniform 401 without), `hello`, a
//! `work_available` frame when a runner-routed tool row is dispatched, a `work_canceled` frame
//! when a stop cancels a row in the runner's inbox (runs.md §2), presence, and every progress
//! code (202 relayed / dropped, `invalid_frame`, `frame_too_large`, `not_claimant`,
//! `not_found`).

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses};
use futures_util::{SinkExt, StreamExt};
use nexus_store::prelude::*;
use nexus_store::{TaskRow, TaskStatus};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{self, Message, client::IntoClientRequest};
use uuid::Uuid;

const PROGRESS: &str = "/agent_api/v1/executor/progress";

type Ws = tokio_tungstenite::WebSocketStream<TcpStream>;

/// Serves the harness's router on a loopback port (WebSocket upgrades need a real server).
async fn serve(h: &Harness) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = h.app.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

async fn connect(addr: std::net::SocketAddr, token: Option<&str>) -> Result<(Ws, u16), tungstenite::Error> {
    let mut req = format!("ws://{addr}/agent_api/v1/executor/channel")
        .into_client_request()
        .unwrap();
    if let Some(t) = token {
        req.headers_mut()
            .insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (ws, resp) = tokio_tungstenite::client_async(req, tcp).await?;
    Ok((ws, resp.status().as_u16()))
}

/// The next JSON text frame, within 5 s.
async fn next_frame(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("a frame within 5 s")
            .expect("the channel is open")
            .unwrap();
        match msg {
            Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected frame {other:?}"),
        }
    }
}

fn runner_id(h: &Harness) -> String {
    h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string()
}

async fn announce_read(h: &Harness) {
    let body = json!({"tools": [{"name": "read", "effect_profile": nexus_core::registry::EffectProfile::READ.to_json(),
                                 "description": "Read a file.", "input_schema": {"type": "object"}}]});
    let r = h
        .json(
            Method::PUT,
            "/agent_api/v1/executor/announcement",
            Some(&h.runner_token()),
            &body,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
}

/// Creates and starts (as the agent) a run of one authored `read` step routed to the bootstrap
/// runner, then drives the engine. Returns the run's public id.
async fn dispatched_run(h: &Harness) -> String {
    let step = json!({"tool": {"name": "read", "input": {"path": "a"},
                               "route": {"kind": "runner", "runner_executor_public_id": runner_id(h)}}});
    let body = json!({"run": {"approval_mode": "bypass", "steps": [step]}});
    let r = h
        .json(Method::POST, &format!("{}/runs", h.w()), Some(&h.agent_token()), &body)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
    let run = r.json()["run"]["public_id"].as_str().unwrap().to_string();
    let r = h
        .json(
            Method::POST,
            &format!("{}/start", h.r(&run)),
            Some(&h.agent_token()),
            &json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    h.kernel.runs().work_until_idle(10).await.unwrap();
    run
}

async fn task(h: &Harness, run: &str, key: &str) -> (i64, TaskRow) {
    let run = h
        .kernel
        .store
        .run_by_public_id(run.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let t = h.kernel.store.task_by_key(run.id, key).await.unwrap().unwrap();
    (run.id, t)
}

/// Writes a claim onto the row as the inbox's claim would (token, claimant, claimed_at).
async fn claim(h: &Harness, run: &str, key: &str, token: &str) {
    let (run_id, mut t) = task(h, run, key).await;
    let executor = h
        .kernel
        .store
        .executor_by_public_id(runner_id(h).parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let mut tx = h.kernel.store.begin().await.unwrap();
    tx.lock_run(run_id).await.unwrap();
    t.claim_token = Some(token.to_string());
    t.claimant_id = Some(executor.id);
    t.claimed_at = Some(nexus_kernel::time::now_ms());
    let generation = t.generation;
    assert!(
        tx.update_task(nexus_store::TaskUpdate::new(&t, generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    tx.commit().await.unwrap();
}

async fn settle(h: &Harness, run: &str, key: &str) {
    let (run_id, mut t) = task(h, run, key).await;
    let mut tx = h.kernel.store.begin().await.unwrap();
    tx.lock_run(run_id).await.unwrap();
    t.status = TaskStatus::Completed;
    t.settled_at = Some(nexus_kernel::time::now_ms());
    let generation = t.generation;
    assert!(
        tx.update_task(nexus_store::TaskUpdate::new(&t, generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    tx.commit().await.unwrap();
}

/// Claims `key` through the HTTP door as the runner; returns the claim token.
async fn claim_http(h: &Harness, run: &str, key: &str) -> String {
    let path = format!("/agent_api/v1/executor/inbox/{run}/{key}/claim");
    let r = h.send(Method::POST, &path, Some(&h.runner_token()), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()["claim"]["claim_token"].as_str().unwrap().to_string()
}

/// `POST R/stop` as the agent (the runs' creator).
async fn stop(h: &Harness, run: &str, body: Value) {
    let r = h
        .json(
            Method::POST,
            &format!("{}/stop", h.r(run)),
            Some(&h.agent_token()),
            &body,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
}

/// Asserts that no frame arrives on `ws` within 200 ms (pings aside).
async fn quiet(ws: &mut Ws, who: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(200);
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => return,
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
            Ok(other) => panic!("{who} got {other:?}"),
        }
    }
}

async fn progress(h: &Harness, token: &str, frame: Value) -> Reply {
    h.json(Method::POST, PROGRESS, Some(token), &json!({ "frame": frame }))
        .await
}

#[tokio::test]
async fn the_channel_says_hello_and_pushes_work_available_on_dispatch() {
    for h in harnesses().await {
        let addr = serve(&h).await;
        // No bearer, a member bearer: the handshake is refused with the uniform 401.
        for token in [None, Some(h.human_token())] {
            match connect(addr, token.as_deref()).await {
                Err(tungstenite::Error::Http(resp)) => {
                    assert_eq!(resp.status().as_u16(), 401);
                    assert_eq!(resp.headers()["www-authenticate"], "Bearer realm=\"Nexus\"");
                }
                other => panic!("expected 401, got {:?}", other.map(|(_, s)| s)),
            }
        }
        // A plain GET (no upgrade) gets the envelope, not axum's text.
        let r = h.get("/agent_api/v1/executor/channel", Some(&h.runner_token())).await;
        assert_eq!((r.status.as_u16(), r.code().as_str()), (400, "bad_request"));

        let before = h
            .get(
                &format!("/agent_api/v1/executors/{}", runner_id(&h)),
                Some(&h.human_token()),
            )
            .await;
        assert_eq!(before.json()["executor"]["presence"], "not_yet_seen");

        let (mut ws, status) = connect(addr, Some(&h.runner_token())).await.expect("upgrade");
        assert_eq!(status, 101);
        let hello = next_frame(&mut ws).await;
        assert_eq!(
            hello,
            json!({"type": "hello", "executor_public_id": runner_id(&h), "credential_epoch": 0})
        );
        // While the channel is open the runner is online (display only).
        let view = h
            .get(
                &format!("/agent_api/v1/executors/{}", runner_id(&h)),
                Some(&h.human_token()),
            )
            .await;
        assert_eq!(view.json()["executor"]["presence"], "online");

        // The agent application's channel hears nothing of the runner's work.
        let (mut app_ws, _) = connect(addr, Some(&h.agent_transport_token())).await.unwrap();
        assert_eq!(next_frame(&mut app_ws).await["type"], "hello");

        announce_read(&h).await;
        let run = dispatched_run(&h).await;
        let (_, t) = task(&h, &run, "s1-tool-1").await;
        assert_eq!(t.status, TaskStatus::Dispatched, "{t:?}");
        let frame = next_frame(&mut ws).await;
        assert_eq!(
            frame.to_string(),
            json!({"type": "work_available", "kind": "tool_call", "run_public_id": run, "task_key": "s1-tool-1"})
                .to_string()
        );
        let quiet = tokio::time::timeout(Duration::from_millis(200), app_ws.next()).await;
        assert!(quiet.is_err(), "the agent application got {quiet:?}");

        // Client text is ignored; the channel stays open and closing it ends presence.
        ws.send(Message::Text("hi".into())).await.unwrap();
        ws.close(None).await.unwrap();
        drop(ws);
        let mut offline = false;
        for _ in 0..50 {
            let view = h
                .get(
                    &format!("/agent_api/v1/executors/{}", runner_id(&h)),
                    Some(&h.human_token()),
                )
                .await;
            if view.json()["executor"]["presence"] == "offline" {
                offline = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(offline, "presence returns to offline after the channel closes");
    }
}

#[tokio::test]
async fn progress_frames_are_relayed_thinned_and_refused_by_code() {
    for h in harnesses().await {
        announce_read(&h).await;
        let run = dispatched_run(&h).await;
        let key = "s1-tool-1";
        let (run_id, _) = task(&h, &run, key).await;
        let runner = h.runner_token();
        let frame =
            |token: &str| json!({"run_public_id": run, "task_key": key, "claim_token": token, "text_tail": "50%"});

        // Grammar first: 422 invalid_frame / frame_too_large.
        let r = h.json(Method::POST, PROGRESS, Some(&runner), &json!({})).await;
        assert_eq!((r.status.as_u16(), r.code().as_str()), (422, "invalid_frame"));
        for bad in [
            json!([]),
            json!({"run_public_id": "x", "task_key": key, "claim_token": "t"}),
            json!({"run_public_id": run, "task_key": 5, "claim_token": "t"}),
            json!({"run_public_id": run, "task_key": key}),
            json!({"run_public_id": run, "task_key": key, "claim_token": "t", "text_tail": {"a": 1}}),
        ] {
            let r = progress(&h, &runner, bad.clone()).await;
            assert_eq!((r.status.as_u16(), r.code().as_str()), (422, "invalid_frame"), "{bad}");
        }
        let mut big = frame("t");
        big["text_tail"] = json!("x".repeat(65_536));
        let r = progress(&h, &runner, big).await;
        assert_eq!((r.status.as_u16(), r.code().as_str()), (422, "frame_too_large"));

        // Unknown run or task: 404 not_found.
        let mut unknown = frame("t");
        unknown["run_public_id"] = json!(Uuid::new_v4());
        assert_eq!(progress(&h, &runner, unknown).await.code(), "not_found");
        let mut unknown = frame("t");
        unknown["task_key"] = json!("nope");
        assert_eq!(progress(&h, &runner, unknown).await.code(), "not_found");

        // An unclaimed row has no claimant.
        let r = progress(&h, &runner, frame("t")).await;
        assert_eq!((r.status.as_u16(), r.code().as_str()), (409, "not_claimant"));

        claim(&h, &run, key, "tok-1").await;
        let mut rx = h.kernel.executor().subscribe_progress(run_id);
        // A wrong token, or the right token from another executor: 409 not_claimant.
        assert_eq!(progress(&h, &runner, frame("tok-2")).await.code(), "not_claimant");
        assert_eq!(
            progress(&h, &h.agent_transport_token(), frame("tok-1")).await.code(),
            "not_claimant"
        );
        assert!(rx.try_recv().is_err());

        // The claimant's frame: 202, relayed and stamped, never carrying the token.
        let mut first = frame("tok-1");
        first["structured"] = json!({"done": 1, "of": 2});
        let r = progress(&h, &runner, first).await;
        assert_eq!(r.status, StatusCode::ACCEPTED);
        assert_eq!(r.json(), json!({"relayed": true}));
        let relayed = rx.try_recv().expect("a relayed frame");
        assert_eq!(relayed.kind, "executor_progress");
        let relayed = relayed.data;
        assert_eq!(relayed["run_public_id"], run);
        assert_eq!(relayed["task_key"], key);
        assert_eq!(relayed["executor_public_id"], runner_id(&h));
        assert_eq!(relayed["tool_name"], "read");
        assert!(relayed["at"].is_i64());
        assert_eq!(relayed["text_tail"], "50%");
        assert_eq!(relayed["structured"], json!({"done": 1, "of": 2}));
        assert!(relayed.get("claim_token").is_none());

        // Cadence: a second frame within 250 ms is dropped, still 202.
        let r = progress(&h, &runner, frame("tok-1")).await;
        assert_eq!(r.status, StatusCode::ACCEPTED);
        assert_eq!(r.json(), json!({"relayed": false, "reason": "cadence"}));
        assert!(rx.try_recv().is_err());
        tokio::time::sleep(Duration::from_millis(260)).await;
        let r = progress(&h, &runner, frame("tok-1")).await;
        assert_eq!(r.json(), json!({"relayed": true}));
        assert_eq!(rx.try_recv().unwrap().data["text_tail"], "50%");

        // Progress is never persisted: no event was written for any frame.
        let events = h.kernel.store.events_after(run_id, 0, 1000).await.unwrap();
        assert!(events.iter().all(|e| !e.kind.as_str().contains("progress")));

        // A settled row: 202 and dropped (even with a stale token).
        settle(&h, &run, key).await;
        tokio::time::sleep(Duration::from_millis(260)).await;
        for token in ["tok-1", "stale"] {
            let r = progress(&h, &runner, frame(token)).await;
            assert_eq!(r.status, StatusCode::ACCEPTED);
            assert_eq!(r.json(), json!({"relayed": false, "reason": "settled"}));
        }
        assert!(rx.try_recv().is_err());

        // Planes: a member bearer gets the uniform 401.
        assert_eq!(
            progress(&h, &h.human_token(), frame("tok-1")).await.status,
            StatusCode::UNAUTHORIZED
        );
    }
}

#[tokio::test]
async fn a_stop_pushes_work_canceled_to_the_runner_holding_the_row() {
    for h in harnesses().await {
        let addr = serve(&h).await;
        let (mut ws, _) = connect(addr, Some(&h.runner_token())).await.expect("upgrade");
        assert_eq!(next_frame(&mut ws).await["type"], "hello");
        let (mut app_ws, _) = connect(addr, Some(&h.agent_transport_token())).await.unwrap();
        assert_eq!(next_frame(&mut app_ws).await["type"], "hello");
        announce_read(&h).await;
        let key = "s1-tool-1";

        // Three runs, each with one `read` row dispatched to the runner.
        let mut runs = Vec::new();
        for _ in 0..3 {
            let run = dispatched_run(&h).await;
            assert_eq!(next_frame(&mut ws).await["type"], "work_available", "{}", h.dialect);
            runs.push(run);
        }
        let (claimed_run, unclaimed_run, finishing_run) = (&runs[0], &runs[1], &runs[2]);

        // A claimed row: the stop (force by default) cancels it after the commit, and the
        // claimant hears exactly the spec's frame.
        let token = claim_http(&h, claimed_run, key).await;
        stop(&h, claimed_run, json!({})).await;
        let (_, t) = task(&h, claimed_run, key).await;
        assert_eq!(
            (t.status.as_str(), t.error_key.as_deref()),
            ("canceled", Some("run_canceled"))
        );
        let frame = next_frame(&mut ws).await;
        assert_eq!(
            frame.to_string(),
            json!({"type": "work_canceled", "run_public_id": claimed_run, "task_key": key}).to_string(),
            "{}",
            h.dialect
        );
        // A later commit on that row is idle.
        let commit = h
            .json(
                Method::POST,
                &format!("/agent_api/v1/executor/inbox/{claimed_run}/{key}/commit"),
                Some(&h.runner_token()),
                &json!({"claim_token": token, "content": "late"}),
            )
            .await;
        assert_eq!(
            commit.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&commit.bytes)
        );
        assert_eq!(commit.json()["idle"], true);
        assert_eq!(commit.json()["task"]["status"], "canceled");

        // A row still unclaimed in the runner's inbox: its addressee hears the cancel too.
        stop(&h, unclaimed_run, json!({"force": true})).await;
        let frame = next_frame(&mut ws).await;
        assert_eq!(
            frame,
            json!({"type": "work_canceled", "run_public_id": unclaimed_run, "task_key": key})
        );

        // A stop without force lets dispatched work finish: nothing is canceled, no frame.
        stop(&h, finishing_run, json!({"force": false})).await;
        let (_, t) = task(&h, finishing_run, key).await;
        assert_eq!(t.status, TaskStatus::Dispatched);
        quiet(&mut ws, "the runner").await;

        // Nobody else hears any of it: the agent application's channel stayed silent.
        quiet(&mut app_ws, "the agent application").await;
    }
}
