//! The run tables (migration 0002) and the unit of work, on every available engine (SQLite
//! always; PostgreSQL with `NEXUS_TEST_DATABASE_URL`, required with `NEXUS_REQUIRE_POSTGRES=1`).

use std::collections::BTreeSet;

use nexus_store::testing;
use nexus_store::*;
use serde_json::json;
use uuid::Uuid;

const NOW: i64 = 1_700_000_000_000;

/// What every test needs: a workspace, a human member, a runner.
struct Fixture {
    workspace_id: i64,
    member_id: i64,
    runner_id: i64,
}

async fn fixture(s: &Store) -> Fixture {
    let (account, ws, member) = testing::seed_member(s, NOW).await;
    let runner = s
        .create_runner(testing::new_runner(account.id, member.id, NOW))
        .await
        .unwrap();
    Fixture {
        workspace_id: ws.id,
        member_id: member.id,
        runner_id: runner.id,
    }
}

fn new_run(f: &Fixture, status: RunStatus) -> NewRun {
    testing::new_run(f.workspace_id, f.member_id, status, NOW)
}

fn tool_task(run_id: i64, key: &str, status: TaskStatus) -> NewTask {
    NewTask {
        run_id,
        key: key.into(),
        kind: TaskKind::Tool,
        status,
        generation: 1,
        origin: Origin::Author,
        on_failure: OnFailure::Propagate,
        visibility: Visibility::Collapsed,
        tool_name: Some("read_file".into()),
        tool_input: Some(r#"{"path":"a.txt"}"#.into()),
        created_at: NOW,
        ..Default::default()
    }
}

/// A run (committed) on a fresh store.
async fn run_in(s: &Store, f: &Fixture, status: RunStatus) -> RunRow {
    let mut tx = s.begin().await.unwrap();
    let run = tx.insert_run(new_run(f, status)).await.unwrap();
    tx.commit().await.unwrap();
    run
}

async fn task_in(s: &Store, new: NewTask) -> TaskRow {
    let mut tx = s.begin().await.unwrap();
    let t = tx.insert_task(new).await.unwrap();
    tx.commit().await.unwrap();
    t
}

macro_rules! each_engine {
    (|$ts:ident| $body:block) => {{
        for $ts in testing::engines().await {
            let _dialect = $ts.dialect;
            $body
        }
    }};
}

/// A task with every column set, to prove each one round-trips.
fn full_task(run_id: i64, f: &Fixture, declaring: Option<i64>) -> NewTask {
    NewTask {
        run_id,
        key: "r1t1".into(),
        kind: TaskKind::Tool,
        status: TaskStatus::Dispatched,
        generation: 3,
        origin: Origin::Model,
        on_failure: OnFailure::Halt,
        failure_resolution: Some(FailureResolution::Abandoned),
        visibility: Visibility::Hidden,
        mainline: true,
        branch_of: Some("call-1".into()),
        pairs_with: Some("r1".into()),
        declaring_task_id: declaring,
        tool_name: Some("read_file".into()),
        tool_alias: Some("Read".into()),
        tool_input: Some(r#"{"z":1,"a":2}"#.into()),
        tool_call_id: Some("toolu_1".into()),
        target_executor_id: Some(f.runner_id),
        addressed_executor_id: Some(f.runner_id),
        addressed_role: Some(ExecutorKind::Runner),
        effect_profile: Some(r#"{"reads":true}"#.into()),
        timeout_ms: Some(60_000),
        await_started_at: Some(NOW + 1),
        deadline_at: Some(NOW + 60_001),
        claim_token: Some("tok".into()),
        claimed_at: Some(NOW + 2),
        claimant_id: Some(f.runner_id),
        content: Some(r#"[{"type":"text","text":"hi"}]"#.into()),
        structured_present: true,
        structured_content: Some(r#"{"ok":true}"#.into()),
        is_error: true,
        title: Some("Read a.txt".into()),
        metadata: Some(r#"{"m":1}"#.into()),
        error_key: Some("tool_error".into()),
        error_detail: Some("boom".into()),
        approval: Some(r#"{"origin":"member","decided_by":"x","decided_at":1}"#.into()),
        frozen_context: Some(r#"{"prompt":"p","tool_definitions":[]}"#.into()),
        request_surface: Some(r#"{"s":1}"#.into()),
        usage: Some(r#"{"input_tokens":3}"#.into()),
        reply: Some(r#"{"text":"t","tool_calls":[]}"#.into()),
        resolution_token_sha256: Some("ab".repeat(32)),
        created_at: NOW,
        started_at: Some(NOW + 3),
        settled_at: Some(NOW + 4),
    }
}

/// Compares a stored task with what was inserted, column by column.
fn assert_task_is(t: &TaskRow, n: &NewTask) {
    let expected = TaskRow {
        id: t.id,
        run_id: n.run_id,
        key: n.key.clone(),
        kind: n.kind,
        status: n.status,
        generation: n.generation,
        origin: n.origin,
        on_failure: n.on_failure,
        failure_resolution: n.failure_resolution,
        visibility: n.visibility,
        mainline: n.mainline,
        branch_of: n.branch_of.clone(),
        pairs_with: n.pairs_with.clone(),
        declaring_task_id: n.declaring_task_id,
        tool_name: n.tool_name.clone(),
        tool_alias: n.tool_alias.clone(),
        tool_input: n.tool_input.clone(),
        tool_call_id: n.tool_call_id.clone(),
        target_executor_id: n.target_executor_id,
        addressed_executor_id: n.addressed_executor_id,
        addressed_role: n.addressed_role,
        effect_profile: n.effect_profile.clone(),
        timeout_ms: n.timeout_ms,
        await_started_at: n.await_started_at,
        deadline_at: n.deadline_at,
        claim_token: n.claim_token.clone(),
        claimed_at: n.claimed_at,
        claimant_id: n.claimant_id,
        content: n.content.clone(),
        structured_present: n.structured_present,
        structured_content: n.structured_content.clone(),
        is_error: n.is_error,
        title: n.title.clone(),
        metadata: n.metadata.clone(),
        error_key: n.error_key.clone(),
        error_detail: n.error_detail.clone(),
        approval: n.approval.clone(),
        frozen_context: n.frozen_context.clone(),
        request_surface: n.request_surface.clone(),
        usage: n.usage.clone(),
        reply: n.reply.clone(),
        resolution_token_sha256: n.resolution_token_sha256.clone(),
        created_at: n.created_at,
        started_at: n.started_at,
        settled_at: n.settled_at,
    };
    assert_eq!(t, &expected);
}

#[tokio::test]
async fn every_row_type_round_trips() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let mut tx = s.begin().await.unwrap();
        let mut new = new_run(&f, RunStatus::Pending);
        new.approval_mode = ApprovalMode::Rules;
        new.approval_rules = Some(ApprovalRules::parse(r#"[{"tool":"read_*","verdict":"allow"}]"#).unwrap());
        new.default_runner_id = Some(f.runner_id);
        new.started_at = Some(NOW + 5);
        let run = tx.insert_run(new.clone()).await.unwrap();
        assert_eq!(
            run,
            RunRow {
                id: run.id,
                public_id: new.public_id,
                workspace_id: f.workspace_id,
                created_by_id: f.member_id,
                answering_member_id: f.member_id,
                declaring_agent_id: None,
                status: RunStatus::Pending,
                hosting: new.hosting,
                approval_mode: ApprovalMode::Rules,
                approval_rules: new.approval_rules.clone(),
                default_runner_id: Some(f.runner_id),
                deliverable_task_id: None,
                revision: 1,
                attention: None,
                last_event_sequence: 0,
                created_at: NOW,
                started_at: Some(NOW + 5),
                ended_at: None,
            }
        );
        let seed = tx
            .insert_task(tool_task(run.id, "seed", TaskStatus::Waiting))
            .await
            .unwrap();
        let full = full_task(run.id, &f, Some(seed.id));
        let t = tx.insert_task(full.clone()).await.unwrap();
        assert_task_is(&t, &full);
        // A minimal task: nullable columns stay null, booleans false.
        let minimal = tool_task(run.id, "min", TaskStatus::Waiting);
        tx.insert_task(minimal.clone()).await.unwrap();
        assert_task_is(&tx.task_by_key(run.id, "min").await.unwrap().unwrap(), &minimal);

        assert!(tx.insert_edge(t.id, seed.id, EdgeKind::After).await.unwrap());
        assert!(tx.insert_edge(t.id, seed.id, EdgeKind::Reads).await.unwrap());
        assert!(
            !tx.insert_edge(t.id, seed.id, EdgeKind::After).await.unwrap(),
            "a repeated edge is a no-op"
        );
        let e = tx
            .append_event(
                run.id,
                EventKind::TasksAppended,
                None,
                &json!({"keys": ["seed"], "origin": "author"}),
                NOW,
            )
            .await
            .unwrap();
        assert_eq!(
            e,
            EventRow {
                run_id: run.id,
                sequence: 1,
                kind: EventKind::TasksAppended,
                at: NOW,
                task_key: None,
                data: r#"{"keys":["seed"],"origin":"author"}"#.into(),
            }
        );
        let job_id = tx
            .insert_job(NewJob {
                kind: JobKind::ModelCall,
                run_id: run.id,
                task_id: Some(t.id),
                generation: 3,
                available_at: NOW,
            })
            .await
            .unwrap();
        let sealed = NewSealedRequest {
            task_id: t.id,
            generation: 3,
            record: r#"{"model":"scripted/echo"}"#.into(),
            body_sha256: "cd".repeat(32),
            request_bytes: 5,
            tools_sha256: Some("ef".repeat(32)),
            body: vec![0, 1, 2, 255, b'{'],
            attempts: "[]".into(),
            created_at: NOW,
            record_base: None,
            body_base: None,
        };
        let sr = tx.insert_sealed_request(sealed.clone()).await.unwrap();
        assert_eq!(
            (
                sr.task_id,
                sr.generation,
                &sr.record,
                &sr.body_sha256,
                sr.request_bytes,
                &sr.tools_sha256,
                &sr.body,
                &sr.attempts,
                sr.created_at
            ),
            (
                t.id,
                3,
                &sealed.record,
                &sealed.body_sha256,
                5,
                &sealed.tools_sha256,
                &sealed.body,
                &sealed.attempts,
                NOW
            )
        );
        tx.commit().await.unwrap();

        let mut tx = s.begin().await.unwrap();
        assert!(matches!(
            tx.insert_sealed_request(sealed.clone()).await,
            Err(StoreError::Conflict(_))
        ));
        drop(tx);
        // The seal's lock stores the request of a sealable round (the run `running`, the task
        // `waiting` in the request's generation) on both engines, bytes, quotes and
        // backslashes as given; a generation sealed already is `Conflict`; a round that is not
        // sealable stores nothing.
        let live = run_in(s, &f, RunStatus::Running).await;
        let w = task_in(s, tool_task(live.id, "sealable", TaskStatus::Waiting)).await;
        let odd = NewSealedRequest {
            task_id: w.id,
            generation: 1,
            record: r#"{"it's":"a \\ record"}"#.into(),
            body_sha256: "0a".repeat(32),
            body: vec![0, b'\'', b'\\', 0x5c, 255, b'x'],
            ..sealed.clone()
        };
        let seal = |new| RunLock {
            run_id: live.id,
            with: LockReads::Seal(new),
        };
        let stale = NewSealedRequest {
            generation: 2,
            ..odd.clone()
        };
        let mut tx = s.begin().await.unwrap();
        let lock = tx.lock(seal(&stale)).await.unwrap();
        assert_eq!((lock.task.map(|t| t.id), lock.sealed), (Some(w.id), None));
        tx.commit().await.unwrap();
        assert_eq!(s.sealed_request(w.id, 2).await.unwrap(), None);
        let mut tx = s.begin().await.unwrap();
        let lock = tx.lock(seal(&odd)).await.unwrap();
        assert_eq!((lock.run.id, lock.task.map(|t| t.id)), (live.id, Some(w.id)));
        let inserted = lock.sealed.expect("a sealable round's request is stored");
        tx.commit().await.unwrap();
        let mut tx = s.begin().await.unwrap();
        let again = tx.lock(seal(&odd)).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
        assert!(tx.is_void(), "a conflict voids the unit");
        drop(tx);
        assert_eq!((inserted.record_depth, inserted.body_depth), (Some(0), Some(0)));
        let read = s.sealed_request(w.id, 1).await.unwrap().unwrap();
        assert_eq!(
            read,
            SealedRequestRow {
                record_depth: None,
                body_depth: None,
                ..inserted
            }
        );
        assert_eq!((read.record, read.body), (odd.record, odd.body));

        // Reads outside the transaction see it all; the body is stored once per digest, so a
        // second seal of the same bytes (a retried generation) shares it.
        // (The insert told the depths it stored; a read leaves them out.)
        assert_eq!((sr.record_depth, sr.body_depth), (Some(0), Some(0)));
        let read_sr = SealedRequestRow {
            record_depth: None,
            body_depth: None,
            ..sr.clone()
        };
        assert_eq!(s.sealed_request(t.id, 3).await.unwrap().unwrap(), read_sr);
        let mut tx = s.begin().await.unwrap();
        let again = NewSealedRequest {
            generation: 7,
            tools_sha256: None,
            ..sealed.clone()
        };
        let second = tx.insert_sealed_request(again).await.unwrap();
        tx.commit().await.unwrap();
        // The shared body was stored before, whole: its depth is that row's.
        assert_eq!((second.record_depth, second.body_depth), (Some(0), Some(0)));
        let read = s.sealed_request(t.id, 7).await.unwrap().unwrap();
        assert_eq!((read.body, read.tools_sha256), (sealed.body.clone(), None));
        assert_ne!(second.id, sr.id);
        // A tool task is no model round: the cache report's read skips it.
        assert_eq!(s.round_cache_facts(run.id).await.unwrap(), vec![]);
        assert_eq!(s.run_by_id(run.id).await.unwrap().unwrap().last_event_sequence, 1);
        assert_eq!(s.run_by_public_id(run.public_id).await.unwrap().unwrap().id, run.id);
        assert_eq!(s.run_by_public_id(Uuid::now_v7()).await.unwrap(), None);
        // The executor doors' read: the run, its workspace's public id and the creator's
        // standing, only within the workspace's account.
        let ws = s.workspace_by_id(f.workspace_id).await.unwrap().unwrap();
        let found = s.run_in_account(run.public_id, ws.account_id).await.unwrap().unwrap();
        assert_eq!(
            (found.run.id, found.workspace_public_id, found.creator_standing),
            (run.id, ws.public_id, None)
        );
        s.set_standing(f.workspace_id, f.member_id, Standing::Write)
            .await
            .unwrap();
        let found = s.run_in_account(run.public_id, ws.account_id).await.unwrap().unwrap();
        assert_eq!(found.creator_standing, Some(Standing::Write));
        assert_eq!(found.run, s.run_by_id(run.id).await.unwrap().unwrap());
        assert_eq!(s.run_in_account(run.public_id, ws.account_id + 1).await.unwrap(), None);
        assert_eq!(s.run_in_account(Uuid::now_v7(), ws.account_id).await.unwrap(), None);
        // The doors' read in their unit of work: the run as the account finds it, read under
        // the lock, and its task by key.
        let mut tx = s.begin().await.unwrap();
        let (found, task) = tx
            .open_door(run.public_id, ws.account_id, "r1t1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.run, s.run_by_id(run.id).await.unwrap().unwrap());
        assert_eq!(
            (found.workspace_public_id, found.creator_standing),
            (ws.public_id, Some(Standing::Write))
        );
        assert_task_is(&task.unwrap(), &full);
        for missing in ["nope", "bad\0"] {
            let (found, task) = tx
                .open_door(run.public_id, ws.account_id, missing)
                .await
                .unwrap()
                .unwrap();
            assert_eq!((found.run.id, task), (run.id, None), "{missing:?}");
        }
        assert_eq!(
            tx.open_door(run.public_id, ws.account_id + 1, "r1t1").await.unwrap(),
            None
        );
        assert_eq!(tx.open_door(Uuid::now_v7(), ws.account_id, "r1t1").await.unwrap(), None);
        drop(tx);
        // A claim's door: the same rows, and the run's answering member as read with them (on
        // PostgreSQL in the door's round trip); any other member is read as before.
        let mut tx = s.begin().await.unwrap();
        let (found, task) = tx
            .open_claim_door(run.public_id, ws.account_id, "r1t1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.run, s.run_by_id(run.id).await.unwrap().unwrap());
        assert_task_is(&task.unwrap(), &full);
        let answerer = s.member_by_id(run.answering_member_id).await.unwrap();
        assert!(answerer.is_some());
        assert_eq!(tx.member_by_id(run.answering_member_id).await.unwrap(), answerer);
        assert_eq!(tx.member_by_id(run.answering_member_id + 1000).await.unwrap(), None);
        if ts.dialect == "postgres" {
            // The unit answers the member as its door read it: a change committed since (which
            // a read of its own would see, `READ COMMITTED`) is not what it answers.
            s.set_member_configuration(run.answering_member_id, Some(r#"{"changed":true}"#), NOW + 1)
                .await
                .unwrap();
            assert_eq!(tx.member_by_id(run.answering_member_id).await.unwrap(), answerer);
        }
        drop(tx);
        assert_task_is(&s.task_by_key(run.id, "r1t1").await.unwrap().unwrap(), &full);
        assert_task_is(&s.task_by_id(t.id).await.unwrap().unwrap(), &full);
        assert_eq!(s.task_by_key(run.id, "nope").await.unwrap(), None);
        assert_eq!(s.task_by_key(run.id, "bad\0").await.unwrap(), None);
        let keys: Vec<String> = s
            .tasks_of_run(run.id, 0, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.key)
            .collect();
        assert_eq!(keys, ["seed", "r1t1", "min"]);
        let page: Vec<String> = s
            .tasks_of_run(run.id, seed.id, 1)
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.key)
            .collect();
        assert_eq!(page, ["r1t1"]);
        assert_eq!(
            s.edges_of_run(run.id).await.unwrap(),
            vec![
                EdgeRow {
                    task_id: t.id,
                    depends_on_id: seed.id,
                    kind: EdgeKind::After
                },
                EdgeRow {
                    task_id: t.id,
                    depends_on_id: seed.id,
                    kind: EdgeKind::Reads
                },
            ]
        );
        assert_eq!(s.events_after(run.id, 0, 10).await.unwrap(), vec![e]);
        assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), 1);
        assert!(matches!(
            s.latest_event_sequence(run.id + 99).await,
            Err(StoreError::NotFound(_))
        ));
        assert_eq!(
            s.job_by_id(job_id).await.unwrap(),
            Some(JobRow {
                id: job_id,
                kind: JobKind::ModelCall,
                run_id: run.id,
                task_id: Some(t.id),
                generation: 3,
                available_at: NOW,
                locked_by: None,
                locked_until: None,
                attempts: 0,
            })
        );
        assert_eq!(s.sealed_request(t.id, 3).await.unwrap(), Some(read_sr.clone()));
        assert_eq!(s.sealed_request(t.id, 4).await.unwrap(), None);

        // Reads inside a transaction too.
        let mut tx = s.begin().await.unwrap();
        assert_eq!(tx.lock_run(run.id).await.unwrap().id, run.id);
        assert!(matches!(tx.lock_run(run.id + 99).await, Err(StoreError::NotFound(_))));
        assert_eq!(tx.run_by_id(run.id).await.unwrap().unwrap().id, run.id);
        assert_eq!(tx.tasks_of_run(run.id).await.unwrap().len(), 3);
        assert_eq!(tx.task_by_id(t.id).await.unwrap().unwrap().key, "r1t1");
        assert_eq!(tx.edges_of_run(run.id).await.unwrap().len(), 2);
        assert_eq!(tx.job_by_id(job_id).await.unwrap().unwrap().id, job_id);
        assert!(tx.set_sealed_attempts(t.id, 3, r#"[{"at":1}]"#).await.unwrap());
        assert!(!tx.set_sealed_attempts(t.id, 9, "[]").await.unwrap());
        assert_eq!(
            tx.sealed_request(t.id, 3).await.unwrap().unwrap().attempts,
            r#"[{"at":1}]"#
        );
        tx.delete_job(job_id).await.unwrap();
        tx.delete_job(job_id).await.unwrap();
        assert_eq!(
            tx.job_by_id(job_id).await.unwrap(),
            None,
            "a gone job deletes without error"
        );
        tx.commit().await.unwrap();
        assert_eq!(s.job_by_id(job_id).await.unwrap(), None);
    });
}

#[tokio::test]
async fn duplicate_keys_and_bad_words_are_refused() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        task_in(s, tool_task(run.id, "a", TaskStatus::Waiting)).await;
        let mut tx = s.begin().await.unwrap();
        assert!(matches!(
            tx.insert_task(tool_task(run.id, "a", TaskStatus::Waiting)).await,
            Err(StoreError::Conflict(_))
        ));
        drop(tx);
        let mut tx = s.begin().await.unwrap();
        assert!(matches!(
            tx.insert_task(tool_task(run.id, "nul\0", TaskStatus::Waiting)).await,
            Err(StoreError::UnsupportedText)
        ));
        let mut bad = tool_task(run.id, "c", TaskStatus::Waiting);
        bad.frozen_context = Some("\0".into());
        assert!(matches!(tx.insert_task(bad).await, Err(StoreError::UnsupportedText)));
        assert!(matches!(
            tx.append_event(run.id, EventKind::TaskClaimed, None, &json!({"a": "\u{0}"}), NOW)
                .await,
            Err(StoreError::UnsupportedText)
        ));
        let mut t = tx.task_by_key(run.id, "a").await.unwrap().unwrap();
        t.content = Some("\0".into());
        assert!(matches!(
            tx.update_task(TaskUpdate::new(&t, 1, &[TaskStatus::Waiting])).await,
            Err(StoreError::UnsupportedText)
        ));
        t.content = None;
        assert!(matches!(
            tx.update_task(TaskUpdate::new(&t, 1, &[])).await,
            Err(StoreError::Config(_))
        ));
        assert!(matches!(
            tx.append_event(run.id + 99, EventKind::TaskClaimed, None, &json!({}), NOW)
                .await,
            Err(StoreError::NotFound(_))
        ));
    });
}

#[tokio::test]
async fn a_failed_statement_voids_the_unit_of_work_on_both_engines() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        task_in(s, tool_task(run.id, "a", TaskStatus::Waiting)).await;

        // A unique violation: later calls and the commit answer TxAborted, nothing is written.
        let mut tx = s.begin().await.unwrap();
        tx.append_event(run.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        assert!(matches!(
            tx.insert_task(tool_task(run.id, "a", TaskStatus::Waiting)).await,
            Err(StoreError::Conflict(_))
        ));
        assert!(tx.is_void());
        assert!(matches!(tx.lock_run(run.id).await, Err(StoreError::TxAborted)));
        assert!(matches!(tx.commit().await, Err(StoreError::TxAborted)));
        assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), 0, "{}", ts.dialect);

        // A foreign key violation too.
        let mut tx = s.begin().await.unwrap();
        let mut orphan = tool_task(run.id, "b", TaskStatus::Waiting);
        orphan.addressed_executor_id = Some(f.runner_id + 999);
        assert!(matches!(tx.insert_task(orphan).await, Err(StoreError::NotFound(_))));
        assert!(tx.is_void());
        drop(tx);

        // The store's own answers leave the unit of work usable.
        let mut tx = s.begin().await.unwrap();
        assert!(matches!(tx.lock_run(run.id + 99).await, Err(StoreError::NotFound(_))));
        assert!(matches!(
            tx.insert_task(tool_task(run.id, "x\0", TaskStatus::Waiting)).await,
            Err(StoreError::UnsupportedText)
        ));
        let t = tx.task_by_key(run.id, "a").await.unwrap().unwrap();
        assert!(matches!(
            tx.update_task(TaskUpdate::new(&t, 1, &[])).await,
            Err(StoreError::Config(_))
        ));
        tx.idempotency_put(receipt("s", "e", NOW)).await.unwrap();
        assert!(matches!(
            tx.idempotency_put(receipt("s", "e", NOW)).await,
            Err(StoreError::Conflict(_))
        ));
        let other = tx
            .insert_task(tool_task(run.id, "c", TaskStatus::Waiting))
            .await
            .unwrap();
        assert!(tx.insert_edge(other.id, t.id, EdgeKind::After).await.unwrap());
        assert!(!tx.insert_edge(other.id, t.id, EdgeKind::After).await.unwrap());
        assert!(!tx.is_void());
        tx.append_event(run.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), 1, "{}", ts.dialect);
    });
}

#[tokio::test]
async fn update_run_writes_the_mutable_row_only() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Pending).await;
        let t = task_in(s, tool_task(run.id, "a", TaskStatus::Waiting)).await;
        let mut tx = s.begin().await.unwrap();
        let stale = tx.lock_run(run.id).await.unwrap();
        tx.append_event(
            run.id,
            EventKind::RunStatusChanged,
            None,
            &json!({"from": "pending", "to": "running"}),
            NOW,
        )
        .await
        .unwrap();
        let mut changed = stale.clone();
        changed.status = RunStatus::Running;
        changed.deliverable_task_id = Some(t.id);
        changed.revision = 2;
        changed.attention = Some(r#"{"reason":"halt_failure","task_key":"a"}"#.into());
        changed.started_at = Some(NOW + 1);
        changed.ended_at = Some(NOW + 2);
        changed.default_runner_id = Some(f.runner_id);
        // Fields outside the mutable set are ignored.
        changed.last_event_sequence = 0;
        changed.approval_mode = ApprovalMode::Bypass;
        tx.update_run(&changed).await.unwrap();
        tx.commit().await.unwrap();
        let stored = s.run_by_id(run.id).await.unwrap().unwrap();
        assert_eq!(
            stored,
            RunRow {
                last_event_sequence: 1,
                approval_mode: ApprovalMode::Ask,
                ..changed.clone()
            },
            "{}",
            ts.dialect
        );
        let mut tx = s.begin().await.unwrap();
        let mut missing = stored.clone();
        missing.id += 99;
        assert!(matches!(tx.update_run(&missing).await, Err(StoreError::NotFound(_))));
    });
}

#[tokio::test]
async fn runs_of_workspace_pages_and_filters() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let a = run_in(s, &f, RunStatus::Pending).await;
        let b = run_in(s, &f, RunStatus::Running).await;
        let c = run_in(s, &f, RunStatus::Running).await;
        let ids = |v: Vec<RunRow>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(
            ids(s.runs_of_workspace(f.workspace_id, None, 0, 10).await.unwrap()),
            [a.id, b.id, c.id]
        );
        assert_eq!(
            ids(s.runs_of_workspace(f.workspace_id, None, a.id, 1).await.unwrap()),
            [b.id]
        );
        assert_eq!(
            ids(s
                .runs_of_workspace(f.workspace_id, Some(RunStatus::Running), 0, 10)
                .await
                .unwrap()),
            [b.id, c.id]
        );
        assert_eq!(
            ids(s
                .runs_of_workspace(f.workspace_id, Some(RunStatus::Running), b.id, 10)
                .await
                .unwrap()),
            [c.id]
        );
        assert!(
            s.runs_of_workspace(f.workspace_id + 99, None, 0, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            s.runs_of_workspace(f.workspace_id, Some(RunStatus::Canceled), 0, 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Newest first, below the cursor.
        let newest = |status, before, limit| s.runs_of_workspace_newest(f.workspace_id, status, before, limit);
        assert_eq!(ids(newest(None, i64::MAX, 10).await.unwrap()), [c.id, b.id, a.id]);
        assert_eq!(ids(newest(None, c.id, 1).await.unwrap()), [b.id]);
        assert_eq!(
            ids(newest(Some(RunStatus::Running), i64::MAX, 10).await.unwrap()),
            [c.id, b.id]
        );
        assert_eq!(ids(newest(Some(RunStatus::Running), c.id, 10).await.unwrap()), [b.id]);
        assert!(newest(Some(RunStatus::Pending), a.id, 10).await.unwrap().is_empty());
    });
}

/// Migration 0006: the insert writes `frozen_digest` (the SHA-256 hex of the frozen bytes)
/// with the frozen context, the head read returns it without the bytes, and an update never
/// changes either.
#[tokio::test]
async fn the_insert_writes_the_frozen_digest() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let mut new = tool_task(run.id, "a", TaskStatus::Dispatched);
        new.frozen_context = Some("abc".into());
        let t = task_in(s, new).await;
        let bare = task_in(s, tool_task(run.id, "b", TaskStatus::Dispatched)).await;

        let mut tx = s.begin().await.unwrap();
        let head = tx.task_frozen_head(t.id).await.unwrap().unwrap();
        assert_eq!(head.id, t.id);
        assert_eq!(head.kind, t.kind);
        assert_eq!(head.declaring_task_id, t.declaring_task_id);
        // SHA-256("abc").
        assert_eq!(
            head.frozen_digest.as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(tx.task_frozen_context(t.id).await.unwrap().as_deref(), Some("abc"));
        let bare_head = tx.task_frozen_head(bare.id).await.unwrap().unwrap();
        assert_eq!(bare_head.frozen_digest, None);
        assert_eq!(tx.task_frozen_context(bare.id).await.unwrap(), None);
        assert_eq!(tx.task_frozen_head(i64::MAX).await.unwrap(), None);
        assert_eq!(tx.task_frozen_context(i64::MAX).await.unwrap(), None);

        let mut changed = t.clone();
        changed.frozen_context = Some("other".into());
        changed.status = TaskStatus::Completed;
        assert!(
            tx.update_task(TaskUpdate::new(&changed, 1, &[TaskStatus::Dispatched]))
                .await
                .unwrap()
        );
        let after = tx.task_frozen_head(t.id).await.unwrap().unwrap();
        assert_eq!(after.frozen_digest, head.frozen_digest);
        assert_eq!(tx.task_frozen_context(t.id).await.unwrap().as_deref(), Some("abc"));
        tx.commit().await.unwrap();
    });
}

