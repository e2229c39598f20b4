//! SQLite's writer gate (src/sqlite/gate.rs): concurrent writers in one process queue on an async mutex
//! instead of spinning in SQLite's busy handler, and a writer that cannot get the gate within
//! the busy timeout answers `StoreError::Busy` (the kernel's `503 unavailable`) instead of
//! hanging or surfacing SQLite's "database is locked".

use std::time::Duration;

use nexus_store::testing;
use nexus_store::*;
use uuid::Uuid;

const NOW: i64 = 1_700_000_000_000;

/// 32 writers × 25 rounds of a unit of work (held across an await) and a single-statement
/// write, all at once on one file store: every one commits, and every row is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_all_commit() {
    let ts = testing::sqlite().await;
    let mut handles = Vec::new();
    for t in 0..32 {
        let s = ts.store.clone();
        handles.push(tokio::spawn(async move {
            for i in 0..25 {
                let mut tx = s.begin().await.expect("begin");
                assert!(
                    tx.insert_blob(&format!("blob-{t}-{i}"), 1, NOW)
                        .await
                        .expect("insert_blob")
                );
                tokio::task::yield_now().await;
                tx.commit().await.expect("commit");
                s.ensure_account(Uuid::now_v7(), &format!("acct-{t}-{i}"), NOW)
                    .await
                    .expect("ensure_account");
            }
        }));
    }
    for h in handles {
        h.await.expect("writer task");
    }
    // Every blob landed once: a second insert of each is a no-op.
    let mut tx = ts.store.begin().await.unwrap();
    for t in 0..32 {
        for i in 0..25 {
            assert!(!tx.insert_blob(&format!("blob-{t}-{i}"), 1, NOW).await.unwrap());
        }
    }
    tx.rollback().await.unwrap();
}

/// A writer that cannot get the gate within the busy timeout answers `Busy`, promptly.
#[tokio::test]
async fn a_held_gate_answers_busy_after_the_busy_timeout() {
    let ts = testing::sqlite().await;
    let mut options = StoreOptions::new(ts.url.clone());
    options.sqlite_busy_timeout_ms = 200;
    options.single_node_lock = false;
    let s = Store::open(&options).await.expect("open");
    let held = s.begin().await.expect("begin");
    let started = std::time::Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(10), s.ensure_account(Uuid::now_v7(), "late", NOW))
        .await
        .expect("the write must not hang")
        .expect_err("the gate is held");
    assert!(matches!(err, StoreError::Busy), "{err:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "{:?}",
        started.elapsed()
    );
    let err = tokio::time::timeout(Duration::from_secs(10), s.begin())
        .await
        .expect("begin must not hang")
        .expect_err("the gate is held");
    assert!(matches!(err, StoreError::Busy), "{err:?}");
    // Once the holder is gone, writes go through again.
    drop(held);
    s.ensure_account(Uuid::now_v7(), "after", NOW)
        .await
        .expect("write after release");
}

/// Whether the blob row `name` is committed (a fresh unit that finds it rolls back).
async fn has_blob(s: &Store, name: &str) -> bool {
    let mut tx = s.begin().await.expect("begin");
    let inserted = tx.insert_blob(name, 1, NOW).await.expect("insert_blob");
    tx.rollback().await.expect("rollback");
    !inserted
}

/// Group commit (sqlite/group.rs): a unit that commits while another writer is queued joins
/// that writer's transaction, so its `commit` returns only once the group's one `COMMIT` ran —
/// after the queued unit ended — and both units' rows are there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_committing_before_a_queued_writer_returns_with_the_group_commit() {
    let ts = testing::sqlite().await;
    let s = ts.store.clone();
    let mut a = s.begin().await.expect("begin a");
    assert!(a.insert_blob("group-a", 1, NOW).await.unwrap());
    let (b_open_tx, b_open) = tokio::sync::oneshot::channel();
    let (b_go_tx, b_go) = tokio::sync::oneshot::channel::<()>();
    let sb = s.clone();
    let b = tokio::spawn(async move {
        let mut tx = sb.begin().await.expect("begin b");
        assert!(tx.insert_blob("group-b", 1, NOW).await.unwrap());
        b_open_tx.send(()).unwrap();
        b_go.await.unwrap();
        tx.commit().await.expect("commit b");
    });
    tokio::time::sleep(Duration::from_millis(100)).await; // b is queued for the gate
    let a_commit = tokio::spawn(async move { a.commit().await });
    b_open.await.unwrap(); // b holds the gate inside a's transaction
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!a_commit.is_finished(), "a's commit must wait for the group's COMMIT");
    b_go_tx.send(()).unwrap();
    a_commit.await.unwrap().expect("commit a");
    b.await.unwrap();
    assert!(has_blob(&s, "group-a").await);
    assert!(has_blob(&s, "group-b").await);
}

