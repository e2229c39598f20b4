//! The conversation tables (migration 0017) on every available engine: insert and read back,
//! the top-level listing and its archive filter, children, archiving a whole tree, the default
//! runner, the pending-input bound (kernel mail exempt), input paging and cancelling.

use nexus_store::testing::{self, seed_member};
use nexus_store::*;
use uuid::Uuid;

const NOW: i64 = 1_700_000_000_000;

fn new_conversation(ws: &WorkspaceRow, member: &MemberRow, parent: Option<(i64, &str)>) -> NewConversation {
    NewConversation {
        public_id: Uuid::now_v7(),
        workspace_id: ws.id,
        created_by_id: member.id,
        answering_member_id: member.id,
        default_runner_id: None,
        title: Some("Plans".into()),
        parent_id: parent.map(|p| p.0),
        spawn_task_id: None,
        label: parent.map(|p| p.1.to_string()),
        reply_route: None,
        created_at: NOW,
    }
}

fn new_input(conversation_id: i64, member: &MemberRow, kind: InputKind) -> NewInput {
    NewInput {
        public_id: Uuid::now_v7(),
        conversation_id,
        kind,
        delivery_mode: DeliveryMode::Queue,
        content: Some("hello".into()),
        attachments: "[]".into(),
        attachment_upload_ids: vec![],
        model: None,
        tool_names: Some(r#"["nexus.wait"]"#.into()),
        approval_mode: Some(ApprovalMode::Ask),
        created_by_id: Some(member.id),
        deliver_at: Some(NOW + 5_000),
        created_at: NOW,
        state: InputState::Pending,
        turn_id: None,
        wake: None,
        mail_key: None,
    }
}

#[tokio::test]
async fn conversations_list_archive_and_children() {
    for t in testing::engines().await {
        let s = &t.store;
        let (_, ws, member) = seed_member(s, NOW).await;
        let mut tx = s.begin().await.unwrap();
        let parent = tx
            .insert_conversation(new_conversation(&ws, &member, None))
            .await
            .unwrap();
        let child = tx
            .insert_conversation(new_conversation(&ws, &member, Some((parent.id, "scout"))))
            .await
            .unwrap();
        let grandchild = tx
            .insert_conversation(new_conversation(&ws, &member, Some((child.id, "deep"))))
            .await
            .unwrap();
        let other = tx
            .insert_conversation(new_conversation(&ws, &member, None))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(parent.title.as_deref(), Some("Plans"), "{}", t.dialect);
        assert_eq!(child.parent_id, Some(parent.id));
        assert_eq!(child.label.as_deref(), Some("scout"));

        // A label is unique per parent.
        let mut tx = s.begin().await.unwrap();
        let dup = tx
            .insert_conversation(new_conversation(&ws, &member, Some((parent.id, "scout"))))
            .await;
        assert!(matches!(dup, Err(StoreError::Conflict(_))), "{}: {dup:?}", t.dialect);
        drop(tx);

        let read = s.conversation_by_public_id(child.public_id).await.unwrap().unwrap();
        assert_eq!(read, child);
        let top = s
            .top_level_conversations(ws.id, ArchivedFilter::Exclude, 0, 50)
            .await
            .unwrap();
        assert_eq!(top.iter().map(|c| c.id).collect::<Vec<_>>(), vec![parent.id, other.id]);
        let page = s
            .top_level_conversations(ws.id, ArchivedFilter::Include, parent.id, 1)
            .await
            .unwrap();
        assert_eq!(page.iter().map(|c| c.id).collect::<Vec<_>>(), vec![other.id]);
        let kids = s.conversation_children(parent.id).await.unwrap();
        assert_eq!(kids.iter().map(|c| c.id).collect::<Vec<_>>(), vec![child.id]);

        // Archiving the parent archives the whole tree; an earlier mark is kept.
        let mut tx = s.begin().await.unwrap();
        assert_eq!(
            tx.archive_conversation_tree(grandchild.id, Some(NOW + 1))
                .await
                .unwrap(),
            1
        );
        assert_eq!(tx.archive_conversation_tree(parent.id, Some(NOW + 2)).await.unwrap(), 3);
        tx.commit().await.unwrap();
        let got_marks = [
            s.conversation_by_public_id(parent.public_id)
                .await
                .unwrap()
                .unwrap()
                .archived_at,
            s.conversation_by_public_id(child.public_id)
                .await
                .unwrap()
                .unwrap()
                .archived_at,
            s.conversation_by_public_id(grandchild.public_id)
                .await
                .unwrap()
                .unwrap()
                .archived_at,
        ];
        assert_eq!(
            got_marks,
            [Some(NOW + 2), Some(NOW + 2), Some(NOW + 1)],
            "{}",
            t.dialect
        );
        let only = s
            .top_level_conversations(ws.id, ArchivedFilter::Only, 0, 50)
            .await
            .unwrap();
        assert_eq!(only.iter().map(|c| c.id).collect::<Vec<_>>(), vec![parent.id]);
        let live = s
            .top_level_conversations(ws.id, ArchivedFilter::Exclude, 0, 50)
            .await
            .unwrap();
        assert_eq!(live.iter().map(|c| c.id).collect::<Vec<_>>(), vec![other.id]);

        let mut tx = s.begin().await.unwrap();
        assert_eq!(tx.archive_conversation_tree(parent.id, None).await.unwrap(), 3);
        assert!(tx.set_conversation_default_runner(other.id, None).await.unwrap());
        assert!(!tx.set_conversation_default_runner(-1, None).await.unwrap());
        tx.commit().await.unwrap();
        let back = s
            .conversation_by_public_id(grandchild.public_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(back.archived_at, None, "{}", t.dialect);
    }
}

#[tokio::test]
async fn inputs_queue_to_the_bound_page_and_cancel() {
    for t in testing::engines().await {
        let s = &t.store;
        let (_, ws, member) = seed_member(s, NOW).await;
        let mut tx = s.begin().await.unwrap();
        let conv = tx
            .insert_conversation(new_conversation(&ws, &member, None))
            .await
            .unwrap();
        let InputInsert::Inserted(first) = tx
            .insert_input(new_input(conv.id, &member, InputKind::User), 2)
            .await
            .unwrap()
        else {
            panic!("{}: the first input is refused", t.dialect);
        };
        assert_eq!(first.state, InputState::Pending);
        assert_eq!(first.tool_names.as_deref(), Some(r#"["nexus.wait"]"#));
        assert_eq!(first.deliver_at, Some(NOW + 5_000));
        let second = tx
            .insert_input(new_input(conv.id, &member, InputKind::User), 2)
            .await
            .unwrap();
        assert!(matches!(second, InputInsert::Inserted(_)));
        let third = tx
            .insert_input(new_input(conv.id, &member, InputKind::User), 2)
            .await
            .unwrap();
        assert_eq!(third, InputInsert::Full { bound: 2 }, "{}", t.dialect);
        // Kernel mail bypasses the bound.
        let mail = tx
            .insert_input(new_input(conv.id, &member, InputKind::TaskResult), 2)
            .await
            .unwrap();
        assert!(matches!(mail, InputInsert::Inserted(ref r) if r.kind == InputKind::TaskResult));
        tx.commit().await.unwrap();

        let all = s.conversation_inputs(conv.id, 0, 50).await.unwrap();
        assert_eq!(all.len(), 3, "{}", t.dialect);
        let page = s.conversation_inputs(conv.id, all[0].id, 1).await.unwrap();
        assert_eq!(page.iter().map(|r| r.id).collect::<Vec<_>>(), vec![all[1].id]);

        // A pending input cancels once; then a new one fits under the bound.
        let mut tx = s.begin().await.unwrap();
        let found = tx.input_by_public_id(conv.id, first.public_id).await.unwrap().unwrap();
        assert_eq!(found, first);
        assert!(
            tx.input_by_public_id(conv.id + 1, first.public_id)
                .await
                .unwrap()
                .is_none()
        );
        assert!(tx.cancel_pending_input(first.id).await.unwrap());
        assert!(!tx.cancel_pending_input(first.id).await.unwrap());
        let again = tx
            .insert_input(new_input(conv.id, &member, InputKind::User), 2)
            .await
            .unwrap();
        assert!(matches!(again, InputInsert::Inserted(_)), "{}", t.dialect);
        tx.commit().await.unwrap();
        let all = s.conversation_inputs(conv.id, 0, 50).await.unwrap();
        assert_eq!(all[0].state, InputState::Canceled, "{}", t.dialect);
    }
}

#[tokio::test]
async fn the_feed_is_gapless_per_conversation() {
    for t in testing::engines().await {
        let s = &t.store;
        let (_, ws, member) = seed_member(s, NOW).await;
        let mut tx = s.begin().await.unwrap();
        let a = tx
            .insert_conversation(new_conversation(&ws, &member, None))
            .await
            .unwrap();
        let b = tx
            .insert_conversation(new_conversation(&ws, &member, None))
            .await
            .unwrap();
        assert_eq!(
            tx.append_conversation_event(a.id, nexus_store::ConversationEventKind::InputAccepted, NOW, "{}")
                .await
                .unwrap(),
            1
        );
        assert_eq!(
            tx.append_conversation_event(b.id, nexus_store::ConversationEventKind::InputAccepted, NOW, "{}")
                .await
                .unwrap(),
            1
        );
        let data = r#"{"z":1,"a":2}"#;
        assert_eq!(
            tx.append_conversation_event(
                a.id,
                nexus_store::ConversationEventKind::ConversationArchived,
                NOW + 1,
                data
            )
            .await
            .unwrap(),
            2
        );
        let missing = tx
            .append_conversation_event(-1, nexus_store::ConversationEventKind::InputAccepted, NOW, "{}")
            .await;
        assert!(
            matches!(missing, Err(StoreError::NotFound(_))),
            "{}: {missing:?}",
            t.dialect
        );
        tx.commit().await.unwrap();
        // A rolled-back append leaves no event and no sequence behind.
        let mut tx = s.begin().await.unwrap();
        tx.append_conversation_event(a.id, nexus_store::ConversationEventKind::InputAccepted, NOW, "{}")
            .await
            .unwrap();
        drop(tx);

        let feed = s.conversation_events(a.id, 0, 10).await.unwrap();
        let seen: Vec<(i64, &str)> = feed.iter().map(|e| (e.sequence, e.kind.as_str())).collect();
        assert_eq!(
            seen,
            vec![(1, "input_accepted"), (2, "conversation_archived")],
            "{}",
            t.dialect
        );
        assert_eq!(feed[1].data, data, "member order is kept");
        assert_eq!(feed[1].at, NOW + 1);
        let rest = s.conversation_events(a.id, 1, 10).await.unwrap();
        assert_eq!(rest.len(), 1);
        let mut tx = s.begin().await.unwrap();
        assert_eq!(
            tx.append_conversation_event(a.id, nexus_store::ConversationEventKind::InputAccepted, NOW, "{}")
                .await
                .unwrap(),
            3
        );
        tx.commit().await.unwrap();
        assert_eq!(s.conversation_events(b.id, 0, 10).await.unwrap().len(), 1);
        // Where each feed stands (what a live stream starts following from).
        assert_eq!(s.latest_conversation_event_sequence(a.id).await.unwrap(), 3);
        assert_eq!(s.latest_conversation_event_sequence(b.id).await.unwrap(), 1);
        let missing = s.latest_conversation_event_sequence(-1).await;
        assert!(matches!(missing, Err(StoreError::NotFound(_))), "{missing:?}");
    }
}
