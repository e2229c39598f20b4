//! The conversation's live feed, `GET C/events/stream` (runs.md §12, framed as §11): the
//! backlog then live events, resuming with `Last-Event-ID` or `?after=`, concurrent inputs
//! arriving once each and in order, and the open's refusals.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use nexus_store::Standing;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::common::{Harness, frames, read_until};
use crate::{c, input, new_conversation, ok, refused};

const PATIENCE: Duration = Duration::from_secs(10);

/// Opens the stream with `headers`; 200 and its body.
async fn open(h: &Harness, url: &str, token: &str, headers: &[(&str, &str)]) -> Body {
    let resp = h.open(h.request(Method::GET, url, Some(token), None, headers)).await;
    assert_eq!(resp.status(), StatusCode::OK, "{}", h.dialect);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    resp.into_body()
}

/// Reads until `n` frames in all (with `seen` already read); every frame read so far.
async fn read_frames(body: &mut Body, seen: &str, n: usize) -> String {
    let more = read_until(body, PATIENCE, |t| frames(&format!("{seen}{t}")).len() >= n).await;
    format!("{seen}{more}")
}

/// The input's id a frame announces.
fn input_of(frame: &(Option<String>, Option<String>, Value)) -> &str {
    frame.2["data"]["input_public_id"].as_str().unwrap()
}