/// A unit that rolls back (or is dropped) inside a group undoes only its own work; the
/// member before it still commits. A single-statement write that finds a group open commits it
/// first and then runs on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_inside_a_group_undoes_only_its_own_unit() {
    let ts = testing::sqlite().await;
    let s = ts.store.clone();
    for (i, ending) in ["rollback", "drop", "statement"].into_iter().enumerate() {
        let keep = format!("keep-{i}");
        let lose = format!("lose-{i}");
        let mut a = s.begin().await.expect("begin a");
        assert!(a.insert_blob(&keep, 1, NOW).await.unwrap());
        let sb = s.clone();
        let lose_b = lose.clone();
        let b = tokio::spawn(async move {
            if ending == "statement" {
                sb.ensure_account(Uuid::now_v7(), &lose_b, NOW)
                    .await
                    .expect("single write");
                return;
            }
            let mut tx = sb.begin().await.expect("begin b");
            assert!(tx.insert_blob(&lose_b, 1, NOW).await.unwrap());
            if ending == "rollback" {
                tx.rollback().await.expect("rollback b");
            } else {
                drop(tx);
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await; // b is queued
        tokio::time::timeout(Duration::from_secs(10), a.commit())
            .await
            .expect("a's commit must not hang")
            .expect("commit a");
        b.await.unwrap();
        assert!(has_blob(&s, &keep).await, "{ending}: the first unit's row");
        if ending != "statement" {
            assert!(!has_blob(&s, &lose).await, "{ending}: the undone unit's row");
        }
    }
}

/// A member never waits on a queued writer that went away (its caller's future dropped): it
/// queues for the gate itself and commits its group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_commits_when_the_queued_writer_goes_away() {
    let ts = testing::sqlite().await;
    let s = ts.store.clone();
    for round in 0..20 {
        let name = format!("alone-{round}");
        let mut a = s.begin().await.expect("begin a");
        assert!(a.insert_blob(&name, 1, NOW).await.unwrap());
        let sb = s.clone();
        let b = tokio::spawn(async move {
            let tx = sb.begin().await.expect("begin b");
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(tx);
        });
        tokio::time::sleep(Duration::from_millis(20)).await; // b is queued
        let commit = tokio::spawn(async move { a.commit().await });
        // Abort b at varying points: still queued, or just handed the gate.
        tokio::time::sleep(Duration::from_micros(round * 50)).await;
        b.abort();
        tokio::time::timeout(Duration::from_secs(10), commit)
            .await
            .expect("the member must not hang")
            .unwrap()
            .expect("commit a");
        assert!(has_blob(&s, &name).await);
    }
}

/// A group whose waiting member and queued writer both went away (their futures dropped, as a
/// closed connection drops a request) still commits, with no later writer to settle it: the
/// member leaves a task that does. Driven by hand in one task, so the order is exact: b queues,
/// a merges and waits, b goes away with the gate handed to it, then a goes away. The run row
/// shows up to a reader, which never takes the gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_whose_waiters_went_away_still_commits() {
    let ts = testing::sqlite().await;
    let s = ts.store.clone();
    let (_, ws, member) = testing::seed_member(&s, NOW).await;
    let mut a = s.begin().await.expect("begin a");
    let run = a
        .insert_run(testing::new_run(ws.id, member.id, RunStatus::Pending, NOW))
        .await
        .expect("insert_run");
    let mut b = Box::pin(s.begin());
    assert!(
        tokio::time::timeout(Duration::ZERO, &mut b).await.is_err(),
        "b queues for the gate a holds"
    );
    let mut commit = Box::pin(a.commit());
    assert!(
        tokio::time::timeout(Duration::ZERO, &mut commit).await.is_err(),
        "a merges its unit and waits for the group (b is queued)"
    );
    drop(b);
    drop(commit);
    let mut seen = None;
    for _ in 0..500 {
        seen = s.run_by_id(run.id).await.unwrap();
        if seen.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen.is_some(), "the grouped unit was never committed");
    // And the gate is free again.
    s.ensure_account(Uuid::now_v7(), "after", NOW)
        .await
        .expect("a later write");
}

/// The gate's use counts every unit of work that ends (committed, rolled back or dropped), the
/// time each held the gate and the `COMMIT`s run; PostgreSQL has no gate to report.
#[tokio::test]
async fn the_writer_gate_use_counts_units_and_their_time() {
    let ts = testing::sqlite().await;
    let s = &ts.store;
    let before = s.writer_gate_use().expect("SQLite reports its gate");
    let tx = s.begin().await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    tx.commit().await.unwrap();
    s.begin().await.unwrap().rollback().await.unwrap();
    drop(s.begin().await.unwrap());
    let after = s.writer_gate_use().expect("SQLite reports its gate");
    assert_eq!(after.units - before.units, 3);
    // Only the committed unit ran a `COMMIT` (alone: nobody queued behind it).
    assert_eq!(after.commits - before.commits, 1);
    assert!(
        after.held - before.held >= Duration::from_millis(20),
        "the committed unit held the gate across its sleep: {:?}",
        after.held - before.held
    );
    if let Some(pg) = testing::postgres().await {
        assert_eq!(pg.store.writer_gate_use(), None);
    }
}
