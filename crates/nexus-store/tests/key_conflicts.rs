//! A key already used means one thing on both engines (the unit's contract, `src/tx.rs`): a
//! task key in its run, or a sealed generation, is `StoreError::Conflict`, whichever call of
//! the unit answers it (the insert, or the read or commit a buffered insert travels with), and
//! it voids the unit: every later call and the commit answer `TxAborted`, and nothing of the
//! unit is stored. On every available engine (SQLite always; PostgreSQL with
//! `NEXUS_TEST_DATABASE_URL`, required with `NEXUS_REQUIRE_POSTGRES=1`).

use nexus_store::testing;
use nexus_store::*;
use serde_json::json;

const NOW: i64 = 1_700_000_000_000;

fn task(run_id: i64, key: &str) -> NewTask {
    NewTask {
        run_id,
        key: key.into(),
        kind: TaskKind::Tool,
        status: TaskStatus::Waiting,
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

fn job(run_id: i64, task_id: i64) -> NewJob {
    NewJob {
        kind: JobKind::KernelTool,
        run_id,
        task_id: Some(task_id),
        generation: 1,
        available_at: NOW,
    }
}

/// A running run with the committed task `a`.
async fn run_with_a(s: &Store) -> (RunRow, TaskRow) {
    let (_, ws, member) = testing::seed_member(s, NOW).await;
    let mut tx = s.begin().await.unwrap();
    let run = tx
        .insert_run(testing::new_run(ws.id, member.id, RunStatus::Running, NOW))
        .await
        .unwrap();
    let a = tx.insert_task(task(run.id, "a")).await.unwrap();
    tx.commit().await.unwrap();
    (run, a)
}

/// What answers the used key after the insert: the next read of the unit, or its commit.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Then {
    Read,
    Commit,
}

/// `insert` answered; when it was not the conflict, `then` must be. Afterwards (unless the
/// commit answered) every call and the commit answer `TxAborted`.
async fn conflict_at_insert_or_next(
    tx: &mut Option<Tx>,
    inserted: Result<TaskRow>,
    run: &RunRow,
    then: Then,
    what: &str,
) {
    let unit = tx.as_mut().unwrap();
    match inserted {
        Err(StoreError::Conflict(_)) => assert!(unit.is_void(), "{what}"),
        Ok(_) => {
            let next = match then {
                Then::Read => unit.task_by_key(run.id, "n1").await.map(|_| ()),
                Then::Commit => tx.take().unwrap().commit().await,
            };
            assert!(matches!(next, Err(StoreError::Conflict(_))), "{what}: {next:?}");
        }
        Err(e) => panic!("{what}: the insert under a used key answered {e:?}"),
    }
    let Some(mut unit) = tx.take() else {
        return;
    };
    assert!(unit.is_void(), "{what}");
    let later = [
        unit.task_by_key(run.id, "a").await.map(|_| ()),
        unit.put_job(job(run.id, 1)).await,
        unit.append_event(run.id, EventKind::TaskClaimed, None, &json!({}), NOW)
            .await
            .map(|_| ()),
        unit.lock_run(run.id).await.map(|_| ()),
    ];
    for answer in later {
        assert!(matches!(answer, Err(StoreError::TxAborted)), "{what}: {answer:?}");
    }
    assert!(matches!(unit.commit().await, Err(StoreError::TxAborted)), "{what}");
}

/// Nothing of a voided unit is stored: no task but `a`, no job, no event, one sealed request
/// at most (the first seal's).
async fn nothing_stored(s: &Store, run: &RunRow, what: &str) {
    assert_eq!(s.latest_event_sequence(run.id).await.unwrap(), 0, "{what}");
    let counts = [("tasks", 1), ("jobs", 0), ("task_edges", 0), ("events", 0)];
    for (table, n) in counts {
        let stored = testing::row_count(s, table, "true").await.unwrap();
        assert_eq!(stored, n, "{what}: {table}");
    }
    assert!(
        testing::row_count(s, "sealed_requests", "true").await.unwrap() <= 1,
        "{what}"
    );
}

#[tokio::test]
async fn a_used_task_key_is_conflict_and_voids_the_unit() {
    for ts in testing::engines().await {
        let s = &ts.store;
        let (run, a) = run_with_a(s).await;
        for then in [Then::Read, Then::Commit] {
            // Right after the lock: the insert is the unit's next statement.
            let what = format!("{}, after the lock, {then:?}", ts.dialect);
            let mut unit = s.begin().await.unwrap();
            let lock = RunLock {
                run_id: run.id,
                with: LockReads::Task(a.id),
            };
            unit.lock(lock).await.unwrap();
            let inserted = unit.insert_task(task(run.id, "a")).await;
            conflict_at_insert_or_next(&mut Some(unit), inserted, &run, then, &what).await;
            nothing_stored(s, &run, &what).await;

            // After buffered writes and a key probe that took ids ahead of the inserts: the
            // inserts may travel with the unit's next read or its commit.
            let what = format!("{}, after a key probe, {then:?}", ts.dialect);
            let mut unit = s.begin().await.unwrap();
            unit.lock_run(run.id).await.unwrap();
            unit.put_job(job(run.id, a.id)).await.unwrap();
            unit.append_event(run.id, EventKind::TaskClaimed, Some("a"), &json!({}), NOW)
                .await
                .unwrap();
            let keys: Vec<String> = ["n1", "n2", "n3"].map(String::from).to_vec();
            assert!(unit.used_task_keys(run.id, &keys).await.unwrap().is_empty(), "{what}");
            let n1 = unit.insert_task(task(run.id, "n1")).await.unwrap();
            unit.put_edge(n1.id, a.id, EdgeKind::After).await.unwrap();
            unit.insert_job(job(run.id, n1.id)).await.unwrap();
            let inserted = unit.insert_task(task(run.id, "a")).await;
            conflict_at_insert_or_next(&mut Some(unit), inserted, &run, then, &what).await;
            nothing_stored(s, &run, &what).await;
        }
    }
}

#[tokio::test]
async fn a_sealed_generation_is_conflict_and_voids_the_unit() {
    for ts in testing::engines().await {
        let s = &ts.store;
        let (run, a) = run_with_a(s).await;
        let new = NewSealedRequest {
            task_id: a.id,
            generation: 1,
            record: r#"{"entries":[]}"#.into(),
            body_sha256: "0a".repeat(32),
            request_bytes: 2,
            tools_sha256: None,
            body: b"{}".to_vec(),
            attempts: "[]".into(),
            created_at: NOW,
            record_base: None,
            body_base: None,
        };
        let seal = RunLock {
            run_id: run.id,
            with: LockReads::Seal(&new),
        };
        let mut unit = s.begin().await.unwrap();
        let first = unit.lock(seal).await.unwrap();
        assert!(first.sealed.is_some(), "{}", ts.dialect);
        unit.commit().await.unwrap();

        // The seal's lock, and the insert after buffered writes, of the generation sealed.
        for buffered in [false, true] {
            let what = format!("{}, buffered writes first: {buffered}", ts.dialect);
            let mut unit = s.begin().await.unwrap();
            let answer = if buffered {
                unit.lock_run(run.id).await.unwrap();
                unit.put_job(job(run.id, a.id)).await.unwrap();
                unit.append_event(run.id, EventKind::TaskClaimed, Some("a"), &json!({}), NOW)
                    .await
                    .unwrap();
                unit.insert_sealed_request(new.clone()).await.map(|_| ())
            } else {
                unit.lock(seal).await.map(|_| ())
            };
            assert!(matches!(answer, Err(StoreError::Conflict(_))), "{what}: {answer:?}");
            assert!(unit.is_void(), "{what}");
            let later = [
                unit.sealed_request(a.id, 1).await.map(|_| ()),
                unit.put_job(job(run.id, a.id)).await,
                unit.lock_run(run.id).await.map(|_| ()),
            ];
            for answer in later {
                assert!(matches!(answer, Err(StoreError::TxAborted)), "{what}: {answer:?}");
            }
            assert!(matches!(unit.commit().await, Err(StoreError::TxAborted)), "{what}");
            nothing_stored(s, &run, &what).await;
        }
    }
}
