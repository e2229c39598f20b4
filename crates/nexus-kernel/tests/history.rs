//! `session_search` and `session_read` end to end on both engines (kernel-tools.md §10): a
//! scripted run calls them in consecutive rounds over turns stored in its workspace, each
//! settled row holds the JSON text the member routes answer (the same value, compared), and the
//! refusals settle as error results.

mod common;

use common::{World, text_of, world};

use nexus_kernel::conversations::CreateConversationRequest;
use nexus_kernel::conversations::history::{HistoryQuery, SearchQuery};
use nexus_store::TaskRow;
use nexus_store::prelude::*;
use nexus_store::testing::{self, engines};
use serde_json::{Value, json};
use uuid::Uuid;

impl World {
    /// A conversation titled `title` holding `texts` as alternating user and assistant turns.
    async fn conversation_with(&self, title: &str, texts: &[&str]) -> (Uuid, Vec<Uuid>) {
        let request = CreateConversationRequest::parse(&json!({"conversation": {"title": title}})).unwrap();
        let made = self
            .kernel
            .conversations()
            .create_conversation(&self.agent, self.ws, Ok(request), None)
            .await
            .unwrap();
        let made = made.fresh().expect("a new conversation");
        let id = Uuid::parse_str(&made.conversation.public_id).unwrap();
        let row = self.kernel.store.conversation_by_public_id(id).await.unwrap().unwrap();
        let turns = testing::seed_turns(&self.kernel.store, row.id, texts, row.created_at).await;
        (id, turns.iter().map(|t| t.public_id).collect())
    }

    /// Runs one call per round and returns each call's settled row.
    async fn history_calls(&self, name: &str, calls: &[(&str, Value)]) -> Vec<TaskRow> {
        let tools = ["nexus.conversation.search", "nexus.conversation.read"];
        self.call_rounds(name, "Look back.", &tools, calls).await
    }
}

fn answer(t: &TaskRow) -> Value {
    assert!(!t.is_error, "{}: {}", t.key, text_of(t));
    serde_json::from_str(&text_of(t)).unwrap()
}

fn refused(t: &TaskRow, word: &str, names: &str) {
    let text = text_of(t);
    assert!(t.is_error, "{} should be an error: {text}", t.key);
    assert!(text.starts_with(&format!("{word}: ")), "{} wants {word}: {text}", t.key);
    assert!(text.contains(names), "{}: {text:?} should name {names:?}", t.key);
}

#[tokio::test]
async fn the_tools_search_and_read_the_workspace_history_as_the_routes_do() {
    for ts in engines().await {
        let w = world(ts).await;
        let (conv, turns) = w
            .conversation_with(
                "Release train",
                &[
                    "When does the canary deploy start?",
                    "The canary deploy starts at noon, after the smoke tests.",
                    "And the rollback plan?",
                    "Rollback is one command: deploy the previous tag.",
                ],
            )
            .await;
        let (other, _) = w.conversation_with("Lunch", &["pizza or sushi"]).await;
        let search = json!({"query": "canary deploy", "limit": 1});
        let rows = w
            .history_calls(
                "history",
                &[
                    ("session_search", search),
                    (
                        "session_read",
                        json!({"session_id": conv.to_string(), "around_turn_id": turns[1].to_string(), "limit": 3}),
                    ),
                    ("session_read", json!({"session_id": other.to_string()})),
                    ("session_search", json!({"query": "?!"})),
                    ("session_read", json!({"session_id": Uuid::now_v7().to_string()})),
                    (
                        "session_read",
                        json!({"session_id": conv.to_string(), "around_turn_id": Uuid::now_v7().to_string()}),
                    ),
                    ("session_search", json!({"query": "deploy", "after": "nope"})),
                ],
            )
            .await;
        let d = w.dialect;

        // The search: ranked, one per page, the same JSON as the route's.
        let found = answer(&rows[0]);
        let route = w
            .kernel
            .conversations()
            .conversation_search(
                &w.human,
                w.ws,
                &SearchQuery {
                    query: Some("canary deploy"),
                    limit: Some("1"),
                    ..SearchQuery::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(found, serde_json::to_value(route).unwrap(), "{d}");
        let hit = &found["matches"][0];
        assert_eq!(hit["conversation_public_id"], conv.to_string(), "{d}");
        assert_eq!(hit["title"], "Release train");
        assert!(hit["field"] == "prompt" || hit["field"] == "content", "{hit}");
        assert!(hit["excerpt"].as_str().unwrap().contains("canary deploy"));
        assert!(found["pagination"]["next_after"].is_string(), "{found}");

        // The read around a turn: the target and its neighbours, ascending.
        let window = answer(&rows[1]);
        let route = w
            .kernel
            .conversations()
            .conversation_history(
                &w.human,
                w.ws,
                conv,
                &HistoryQuery {
                    around_turn_id: Some(&turns[1].to_string()),
                    limit: Some("3"),
                    ..HistoryQuery::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(window, serde_json::to_value(route).unwrap(), "{d}");
        let positions: Vec<i64> = window["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["position"].as_i64().unwrap())
            .collect();
        assert_eq!(positions, vec![1, 2, 3], "{d}");
        assert_eq!(
            window["conversation"],
            json!({"public_id": conv, "title": "Release train"})
        );
        assert_eq!(window["turns"][0]["prompt"], "When does the canary deploy start?");
        assert_eq!(window["turns"][1]["role"], "assistant");
        assert!(window["turns"][1].get("prompt").is_none());
        assert_eq!(
            window["pagination"],
            json!({"before_position": 1, "after_position": 3, "has_older": false, "has_newer": true})
        );
        assert_eq!(window["truncated"], false);
        let newest = answer(&rows[2]);
        assert_eq!(newest["turns"][0]["prompt"], "pizza or sushi", "{d}");

        // Refusals settle as error results naming the value.
        refused(&rows[3], "parameter_invalid", "\"?!\"");
        refused(&rows[4], "unknown_conversation", "is not a conversation");
        refused(&rows[5], "parameter_invalid", "around_turn_id");
        refused(&rows[6], "parameter_invalid", "\"nope\"");
    }
}