/// Migration 0014: a frozen context is stored once per distinct content. A hundred rounds of a
/// run carrying the same frozen context (a continuation copies its round's bytes) store one
/// body, and no task row holds the bytes; every read that returns a frozen context gives back
/// the same bytes.
#[tokio::test]
async fn a_hundred_rounds_store_one_frozen_context() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        // A declaration large enough to leave the row (overflow pages, TOAST).
        let tools: Vec<_> = (0..2_000)
            .map(|i| json!({"name": format!("tool_{i}"), "description": "d".repeat(40)}))
            .collect();
        let frozen = json!({"prompt": "p", "tool_definitions": tools}).to_string();
        let round = |key: String, declaring: Option<i64>| NewTask {
            run_id: run.id,
            key,
            kind: TaskKind::Model,
            status: TaskStatus::Completed,
            generation: 1,
            origin: Origin::Kernel,
            on_failure: OnFailure::Propagate,
            visibility: Visibility::Visible,
            mainline: true,
            declaring_task_id: declaring,
            frozen_context: Some(frozen.clone()),
            created_at: NOW,
            ..Default::default()
        };
        let mut rounds: Vec<i64> = Vec::new();
        for r in 0..100 {
            // One unit of work per round, as the kernel writes them.
            let mut tx = s.begin().await.unwrap();
            let t = tx
                .insert_task(round(format!("r{r}"), rounds.last().copied()))
                .await
                .unwrap();
            assert_eq!(t.frozen_context.as_deref(), Some(frozen.as_str()));
            tx.commit().await.unwrap();
            rounds.push(t.id);
        }
        let count = |table: &'static str, condition: &'static str| testing::row_count(s, table, condition);
        assert_eq!(count("frozen_contexts", "1 = 1").await.unwrap(), 1, "{}", ts.dialect);
        assert_eq!(count("tasks", "frozen_context IS NOT NULL").await.unwrap(), 0);
        assert_eq!(count("tasks", "frozen_digest IS NOT NULL").await.unwrap(), 100);

        // Every read that returns the frozen context: from the process's cache, then (`cold`)
        // from `frozen_contexts`, the cache emptied before each read.
        let (first, last) = (rounds[0], rounds[99]);
        let same = |t: &TaskRow| t.frozen_context.as_deref() == Some(frozen.as_str());
        let workspace = s.workspace_by_id(f.workspace_id).await.unwrap().unwrap();
        for cold in [false, true] {
            let forget = || {
                if cold {
                    testing::forget_frozen_contexts();
                }
            };
            forget();
            assert!(same(&s.task_by_id(last).await.unwrap().unwrap()));
            assert!(testing::frozen_contexts_kept().0 > 0, "a read keeps what it read");
            forget();
            assert!(same(&s.task_by_key(run.id, "r50").await.unwrap().unwrap()));
            forget();
            let page = s.tasks_of_run(run.id, 0, 1_000).await.unwrap();
            assert_eq!(page.len(), 100);
            assert!(page.iter().all(same));
            forget();
            assert!(s.tasks_declared_by(run.id, first).await.unwrap().iter().all(same));
            forget();
            assert_eq!(s.task_neighbourhood(run.id, last).await.unwrap().len(), 2);
            forget();
            assert!(s.task_neighbourhood(run.id, last).await.unwrap().iter().all(same));
            forget();
            assert!(s.task_and_deps(last).await.unwrap().iter().all(same));
            // The run lock with the row read under it (PostgreSQL: one simple query).
            let mut tx = s.begin().await.unwrap();
            forget();
            let Locked { task: locked, .. } = tx
                .lock(RunLock {
                    run_id: run.id,
                    with: LockReads::Task(last),
                })
                .await
                .unwrap();
            assert!(same(&locked.expect("the round under the lock")));
            drop(tx);
            let mut tx = s.begin().await.unwrap();
            forget();
            let Locked { round: locked, .. } = tx
                .lock(RunLock {
                    run_id: run.id,
                    with: LockReads::Round(last),
                })
                .await
                .unwrap();
            assert!(same(&locked.expect("the round under the lock").task));
            drop(tx);
            let mut tx = s.begin().await.unwrap();
            forget();
            assert_eq!(tx.task_frozen_context(last).await.unwrap(), Some(frozen.clone()));
            let heads = [
                tx.task_frozen_head(first).await.unwrap().unwrap(),
                tx.task_frozen_head(last).await.unwrap().unwrap(),
            ];
            assert!(heads[0].frozen_digest.is_some());
            assert_eq!(heads[0].frozen_digest, heads[1].frozen_digest);
            forget();
            assert!(same(&tx.round_for_reply(last).await.unwrap().unwrap().task));
            forget();
            assert!(tx.tasks_of_run(run.id).await.unwrap().iter().all(same));
            drop(tx);
            // The executor door (PostgreSQL: `BEGIN`, the run and the task in one simple query).
            let mut tx = s.begin().await.unwrap();
            forget();
            let (_, door) = tx
                .open_door(run.public_id, workspace.account_id, "r99")
                .await
                .unwrap()
                .expect("the run in its account");
            assert!(same(&door.expect("the round by key")));
            drop(tx);
        }
        let mut tx = s.begin().await.unwrap();

        // Another content is a body of its own; a row without one reads none.
        let mut other = round("other".into(), None);
        other.frozen_context = Some(r#"{"prompt":"q"}"#.into());
        let other = tx.insert_task(other).await.unwrap();
        let bare = tx
            .insert_task(tool_task(run.id, "bare", TaskStatus::Completed))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(count("frozen_contexts", "1 = 1").await.unwrap(), 2);
        let other = s.task_by_id(other.id).await.unwrap().unwrap();
        assert_eq!(other.frozen_context.as_deref(), Some(r#"{"prompt":"q"}"#));
        assert_eq!(s.task_by_id(bare.id).await.unwrap().unwrap().frozen_context, None);
    });
}

