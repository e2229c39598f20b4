//! Conversations and their inputs end to end: create (idempotent), read, list with the archive
//! filter and paging, children, archive / unarchive, the default runner, the feed, and inputs
//! (create, list, delete) with one typed refusal per family.

use nexus_sdk::member::{
    ApprovalMode, ArchivedFilter, ConversationEventKind, DeliveryMode, InputKind, InputState, NewConversation,
    NewInput, Page,
};

use crate::harness::{refusal, served};

/// An id no conversation, input or runner has.
const STRANGER: &str = "0190c7d4-0000-7000-8000-00000000beef";

fn ids(conversations: &[nexus_sdk::member::Conversation]) -> Vec<&str> {
    conversations.iter().map(|c| c.public_id.as_str()).collect()
}

#[tokio::test]
async fn conversations_are_created_listed_archived_and_pointed_at_a_runner() {
    for s in served(&[]).await {
        let d = s.dialect;
        let ws = s.ws();
        let agent_id = s.boot["agent"]["public_id"].as_str().unwrap().to_owned();

        // Create: the answerer defaults to the creator; a keyed repeat replays.
        let made = ws
            .create_conversation(&NewConversation::new().title("Plans").idempotency_key("c-1"))
            .await
            .unwrap();
        assert!(!made.replayed, "{d}");
        let a = made.conversation.clone();
        assert_eq!(a.title.as_deref(), Some("Plans"));
        assert_eq!(a.answering_user_public_id.as_deref(), Some(agent_id.as_str()));
        assert_eq!(a.created_by_public_id.as_deref(), Some(agent_id.as_str()));
        assert_eq!(a.workspace_public_id, s.ws_id());
        assert!(!a.archived && a.archived_at.is_none() && a.parent.is_none());
        let again = ws
            .create_conversation(&NewConversation::new().title("Plans").idempotency_key("c-1"))
            .await
            .unwrap();
        assert!(again.replayed, "{d}");
        assert_eq!(again.conversation, a);
        let other = NewConversation::new().title("Other").idempotency_key("c-1");
        assert_eq!(
            refusal(ws.create_conversation(&other).await),
            (409, "idempotency_envelope_mismatch".into())
        );
        let stranger = NewConversation::new().answerer(STRANGER);
        assert_eq!(
            refusal(ws.create_conversation(&stranger).await),
            (422, "answerer_not_eligible".into())
        );
        let with_runner = NewConversation::new().default_runner(s.runner_id());
        let b = ws.create_conversation(&with_runner).await.unwrap().conversation;
        assert_eq!(b.default_runner_executor_public_id, Some(s.runner_id()));

        // Read, and an unknown id.
        let conv_a = ws.conversation(&a.public_id);
        assert_eq!(conv_a.get().await.unwrap(), a, "{d}");
        assert_eq!(conv_a.public_id(), a.public_id);
        assert_eq!(conv_a.workspace_public_id(), s.ws_id());
        assert_eq!(
            refusal(ws.conversation(STRANGER).get().await),
            (404, "not_found".into())
        );
        // A caller-given id stays one segment, and one that cannot be sent is refused here.
        let climbing = format!("{}/children", a.public_id);
        assert_eq!(
            refusal(ws.conversation(&climbing).get().await),
            (404, "not_found".into())
        );
        let dots = ws.conversation("..").get().await.unwrap_err();
        assert!(matches!(dots, nexus_sdk::Error::InvalidArgument(_)), "{dots}");

        // List: top-level only, oldest first, paged.
        let kid = s.child_of(&a.public_id, "scout").await;
        let all = ws.conversations(None, &Page::first()).await.unwrap();
        assert_eq!(
            ids(&all.conversations),
            [a.public_id.as_str(), b.public_id.as_str()],
            "{d}"
        );
        assert_eq!(all.pagination.next_after, None);
        let first = Page::first().limit(1);
        let page = ws.conversations(None, &first).await.unwrap();
        assert_eq!(ids(&page.conversations), [a.public_id.as_str()]);
        let next = page.pagination.next(&first).expect("a second page");
        let rest = ws.conversations(None, &next).await.unwrap();
        assert_eq!(ids(&rest.conversations), [b.public_id.as_str()]);

        // Children carry their parent; a child follows its parent's archive state.
        let children = conv_a.children().await.unwrap();
        assert_eq!(ids(&children), [kid.as_str()], "{d}");
        let parent = children[0].parent.as_ref().expect("a parent");
        assert_eq!(parent.public_id, a.public_id);
        assert_eq!(parent.label.as_deref(), Some("scout"));
        assert_eq!(parent.spawn_task_key, None);
        assert!(ws.conversation(&b.public_id).children().await.unwrap().is_empty());
        assert_eq!(
            refusal(ws.conversation(STRANGER).children().await),
            (404, "not_found".into())
        );
        let child = ws.conversation(&kid);
        assert_eq!(refusal(child.archive().await), (409, "subagent_follows_parent".into()));
        assert_eq!(
            refusal(child.unarchive().await),
            (409, "subagent_follows_parent".into())
        );

        // Archive the parent (and so the child), filter the list, unarchive.
        let archived = conv_a.archive().await.unwrap();
        assert!(archived.archived && archived.archived_at.is_some(), "{d}");
        assert!(child.get().await.unwrap().archived, "{d}");
        let live = ws.conversations(None, &Page::first()).await.unwrap();
        assert_eq!(ids(&live.conversations), [b.public_id.as_str()]);
        let excluded = ws
            .conversations(Some(ArchivedFilter::Exclude), &Page::first())
            .await
            .unwrap();
        assert_eq!(excluded, live);
        let only = ws
            .conversations(Some(ArchivedFilter::Only), &Page::first())
            .await
            .unwrap();
        assert_eq!(ids(&only.conversations), [a.public_id.as_str()]);
        let both = ws
            .conversations(Some(ArchivedFilter::Include), &Page::first())
            .await
            .unwrap();
        assert_eq!(ids(&both.conversations), [a.public_id.as_str(), b.public_id.as_str()]);
        let back = conv_a.unarchive().await.unwrap();
        assert!(!back.archived && back.archived_at.is_none(), "{d}");
        assert!(!child.get().await.unwrap().archived);

        // The default runner: set, clear, and an unknown runner.
        let set = conv_a.set_default_runner(Some(&s.runner_id())).await.unwrap();
        assert_eq!(set.default_runner_executor_public_id, Some(s.runner_id()), "{d}");
        let cleared = conv_a.set_default_runner(None).await.unwrap();
        assert_eq!(cleared.default_runner_executor_public_id, None);
        assert_eq!(
            refusal(conv_a.set_default_runner(Some(STRANGER)).await),
            (404, "runner_not_found".into())
        );
    }
}

