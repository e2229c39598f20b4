//! The history routes (kernel-tools.md §10): `GET W/conversation_search` (ranked matches, their
//! shape and excerpt bound, the archive and child filters, keyset pages, every parameter
//! refusal) and `GET C/history` (the windows, the field and page bounds, the pagination member,
//! every refusal), with read standing.

use axum::http::StatusCode;
use nexus_store::Standing;
use nexus_store::prelude::*;
use serde_json::{Value, json};

use crate::common::{Harness, harnesses};
use crate::{c, child_of, new_conversation, ok, refused};

/// Percent-encodes a query value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Stores `texts` as turns of the conversation, alternating user and assistant; their ids.
async fn turns(h: &Harness, conv: &str, texts: &[&str]) -> Vec<String> {
    let store = &h.kernel.store;
    let row = store
        .conversation_by_public_id(conv.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let turns = nexus_store::testing::seed_turns(store, row.id, texts, 1_767_225_600_000).await;
    turns.iter().map(|t| t.public_id.to_string()).collect()
}

fn search_url(h: &Harness, params: &str) -> String {
    format!("{}/conversation_search?{params}", h.w())
}

async fn search(h: &Harness, token: &str, params: &str) -> Value {
    ok(&h.get(&search_url(h, params), Some(token)).await, StatusCode::OK)
}

fn matched(page: &Value) -> Vec<(String, Value)> {
    page["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["field"].as_str().unwrap().to_string(), m["turn_public_id"].clone()))
        .collect()
}

#[tokio::test]
async fn search_ranks_filters_pages_and_bounds_its_excerpts() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let d = h.dialect;
        let plans = new_conversation(&h, &agent, json!({"title": "Quarterly plans"})).await;
        let ids = turns(
            &h,
            &plans,
            &[
                "Draft the quarterly budget",
                "The budget draft is ready: budget, budget.",
            ],
        )
        .await;
        // One match, its whole shape.
        let page = search(&h, &agent, "query=draft%20quarterly").await;
        assert_eq!(
            page,
            json!({"matches": [{"conversation_public_id": plans, "title": "Quarterly plans",
                "turn_public_id": ids[0], "position": 1, "field": "prompt",
                "excerpt": "Draft the quarterly budget", "truncated": false}],
                "pagination": {"next_after": null}}),
            "{d}"
        );
        // Ranked: the denser reply first; a title matches as `title` with no turn.
        let page = search(&h, &agent, "query=BUDGET").await;
        assert_eq!(
            matched(&page),
            vec![("content".into(), json!(ids[1])), ("prompt".into(), json!(ids[0]))],
            "{d}"
        );
        let page = search(&h, &agent, "query=plans").await;
        assert_eq!(matched(&page), vec![("title".into(), Value::Null)], "{d}");
        assert_eq!(page["matches"][0]["position"], Value::Null);
        assert_eq!(page["matches"][0]["excerpt"], "Quarterly plans");

        // Pages: limit 1, then after the cursor, until no next_after.
        let mut seen = Vec::new();
        let mut url = "query=budget&limit=1".to_string();
        loop {
            let page = search(&h, &agent, &url).await;
            seen.extend(matched(&page));
            match page["pagination"]["next_after"].as_str() {
                Some(next) => url = format!("query=budget&limit=1&after={}", enc(next)),
                None => break,
            }
        }
        assert_eq!(seen.len(), 2, "{d}: {seen:?}");

        // Archived conversations are skipped unless asked for; children only when asked for.
        let old = new_conversation(&h, &agent, json!({"title": "Old ideas"})).await;
        turns(&h, &old, &["a zebra idea"]).await;
        let kid = child_of(&h, &plans, "scout").await;
        turns(&h, &kid, &["the zebra report"]).await;
        let archive = format!("{}/archive", c(&h, &old));
        ok(
            &h.json(axum::http::Method::POST, &archive, Some(&agent), &json!({}))
                .await,
            StatusCode::OK,
        );
        let count = |page: Value| page["matches"].as_array().unwrap().len();
        assert_eq!(count(search(&h, &agent, "query=zebra").await), 0, "{d}");
        assert_eq!(count(search(&h, &agent, "query=zebra&archived=include").await), 1);
        assert_eq!(count(search(&h, &agent, "query=zebra&archived=only").await), 1);
        assert_eq!(count(search(&h, &agent, "query=zebra&include_auxiliary=true").await), 1);
        assert_eq!(
            count(search(&h, &agent, "query=zebra&include_auxiliary=true&archived=include").await),
            2
        );
        assert_eq!(
            count(search(&h, &agent, "query=zebra&include_auxiliary=false").await),
            0
        );

        // An excerpt is at most 500 characters around the first term.
        let long = format!("{} needle {}", "é".repeat(3_000), "x ".repeat(1_000));
        turns(&h, &plans, &[&long]).await;
        let page = search(&h, &agent, "query=needle").await;
        let excerpt = page["matches"][0]["excerpt"].as_str().unwrap();
        assert_eq!(excerpt.chars().count(), 500, "{d}");
        assert!(excerpt.contains(" needle "));
        assert_eq!(page["matches"][0]["truncated"], true);

        // Read standing suffices.
        let human = h.member_with("reader", Standing::Read).await;
        assert_eq!(count(search(&h, &human, "query=budget").await), 2, "{d}");
    }
}