/// An update stores exactly the row it is given, whichever columns change (the SQLite engine
/// names only the changed ones), keeps the frozen context, and an update that changes nothing
/// still matches.
#[tokio::test]
async fn an_update_stores_the_given_row_whatever_changes() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let mut new = tool_task(run.id, "a", TaskStatus::Dispatched);
        new.frozen_context = Some("frozen".into());
        let t = task_in(s, new).await;

        let mut tx = s.begin().await.unwrap();
        assert!(
            tx.update_task(TaskUpdate::new(&t, t.generation, &[TaskStatus::Dispatched]))
                .await
                .unwrap(),
            "no change still matches"
        );
        let mut claimed = t.clone();
        claimed.claim_token = Some("token".into());
        claimed.claimed_at = Some(NOW);
        claimed.deadline_at = Some(NOW + 1_000);
        assert!(
            tx.update_task(TaskUpdate::new(&claimed, t.generation, &[TaskStatus::Dispatched]))
                .await
                .unwrap()
        );
        let mut settled = claimed.clone();
        settled.status = TaskStatus::Completed;
        settled.claim_token = None;
        settled.deadline_at = None;
        settled.content = Some("done".into());
        settled.is_error = true;
        settled.settled_at = Some(NOW + 5);
        assert!(
            !tx.update_task(
                TaskUpdate::new(&settled, t.generation, &[TaskStatus::Dispatched]).with_claim_token(Some("stale"))
            )
            .await
            .unwrap(),
            "a stale token matches nothing"
        );
        assert!(
            tx.update_task(
                TaskUpdate::new(&settled, t.generation, &[TaskStatus::Dispatched]).with_claim_token(Some("token"))
            )
            .await
            .unwrap()
        );
        tx.commit().await.unwrap();
        let stored = s.task_by_id(t.id).await.unwrap().unwrap();
        assert_eq!(stored, settled, "{}", ts.dialect);
        assert_eq!(stored.frozen_context.as_deref(), Some("frozen"));
    });
}

/// The update over a row the unit of work read and knows (`tx/known.rs`): it stores the given
/// row and checks the conditions on the stored row; expectations taken from a copy that is no
/// longer the stored row (its status, generation or claim token moved) change nothing.
#[tokio::test]
async fn an_update_over_the_read_row_stores_it_and_refuses_a_stale_one() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let mut new = tool_task(run.id, "a", TaskStatus::Dispatched);
        new.frozen_context = Some("frozen".into());
        let t = task_in(s, new).await;

        let mut tx = s.begin().await.unwrap();
        let before = tx.task_by_id(t.id).await.unwrap().unwrap();
        let mut claimed = before.clone();
        claimed.claim_token = Some("token".into());
        claimed.claimed_at = Some(NOW);
        claimed.deadline_at = Some(NOW + 1_000);
        assert!(
            !tx.update_task(TaskUpdate::new(&claimed, before.generation, &[TaskStatus::Waiting]))
                .await
                .unwrap(),
            "wrong status"
        );
        assert!(
            tx.update_task(TaskUpdate::new(&claimed, before.generation, &[TaskStatus::Dispatched]))
                .await
                .unwrap()
        );
        // `before` is stale now (the claim moved the token): a settle over it with its own
        // (absent) token, or a second claim over it, is idle.
        let mut settled = before.clone();
        settled.status = TaskStatus::Completed;
        settled.content = Some("done".into());
        settled.settled_at = Some(NOW + 5);
        let mut stale_token = before.clone();
        stale_token.claim_token = Some("other".into());
        assert!(
            !tx.update_task(
                TaskUpdate::new(&settled, stale_token.generation, &[TaskStatus::Dispatched])
                    .with_claim_token(Some("other"))
            )
            .await
            .unwrap(),
            "a token the row does not hold"
        );
        let mut stale_status = claimed.clone();
        stale_status.status = TaskStatus::Waiting;
        assert!(
            !tx.update_task(
                TaskUpdate::new(&settled, stale_status.generation, &[TaskStatus::Waiting])
                    .with_claim_token(Some("token"))
            )
            .await
            .unwrap(),
            "a status the row is not in"
        );
        let mut stale_generation = claimed.clone();
        stale_generation.generation += 1;
        assert!(
            !tx.update_task(
                TaskUpdate::new(&settled, stale_generation.generation, &[TaskStatus::Dispatched])
                    .with_claim_token(Some("token"))
            )
            .await
            .unwrap(),
            "a generation the row is not at"
        );
        settled.claim_token = Some("token".into());
        settled.claimed_at = Some(NOW);
        settled.deadline_at = None;
        assert!(
            tx.update_task(
                TaskUpdate::new(&settled, claimed.generation, &[TaskStatus::Dispatched])
                    .with_claim_token(Some("token"))
            )
            .await
            .unwrap()
        );
        tx.commit().await.unwrap();
        let stored = s.task_by_id(t.id).await.unwrap().unwrap();
        assert_eq!(stored, settled, "{}", ts.dialect);
        assert_eq!(stored.frozen_context.as_deref(), Some("frozen"));
    });
}

