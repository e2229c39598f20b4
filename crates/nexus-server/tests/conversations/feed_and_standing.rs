//! The conversation feed, and what read standing may do.

use axum::http::{Method, StatusCode};
use nexus_store::Standing;
use nexus_store::prelude::*;
use serde_json::json;

use crate::common::{Reply, harnesses};
use crate::{c, create, cs, input, new_conversation, ok, refused};

#[tokio::test]
async fn the_feed_records_inputs_and_archiving() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        let feed = format!("{}/events", c(&h, &conv));
        let empty = ok(&h.get(&feed, Some(&agent)).await, StatusCode::OK);
        assert_eq!(empty, json!({"events": [], "next_after": 0}), "{}", h.dialect);

        let first = ok(
            &input(&h, &agent, &conv, json!({"content": "a"})).await,
            StatusCode::CREATED,
        );
        let steer = json!({"content": "b", "delivery_mode": "steer"});
        ok(&input(&h, &agent, &conv, steer).await, StatusCode::CREATED);
        // A refused input appends nothing.
        refused(
            &input(&h, &agent, &conv, json!({"content": "x", "to": "nobody"})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "answerer_not_eligible",
        );
        let archive = format!("{}/archive", c(&h, &conv));
        ok(
            &h.json(Method::POST, &archive, Some(&agent), &json!({})).await,
            StatusCode::OK,
        );
        // Archiving again changes nothing and appends nothing; unarchiving has no feed word.
        ok(
            &h.json(Method::POST, &archive, Some(&agent), &json!({})).await,
            StatusCode::OK,
        );
        let unarchive = format!("{}/unarchive", c(&h, &conv));
        ok(
            &h.json(Method::POST, &unarchive, Some(&agent), &json!({})).await,
            StatusCode::OK,
        );

        let all = ok(&h.get(&feed, Some(&agent)).await, StatusCode::OK);
        let events = all["events"].as_array().unwrap();
        let seen: Vec<(i64, &str)> = events
            .iter()
            .map(|e| (e["sequence"].as_i64().unwrap(), e["type"].as_str().unwrap()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (1, "input_accepted"),
                (2, "input_accepted"),
                (3, "conversation_archived")
            ],
            "{}",
            h.dialect
        );
        assert_eq!(all["next_after"], 3);
        assert_eq!(events[0]["conversation_public_id"], conv.as_str());
        assert_eq!(events[0]["data"]["input_public_id"], first["input"]["public_id"]);
        assert_eq!(events[1]["data"]["delivery_mode"], "steer");
        let page = ok(
            &h.get(&format!("{feed}?after=1&limit=1"), Some(&agent)).await,
            StatusCode::OK,
        );
        assert_eq!(page["events"][0]["sequence"], 2);
        assert_eq!(page["next_after"], 2);
        refused(
            &h.get(&format!("{feed}?after=-1"), Some(&agent)).await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
        let stranger = uuid::Uuid::now_v7();
        refused(
            &h.get(&format!("{}/events", c(&h, &stranger.to_string())), Some(&agent))
                .await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
    }
}

#[tokio::test]
async fn read_standing_reads_and_cannot_write_or_answer() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let human = h.human_token();
        let human_id = h.boot["human"]["public_id"].as_str().unwrap().to_string();
        let conv = new_conversation(&h, &agent, json!({})).await;
        let made = ok(
            &input(&h, &agent, &conv, json!({"content": "a"})).await,
            StatusCode::CREATED,
        );
        let member = h
            .kernel
            .store
            .member_by_public_id(human_id.parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        h.kernel
            .store
            .set_standing(h.ws_id().await, member.id, Standing::Read)
            .await
            .unwrap();

        // A member with read standing cannot be the answerer.
        let r = create(&h, &agent, json!({"answering_user_public_id": human_id})).await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "answerer_not_eligible");

        for url in [
            cs(&h),
            c(&h, &conv),
            format!("{}/children", c(&h, &conv)),
            format!("{}/inputs", c(&h, &conv)),
            format!("{}/events", c(&h, &conv)),
        ] {
            ok(&h.get(&url, Some(&human)).await, StatusCode::OK);
        }
        let forbidden = |r: &Reply| {
            refused(r, StatusCode::FORBIDDEN, "not_authorized");
        };
        forbidden(&create(&h, &human, json!({})).await);
        forbidden(&input(&h, &human, &conv, json!({"content": "x"})).await);
        for verb in ["archive", "unarchive"] {
            let url = format!("{}/{verb}", c(&h, &conv));
            forbidden(&h.json(Method::POST, &url, Some(&human), &json!({})).await);
        }
        let url = format!("{}/default_runner", c(&h, &conv));
        let body = json!({"default_runner": {"executor_public_id": null}});
        forbidden(&h.json(Method::PUT, &url, Some(&human), &body).await);
        let id = made["input"]["public_id"].as_str().unwrap();
        let url = format!("{}/inputs/{id}", c(&h, &conv));
        forbidden(&h.send(Method::DELETE, &url, Some(&human), None).await);
    }
}

/// `GET W/members`: who holds standing in the workspace (whom a conversation may ask), by
/// handle, of one kind on request; read standing suffices; a stranger's workspace is 404.
#[tokio::test]
async fn the_workspace_members_are_listed_by_handle_and_kind() {
    for h in harnesses().await {
        let reader = h.member_with("bea", Standing::Read).await;
        let members = format!("{}/members", h.w());
        let all = ok(&h.get(&members, Some(&reader)).await, StatusCode::OK);
        let seen: Vec<(&str, &str, &str)> = all["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["handle"].as_str().unwrap(),
                    m["kind"].as_str().unwrap(),
                    m["standing"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("admin", "human", "write"),
                ("agent", "agent", "write"),
                ("bea", "human", "read")
            ],
            "{}",
            h.dialect
        );
        let agents = ok(
            &h.get(&format!("{members}?kind=agent"), Some(&h.human_token())).await,
            StatusCode::OK,
        );
        assert_eq!(agents["members"].as_array().unwrap().len(), 1, "{agents}");
        assert_eq!(agents["members"][0]["public_id"], h.boot["agent"]["public_id"]);
        refused(
            &h.get(&format!("{members}?kind=robot"), Some(&reader)).await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
        let stranger = format!("/agent_api/v1/workspaces/{}/members", uuid::Uuid::now_v7());
        refused(
            &h.get(&stranger, Some(&reader)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
    }
}
