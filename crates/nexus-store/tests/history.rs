//! Conversation history (migration 0019) on every available engine: the ranked full-text search
//! over titles and turn text (matching, ranking and its ties, the archive and child filters, the
//! workspace scope, the keyset pages, the candidate bound, the index following updates and its
//! character bound) and the turn windows `session_read` reads.

use nexus_store::testing::{self, seed_member};
use nexus_store::*;
use uuid::Uuid;

const NOW: i64 = 1_700_000_000_000;

struct Seed {
    ws: WorkspaceRow,
    member: MemberRow,
}

async fn seed(s: &Store) -> Seed {
    let (_, ws, member) = seed_member(s, NOW).await;
    Seed { ws, member }
}

async fn conversation(s: &Store, seed: &Seed, title: Option<&str>, parent: Option<i64>) -> ConversationRow {
    let mut tx = s.begin().await.unwrap();
    let row = tx
        .insert_conversation(NewConversation {
            public_id: Uuid::now_v7(),
            workspace_id: seed.ws.id,
            created_by_id: seed.member.id,
            answering_member_id: seed.member.id,
            default_runner_id: None,
            title: title.map(String::from),
            parent_id: parent,
            spawn_task_id: None,
            label: parent.map(|_| format!("kid-{}", Uuid::now_v7())),
            reply_route: None,
            created_at: NOW,
        })
        .await
        .unwrap();
    tx.commit().await.unwrap();
    row
}

fn new_turn(conversation_id: i64, role: TurnRole, content: Option<&str>) -> NewTurn {
    NewTurn {
        public_id: Uuid::now_v7(),
        conversation_id,
        role,
        status: if content.is_some() {
            TurnStatus::Completed
        } else {
            TurnStatus::Running
        },
        input_id: None,
        run_id: None,
        content: content.map(String::from),
        error_key: None,
        created_at: NOW,
    }
}

/// Inserts turns alternating user and assistant, from a user turn.
async fn turns(s: &Store, conversation_id: i64, texts: &[&str]) -> Vec<TurnRow> {
    testing::seed_turns(s, conversation_id, texts, NOW).await
}

struct Ask<'a> {
    query: &'a str,
    archived: ArchivedFilter,
    include_children: bool,
    after: Option<HistoryCursor>,
    limit: i64,
    candidates: i64,
}