#[tokio::test]
async fn conditional_task_update_is_idle_on_wrong_generation_or_status() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let mut new = tool_task(run.id, "a", TaskStatus::Dispatched);
        new.frozen_context = Some(r#"{"frozen":true}"#.into());
        new.claim_token = Some("token-1".into());
        let t = task_in(s, new).await;

        let mut settled = t.clone();
        settled.status = TaskStatus::Completed;
        settled.content = Some(r#"[{"type":"text","text":"done"}]"#.into());
        settled.settled_at = Some(NOW + 10);
        settled.is_error = true;
        settled.mainline = true;
        // An attempt to change the frozen context is ignored: the update never writes it.
        settled.frozen_context = Some(r#"{"frozen":false}"#.into());

        let mut tx = s.begin().await.unwrap();
        assert!(
            !tx.update_task(TaskUpdate::new(&settled, 2, &[TaskStatus::Dispatched]))
                .await
                .unwrap(),
            "wrong generation"
        );
        assert!(
            !tx.update_task(TaskUpdate::new(
                &settled,
                1,
                &[TaskStatus::Running, TaskStatus::Waiting]
            ))
            .await
            .unwrap(),
            "wrong status"
        );
        assert!(
            !tx.update_task(TaskUpdate::new(&settled, 1, &[TaskStatus::Dispatched]).with_claim_token(Some("token-0")))
                .await
                .unwrap(),
            "stale claim token"
        );
        assert!(
            tx.update_task(TaskUpdate::new(&settled, 1, &TaskStatus::OPEN).with_claim_token(Some("token-1")))
                .await
                .unwrap()
        );
        assert!(
            !tx.update_task(TaskUpdate::new(&settled, 1, &TaskStatus::OPEN))
                .await
                .unwrap(),
            "a second settle is idle"
        );
        tx.commit().await.unwrap();
        let stored = s.task_by_id(t.id).await.unwrap().unwrap();
        assert_eq!(
            stored,
            TaskRow {
                frozen_context: Some(r#"{"frozen":true}"#.into()),
                ..settled.clone()
            }
        );

        // A retry: the generation moves, the old expectation is passed.
        let mut retry = stored.clone();
        retry.status = TaskStatus::Waiting;
        retry.generation = 2;
        retry.claim_token = None;
        let mut tx = s.begin().await.unwrap();
        assert!(
            tx.update_task(TaskUpdate::new(&retry, 1, &[TaskStatus::Completed, TaskStatus::Failed]))
                .await
                .unwrap()
        );
        tx.commit().await.unwrap();
        let stored = s.task_by_id(t.id).await.unwrap().unwrap();
        assert_eq!(
            (stored.generation, stored.status, stored.claim_token.as_deref()),
            (2, TaskStatus::Waiting, None)
        );
        // Twelve expected statuses at most.
        let mut tx = s.begin().await.unwrap();
        let thirteen = [TaskStatus::Waiting; 13];
        assert!(matches!(
            tx.update_task(TaskUpdate::new(&stored, 2, &thirteen)).await,
            Err(StoreError::Config(_))
        ));
        let mut all = TaskStatus::ALL.to_vec();
        all.push(TaskStatus::Waiting);
        assert_eq!(all.len(), MAX_EXPECTED_STATUSES);
        assert!(tx.update_task(TaskUpdate::new(&stored, 2, &all)).await.unwrap());
    });
}

#[tokio::test]
async fn events_are_gapless_and_atomic_with_the_change() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let other = run_in(s, &f, RunStatus::Running).await;
        let t = task_in(s, tool_task(run.id, "a", TaskStatus::Waiting)).await;

        // A dropped transaction leaves neither the task change nor its event.
        {
            let mut tx = s.begin().await.unwrap();
            tx.lock_run(run.id).await.unwrap();
            let mut changed = t.clone();
            changed.status = TaskStatus::NeedsApproval;
            assert!(
                tx.update_task(TaskUpdate::new(&changed, 1, &[TaskStatus::Waiting]))
                    .await
                    .unwrap()
            );
            let e = tx
                .append_event(
                    run.id,
                    EventKind::TaskStatusChanged,
                    Some("a"),
                    &json!({"from": "waiting"}),
                    NOW,
                )
                .await
                .unwrap();
            assert_eq!(e.sequence, 1);
            // dropped here, uncommitted
        }
        assert_eq!(s.task_by_id(t.id).await.unwrap().unwrap().status, TaskStatus::Waiting);
        assert!(s.events_after(run.id, 0, 10).await.unwrap().is_empty());
        assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), 0);
        // An explicit rollback does the same.
        let mut tx = s.begin().await.unwrap();
        tx.append_event(run.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), 0);

        // Committed: 1..n per run, each run on its own counter.
        for i in 0..5 {
            let mut tx = s.begin().await.unwrap();
            tx.lock_run(run.id).await.unwrap();
            let a = tx
                .append_event(run.id, EventKind::TaskClaimed, Some("a"), &json!({"i": i}), NOW + i)
                .await
                .unwrap();
            let b = tx
                .append_event(
                    run.id,
                    EventKind::TaskClaimed,
                    None,
                    &json!({"i": i, "second": true}),
                    NOW + i,
                )
                .await
                .unwrap();
            assert_eq!((a.sequence, b.sequence), (2 * i + 1, 2 * i + 2));
            let o = tx
                .append_event(other.id, EventKind::TaskClaimed, None, &json!({}), NOW)
                .await
                .unwrap();
            assert_eq!(o.sequence, i + 1);
            tx.commit().await.unwrap();
        }
        let events = s.events_after(run.id, 0, 100).await.unwrap();
        let seqs: Vec<i64> = events.iter().map(|e| e.sequence).collect();
        assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
        assert_eq!(events[0].data, r#"{"i":0}"#);
        assert_eq!(events[0].task_key.as_deref(), Some("a"));
        assert_eq!(events[1].data, r#"{"i":0,"second":true}"#, "member order kept");
        let page: Vec<i64> = s
            .events_after(run.id, 4, 3)
            .await
            .unwrap()
            .iter()
            .map(|e| e.sequence)
            .collect();
        assert_eq!(page, [5, 6, 7]);
        assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), 10);
        assert_eq!(s.latest_event_sequence(other.id).await.unwrap(), 5);
    });
}

/// A unit's first statement may take the run lock and read a row under it at once
/// (`Tx::lock`: one round trip on PostgreSQL); the rows are
/// those the separate reads return. Appends under the lock travel with the commit on
/// PostgreSQL (`postgres/unit/deferred.rs`): their text arrives byte for byte, quotes and backslashes
/// included, a run row read inside the unit has the unit's sequence, and a dropped unit leaves
/// none of them.
#[tokio::test]
async fn the_lock_with_its_row_and_appends_under_it() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let key = "it's \\a \\' E'x'";
        let t = task_in(s, tool_task(run.id, key, TaskStatus::Waiting)).await;

        let mut tx = s.begin().await.unwrap();
        let Locked { run: locked, task, .. } = tx
            .lock(RunLock {
                run_id: run.id,
                with: LockReads::Task(t.id),
            })
            .await
            .unwrap();
        assert_eq!(locked, s.run_by_id(run.id).await.unwrap().unwrap());
        assert_eq!(task, s.task_by_id(t.id).await.unwrap());
        let round = tx.round_for_reply(t.id).await.unwrap();
        drop(tx);
        let mut tx = s.begin().await.unwrap();
        let Locked { round: first, .. } = tx
            .lock(RunLock {
                run_id: run.id,
                with: LockReads::Round(t.id),
            })
            .await
            .unwrap();
        assert_eq!(first, round, "{}", ts.dialect);
        let Locked { task: again, .. } = tx
            .lock(RunLock {
                run_id: run.id,
                with: LockReads::Task(t.id),
            })
            .await
            .unwrap();
        assert_eq!(again, task, "the same read on a begun unit");
        drop(tx);

        // Appends, dropped: nothing stays.
        let mut tx = s.begin().await.unwrap();
        tx.lock(RunLock {
            run_id: run.id,
            with: LockReads::Task(t.id),
        })
        .await
        .unwrap();
        tx.append_event(run.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        drop(tx);
        assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), 0);

        // Committed: every byte, every sequence.
        let mut tx = s.begin().await.unwrap();
        let Locked {
            run: locked, task: _, ..
        } = tx
            .lock(RunLock {
                run_id: run.id,
                with: LockReads::Task(t.id),
            })
            .await
            .unwrap();
        assert_eq!(locked.last_event_sequence, 0);
        let data = json!({"q": "it's", "b": "back\\slash \\' E'x' $1 ;COMMIT", "u": "é ✓ \n\t"});
        let e1 = tx
            .append_event(run.id, EventKind::TaskClaimed, Some(key), &data, NOW)
            .await
            .unwrap();
        let e2 = tx
            .append_event(run.id, EventKind::TaskClaimed, None, &json!({}), NOW + 1)
            .await
            .unwrap();
        assert_eq!((e1.sequence, e2.sequence), (1, 2));
        assert_eq!(tx.run_by_id(run.id).await.unwrap().unwrap().last_event_sequence, 2);
        tx.commit().await.unwrap();
        assert_eq!(s.events_after(run.id, 0, 10).await.unwrap(), vec![e1, e2]);
        assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), 2);

        // No such row under the lock: `None`; no such run: `NotFound`.
        let mut tx = s.begin().await.unwrap();
        let Locked { task: none, .. } = tx
            .lock(RunLock {
                run_id: run.id,
                with: LockReads::Task(t.id + 999),
            })
            .await
            .unwrap();
        assert!(none.is_none());
        drop(tx);
        let mut tx = s.begin().await.unwrap();
        assert!(matches!(
            tx.lock(RunLock {
                run_id: run.id + 999,
                with: LockReads::Task(t.id)
            })
            .await,
            Err(StoreError::NotFound(_))
        ));
    });
}