async fn post_input(h: &Harness, token: &str, conv: &str, content: &str) -> String {
    let made = ok(
        &input(h, token, conv, json!({"content": content})).await,
        StatusCode::CREATED,
    );
    made["input"]["public_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_stream_sends_the_backlog_then_live_events_and_resumes() {
    for h in crate::common::harnesses().await {
        let t = h.agent_token();
        let conv = new_conversation(&h, &t, json!({})).await;
        let url = format!("{}/events/stream", c(&h, &conv));
        let first = post_input(&h, &t, &conv, "a").await;

        // The backlog: what was there before the open.
        let mut body = open(&h, &url, &t, &[]).await;
        let text = read_frames(&mut body, "", 1).await;
        let got = frames(&text);
        assert_eq!(got[0].0.as_deref(), Some("1"), "{} {text}", h.dialect);
        assert_eq!(got[0].1.as_deref(), Some("input_accepted"));
        assert_eq!(got[0].2["sequence"], 1);
        assert_eq!(got[0].2["conversation_public_id"], conv.as_str());
        assert_eq!(input_of(&got[0]), first);

        // Live: each commit reaches the open stream.
        let second = post_input(&h, &t, &conv, "b").await;
        let text = read_frames(&mut body, &text, 2).await;
        assert_eq!(input_of(&frames(&text)[1]), second, "{} {text}", h.dialect);
        ok(
            &h.json(Method::POST, &format!("{}/archive", c(&h, &conv)), Some(&t), &json!({}))
                .await,
            StatusCode::OK,
        );
        let text = read_frames(&mut body, &text, 3).await;
        let got = frames(&text);
        assert_eq!(got[2].0.as_deref(), Some("3"), "{text}");
        assert_eq!(got[2].1.as_deref(), Some("conversation_archived"));
        // Exactly the durable page, frame for frame.
        let page = ok(
            &h.get(&format!("{}/events", c(&h, &conv)), Some(&t)).await,
            StatusCode::OK,
        );
        let datas: Vec<&Value> = got.iter().map(|f| &f.2).collect();
        assert_eq!(json!(datas), page["events"], "{}", h.dialect);
        drop(body);

        // Resume with Last-Event-ID: what was had is skipped; the stream then follows live.
        ok(
            &h.json(
                Method::POST,
                &format!("{}/unarchive", c(&h, &conv)),
                Some(&t),
                &json!({}),
            )
            .await,
            StatusCode::OK,
        );
        let mut body = open(&h, &url, &t, &[("last-event-id", "2")]).await;
        let text = read_frames(&mut body, "", 1).await;
        assert_eq!(frames(&text)[0].0.as_deref(), Some("3"), "{text}");
        let fourth = post_input(&h, &t, &conv, "d").await;
        let text = read_frames(&mut body, &text, 2).await;
        let got = frames(&text);
        assert_eq!(got.len(), 2, "{text}");
        assert_eq!((got[1].0.as_deref(), input_of(&got[1])), (Some("4"), fourth.as_str()));
        drop(body);

        // `?after=`, and Last-Event-ID winning over it.
        let mut body = open(&h, &format!("{url}?after=3"), &t, &[]).await;
        let text = read_frames(&mut body, "", 1).await;
        assert_eq!(frames(&text)[0].0.as_deref(), Some("4"), "{text}");
        let mut body = open(&h, &format!("{url}?after=1"), &t, &[("last-event-id", "3")]).await;
        let text = read_frames(&mut body, "", 1).await;
        assert_eq!(frames(&text)[0].0.as_deref(), Some("4"), "{text}");
    }
}

#[tokio::test]
async fn concurrent_inputs_arrive_once_each_in_sequence_order() {
    for h in crate::common::harnesses().await {
        let t = h.agent_token();
        let conv = new_conversation(&h, &t, json!({})).await;
        let url = format!("{}/events/stream", c(&h, &conv));
        // Opened on a conversation with no events yet.
        let mut body = open(&h, &url, &t, &[]).await;
        // All at once: more than the test pool's 5 PostgreSQL connections (an input's unit of
        // work reads nothing through the pool, so none waits on another's connection).
        let n = 40;
        let mut posts = tokio::task::JoinSet::new();
        for i in 0..n {
            let req = h.request(
                Method::POST,
                &format!("{}/inputs", c(&h, &conv)),
                Some(&t),
                Some(&json!({"input": {"content": format!("m{i}")}})),
                &[],
            );
            let app = h.app.clone();
            posts.spawn(async move { app.oneshot(req).await.unwrap().status() });
        }
        while let Some(status) = posts.join_next().await {
            assert_eq!(status.unwrap(), StatusCode::CREATED, "{}", h.dialect);
        }
        let text = read_frames(&mut body, "", n).await;
        let got = frames(&text);
        let ids: Vec<String> = got.iter().map(|f| f.0.clone().unwrap()).collect();
        let want: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        assert_eq!(ids, want, "{}: no gap, no repeat", h.dialect);
        // Nothing more comes: a short wait reads no further frame.
        let extra = read_until(&mut body, Duration::from_millis(300), |t| !frames(t).is_empty()).await;
        assert!(frames(&extra).is_empty(), "{extra}");
    }
}

#[tokio::test]
async fn the_open_is_refused_as_the_feed_is() {
    for h in crate::common::harnesses().await {
        let t = h.agent_token();
        let conv = new_conversation(&h, &t, json!({})).await;
        let url = format!("{}/events/stream", c(&h, &conv));
        let bad = h
            .send_with(Method::GET, &url, Some(&t), None, &[("last-event-id", "soon")])
            .await;
        refused(&bad, StatusCode::BAD_REQUEST, "parameter_invalid");
        refused(
            &h.get(&format!("{url}?after=-1"), Some(&t)).await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
        let ghost = format!("{}/events/stream", c(&h, &uuid::Uuid::now_v7().to_string()));
        refused(&h.get(&ghost, Some(&t)).await, StatusCode::NOT_FOUND, "not_found");
        refused(&h.get(&url, None).await, StatusCode::UNAUTHORIZED, "unauthorized");
        // Read standing may follow the feed.
        let reader = h.member_with("reader", Standing::Read).await;
        let mut body = open(&h, &url, &reader, &[]).await;
        post_input(&h, &t, &conv, "hi").await;
        let text = read_frames(&mut body, "", 1).await;
        assert_eq!(frames(&text)[0].1.as_deref(), Some("input_accepted"), "{}", h.dialect);
    }
}
