//! SQLite's writer gate (sqlite.rs): concurrent writers in one process queue on an async mutex
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