/// However the unit of work came to know a run's sequence (a run it inserted, `lock_run`,
/// `run_by_id`, an executor door, an earlier append, or none of these), each append takes the
/// next one and the run row moves with it, inside the unit and after the commit.
#[tokio::test]
async fn every_append_takes_the_next_sequence_whatever_the_unit_read() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let account_id = s.workspace_by_id(f.workspace_id).await.unwrap().unwrap().account_id;
        let mut tx = s.begin().await.unwrap();
        let fresh = tx.insert_run(new_run(&f, RunStatus::Running)).await.unwrap();
        let e = tx
            .append_event(fresh.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        assert_eq!(e.sequence, 1, "a run inserted in this unit");
        let mid = tx.run_by_id(fresh.id).await.unwrap().unwrap();
        assert_eq!(mid.last_event_sequence, 1, "the run row moved with the append");
        let e = tx
            .append_event(fresh.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        assert_eq!(e.sequence, 2, "after run_by_id");
        tx.commit().await.unwrap();
        task_in(s, tool_task(fresh.id, "k", TaskStatus::Dispatched)).await;

        // Each way of reading the run, in its own unit, then two appends.
        let mut expected = 2;
        for how in ["nothing", "lock_run", "run_by_id", "open_door"] {
            let mut tx = s.begin().await.unwrap();
            match how {
                "lock_run" => {
                    assert_eq!(tx.lock_run(fresh.id).await.unwrap().last_event_sequence, expected);
                }
                "run_by_id" => {
                    let r = tx.run_by_id(fresh.id).await.unwrap().unwrap();
                    assert_eq!(r.last_event_sequence, expected);
                }
                "open_door" => {
                    let (found, task) = tx.open_door(fresh.public_id, account_id, "k").await.unwrap().unwrap();
                    assert_eq!(found.run.last_event_sequence, expected);
                    assert!(task.is_some());
                }
                _ => {}
            }
            for _ in 0..2 {
                expected += 1;
                let e = tx
                    .append_event(fresh.id, EventKind::TaskClaimed, None, &json!({}), NOW)
                    .await
                    .unwrap();
                assert_eq!(e.sequence, expected, "{how}");
            }
            assert_eq!(
                tx.run_by_id(fresh.id).await.unwrap().unwrap().last_event_sequence,
                expected,
                "{how}"
            );
            tx.commit().await.unwrap();
        }
        // A unit rolled back after its appends leaves the next unit at the committed sequence.
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(fresh.id).await.unwrap();
        tx.append_event(fresh.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(fresh.id).await.unwrap();
        let e = tx
            .append_event(fresh.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        assert_eq!(e.sequence, expected + 1);
        tx.commit().await.unwrap();

        let seqs: Vec<i64> = s
            .events_after(fresh.id, 0, 100)
            .await
            .unwrap()
            .iter()
            .map(|e| e.sequence)
            .collect();
        assert_eq!(seqs, (1..=expected + 1).collect::<Vec<_>>());
        assert_eq!(s.latest_event_sequence(fresh.id).await.unwrap(), expected + 1);
    });
}

/// The run row's sequence after a unit of work that appended, updated the run in between or
/// after, appended to a second run, or read the run again: always the unit's last append, inside
/// the unit and after the commit, whatever sequence the row given to `update_run` carried.
#[tokio::test]
async fn the_run_row_holds_the_last_append_after_any_mix_of_updates() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let one = run_in(s, &f, RunStatus::Running).await;
        let two = run_in(s, &f, RunStatus::Running).await;

        // Appends, then the run's update (given a row whose sequence is stale), then the commit.
        let mut tx = s.begin().await.unwrap();
        let mut row = tx.lock_run(one.id).await.unwrap();
        for kind in [EventKind::TaskClaimed, EventKind::TasksAppended] {
            tx.append_event(one.id, kind, None, &json!({}), NOW).await.unwrap();
        }
        row.revision += 1;
        assert_eq!(row.last_event_sequence, 0, "the caller's copy is stale");
        tx.update_run(&row).await.unwrap();
        assert_eq!(tx.run_by_id(one.id).await.unwrap().unwrap().last_event_sequence, 2);
        tx.commit().await.unwrap();
        let stored = s.run_by_id(one.id).await.unwrap().unwrap();
        assert_eq!((stored.last_event_sequence, stored.revision), (2, row.revision));

        // An update between appends, appends to a second run never read, a re-read in between.
        let mut tx = s.begin().await.unwrap();
        let row = tx.lock_run(one.id).await.unwrap();
        assert_eq!(row.last_event_sequence, 2);
        tx.append_event(one.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        tx.update_run(&row).await.unwrap();
        let e = tx
            .append_event(one.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        assert_eq!(e.sequence, 4);
        let e = tx
            .append_event(two.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        assert_eq!(e.sequence, 1, "a run the unit never read");
        assert_eq!(tx.run_by_id(two.id).await.unwrap().unwrap().last_event_sequence, 1);
        let e = tx
            .append_event(two.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        assert_eq!(e.sequence, 2);
        tx.commit().await.unwrap();
        assert_eq!(s.latest_event_sequence(one.id).await.unwrap(), 4, "{}", ts.dialect);
        assert_eq!(s.latest_event_sequence(two.id).await.unwrap(), 2, "{}", ts.dialect);
        assert_eq!(s.run_by_id(two.id).await.unwrap().unwrap().last_event_sequence, 2);

        // The next unit, which reads nothing first, appends after the committed sequences.
        let mut tx = s.begin().await.unwrap();
        let e = tx
            .append_event(one.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .unwrap();
        assert_eq!(e.sequence, 5);
        tx.commit().await.unwrap();
        assert_eq!(s.latest_event_sequence(one.id).await.unwrap(), 5);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_never_collide() {
    each_engine!(|ts| {
        let s = ts.store.clone();
        let f = fixture(&s).await;
        let run = run_in(&s, &f, RunStatus::Running).await;
        const WRITERS: i64 = 6;
        const EACH: i64 = 5;
        let mut handles = Vec::new();
        for w in 0..WRITERS {
            let s = s.clone();
            handles.push(tokio::spawn(async move {
                let mut seen = Vec::new();
                for i in 0..EACH {
                    let mut tx = s.begin().await.unwrap();
                    tx.lock_run(run.id).await.unwrap();
                    let a = tx
                        .append_event(run.id, EventKind::TaskClaimed, None, &json!({"w": w, "i": i}), NOW)
                        .await
                        .unwrap();
                    tokio::task::yield_now().await;
                    let b = tx
                        .append_event(
                            run.id,
                            EventKind::TaskClaimed,
                            None,
                            &json!({"w": w, "i": i, "b": 1}),
                            NOW,
                        )
                        .await
                        .unwrap();
                    assert_eq!(b.sequence, a.sequence + 1, "one transaction's events are consecutive");
                    tx.commit().await.unwrap();
                    seen.extend([a.sequence, b.sequence]);
                }
                seen
            }));
        }
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.await.unwrap());
        }
        all.sort();
        let n = WRITERS * EACH * 2;
        assert_eq!(all, (1..=n).collect::<Vec<_>>(), "{}: distinct and gapless", ts.dialect);
        let stored: Vec<i64> = s
            .events_after(run.id, 0, 1000)
            .await
            .unwrap()
            .iter()
            .map(|e| e.sequence)
            .collect();
        assert_eq!(stored, (1..=n).collect::<Vec<_>>());
        assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), n);
    });
}

async fn jobs_in(s: &Store, run_id: i64, n: usize, available_at: i64) -> Vec<i64> {
    let mut tx = s.begin().await.unwrap();
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(
            tx.insert_job(NewJob {
                kind: JobKind::KernelTool,
                run_id,
                task_id: None,
                generation: 0,
                available_at,
            })
            .await
            .unwrap(),
        );
    }
    tx.commit().await.unwrap();
    ids
}

#[tokio::test]
async fn dequeue_respects_availability_and_leases() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let now_ids = jobs_in(s, run.id, 3, NOW).await;
        let later = jobs_in(s, run.id, 1, NOW + 1_000).await[0];

        let got = s.dequeue_jobs("node-a", NOW, 100, 2).await.unwrap().jobs;
        assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), now_ids[..2]);
        for j in &got {
            assert_eq!(j.locked_by.as_deref(), Some("node-a"));
            assert_eq!(j.locked_until, Some(NOW + 100));
            assert_eq!(j.attempts, 1);
        }
        let got = s.dequeue_jobs("node-b", NOW, 100, 10).await.unwrap().jobs;
        assert_eq!(
            got.iter().map(|j| j.id).collect::<Vec<_>>(),
            [now_ids[2]],
            "leased jobs are skipped"
        );
        assert!(
            s.dequeue_jobs("node-b", NOW + 50, 100, 10)
                .await
                .unwrap()
                .jobs
                .is_empty()
        );
        // A lease ending exactly now still holds; after it, the job is free again.
        assert!(
            s.dequeue_jobs("node-b", NOW + 100, 100, 10)
                .await
                .unwrap()
                .jobs
                .is_empty()
        );
        // Renewal by the holder only.
        assert!(s.renew_job_lease(now_ids[0], "node-a", NOW + 90, 1_000).await.unwrap());
        assert!(!s.renew_job_lease(now_ids[1], "node-b", NOW + 90, 1_000).await.unwrap());
        let got = s.dequeue_jobs("node-b", NOW + 101, 10_000, 10).await.unwrap().jobs;
        assert_eq!(
            got.iter().map(|j| j.id).collect::<Vec<_>>(),
            [now_ids[1], now_ids[2]],
            "lapsed leases are taken over; the renewed one is not"
        );
        assert!(
            got.iter()
                .all(|j| j.attempts == 2 && j.locked_by.as_deref() == Some("node-b"))
        );
        // The later job becomes available at its time.
        let got = s.dequeue_jobs("node-c", NOW + 1_000, 100, 10).await.unwrap().jobs;
        assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), [later]);

        // release_node_leases frees exactly that node's leases.
        assert_eq!(s.release_node_leases("node-b").await.unwrap(), 2);
        assert_eq!(s.release_node_leases("node-b").await.unwrap(), 0);
        let j = s.job_by_id(now_ids[1]).await.unwrap().unwrap();
        assert_eq!((j.locked_by, j.locked_until), (None, None));
        assert_eq!(
            s.job_by_id(now_ids[0]).await.unwrap().unwrap().locked_by.as_deref(),
            Some("node-a")
        );
        let got = s.dequeue_jobs("node-d", NOW + 200, 100, 10).await.unwrap().jobs;
        assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), [now_ids[1], now_ids[2]]);
        // requeue: unlocked, available later.
        assert!(s.requeue_job(now_ids[1], NOW + 5_000).await.unwrap());
        let j = s.job_by_id(now_ids[1]).await.unwrap().unwrap();
        assert_eq!((j.locked_by, j.available_at), (None, NOW + 5_000));
        assert!(
            s.dequeue_jobs("node-e", NOW + 4_999, 1, 10)
                .await
                .unwrap()
                .jobs
                .iter()
                .all(|j| j.id != now_ids[1])
        );
        assert!(s.delete_job(now_ids[1]).await.unwrap());
        assert!(!s.delete_job(now_ids[1]).await.unwrap());
        assert!(!s.requeue_job(now_ids[1], NOW).await.unwrap());
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_dequeues_never_share_a_job() {
    each_engine!(|ts| {
        let s = ts.store.clone();
        let f = fixture(&s).await;
        let run = run_in(&s, &f, RunStatus::Running).await;
        let ids = jobs_in(&s, run.id, 40, NOW).await;
        let mut handles = Vec::new();
        for node in 0..5 {
            let s = s.clone();
            handles.push(tokio::spawn(async move {
                let name = format!("node-{node}");
                let mut mine = Vec::new();
                loop {
                    let got = s.dequeue_jobs(&name, NOW, 60_000, 3).await.unwrap().jobs;
                    if got.is_empty() {
                        break;
                    }
                    assert!(got.iter().all(|j| j.locked_by.as_deref() == Some(name.as_str())));
                    mine.extend(got.into_iter().map(|j| j.id));
                    tokio::task::yield_now().await;
                }
                mine
            }));
        }
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.await.unwrap());
        }
        let distinct: BTreeSet<i64> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len(), "{}: a job went to two nodes", ts.dialect);
        assert_eq!(
            distinct,
            ids.into_iter().collect::<BTreeSet<_>>(),
            "every job was handed out"
        );
        for id in distinct {
            assert_eq!(s.job_by_id(id).await.unwrap().unwrap().attempts, 1);
        }
    });
}

#[tokio::test]
async fn expired_parks_selects_parked_rows_past_deadline_on_live_runs() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let live = run_in(s, &f, RunStatus::Running).await;
        let canceling = run_in(s, &f, RunStatus::Canceling).await;
        let done = run_in(s, &f, RunStatus::Completed).await;
        let canceled = run_in(s, &f, RunStatus::Canceled).await;
        let park = |run_id: i64, key: &str, status: TaskStatus, deadline: Option<i64>| {
            let mut t = tool_task(run_id, key, status);
            t.deadline_at = deadline;
            t
        };
        let mut expect = Vec::new();
        for (i, status) in TaskStatus::PARKED.into_iter().enumerate() {
            let t = task_in(s, park(live.id, &format!("p{i}"), status, Some(NOW - 1))).await;
            expect.push((live.id, t.id));
        }
        let at_now = task_in(s, park(live.id, "at-now", TaskStatus::Dispatched, Some(NOW))).await;
        expect.push((live.id, at_now.id));
        let c = task_in(s, park(canceling.id, "c", TaskStatus::Running, Some(NOW - 5))).await;
        expect.push((canceling.id, c.id));
        // Not candidates: future deadline, no deadline, not parked, or a finished run.
        task_in(s, park(live.id, "future", TaskStatus::Dispatched, Some(NOW + 1))).await;
        task_in(s, park(live.id, "none", TaskStatus::Dispatched, None)).await;
        task_in(s, park(live.id, "waiting", TaskStatus::Waiting, Some(NOW - 1))).await;
        task_in(s, park(live.id, "settled", TaskStatus::Completed, Some(NOW - 1))).await;
        task_in(s, park(done.id, "d", TaskStatus::Dispatched, Some(NOW - 1))).await;
        task_in(s, park(canceled.id, "x", TaskStatus::Running, Some(NOW - 1))).await;

        assert_eq!(s.expired_parks(NOW, 0, 500).await.unwrap(), expect);
        // Batches resume after the last id.
        let first = s.expired_parks(NOW, 0, 2).await.unwrap();
        assert_eq!(first, expect[..2]);
        let rest = s.expired_parks(NOW, first[1].1, 500).await.unwrap();
        assert_eq!(rest, expect[2..]);
    });
}