impl<'a> Ask<'a> {
    fn new(query: &'a str) -> Ask<'a> {
        Ask {
            query,
            archived: ArchivedFilter::Exclude,
            include_children: false,
            after: None,
            limit: 50,
            candidates: 1_000,
        }
    }
}

async fn search(s: &Store, ws: i64, ask: Ask<'_>) -> Vec<HistoryHit> {
    let terms = SearchTerm::parse_query(ask.query);
    s.search_history(&HistorySearch {
        workspace_id: ws,
        terms: &terms,
        archived: ask.archived,
        include_children: ask.include_children,
        after: ask.after,
        limit: ask.limit,
        candidates: ask.candidates,
        text_chars: 100,
    })
    .await
    .unwrap()
}

/// What a hit points at: the turn's id, or `-conversation id` for a title.
fn keys(hits: &[HistoryHit]) -> Vec<i64> {
    hits.iter()
        .map(|h| h.turn.as_ref().map_or(-h.conversation_id, |t| t.id))
        .collect()
}

async fn found(s: &Store, ws: i64, query: &str) -> Vec<i64> {
    keys(&search(s, ws, Ask::new(query)).await)
}

#[tokio::test]
async fn every_term_matches_a_word_case_folded() {
    for t in testing::engines().await {
        let s = &t.store;
        let seed = seed(s).await;
        let c = conversation(s, &seed, Some("Release planning"), None).await;
        let ts = turns(
            s,
            c.id,
            &[
                "Run deploy.sh on PROD-eu before noon",
                "The DEPLOYMENT went fine; Ärger avoided, café open",
                "nothing here",
                "deploy the cafe notes",
            ],
        )
        .await;
        let d = t.dialect;
        assert_eq!(found(s, seed.ws.id, "deploy").await, vec![ts[3].id, ts[0].id], "{d}");
        // Every term must occur; order and case do not matter; punctuation splits words.
        assert_eq!(found(s, seed.ws.id, "SH deploy").await, vec![ts[0].id], "{d}");
        assert_eq!(found(s, seed.ws.id, "prod eu").await, vec![ts[0].id], "{d}");
        assert_eq!(found(s, seed.ws.id, "deploy.sh").await, vec![ts[0].id], "{d}");
        assert_eq!(
            found(s, seed.ws.id, "deploy noon missing").await,
            Vec::<i64>::new(),
            "{d}"
        );
        // Beyond ASCII: case folds, diacritics stay.
        assert_eq!(found(s, seed.ws.id, "ärger").await, vec![ts[1].id], "{d}");
        assert_eq!(found(s, seed.ws.id, "ÄRGER").await, vec![ts[1].id], "{d}");
        assert_eq!(found(s, seed.ws.id, "café").await, vec![ts[1].id], "{d}");
        assert_eq!(found(s, seed.ws.id, "cafe").await, vec![ts[3].id], "{d}");
        // Whole words, unless a trailing `*` (of at least three characters) makes a prefix.
        assert_eq!(found(s, seed.ws.id, "deplo").await, Vec::<i64>::new(), "{d}");
        let mut prefixed = found(s, seed.ws.id, "deplo*").await;
        prefixed.sort_unstable();
        assert_eq!(prefixed, vec![ts[0].id, ts[1].id, ts[3].id], "{d}");
        assert_eq!(found(s, seed.ws.id, "de*").await, Vec::<i64>::new(), "{d}");
        // Titles are searched too; a title hit has no turn.
        let hits = search(s, seed.ws.id, Ask::new("planning")).await;
        assert_eq!(keys(&hits), vec![-c.id], "{d}");
        assert_eq!(hits[0].title.as_deref(), Some("Release planning"));
        assert_eq!(hits[0].text, None);
        assert_eq!(hits[0].conversation_public_id, c.public_id);
        // A turn hit carries its turn, role and text (cut to `text_chars`).
        let hits = search(s, seed.ws.id, Ask::new("fine")).await;
        let turn = hits[0].turn.as_ref().unwrap();
        assert_eq!(
            (turn.public_id, turn.position, turn.role),
            (ts[1].public_id, 2, TurnRole::Assistant)
        );
        assert_eq!(hits[0].text.as_deref(), ts[1].content.as_deref());
        assert_eq!(hits[0].title.as_deref(), Some("Release planning"));
    }
}

#[tokio::test]
async fn hits_rank_by_relevance_then_newest_turn_then_conversation() {
    for t in testing::engines().await {
        let s = &t.store;
        let seed = seed(s).await;
        let a = conversation(s, &seed, None, None).await;
        let b = conversation(s, &seed, Some("alpha"), None).await;
        let d = t.dialect;
        // Denser matches rank higher on both engines (bm25, ts_rank).
        let ranked = turns(
            s,
            a.id,
            &[
                "alpha beta gamma delta epsilon zeta eta theta",
                "alpha alpha alpha beta gamma delta epsilon zeta",
                "alpha alpha beta gamma delta epsilon zeta eta",
            ],
        )
        .await;
        let hits = search(s, seed.ws.id, Ask::new("alpha")).await;
        let turn_hits: Vec<i64> = keys(&hits).into_iter().filter(|k| *k > 0).collect();
        assert_eq!(turn_hits, vec![ranked[1].id, ranked[2].id, ranked[0].id], "{d}");
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score), "{d}: {hits:?}");

        // Equal scores: newest turn first, across conversations.
        let same = "omega psi chi";
        let in_a = turns(s, a.id, &[same, same]).await;
        let in_b = turns(s, b.id, &[same]).await;
        assert_eq!(
            found(s, seed.ws.id, "omega").await,
            vec![in_b[0].id, in_a[1].id, in_a[0].id],
            "{d}"
        );
        // Titles with equal scores: the newer conversation first (after any equal turn).
        let c = conversation(s, &seed, Some("sigma"), None).await;
        let e = conversation(s, &seed, Some("sigma"), None).await;
        assert_eq!(found(s, seed.ws.id, "sigma").await, vec![-e.id, -c.id], "{d}");
    }
}