#[tokio::test]
async fn search_refuses_every_bad_parameter() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let long = "a".repeat(1_025);
        for params in [
            String::new(),
            "query=".into(),
            "query=%20%20".into(),
            format!("query={long}"),
            "query=%3F%21".into(),
            "query=x&archived=all".into(),
            "query=x&include_auxiliary=yes".into(),
            "query=x&limit=0".into(),
            "query=x&limit=51".into(),
            "query=x&limit=ten".into(),
            "query=x&after=nope".into(),
            "query=x&after=3ff0000000000000-1".into(),
        ] {
            let r = h.get(&search_url(&h, &params), Some(&agent)).await;
            refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        }
        // 1,024 bytes is within the bound; 50 is the largest limit.
        let at_bound = "a".repeat(1_024);
        search(&h, &agent, &format!("query={at_bound}&limit=50")).await;
        let stranger = uuid::Uuid::now_v7();
        let r = h
            .get(
                &format!("/agent_api/v1/workspaces/{stranger}/conversation_search?query=x"),
                Some(&agent),
            )
            .await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = h.get(&search_url(&h, "query=x"), None).await;
        refused(&r, StatusCode::UNAUTHORIZED, "unauthorized");
    }
}

fn history_url(h: &Harness, conv: &str, params: &str) -> String {
    format!("{}/history?{params}", c(h, conv))
}

