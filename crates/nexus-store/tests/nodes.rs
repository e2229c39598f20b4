//! What several nodes share on PostgreSQL besides the tables (`nodes.rs`): notices and the
//! database's clock; and the sweep's selection and run lock that let nodes divide expired
//! rows (`FOR UPDATE SKIP LOCKED`). SQLite has no notices or database clock (one node).

use std::time::Duration;

use nexus_store::testing::{self, TestStore};
use nexus_store::*;

const NOW: i64 = 1_700_000_000_000;

async fn pg() -> Option<TestStore> {
    testing::postgres().await
}

#[tokio::test]
async fn notices_reach_a_listener_of_the_same_schema_only_in_order() {
    let Some(ts) = pg().await else { return };
    let Some(other) = pg().await else { return };
    let s = &ts.store;
    assert!(s.is_shared());
    let mut listener = s.listen().await.unwrap();
    let mut elsewhere = other.store.listen().await.unwrap();
    assert_ne!(s.notice_channel(), other.store.notice_channel());
    s.notify_all(&["one".to_string(), "two|x".to_string(), "three".to_string()])
        .await
        .unwrap();
    s.notify_all(&[]).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let n = tokio::time::timeout(Duration::from_secs(5), listener.recv())
            .await
            .expect("a notice in time")
            .unwrap()
            .expect("not a reconnect");
        got.push(n.payload);
    }
    assert_eq!(got, ["one", "two|x", "three"]);
    // Another schema's listener heard nothing.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), elsewhere.recv())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn the_database_clock_is_read_in_the_statement() {
    let Some(ts) = pg().await else { return };
    let a = ts.store.database_clock_ms().await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let b = ts.store.database_clock_ms().await.unwrap().unwrap();
    assert!(b >= a + 20, "{a} {b}");
    // The test runs beside the database: the clocks agree within a minute.
    let local = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!((local - b).abs() < 60_000, "{local} {b}");
    let sqlite = testing::sqlite().await;
    assert_eq!(sqlite.store.database_clock_ms().await.unwrap(), None);
    assert_eq!(sqlite.store.notice_channel(), None);
    assert!(!sqlite.store.is_shared());
}

#[tokio::test]
async fn the_sweep_passes_over_rows_and_runs_another_unit_holds() {
    let Some(ts) = pg().await else { return };
    let s = &ts.store;
    let (_, ws, member) = testing::seed_member(s, NOW).await;
    let mut tx = s.begin().await.unwrap();
    let held = tx
        .insert_run(testing::new_run(ws.id, member.id, RunStatus::Running, NOW))
        .await
        .unwrap();
    let free = tx
        .insert_run(testing::new_run(ws.id, member.id, RunStatus::Running, NOW))
        .await
        .unwrap();
    let park = |run_id: i64| NewTask {
        run_id,
        key: "p".into(),
        kind: TaskKind::Tool,
        status: TaskStatus::Dispatched,
        generation: 1,
        origin: Origin::Author,
        on_failure: OnFailure::Propagate,
        visibility: Visibility::Collapsed,
        tool_name: Some("read_file".into()),
        tool_input: Some("{}".into()),
        deadline_at: Some(NOW - 1),
        created_at: NOW,
        ..Default::default()
    };
    let held_task = tx.insert_task(park(held.id)).await.unwrap();
    let free_task = tx.insert_task(park(free.id)).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        s.expired_parks(NOW, 0, 10).await.unwrap(),
        [(held.id, held_task.id), (free.id, free_task.id)]
    );

    // Another node settles the first row: it holds the run and the row.
    let mut other = s.begin().await.unwrap();
    other.lock_run(held.id).await.unwrap();
    let mut next = held_task.clone();
    next.status = TaskStatus::TimedOut;
    assert!(
        other
            .update_task(TaskUpdate::new(&next, held_task.generation, &[TaskStatus::Dispatched]))
            .await
            .unwrap()
    );
    // This node's selection passes over the held row, and its unit skips the held run.
    assert_eq!(s.expired_parks(NOW, 0, 10).await.unwrap(), [(free.id, free_task.id)]);
    let mut mine = s.begin().await.unwrap();
    assert!(mine.try_lock_run(held.id).await.unwrap().is_none());
    assert_eq!(mine.try_lock_run(free.id).await.unwrap().unwrap().id, free.id);
    mine.rollback().await.unwrap();
    other.rollback().await.unwrap();
    // Released, both are candidates again.
    assert_eq!(s.expired_parks(NOW, 0, 10).await.unwrap().len(), 2);
}
