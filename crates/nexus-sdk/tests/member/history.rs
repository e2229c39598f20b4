//! Conversation history end to end: the ranked search with its filters and pages, and the turn
//! windows, typed, with their refusals.

use nexus_sdk::member::{ArchivedFilter, HistoryRead, HistorySearch, MatchField, NewConversation, TurnRole};

use crate::harness::{refusal, served};

#[tokio::test]
async fn history_is_searched_and_read() {
    for s in served(&[]).await {
        let d = s.dialect;
        let ws = s.ws();
        let made = ws
            .create_conversation(&NewConversation::new().title("Launch notes"))
            .await
            .unwrap()
            .conversation;
        let ids = s
            .turns(
                &made.public_id,
                &[
                    "When is the launch?",
                    "The launch is on Friday.",
                    "Any blockers?",
                    "None.",
                ],
            )
            .await;
        let kid = s.child_of(&made.public_id, "scout").await;
        s.turns(&kid, &["launch checklist for the scout"]).await;

        // Search: ranked matches, typed; paged through `next`.
        let search = HistorySearch::new("launch").limit(2);
        let first = ws.conversation_search(&search).await.unwrap();
        assert_eq!(first.matches.len(), 2, "{d}");
        let mut all = first.matches.clone();
        let mut next = search.next(&first);
        while let Some(more) = next {
            let page = ws.conversation_search(&more).await.unwrap();
            next = more.next(&page);
            all.extend(page.matches);
        }
        let mut fields: Vec<MatchField> = all.iter().map(|m| m.field.clone()).collect();
        fields.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        assert_eq!(
            fields,
            vec![MatchField::Content, MatchField::Prompt, MatchField::Title],
            "{d}"
        );
        let title = all.iter().find(|m| m.field == MatchField::Title).unwrap();
        assert_eq!((title.turn_public_id.as_deref(), title.position), (None, None));
        assert_eq!(title.conversation_public_id, made.public_id);
        // Children only when asked for; archived conversations by the filter.
        let with_children = HistorySearch::new("scout").include_auxiliary(true);
        assert_eq!(ws.conversation_search(&with_children).await.unwrap().matches.len(), 1);
        assert!(
            ws.conversation_search(&HistorySearch::new("scout"))
                .await
                .unwrap()
                .matches
                .is_empty()
        );
        let archived = HistorySearch::new("launch").archived(ArchivedFilter::Only);
        assert!(ws.conversation_search(&archived).await.unwrap().matches.is_empty());
        assert_eq!(
            refusal(ws.conversation_search(&HistorySearch::new(" ")).await),
            (400, "parameter_invalid".into())
        );

        // Read: the newest window, around a turn, after a position.
        let conv = ws.conversation(&made.public_id);
        let newest = conv.history(&HistoryRead::newest()).await.unwrap();
        assert_eq!(newest.conversation.title.as_deref(), Some("Launch notes"), "{d}");
        assert_eq!(newest.turns.len(), 4);
        assert_eq!(newest.turns[0].prompt.as_deref(), Some("When is the launch?"));
        assert_eq!(newest.turns[1].role, TurnRole::Assistant);
        assert_eq!(newest.turns[1].content.as_deref(), Some("The launch is on Friday."));
        assert!(!newest.pagination.has_older && !newest.pagination.has_newer && !newest.truncated);
        let around = conv.history(&HistoryRead::around(&ids[2]).limit(1)).await.unwrap();
        assert_eq!(around.turns[0].public_id, ids[2]);
        assert!(around.pagination.has_older && around.pagination.has_newer);
        let after = conv.history(&HistoryRead::after(3)).await.unwrap();
        assert_eq!(after.turns.len(), 1);
        assert_eq!(after.turns[0].position, 4);
        let two = HistoryRead {
            after_position: Some(1),
            before_position: Some(3),
            ..HistoryRead::default()
        };
        assert_eq!(refusal(conv.history(&two).await), (400, "parameter_invalid".into()));
        let stranger = ws.conversation("0190c7d4-0000-7000-8000-00000000beef");
        assert_eq!(
            refusal(stranger.history(&HistoryRead::newest()).await),
            (404, "not_found".into())
        );
    }
}