fn positions(page: &Value) -> Vec<i64> {
    page["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["position"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn history_reads_windows_within_the_bounds() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let d = h.dialect;
        let conv = new_conversation(&h, &agent, json!({"title": "Long talk"})).await;
        let texts: Vec<String> = (1..=30).map(|i| format!("turn {i}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let ids = turns(&h, &conv, &refs).await;
        let get = |params: String| {
            let url = history_url(&h, &conv, &params);
            let agent = agent.clone();
            let h = &h;
            async move { ok(&h.get(&url, Some(&agent)).await, StatusCode::OK) }
        };

        // The newest window, the whole shape of a turn.
        let newest = get(String::new()).await;
        assert_eq!(positions(&newest), (11..=30).collect::<Vec<_>>(), "{d}");
        assert_eq!(newest["conversation"], json!({"public_id": conv, "title": "Long talk"}));
        assert_eq!(
            newest["turns"][19],
            json!({"public_id": ids[29], "position": 30, "role": "assistant",
                "created_at": newest["turns"][19]["created_at"], "content": "turn 30", "truncated": false})
        );
        assert_eq!(newest["turns"][0]["prompt"], "turn 11");
        assert!(
            newest["turns"][0]["created_at"]
                .as_str()
                .unwrap()
                .starts_with("2026-01-01T")
        );
        assert_eq!(
            newest["pagination"],
            json!({"before_position": 11, "after_position": 30, "has_older": true, "has_newer": false})
        );
        assert_eq!(newest["truncated"], false);
        // Older, newer, around.
        let older = get("before_position=11&limit=5".into()).await;
        assert_eq!(positions(&older), vec![6, 7, 8, 9, 10], "{d}");
        assert_eq!(older["pagination"]["has_older"], true);
        let first = get("before_position=3".into()).await;
        assert_eq!(positions(&first), vec![1, 2]);
        assert_eq!(first["pagination"]["has_older"], false);
        let newer = get("after_position=27".into()).await;
        assert_eq!(positions(&newer), vec![28, 29, 30]);
        let none = get("after_position=30".into()).await;
        assert_eq!(positions(&none), Vec::<i64>::new());
        assert_eq!(
            none["pagination"],
            json!({"before_position": 31, "after_position": 30, "has_older": true, "has_newer": false})
        );
        let around = get(format!("around_turn_id={}&limit=4", ids[0])).await;
        assert_eq!(positions(&around), vec![1, 2, 3, 4], "{d}");
        let around = get(format!("around_turn_id={}&limit=3", ids[14])).await;
        assert_eq!(positions(&around), vec![14, 15, 16], "{d}");

        // The bounds: 2,000 characters a field, 12,000 a page (the rest is the next page's).
        let big = new_conversation(&h, &agent, json!({})).await;
        let long = "ö".repeat(3_000);
        let bigs = turns(&h, &big, &[long.as_str(); 8]).await;
        let page = ok(&h.get(&history_url(&h, &big, ""), Some(&agent)).await, StatusCode::OK);
        assert_eq!(positions(&page), vec![3, 4, 5, 6, 7, 8], "{d}");
        assert_eq!(page["truncated"], true);
        assert_eq!(page["turns"][0]["truncated"], true);
        assert_eq!(page["turns"][0]["prompt"].as_str().unwrap().chars().count(), 2_000);
        assert_eq!(page["pagination"]["before_position"], 3);
        assert_eq!(page["pagination"]["has_older"], true);
        let around = ok(
            &h.get(
                &history_url(&h, &big, &format!("around_turn_id={}", bigs[3])),
                Some(&agent),
            )
            .await,
            StatusCode::OK,
        );
        assert_eq!(
            positions(&around),
            vec![1, 2, 3, 4, 5, 6],
            "{d}: the target and its nearest"
        );
    }
}

/// Found by schemathesis: the largest position made the reader's empty-window position
/// overflow (a panic, so no answer at all).
#[tokio::test]
async fn history_after_the_largest_position_is_an_empty_window() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({"title": "Edge"})).await;
        turns(&h, &conv, &["only turn"]).await;
        let url = history_url(&h, &conv, &format!("after_position={}", i64::MAX));
        let page = ok(&h.get(&url, Some(&agent)).await, StatusCode::OK);
        assert_eq!(positions(&page), Vec::<i64>::new(), "{}", h.dialect);
    }
}

#[tokio::test]
async fn history_refuses_every_bad_parameter() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        let ids = turns(&h, &conv, &["hello"]).await;
        let other = new_conversation(&h, &agent, json!({})).await;
        let elsewhere = turns(&h, &other, &["hi"]).await;
        for params in [
            "after_position=1&before_position=2".to_string(),
            format!("around_turn_id={}&after_position=1", ids[0]),
            "after_position=-1".into(),
            "before_position=x".into(),
            "limit=0".into(),
            "limit=51".into(),
            "limit=many".into(),
            "around_turn_id=nope".into(),
            format!("around_turn_id={}", uuid::Uuid::now_v7()),
            // A turn of another conversation is not one of this one.
            format!("around_turn_id={}", elsewhere[0]),
        ] {
            let r = h.get(&history_url(&h, &conv, &params), Some(&agent)).await;
            refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        }
        ok(
            &h.get(&history_url(&h, &conv, "limit=50&before_position=0"), Some(&agent))
                .await,
            StatusCode::OK,
        );
        for id in [uuid::Uuid::now_v7().to_string(), "not-a-uuid".into()] {
            let r = h.get(&history_url(&h, &id, ""), Some(&agent)).await;
            refused(&r, StatusCode::NOT_FOUND, "not_found");
        }
        let stranger = uuid::Uuid::now_v7();
        let r = h
            .get(
                &format!("/agent_api/v1/workspaces/{stranger}/conversations/{conv}/history"),
                Some(&agent),
            )
            .await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = h.get(&history_url(&h, &conv, ""), None).await;
        refused(&r, StatusCode::UNAUTHORIZED, "unauthorized");
    }
}