#[tokio::test]
async fn archive_and_child_filters_and_the_workspace_scope() {
    for t in testing::engines().await {
        let s = &t.store;
        let seed = seed(s).await;
        let live = conversation(s, &seed, None, None).await;
        let gone = conversation(s, &seed, None, None).await;
        let kid = conversation(s, &seed, None, Some(live.id)).await;
        let account = s.account_by_id(seed.ws.account_id).await.unwrap().unwrap();
        let other_ws = s
            .ensure_workspace(Uuid::now_v7(), account.id, "other", NOW)
            .await
            .unwrap();
        let elsewhere = conversation(
            s,
            &Seed {
                ws: other_ws.clone(),
                member: seed.member.clone(),
            },
            None,
            None,
        )
        .await;
        let l = turns(s, live.id, &["kiwi live"]).await[0].id;
        let g = turns(s, gone.id, &["kiwi gone"]).await[0].id;
        let k = turns(s, kid.id, &["kiwi child"]).await[0].id;
        let e = turns(s, elsewhere.id, &["kiwi elsewhere"]).await[0].id;
        let mut tx = s.begin().await.unwrap();
        tx.archive_conversation_tree(gone.id, Some(NOW)).await.unwrap();
        tx.commit().await.unwrap();
        let d = t.dialect;

        let ask = |archived, include_children| {
            let mut a = Ask::new("kiwi");
            a.archived = archived;
            a.include_children = include_children;
            a
        };
        assert_eq!(
            keys(&search(s, seed.ws.id, ask(ArchivedFilter::Exclude, false)).await),
            vec![l],
            "{d}"
        );
        assert_eq!(
            keys(&search(s, seed.ws.id, ask(ArchivedFilter::Include, false)).await),
            vec![g, l],
            "{d}"
        );
        assert_eq!(
            keys(&search(s, seed.ws.id, ask(ArchivedFilter::Only, false)).await),
            vec![g],
            "{d}"
        );
        assert_eq!(
            keys(&search(s, seed.ws.id, ask(ArchivedFilter::Exclude, true)).await),
            vec![k, l],
            "{d}"
        );
        assert_eq!(
            keys(&search(s, seed.ws.id, ask(ArchivedFilter::Include, true)).await),
            vec![k, g, l],
            "{d}"
        );
        assert_eq!(found(s, other_ws.id, "kiwi").await, vec![e], "{d}");
        // Unarchived, it is live again.
        let mut tx = s.begin().await.unwrap();
        tx.archive_conversation_tree(gone.id, None).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(found(s, seed.ws.id, "kiwi").await, vec![g, l], "{d}");
    }
}

#[tokio::test]
async fn pages_continue_after_the_cursor_and_candidates_are_the_newest() {
    for t in testing::engines().await {
        let s = &t.store;
        let seed = seed(s).await;
        let c = conversation(s, &seed, Some("mango"), None).await;
        let texts: Vec<String> = (0..7).map(|i| format!("mango {}", "filler ".repeat(i % 3))).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let ts = turns(s, c.id, &refs).await;
        let d = t.dialect;
        let all = search(s, seed.ws.id, Ask::new("mango")).await;
        assert_eq!(all.len(), 8, "{d}: seven turns and the title");
        let mut paged = Vec::new();
        let mut after = None;
        loop {
            let mut ask = Ask::new("mango");
            ask.limit = 3;
            ask.after = after;
            let page = search(s, seed.ws.id, ask).await;
            assert!(page.len() <= 3);
            let Some(last) = page.last() else { break };
            after = Some(last.cursor());
            paged.extend(page);
        }
        assert_eq!(keys(&paged), keys(&all), "{d}");
        // Analyzed, PostgreSQL may take its candidates from the index's bitmap (migration 0021,
        // `nexus_turn_candidates`): the same hits, in the same order.
        testing::analyze(s).await.unwrap();
        assert_eq!(search(s, seed.ws.id, Ask::new("mango")).await, all, "{d}");

        // Only the newest `candidates` matching turns (and titles) are ranked.
        let mut ask = Ask::new("mango");
        ask.candidates = 2;
        let mut newest = keys(&search(s, seed.ws.id, ask).await);
        newest.sort_unstable();
        assert_eq!(newest, vec![-c.id, ts[5].id, ts[6].id], "{d}");
    }
}