#[tokio::test]
async fn held_approvals_and_the_inbox() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let a = run_in(s, &f, RunStatus::Running).await;
        let b = run_in(s, &f, RunStatus::Pending).await;
        let h1 = task_in(s, tool_task(a.id, "h1", TaskStatus::NeedsApproval)).await;
        task_in(s, tool_task(a.id, "w", TaskStatus::Waiting)).await;
        let h2 = task_in(s, tool_task(b.id, "h2", TaskStatus::NeedsApproval)).await;
        let h3 = task_in(s, tool_task(a.id, "h3", TaskStatus::NeedsApproval)).await;
        let keys = |v: Vec<TaskRow>| v.into_iter().map(|t| t.key).collect::<Vec<_>>();
        assert_eq!(
            keys(s.held_approvals(f.workspace_id, 0, 10).await.unwrap()),
            ["h1", "h2", "h3"]
        );
        assert_eq!(keys(s.held_approvals(f.workspace_id, h1.id, 1).await.unwrap()), ["h2"]);
        assert_eq!(keys(s.held_approvals(f.workspace_id, h2.id, 10).await.unwrap()), ["h3"]);
        assert!(s.held_approvals(f.workspace_id + 99, 0, 10).await.unwrap().is_empty());
        let _ = h3;

        // The inbox: addressed here, in an inbox status, on running or canceling runs.
        let addressed = |run_id: i64, key: &str, status: TaskStatus| {
            let mut t = tool_task(run_id, key, status);
            t.addressed_executor_id = Some(f.runner_id);
            t
        };
        let d1 = task_in(s, addressed(a.id, "d1", TaskStatus::Dispatched)).await;
        task_in(s, addressed(a.id, "d2", TaskStatus::Completed)).await;
        task_in(s, addressed(b.id, "d3", TaskStatus::Dispatched)).await; // pending run
        let d4 = task_in(s, addressed(a.id, "d4", TaskStatus::NeedsApproval)).await;
        task_in(s, addressed(a.id, "d5", TaskStatus::Running)).await;
        let d6 = task_in(s, addressed(a.id, "d6", TaskStatus::AwaitingInput)).await;
        let page = s.inbox_page(f.runner_id, 0, 10).await.unwrap();
        for (t, r) in &page {
            // Each row comes with its run's row, as a read of the run finds it.
            assert_eq!(Some(r), s.run_by_id(t.run_id).await.unwrap().as_ref());
        }
        let tasks_only = |page: Vec<(TaskRow, RunRow)>| page.into_iter().map(|(t, _)| t).collect::<Vec<_>>();
        assert_eq!(keys(tasks_only(page)), ["d1", "d4", "d6"]);
        assert_eq!(keys(tasks_only(s.inbox_page(f.runner_id, 0, 1).await.unwrap())), ["d1"]);
        assert_eq!(
            keys(tasks_only(s.inbox_page(f.runner_id, d1.id, 10).await.unwrap())),
            ["d4", "d6"]
        );
        assert_eq!(
            keys(tasks_only(s.inbox_page(f.runner_id, d4.id, 1).await.unwrap())),
            ["d6"]
        );
        assert!(s.inbox_page(f.runner_id, d6.id, 10).await.unwrap().is_empty());
        assert!(s.inbox_page(f.runner_id + 99, 0, 10).await.unwrap().is_empty());
    });
}

fn receipt(scope: &str, envelope: &str, created_at: i64) -> NewReceipt {
    NewReceipt {
        scope_hash: scope.into(),
        envelope_sha256: envelope.into(),
        status: 201,
        body: r#"{"run":{}}"#.into(),
        expires_at: created_at + 86_400_000,
        created_at,
    }
}

#[tokio::test]
async fn idempotency_receipts() {
    each_engine!(|ts| {
        let s = &ts.store;
        let mut tx = s.begin().await.unwrap();
        assert_eq!(tx.idempotency_get("scope-1", NOW).await.unwrap(), None);
        let r = tx.idempotency_put(receipt("scope-1", "env-1", NOW)).await.unwrap();
        assert_eq!(
            r,
            ReceiptRow {
                id: r.id,
                scope_hash: "scope-1".into(),
                envelope_sha256: "env-1".into(),
                status: 201,
                body: r#"{"run":{}}"#.into(),
                expires_at: NOW + 86_400_000,
                created_at: NOW,
            }
        );
        // A second put of a live scope conflicts, and the transaction stays usable.
        assert!(matches!(
            tx.idempotency_put(receipt("scope-1", "env-2", NOW + 1)).await,
            Err(StoreError::Conflict(_))
        ));
        assert_eq!(tx.idempotency_get("scope-1", NOW + 1).await.unwrap(), Some(r.clone()));
        tx.commit().await.unwrap();
        assert_eq!(s.idempotency_get("scope-1", NOW).await.unwrap(), Some(r.clone()));
        // Expired: invisible, and its scope is free again.
        let later = NOW + 86_400_000;
        assert_eq!(s.idempotency_get("scope-1", later).await.unwrap(), None);
        let mut tx = s.begin().await.unwrap();
        let again = tx.idempotency_put(receipt("scope-1", "env-3", later)).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(s.idempotency_get("scope-1", later).await.unwrap(), Some(again));
        let mut tx = s.begin().await.unwrap();
        tx.idempotency_put(receipt("scope-2", "env", NOW)).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(s.purge_idempotency_receipts(later).await.unwrap(), 1);
        assert_eq!(s.idempotency_get("scope-2", NOW).await.unwrap(), None);
        assert!(s.idempotency_get("scope-1", later).await.unwrap().is_some());
        assert_eq!(s.idempotency_get("nul\0", NOW).await.unwrap(), None);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_receipts_for_one_scope_serialize() {
    each_engine!(|ts| {
        let s = ts.store.clone();
        let mut handles = Vec::new();
        for i in 0..6 {
            let s = s.clone();
            handles.push(tokio::spawn(async move {
                let mut tx = s.begin().await.unwrap();
                if let Some(existing) = tx.idempotency_get("scope", NOW).await.unwrap() {
                    return Err(existing);
                }
                tokio::task::yield_now().await;
                match tx.idempotency_put(receipt("scope", &format!("env-{i}"), NOW)).await {
                    Ok(r) => {
                        tx.commit().await.unwrap();
                        Ok(r)
                    }
                    Err(StoreError::Conflict(_)) => {
                        drop(tx);
                        Err(s.idempotency_get("scope", NOW).await.unwrap().unwrap())
                    }
                    Err(e) => panic!("unexpected {e}"),
                }
            }));
        }
        let mut winners = Vec::new();
        let mut replays = Vec::new();
        for h in handles {
            match h.await.unwrap() {
                Ok(r) => winners.push(r),
                Err(r) => replays.push(r),
            }
        }
        assert_eq!(winners.len(), 1, "{}: exactly one receipt is written", ts.dialect);
        assert!(
            replays.iter().all(|r| r == &winners[0]),
            "the others see the winner's receipt"
        );
    });
}

/// storage-and-scale.md §8.5: no statement updates `frozen_context` (nor its digest,
/// `frozen_digest`, migration 0006). Every SQL UPDATE in the crate's sources (from the keyword
/// to the end of its string constant; every file under `src/`) must name neither.
#[test]
fn no_update_statement_names_frozen_context() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut updates = 0;
    let mut offenders = Vec::new();
    // Every `.rs` file under `src/`, its subdirectories (`ops/`, `sqlite/`) included.
    let mut dirs = vec![dir];
    let mut files = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for (statement, line) in update_statements(&text) {
            updates += 1;
            if statement.contains("frozen_context") || statement.contains("frozen_digest") {
                offenders.push(format!("{}:{line}: {statement}", path.display()));
            }
        }
    }
    assert!(
        updates >= 5,
        "the scan finds the crate's UPDATE statements (found {updates})"
    );
    assert!(
        offenders.is_empty(),
        "an UPDATE names frozen_context or frozen_digest:\n{}",
        offenders.join("\n")
    );
    // The scan has teeth.
    let bad =
        "pub(crate) const X: &str = \"UPDATE tasks SET status = $1, \\\n     frozen_context = $2 WHERE id = $3\";";
    assert!(update_statements(bad).iter().any(|(s, _)| s.contains("frozen_context")));
    let fine =
        "const A: &str = \"UPDATE tasks SET status = $1\";\nconst B: &str = \"SELECT frozen_context FROM tasks\";";
    assert!(
        update_statements(fine)
            .iter()
            .all(|(s, _)| !s.contains("frozen_context"))
    );
}

/// Every SQL `UPDATE <table> SET …` in `text` (the keyword uppercase, as SQL is written here;
/// `\`-continued string lines allowed between the words), from the keyword to the end of its
/// string literal (`";` or `")`), with its line number.
fn update_statements(text: &str) -> Vec<(String, usize)> {
    fn skip_space(s: &str) -> &str {
        s.trim_start_matches(|c: char| c.is_whitespace() || c == '\\')
    }
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("UPDATE") {
        let start = from + at;
        from = start + "UPDATE".len();
        let after = skip_space(&text[from..]);
        let table_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if table_len == 0 || !skip_space(&after[table_len..]).starts_with("SET") {
            continue; // prose such as "FOR UPDATE", not a statement
        }
        let rest = &text[start..];
        let end = rest
            .find("\";")
            .into_iter()
            .chain(rest.find("\")"))
            .min()
            .unwrap_or(rest.len());
        let line = text[..start].matches('\n').count() + 1;
        out.push((rest[..end].to_string(), line));
    }
    out
}

/// `tasks_if_quiescent`: no answer while any row of the run is in one of the five open
/// statuses (each tried alone), the run's rows in id order (the columns the run's end reads)
/// once none is, and nothing for a run without rows; another run's open rows do not count.
#[tokio::test]
async fn a_run_is_quiescent_only_when_no_row_is_open() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let empty = run_in(s, &f, RunStatus::Running).await;
        let mut tx = s.begin().await.unwrap();
        assert_eq!(tx.tasks_if_quiescent(empty.id).await.unwrap(), None, "no rows");
        drop(tx);
        for open in TaskStatus::OPEN {
            let run = run_in(s, &f, RunStatus::Running).await;
            let done = task_in(s, tool_task(run.id, "done", TaskStatus::Completed)).await;
            let other = run_in(s, &f, RunStatus::Running).await;
            task_in(s, tool_task(other.id, "busy", TaskStatus::Running)).await;
            let mut tx = s.begin().await.unwrap();
            let rows = tx.tasks_if_quiescent(run.id).await.unwrap().expect("quiescent");
            assert_eq!(rows.iter().map(|t| t.id).collect::<Vec<_>>(), [done.id]);
            drop(tx);
            let t = task_in(s, tool_task(run.id, "open", open)).await;
            let mut tx = s.begin().await.unwrap();
            assert_eq!(tx.tasks_if_quiescent(run.id).await.unwrap(), None, "{open}");
            let mut closed = t.clone();
            closed.status = TaskStatus::Failed;
            assert!(tx.update_task(TaskUpdate::new(&closed, 1, &[open])).await.unwrap());
            let rows = tx.tasks_if_quiescent(run.id).await.unwrap().expect("quiescent again");
            assert_eq!(rows.iter().map(|t| t.id).collect::<Vec<_>>(), [done.id, t.id], "{open}");
            // What the run's end reads of a row, column for column.
            assert_eq!(rows[1], TaskEndRow::from(&closed), "{open}");
            assert_eq!(
                (rows[1].key.as_str(), rows[1].status, rows[1].failure_resolution),
                ("open", TaskStatus::Failed, None),
                "{open}"
            );
            drop(tx);
        }
    });
}

/// Sealed records and bodies stored as deltas on their predecessor (migration 0020) read back
/// whole, through a chain longer than the snapshot depth, and a retried seal of the same body
/// shares it.
#[tokio::test]
async fn sealed_deltas_read_back_whole_across_snapshots() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let rounds = 2 * nexus_store::SNAPSHOT_DEPTH as usize + 3;
        let mut record = String::from(r#"{"entries":["#);
        let mut body: Vec<u8> = b"{\"messages\":[".to_vec();
        // The previous row, and the depths its insert answered.
        struct Prev {
            id: i64,
            record_keep: usize,
            sha: String,
            body_keep: usize,
            depths: (Option<i64>, Option<i64>),
        }
        let mut prev: Option<Prev> = None;
        for i in 0..rounds {
            let t = task_in(s, tool_task(run.id, &format!("r{i}"), TaskStatus::Waiting)).await;
            let record_keep = record.len();
            let body_keep = body.len();
            let entry = format!("{}\"entry {i} é\"", if i == 0 { "" } else { "," });
            record.push_str(&entry);
            body.extend_from_slice(format!("{entry},{i}").as_bytes());
            let whole_record = format!("{record}],\"request_options\":{{}}}}");
            let mut whole_body = body.clone();
            whole_body.extend_from_slice(b"]}");
            let sha = format!("{i:064x}");
            // Every other round carries the base's depths as its insert answered them (as the
            // kernel does for the rounds it sealed); the others leave the store to read them.
            let carried = i % 2 == 1;
            let (record_base, body_base) = match &prev {
                Some(p) => (
                    Some(SealedBase {
                        id: Some(p.id),
                        sha256: None,
                        keep: p.record_keep as i64,
                        depth: p.depths.0.filter(|_| carried),
                    }),
                    Some(SealedBase {
                        id: None,
                        sha256: Some(p.sha.clone()),
                        keep: p.body_keep as i64,
                        depth: p.depths.1.filter(|_| carried),
                    }),
                ),
                None => (None, None),
            };
            let new = NewSealedRequest {
                task_id: t.id,
                generation: 1,
                record: match &prev {
                    Some(_) => whole_record[record_keep..].to_string(),
                    None => whole_record.clone(),
                },
                body_sha256: sha.clone(),
                request_bytes: whole_body.len() as i64,
                tools_sha256: None,
                body: match &prev {
                    Some(_) => whole_body[body_keep..].to_vec(),
                    None => whole_body.clone(),
                },
                attempts: "[]".into(),
                created_at: NOW,
                record_base,
                body_base,
            };
            // The seal's lock stores the request (on PostgreSQL in its round trip when no base
            // must be read: none, or each base's depth carried and a delta below the snapshot
            // depth; else the insert follows it).
            let mut tx = s.begin().await.unwrap();
            let lock = RunLock {
                run_id: run.id,
                with: LockReads::Seal(&new),
            };
            let lock = tx.lock(lock).await.unwrap();
            assert_eq!(lock.task.as_ref().map(|t| t.id), Some(t.id));
            let row = lock.sealed.expect("a sealable round's request is stored");
            tx.commit().await.unwrap();
            let read = s.sealed_request(t.id, 1).await.unwrap().unwrap();
            assert_eq!(read.record, whole_record, "{} round {i}", ts.dialect);
            assert_eq!(read.body, whole_body, "{} round {i}", ts.dialect);
            // Deltas until the snapshot depth, then whole again.
            let depth = (i as i64) % nexus_store::SNAPSHOT_DEPTH;
            assert_eq!(
                (row.record_depth, row.body_depth),
                (Some(depth), Some(depth)),
                "round {i}"
            );
            prev = Some(Prev {
                id: row.id,
                record_keep: record.len(),
                sha,
                body_keep: body.len(),
                depths: (row.record_depth, row.body_depth),
            });
        }
    });
}