#[tokio::test]
async fn inputs_are_queued_listed_deleted_and_fed() {
    for s in served(&[]).await {
        let d = s.dialect;
        let ws = s.ws();
        let agent_id = s.boot["agent"]["public_id"].as_str().unwrap().to_owned();
        let made = ws.create_conversation(&NewConversation::new()).await.unwrap();
        let conv = ws.conversation(&made.conversation.public_id);
        let empty = conv.events(0, None).await.unwrap();
        assert!(empty.events.is_empty(), "{d}");
        assert_eq!(empty.next_after, 0);

        // Queued, scheduled and steered inputs.
        let hello = NewInput::text("hello")
            .to(&agent_id)
            .model("scripted/echo")
            .approval_mode(ApprovalMode::Rules);
        let first = conv.create_input(&hello).await.unwrap();
        assert!(!first.replayed, "{d}");
        let first = first.input;
        assert_eq!(first.state, InputState::Pending, "{d}");
        assert_eq!(first.kind, InputKind::User);
        assert_eq!(first.delivery_mode, DeliveryMode::Queue);
        assert_eq!(first.content.as_deref(), Some("hello"));
        assert_eq!(first.model.as_deref(), Some("scripted/echo"));
        assert_eq!(first.approval_mode, Some(ApprovalMode::Rules));
        assert_eq!(first.deliver_at, None);
        assert_eq!(first.created_by_public_id.as_deref(), Some(agent_id.as_str()));
        let later = NewInput::text("later").deliver_at("2030-01-01T10:00:00+02:00");
        let later = conv.create_input(&later).await.unwrap().input;
        assert_eq!(later.deliver_at.as_deref(), Some("2030-01-01T08:00:00Z"), "{d}");
        let steer = NewInput::text("now").delivery_mode(DeliveryMode::Steer);
        let steer = conv.create_input(&steer).await.unwrap().input;
        assert_eq!(steer.delivery_mode, DeliveryMode::Steer);
        // It binds to the first input's turn if that is still running, else it queues.
        assert!(
            matches!(steer.state, InputState::Pending | InputState::Steering),
            "{d}: {steer:?}"
        );

        // A keyed repeat replays; refusals of the delivery grammar.
        let once = NewInput::text("once").idempotency_key("i-1");
        let one = conv.create_input(&once).await.unwrap();
        let two = conv.create_input(&once).await.unwrap();
        assert!(two.replayed, "{d}");
        assert_eq!(two.input, one.input);
        let bad = conv
            .create_input(&NewInput::text("x").deliver_in("5 m"))
            .await
            .unwrap_err();
        let api = bad.api().expect("an API refusal");
        assert_eq!((api.status, api.code.as_str()), (422, "validation_failed"), "{d}");
        assert_eq!(api.body["error"]["path"], "/input/deliver_in", "{}", api.body);
        assert_eq!(api.body["error"]["reason"], "invalid");
        let both = NewInput::text("x").deliver_in("5m").deliver_at("2030-01-01T00:00:00Z");
        assert_eq!(
            refusal(conv.create_input(&both).await),
            (422, "deliver_at_ambiguous".into())
        );
        assert_eq!(
            refusal(ws.conversation(STRANGER).create_input(&NewInput::text("x")).await),
            (404, "not_found".into())
        );

        // List and page.
        let listed = conv.inputs(&Page::first()).await.unwrap();
        let listed_ids: Vec<&str> = listed.inputs.iter().map(|i| i.public_id.as_str()).collect();
        let want = [
            first.public_id.as_str(),
            later.public_id.as_str(),
            steer.public_id.as_str(),
            one.input.public_id.as_str(),
        ];
        assert_eq!(listed_ids, want, "{d}");
        let two_of = Page::first().limit(2);
        let page = conv.inputs(&two_of).await.unwrap();
        assert_eq!(page.inputs.len(), 2);
        let next = page.pagination.next(&two_of).expect("a second page");
        let rest = conv.inputs(&next).await.unwrap();
        assert_eq!(rest.inputs[0].public_id, steer.public_id, "{d}");

        // Delete: pending → canceled (the scheduled one: a served kernel's worker consumes
        // the due ones into turns); twice is refused; an unknown id is not found.
        let gone = conv.delete_input(&later.public_id).await.unwrap();
        assert_eq!(gone.state, InputState::Canceled, "{d}");
        assert_eq!(
            refusal(conv.delete_input(&later.public_id).await),
            (409, "input_not_pending".into())
        );
        assert_eq!(refusal(conv.delete_input(STRANGER).await), (404, "not_found".into()));

        // An archived conversation takes no inputs.
        conv.archive().await.unwrap();
        assert_eq!(
            refusal(conv.create_input(&NewInput::text("x")).await),
            (409, "conversation_archived".into())
        );

        // The feed: gapless; one `input_accepted` per accepted input, then the archive (the
        // served kernel's worker also opened turns for the due inputs, in between).
        let feed = conv.events(0, None).await.unwrap();
        for (i, e) in feed.events.iter().enumerate() {
            assert_eq!(e.sequence, i as i64 + 1, "{d}");
        }
        use ConversationEventKind::{ConversationArchived, InputAccepted, TurnEnded, TurnStarted};
        let kinds: Vec<ConversationEventKind> = feed
            .events
            .iter()
            .map(|e| e.kind.clone())
            .filter(|k| !matches!(k, TurnStarted | TurnEnded))
            .collect();
        assert_eq!(
            kinds,
            [
                InputAccepted,
                InputAccepted,
                InputAccepted,
                InputAccepted,
                ConversationArchived
            ],
            "{d}"
        );
        assert_eq!(feed.next_after, feed.events.len() as i64);
        let accepted: Vec<_> = feed.events.iter().filter(|e| e.kind == InputAccepted).collect();
        assert_eq!(accepted[0].data["input_public_id"], first.public_id.as_str());
        assert_eq!(accepted[2].data["delivery_mode"], "steer");
        assert_eq!(feed.events[0].conversation_public_id.as_deref(), Some(conv.public_id()));
        let tail = conv.events(3, Some(1)).await.unwrap();
        assert_eq!(tail.events.len(), 1);
        assert_eq!((tail.events[0].sequence, tail.next_after), (4, 4), "{d}");
        assert_eq!(
            refusal(ws.conversation(STRANGER).events(0, None).await),
            (404, "not_found".into())
        );
    }
}