/// The candidates are the newest matching turns whichever way the engine finds them. On an
/// analyzed PostgreSQL store `nexus_turn_candidates` (migration 0021) prices its ways for one
/// word from the share of turns that match: with 400 turns and 10 candidates, `dense` (every
/// turn) is walked newest first; `tenth` (10 %) comes from the bitmap over the newest 200 ids;
/// `ancient` (the oldest 40 turns, also 10 %) finds none in those ids, so the bitmap runs again
/// over every id; `rare` (4 turns) from the bitmap over every id at once; `dense tenth` (two
/// words) by the planner's own plan.
#[tokio::test]
async fn candidates_are_the_newest_matches_at_every_share() {
    for t in testing::engines().await {
        let s = &t.store;
        let seed = seed(s).await;
        let c = conversation(s, &seed, None, None).await;
        let texts: Vec<String> = (0..400)
            .map(|i| {
                let mut words = vec!["dense", "filler"];
                if i % 10 == 3 {
                    words.push("tenth");
                }
                if i < 40 {
                    words.push("ancient");
                }
                if i % 100 == 7 {
                    words.push("rare");
                }
                words.join(" ")
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let ts = turns(s, c.id, &refs).await;
        testing::analyze(s).await.unwrap();
        let d = t.dialect;
        for (query, wanted) in [
            ("dense", (0..400).collect::<Vec<usize>>()),
            ("tenth", (0..400).filter(|i| i % 10 == 3).collect()),
            ("dense tenth", (0..400).filter(|i| i % 10 == 3).collect()),
            ("ancient", (0..40).collect()),
            ("rare", (0..400).filter(|i| i % 100 == 7).collect()),
        ] {
            let mut ask = Ask::new(query);
            ask.candidates = 10;
            let mut got = keys(&search(s, seed.ws.id, ask).await);
            got.sort_unstable();
            let newest: Vec<i64> = wanted.iter().rev().take(10).rev().map(|&i| ts[i].id).collect();
            assert_eq!(got, newest, "{d}: {query}");
        }
    }
}

#[tokio::test]
async fn the_index_follows_the_text_within_its_bound() {
    for t in testing::engines().await {
        let s = &t.store;
        let seed = seed(s).await;
        let c = conversation(s, &seed, None, None).await;
        let mut tx = s.begin().await.unwrap();
        let running = tx.insert_turn(new_turn(c.id, TurnRole::Assistant, None)).await.unwrap();
        tx.commit().await.unwrap();
        let d = t.dialect;
        assert_eq!(found(s, seed.ws.id, "papaya").await, Vec::<i64>::new(), "{d}");
        let mut tx = s.begin().await.unwrap();
        let end = TurnEnd {
            status: TurnStatus::Completed,
            content: Some("papaya reply".into()),
            error_key: None,
            final_task_id: None,
            at: NOW,
        };
        assert!(tx.end_turn(running.id, end).await.unwrap());
        tx.commit().await.unwrap();
        assert_eq!(found(s, seed.ws.id, "papaya reply").await, vec![running.id], "{d}");

        // The first HISTORY_INDEXED_CHARS characters are indexed (characters, not bytes).
        let head = "é".repeat(HISTORY_INDEXED_CHARS - 8);
        let long = format!("{head} inside outside");
        let t_long = turns(s, c.id, &[&long]).await[0].id;
        assert_eq!(found(s, seed.ws.id, "inside").await, vec![t_long], "{d}");
        assert_eq!(found(s, seed.ws.id, "outside").await, Vec::<i64>::new(), "{d}");
    }
}

#[tokio::test]
async fn turn_windows_read_positions_and_cut_text() {
    for t in testing::engines().await {
        let s = &t.store;
        let seed = seed(s).await;
        let c = conversation(s, &seed, None, None).await;
        let ts = turns(s, c.id, &["one", "twö twö", "three", "four"]).await;
        let d = t.dialect;
        let positions = |turns: &[HistoryTurn]| turns.iter().map(|t| t.position).collect::<Vec<_>>();
        let newest = s.history_turns(c.id, i64::MAX, 3, true, 100).await.unwrap();
        assert_eq!(positions(&newest), vec![4, 3, 2], "{d}");
        let after = s.history_turns(c.id, 1, 2, false, 100).await.unwrap();
        assert_eq!(positions(&after), vec![2, 3], "{d}");
        assert_eq!(after[0].text.as_deref(), Some("twö twö"));
        assert_eq!(after[0].role, TurnRole::Assistant);
        assert_eq!(after[0].public_id, ts[1].public_id);
        let cut = s.history_turns(c.id, 1, 1, false, 3).await.unwrap();
        assert_eq!(cut[0].text.as_deref(), Some("twö"), "{d}: characters, not bytes");
        assert_eq!(s.turn_position(c.id, ts[2].public_id).await.unwrap(), Some(3));
        assert_eq!(s.turn_position(c.id, Uuid::now_v7()).await.unwrap(), None);
        let mut tx = s.begin().await.unwrap();
        assert_eq!(tx.turn_position(c.id, ts[0].public_id).await.unwrap(), Some(1));
        let before = tx.history_turns(c.id, 2, 5, true, 100).await.unwrap();
        assert_eq!(positions(&before), vec![1], "{d}");
        let terms = SearchTerm::parse_query("three");
        let hits = tx
            .search_history(&HistorySearch {
                workspace_id: seed.ws.id,
                terms: &terms,
                archived: ArchivedFilter::Exclude,
                include_children: false,
                after: None,
                limit: 5,
                candidates: 10,
                text_chars: 10,
            })
            .await
            .unwrap();
        assert_eq!(keys(&hits), vec![ts[2].id], "{d}");
        tx.rollback().await.unwrap();
    }
}