/// PostgreSQL holds a task update made under the run's lock over a row the unit read
/// (`postgres/unit/update.rs`): the answer is decided on that row, and the `UPDATE` travels with the
/// unit's next statement or its `COMMIT`. A writer that broke the lock order (it moved the row
/// without the run's lock) makes the buffered update change nothing, and then the unit fails at
/// its commit instead of keeping a write the caller was told happened.
#[tokio::test]
async fn a_held_task_update_over_a_moved_row_fails_its_unit() {
    let Some(ts) = testing::postgres().await else { return };
    let s = &ts.store;
    let f = fixture(s).await;
    let run = run_in(s, &f, RunStatus::Running).await;
    let t = task_in(s, tool_task(run.id, "a", TaskStatus::Dispatched)).await;

    // Under the lock the buffered update's answer is the row's: true, then false for a status the
    // row does not have (no statement either way until the commit).
    let mut tx = s.begin().await.unwrap();
    let Locked { task: before, .. } = tx
        .lock(RunLock {
            run_id: run.id,
            with: LockReads::Task(t.id),
        })
        .await
        .unwrap();
    let before = before.expect("the task");
    let mut next = before.clone();
    next.status = TaskStatus::Completed;
    next.content = Some("ok".into());
    assert!(
        !tx.update_task(TaskUpdate::new(&next, before.generation, &[TaskStatus::Waiting]))
            .await
            .unwrap()
    );
    assert!(
        tx.update_task(TaskUpdate::new(&next, before.generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    // A read in the unit sees it (the buffered update goes out first).
    let read = tx.task_by_id(t.id).await.unwrap().unwrap();
    assert_eq!(
        (read.status, read.content.as_deref()),
        (TaskStatus::Completed, Some("ok"))
    );
    tx.commit().await.unwrap();
    let stored = s.task_by_id(t.id).await.unwrap().unwrap();
    assert_eq!(stored.status, TaskStatus::Completed);

    // A row moved behind the lock's back.
    let t = task_in(s, tool_task(run.id, "b", TaskStatus::Dispatched)).await;
    let mut tx = s.begin().await.unwrap();
    let Locked { task: before, .. } = tx
        .lock(RunLock {
            run_id: run.id,
            with: LockReads::Task(t.id),
        })
        .await
        .unwrap();
    let before = before.expect("the task");
    move_without_the_lock(s, &before).await;
    let mut next = before.clone();
    next.status = TaskStatus::Completed;
    assert!(
        tx.update_task(TaskUpdate::new(&next, before.generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    assert!(
        tx.commit().await.is_err(),
        "the buffered update changed no row: the unit fails"
    );
    assert_eq!(s.task_by_id(t.id).await.unwrap().unwrap().status, TaskStatus::Failed);
}

/// PostgreSQL holds `Tx::update_task` over a row the unit knows as stored (`tx/known.rs`): one
/// it read with the run's lock, inserted under it or last wrote under it. The update's answer
/// and its changed columns come from that record, not from the caller's copy, which may carry
/// columns it already changed (a settle sets the content, then moves the status).
#[tokio::test]
async fn a_task_update_over_a_row_the_unit_knows_is_held() {
    let Some(ts) = testing::postgres().await else { return };
    let s = &ts.store;
    let f = fixture(s).await;
    let run = run_in(s, &f, RunStatus::Running).await;
    let t = task_in(s, tool_task(run.id, "a", TaskStatus::Dispatched)).await;

    let mut tx = s.begin().await.unwrap();
    let Locked { task: read, .. } = tx
        .lock(RunLock {
            run_id: run.id,
            with: LockReads::Task(t.id),
        })
        .await
        .unwrap();
    let mut mine = read.expect("the task");
    // The caller changes a column on its copy first, then moves the status over that copy.
    mine.content = Some("result".into());
    let mut next = mine.clone();
    next.status = TaskStatus::Completed;
    assert!(
        !tx.update_task(TaskUpdate::new(&next, mine.generation, &[TaskStatus::Waiting]))
            .await
            .unwrap()
    );
    assert!(
        tx.update_task(TaskUpdate::new(&next, mine.generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    // The record follows the write: the row is `completed` now.
    let mut again = next.clone();
    again.status = TaskStatus::Failed;
    assert!(
        !tx.update_task(TaskUpdate::new(&again, mine.generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    // A caller's copy of another generation expects that generation: no move.
    let stale = TaskRow {
        generation: mine.generation + 1,
        ..next.clone()
    };
    assert!(
        !tx.update_task(TaskUpdate::new(&again, stale.generation, &[TaskStatus::Completed]))
            .await
            .unwrap()
    );
    tx.commit().await.unwrap();
    let stored = s.task_by_id(t.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.content.as_deref()),
        (TaskStatus::Completed, Some("result")),
        "the content the caller set before the move is written too"
    );

    // Held, not sent: a row moved behind the lock's back fails the unit at its commit (an
    // update sent at once would have answered false instead).
    let t = task_in(s, tool_task(run.id, "b", TaskStatus::Dispatched)).await;
    let mut tx = s.begin().await.unwrap();
    let Locked { task: read, .. } = tx
        .lock(RunLock {
            run_id: run.id,
            with: LockReads::Task(t.id),
        })
        .await
        .unwrap();
    let read = read.expect("the task");
    move_without_the_lock(s, &read).await;
    let mut next = read.clone();
    next.status = TaskStatus::Completed;
    assert!(
        tx.update_task(TaskUpdate::new(&next, read.generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    assert!(
        tx.commit().await.is_err(),
        "the buffered update changed no row: the unit fails"
    );
    assert_eq!(s.task_by_id(t.id).await.unwrap().unwrap().status, TaskStatus::Failed);

    // A row the unit did not read under the lock is updated at once: a copy read before it
    // (here outdated by another unit) gets the database's answer, and the unit commits.
    let t = task_in(s, tool_task(run.id, "c", TaskStatus::Dispatched)).await;
    move_without_the_lock(s, &t).await;
    let mut tx = s.begin().await.unwrap();
    tx.lock_run(run.id).await.unwrap();
    let mut next = t.clone();
    next.status = TaskStatus::Completed;
    assert!(
        !tx.update_task(TaskUpdate::new(&next, t.generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    tx.commit().await.unwrap();
    assert_eq!(s.task_by_id(t.id).await.unwrap().unwrap().status, TaskStatus::Failed);
}

/// Another unit moves `row` (`dispatched`) to `failed` without taking its run's lock: a writer
/// that broke the lock order.
async fn move_without_the_lock(s: &Store, row: &TaskRow) {
    let mut other = s.begin().await.unwrap();
    let mut moved = row.clone();
    moved.status = TaskStatus::Failed;
    assert!(
        other
            .update_task(TaskUpdate::new(&moved, row.generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    other.commit().await.unwrap();
}

/// A reply's probe of the task keys it is about to use, and the insert of a job whose id the
/// caller needs, right after buffered writes: on PostgreSQL in the same simple query as the writes
/// (`postgres/unit/after_buffered.rs`), with the same answers as on their own.
#[tokio::test]
async fn the_used_keys_and_a_job_after_held_writes() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let a = task_in(s, tool_task(run.id, "a", TaskStatus::Completed)).await;
        let b = task_in(s, tool_task(run.id, "b", TaskStatus::Waiting)).await;
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        tx.put_edge(b.id, a.id, EdgeKind::After).await.unwrap();
        // Unsorted, repeated, unknown, and one the text guard refuses (in use nowhere).
        let keys: Vec<String> = ["b", "z", "a", "b", "a\0"].map(String::from).to_vec();
        assert_eq!(tx.used_task_keys(run.id, &keys).await.unwrap(), vec!["a", "b"]);
        tx.put_edge(b.id, a.id, EdgeKind::Reads).await.unwrap();
        let job = NewJob {
            kind: JobKind::KernelTool,
            run_id: run.id,
            task_id: Some(b.id),
            generation: 1,
            available_at: NOW,
        };
        let job_id = tx.insert_job(job.clone()).await.unwrap();
        tx.commit().await.unwrap();
        let mut plain = s.begin().await.unwrap();
        assert_eq!(plain.used_task_keys(run.id, &keys).await.unwrap(), vec!["a", "b"]);
        let stored = plain
            .job_by_id(job_id)
            .await
            .unwrap()
            .expect("the job inserted after buffered writes");
        assert_eq!(
            (stored.task_id, stored.attempts, stored.locked_by),
            (Some(b.id), 0, None)
        );
        assert_eq!(plain.edges_from(b.id).await.unwrap().len(), 2);
        plain.rollback().await.unwrap();

        // A buffered write the database refuses (an edge to no row) fails the statement it travels
        // with, or itself where writes run at once: the unit is void and keeps nothing.
        for probe_keys in [true, false] {
            let mut tx = s.begin().await.unwrap();
            tx.lock_run(run.id).await.unwrap();
            let held = tx.put_edge(a.id, i64::MAX, EdgeKind::After).await;
            let after = if probe_keys {
                tx.used_task_keys(run.id, &keys).await.map(|_| ())
            } else {
                tx.insert_job(job.clone()).await.map(|_| ())
            };
            assert!(held.is_err() || after.is_err(), "{}: {held:?} {after:?}", ts.dialect);
            assert!(tx.is_void());
            assert!(tx.commit().await.is_err());
        }
        let mut after = s.begin().await.unwrap();
        assert!(after.edges_from(a.id).await.unwrap().is_empty());
        after.rollback().await.unwrap();
    });
}

/// A settle's first look around its row (`Graph::load_around`) is one statement: the edges into
/// the row in order, or nothing when the run holds a kernel-held (`running`) await.
#[tokio::test]
async fn the_edges_into_a_row_unless_the_run_awaits() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let a = task_in(s, tool_task(run.id, "a", TaskStatus::Completed)).await;
        let b = task_in(s, tool_task(run.id, "b", TaskStatus::Waiting)).await;
        let c = task_in(s, tool_task(run.id, "c", TaskStatus::Waiting)).await;
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        assert_eq!(tx.edges_into_unless_awaiting(run.id, a.id).await.unwrap(), Some(vec![]));
        tx.put_edge(c.id, a.id, EdgeKind::After).await.unwrap();
        tx.put_edge(b.id, a.id, EdgeKind::Reads).await.unwrap();
        tx.put_edge(b.id, a.id, EdgeKind::After).await.unwrap();
        let edge = |task_id: i64, kind: EdgeKind| EdgeRow {
            task_id,
            depends_on_id: a.id,
            kind,
        };
        assert_eq!(
            tx.edges_into_unless_awaiting(run.id, a.id).await.unwrap(),
            Some(vec![
                edge(b.id, EdgeKind::After),
                edge(b.id, EdgeKind::Reads),
                edge(c.id, EdgeKind::After)
            ])
        );
        // The dependencies of a row, read right after a buffered edge (on PostgreSQL in the same
        // simple query as the edge's insert: `postgres/unit/after_buffered.rs`).
        tx.put_edge(c.id, b.id, EdgeKind::After).await.unwrap();
        let from_c = vec![
            edge(c.id, EdgeKind::After),
            EdgeRow {
                task_id: c.id,
                depends_on_id: b.id,
                kind: EdgeKind::After,
            },
        ];
        assert_eq!(tx.edges_from(c.id).await.unwrap(), from_c);
        // A kernel-held wait in the run: the caller reads the whole run instead (again after a
        // buffered write).
        tx.insert_task(NewTask {
            kind: TaskKind::Await,
            ..tool_task(run.id, "w", TaskStatus::Running)
        })
        .await
        .unwrap();
        tx.put_edge(b.id, c.id, EdgeKind::After).await.unwrap();
        assert_eq!(tx.edges_into_unless_awaiting(run.id, a.id).await.unwrap(), None);
        tx.commit().await.unwrap();

        // A buffered write the database refuses (an edge to no row) fails the read it travels
        // with, or itself where writes run at once: the unit is void and keeps nothing.
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        let held = tx.put_edge(c.id, i64::MAX, EdgeKind::After).await;
        let read = tx.edges_from(c.id).await;
        assert!(held.is_err() || read.is_err(), "{}: {held:?} {read:?}", ts.dialect);
        assert!(tx.is_void());
        assert!(tx.commit().await.is_err());
        assert_eq!(s.begin().await.unwrap().edges_from(c.id).await.unwrap(), from_c);
    });
}

/// A `kernel_tool` job's claim and its evaluation's lock (`Store::take_kernel_job`): the job is
/// deleted, and the delete kept even when the evaluation's unit rolls back; a job already gone
/// opens no unit; a `tool_search` call's lock brings its declaring row's head on PostgreSQL
/// (and nothing the caller must not read again on SQLite).
#[tokio::test]
async fn a_kernel_jobs_claim_leads_its_evaluation() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let round = task_in(s, tool_task(run.id, "r1", TaskStatus::Completed)).await;
        let search = task_in(
            s,
            NewTask {
                declaring_task_id: Some(round.id),
                tool_name: Some("tool_search".into()),
                ..tool_task(run.id, "r1.c1", TaskStatus::Running)
            },
        )
        .await;
        let other = task_in(
            s,
            NewTask {
                declaring_task_id: Some(round.id),
                ..tool_task(run.id, "r1.c2", TaskStatus::Running)
            },
        )
        .await;
        let job = |task_id: i64| NewJob {
            kind: JobKind::KernelTool,
            run_id: run.id,
            task_id: Some(task_id),
            generation: 1,
            available_at: NOW,
        };
        let mut tx = s.begin().await.unwrap();
        let first = tx.insert_job(job(search.id)).await.unwrap();
        let second = tx.insert_job(job(other.id)).await.unwrap();
        tx.commit().await.unwrap();

        let (tx, lock) = s
            .take_kernel_job(first, run.id, search.id)
            .await
            .unwrap()
            .expect("the job is there");
        assert_eq!(lock.run.id, run.id);
        assert_eq!(lock.task.as_ref().map(|t| t.id), Some(search.id));
        match ts.dialect {
            "postgres" => {
                let head = lock.search_head.expect("the declaring row's head, with the lock");
                assert_eq!(
                    (head.id, head.kind, head.declaring_task_id),
                    (round.id, TaskKind::Tool, None)
                );
            }
            _ => assert!(lock.search_head.is_none()),
        }
        // The evaluation rolls back; the claim stays.
        tx.rollback().await.unwrap();
        assert!(s.job_by_id(first).await.unwrap().is_none(), "{}", ts.dialect);
        assert!(s.take_kernel_job(first, run.id, search.id).await.unwrap().is_none());

        // Not a `tool_search` call: no head. The claimed job's evaluation commits.
        let (mut tx, lock) = s.take_kernel_job(second, run.id, other.id).await.unwrap().unwrap();
        assert!(lock.search_head.is_none());
        tx.put_edge(other.id, round.id, EdgeKind::After).await.unwrap();
        tx.commit().await.unwrap();
        assert!(s.job_by_id(second).await.unwrap().is_none());
        // A claim that found no job left no lock behind.
        let mut after = s.begin().await.unwrap();
        after.lock_run(run.id).await.unwrap();
        assert_eq!(after.edges_from(other.id).await.unwrap().len(), 1);
        after.rollback().await.unwrap();
    });
}

/// The run locked and a write held, then [`Tx::around_settled`] of `settled`, as a round's
/// call (a row with `declaring_task_id`) when `call`.
async fn probe_after_held(tx: &mut Tx, settled: &TaskRow, call: bool) -> AroundSettled {
    let run_id = settled.run_id;
    tx.lock_run(run_id).await.unwrap();
    let job = NewJob {
        kind: JobKind::KernelTool,
        run_id,
        task_id: None,
        generation: 1,
        available_at: NOW,
    };
    tx.put_job(job).await.unwrap();
    let settled = TaskRow {
        declaring_task_id: call.then_some(settled.id),
        ..settled.clone()
    };
    tx.around_settled(&settled).await.unwrap()
}

/// What a settle reads next ([`Tx::around_settled`]): on PostgreSQL, after buffered writes,
/// with the edges, each dependent's rows as [`Tx::task_and_deps`] would answer them when the
/// settled row is a round's call (the store expects its continuation to depend on it), and
/// otherwise the run's end-of-run read as [`Tx::tasks_if_quiescent`] would answer it when the
/// row has no dependent (and the run no kernel-held await); on SQLite neither is read.
#[tokio::test]
async fn what_a_settle_reads_next_rides_with_the_dependents_probe() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let a = task_in(s, tool_task(run.id, "a", TaskStatus::Completed)).await;
        let b = task_in(s, tool_task(run.id, "b", TaskStatus::Completed)).await;
        let pg = ts.dialect == "postgres";
        // No round's call, no dependent found, every row settled: the run's rows, as the plain read
        // answers them.
        let mut tx = s.begin().await.unwrap();
        let probe = probe_after_held(&mut tx, &a, false).await;
        assert_eq!(probe.edges, Some(vec![]));
        assert!(probe.dependents.is_empty());
        let plain = tx.tasks_if_quiescent(run.id).await.unwrap();
        assert_eq!(plain.as_ref().map(Vec::len), Some(2));
        assert_eq!(probe.quiescence, pg.then_some(plain));
        tx.rollback().await.unwrap();
        // A round's call and no dependent found: neither read is made.
        let mut tx = s.begin().await.unwrap();
        let probe = probe_after_held(&mut tx, &a, true).await;
        assert_eq!(probe.edges, Some(vec![]));
        assert_eq!(probe.quiescence, None);
        assert!(probe.dependents.is_empty());
        tx.rollback().await.unwrap();
        // An open row elsewhere in the run: read, and not quiescent.
        let open = task_in(s, tool_task(run.id, "c", TaskStatus::Waiting)).await;
        let mut tx = s.begin().await.unwrap();
        let probe = probe_after_held(&mut tx, &a, false).await;
        assert_eq!(probe.quiescence, pg.then_some(None));
        tx.rollback().await.unwrap();
        // Dependents (one on two rows, one on this row alone, their edges buffered until the
        // probe): the end-of-run read is not made (the cascade may change what it would
        // answer); each dependent's rows are, as the plain read answers them.
        let framed = NewTask {
            frozen_context: Some("the frozen context".into()),
            ..tool_task(run.id, "d", TaskStatus::Waiting)
        };
        let lone = task_in(s, framed).await;
        let mut tx = s.begin().await.unwrap();
        tx.put_edge(open.id, a.id, EdgeKind::After).await.unwrap();
        tx.put_edge(open.id, b.id, EdgeKind::After).await.unwrap();
        tx.put_edge(open.id, b.id, EdgeKind::Reads).await.unwrap();
        tx.put_edge(lone.id, b.id, EdgeKind::After).await.unwrap();
        let probe = probe_after_held(&mut tx, &b, true).await;
        assert_eq!(probe.edges.map(|e| e.len()), Some(3));
        assert_eq!(probe.quiescence, None);
        if pg {
            assert_eq!(probe.dependents.len(), 2);
            for d in [open.id, lone.id] {
                assert_eq!(probe.dependents[&d], tx.task_and_deps(d).await.unwrap(), "{d}");
            }
            assert_eq!(probe.dependents[&open.id].len(), 3);
            let read = &probe.dependents[&lone.id][1];
            assert_eq!(read.frozen_context.as_deref(), Some("the frozen context"));
            // No round's call: the rows are left to the caller's own reads, and the
            // end-of-run read finds a dependent.
            let unexpected = probe_after_held(&mut tx, &b, false).await;
            assert_eq!(unexpected.edges.map(|e| e.len()), Some(3));
            assert!(unexpected.dependents.is_empty());
            assert_eq!(unexpected.quiescence, None);
        } else {
            assert!(probe.dependents.is_empty());
        }
        tx.rollback().await.unwrap();
    });
}

/// A task inserted while the unit holds writes (on PostgreSQL it ends their simple query)
/// answers the row the plain insert would, frozen context included, and reads back as stored;
/// a key already used is `Conflict` (on PostgreSQL the unit is then void, as after the plain
/// insert's).
#[tokio::test]
async fn a_task_inserted_after_held_writes_is_the_plain_inserts_row() {
    each_engine!(|ts| {
        let s = &ts.store;
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let first = task_in(s, tool_task(run.id, "first", TaskStatus::Completed)).await;
        let new = NewTask {
            frozen_context: Some("it's a frozen \\ context".into()),
            structured_present: true,
            tool_input: Some("{\"q\":\"x\"}".into()),
            deadline_at: Some(NOW + 5),
            ..tool_task(run.id, "second", TaskStatus::Waiting)
        };
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        tx.put_edge(first.id, first.id, EdgeKind::After).await.unwrap();
        let inserted = tx.insert_task(new.clone()).await.unwrap();
        assert_eq!(inserted.key, "second");
        assert_eq!(inserted.frozen_context, new.frozen_context);
        assert!(inserted.structured_present);
        assert_eq!(inserted.deadline_at, Some(NOW + 5));
        assert_eq!(tx.task_by_id(inserted.id).await.unwrap(), Some(inserted.clone()));
        tx.commit().await.unwrap();
        assert_eq!(s.task_by_id(inserted.id).await.unwrap(), Some(inserted));

        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        tx.put_edge(first.id, first.id, EdgeKind::Reads).await.unwrap();
        assert!(matches!(tx.insert_task(new).await, Err(StoreError::Conflict(_))));
        if ts.dialect == "postgres" {
            assert!(matches!(tx.task_by_id(first.id).await, Err(StoreError::TxAborted)));
        }
        drop(tx);
    });
}

/// Rows inserted under ids a key probe took after buffered writes: on PostgreSQL each insert is
/// held (a used key is accepted by the insert and fails the unit's next statement, which voids
/// it), its row is built as the plain insert's and stored as built, and the ids ascend in insert
/// order; an insert made before the probe, or past its ids, uses the identity. On SQLite every
/// insert runs at once.
#[tokio::test]
async fn rows_inserted_under_reserved_ids_are_held_and_stored_as_built() {
    each_engine!(|ts| {
        let s = &ts.store;
        let pg = ts.dialect == "postgres";
        let f = fixture(s).await;
        let run = run_in(s, &f, RunStatus::Running).await;
        let first = task_in(s, tool_task(run.id, "first", TaskStatus::Completed)).await;
        let framed = NewTask {
            frozen_context: Some("it's a reserved \\ context".into()),
            structured_present: true,
            tool_input: Some("{\"q\":\"y\"}".into()),
            ..tool_task(run.id, "second", TaskStatus::Waiting)
        };
        let third = NewTask {
            deadline_at: Some(NOW + 7),
            declaring_task_id: Some(first.id),
            ..tool_task(run.id, "third", TaskStatus::Waiting)
        };
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        tx.put_edge(first.id, first.id, EdgeKind::After).await.unwrap();
        let keys = ["second".to_string(), "third".to_string()];
        assert!(tx.used_task_keys(run.id, &keys).await.unwrap().is_empty());
        let second = tx.insert_task(framed.clone()).await.unwrap();
        let third = tx.insert_task(third).await.unwrap();
        // The edge needs both rows: held after them, it goes out in the same query.
        tx.put_edge(third.id, second.id, EdgeKind::After).await.unwrap();
        let job = NewJob {
            kind: JobKind::KernelTool,
            run_id: run.id,
            task_id: Some(third.id),
            generation: 1,
            available_at: NOW,
        };
        let job_id = tx.insert_job(job.clone()).await.unwrap();
        assert!(first.id < second.id && second.id < third.id);
        assert_eq!(second.frozen_context, framed.frozen_context);
        assert_eq!(third.deadline_at, Some(NOW + 7));
        tx.commit().await.unwrap();
        assert_eq!(s.task_by_id(second.id).await.unwrap(), Some(second.clone()));
        assert_eq!(s.task_by_id(third.id).await.unwrap(), Some(third.clone()));
        let stored = s.job_by_id(job_id).await.unwrap().expect("the job");
        assert_eq!(
            (
                stored.kind,
                stored.task_id,
                stored.generation,
                stored.locked_by,
                stored.attempts
            ),
            (job.kind, Some(third.id), 1, None, 0)
        );
        let mut read = s.begin().await.unwrap();
        let deps = read.task_and_deps(third.id).await.unwrap();
        assert_eq!(deps.iter().map(|t| t.id).collect::<Vec<_>>(), vec![second.id, third.id]);
        read.rollback().await.unwrap();

        // A used key under a reserved id: PostgreSQL holds the insert, and the unit fails when
        // the writes go out; nothing of it is stored. SQLite answers `Conflict` at once.
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        tx.put_edge(first.id, first.id, EdgeKind::Reads).await.unwrap();
        tx.used_task_keys(run.id, &keys).await.unwrap();
        let dup = tx.insert_task(framed.clone()).await;
        if pg {
            assert!(dup.is_ok(), "{dup:?}");
            assert!(tx.commit().await.is_err());
        } else {
            assert!(matches!(dup, Err(StoreError::Conflict(_))), "{dup:?}");
            drop(tx);
        }
        let mut read = s.begin().await.unwrap();
        let rows = read.tasks_of_run(run.id).await.unwrap();
        assert_eq!(rows.iter().filter(|t| t.key == "second").count(), 1);
        let edges = read.edges_of_run(run.id).await.unwrap();
        assert!(edges.iter().all(|e| e.kind == EdgeKind::After), "{edges:?}");
        read.rollback().await.unwrap();

        // An insert before any probe uses the identity; a probe takes ids for as many rows as
        // it names keys, and an insert past them uses the identity again.
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        let early = tx
            .insert_task(tool_task(run.id, "early", TaskStatus::Waiting))
            .await
            .unwrap();
        tx.put_edge(early.id, first.id, EdgeKind::After).await.unwrap();
        tx.used_task_keys(run.id, &["late".to_string()]).await.unwrap();
        let late = tx
            .insert_task(tool_task(run.id, "late", TaskStatus::Waiting))
            .await
            .unwrap();
        let later = tx
            .insert_task(tool_task(run.id, "later", TaskStatus::Waiting))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(s.task_by_id(late.id).await.unwrap(), Some(late.clone()));
        assert_eq!(s.task_by_id(later.id).await.unwrap(), Some(later.clone()));
        assert!(later.id > late.id);
        if pg {
            // The failed unit's reserved id is a gap; nothing after it.
            assert!(early.id > third.id);
            assert_eq!(late.id, early.id + 1);
        }
    });
}
