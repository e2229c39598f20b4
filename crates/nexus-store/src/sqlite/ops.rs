//! The store's operations over a SQLite connection (see `crate::ops`), and this engine's own:
//! the task update that names only the changed columns, and the executor door's one read.

use super::driver::query;
use super::uid;
use crate::model::*;
#[allow(unused_imports)]
pub(crate) use crate::ops::all::*;
use crate::{Result, check_text, row, sql, write_error};
use rusqlite::Connection as Conn;

/// The conditional task update, writing only the columns that change.
///
/// SQLite maintains an index, and checks a foreign key, for every column named in an
/// `UPDATE`'s `SET` list, whether or not its value changes; `sql::UPDATE_TASK` names all 38
/// mutable columns, so each update rewrote every index of `tasks` and looked up every
/// referenced row. Inside a unit of work this engine holds the database's write lock, so it
/// reads the row (without its frozen context), checks the same conditions the full
/// statement's `WHERE` checks (generation, one of the expected statuses, the claim token),
/// and names only the changed columns. Same answer as `update_task_every_column`: false when
/// no row matches, true otherwise.
pub(crate) async fn update_task(
    c: &mut Conn,
    task: &TaskRow,
    expect_generation: i64,
    expect_statuses: &[TaskStatus],
    expect_claim_token: Option<&str>,
) -> Result<bool> {
    row::check_task_row_text(task)?;
    row::status_slots(expect_statuses)?;
    if c.is_autocommit() {
        // Not inside a unit of work: nothing holds the row still between a read and a write.
        return update_task_every_column(c, task, expect_generation, expect_statuses, expect_claim_token).await;
    }
    let current = match query(sql::TASK_MUTABLE_BY_ID)
        .bind(task.id)
        .fetch_optional(&mut *c)
        .await?
    {
        // Read without its frozen context (`TASK_MUTABLE_BY_ID`), which no update writes.
        Some(r) => row::task(&r)?.without_frozen(),
        None => return Ok(false),
    };
    update_changed(
        c,
        &current,
        task,
        expect_generation,
        expect_statuses,
        expect_claim_token,
        false,
    )
    .await
}

/// An executor door's rows in one statement (the write lock is held): the run `public_id`
/// as the account `account_id` finds it, and its task keyed `key`.
pub(crate) async fn open_door(
    c: &mut Conn,
    public_id: uuid::Uuid,
    account_id: i64,
    key: &str,
) -> Result<Option<(RunInAccount, Option<TaskRow>)>> {
    use crate::row::Columns;
    if check_text(key).is_err() {
        return Ok(run_in_account(c, public_id, account_id)
            .await?
            .map(|found| (found, None)));
    }
    // Decoded where the row lies: the door is read twice per settled task, and its 70-odd
    // columns are copied once, into the rows, not into driver values first.
    let door = query(sql::DOOR_SQLITE)
        .bind(uid(public_id))
        .bind(account_id)
        .bind(key)
        .fetch_optional_as(&mut *c, |r| {
            let Some(workspace_public_id) = r.opt_public_id("workspace_public_id")? else {
                return Ok(None);
            };
            let found = RunInAccount {
                run: row::run(&row::Prefixed(r, "r_"))?,
                workspace_public_id,
                creator_standing: r.opt_text("creator_standing")?.map(|s| row::standing(&s)).transpose()?,
            };
            let task = match r.opt_int("id")? {
                Some(_) => Some(row::task(r)?),
                None => None,
            };
            Ok(Some(match task {
                Some(p) => p.map(|t| (found, Some(t))),
                None => crate::frozen::Pending::ready((found, None)),
            }))
        })
        .await?;
    resolve_frozen_opt(c, door.flatten()).await
}

/// [`update_task`] over `before`, the row as this unit of work read it (under the write
/// lock, unchanged since): the conditions are checked on it and the row is not read again.
/// The `UPDATE` still names the generation, the status and the claim token, so a `before`
/// that was not current changes nothing.
pub(crate) async fn update_task_over(
    c: &mut Conn,
    before: &TaskRow,
    task: &TaskRow,
    expect_statuses: &[TaskStatus],
    expect_claim_token: Option<&str>,
) -> Result<bool> {
    row::check_task_row_text(task)?;
    row::status_slots(expect_statuses)?;
    if c.is_autocommit() || before.id != task.id {
        return update_task_every_column(c, task, before.generation, expect_statuses, expect_claim_token).await;
    }
    update_changed(
        c,
        before,
        task,
        before.generation,
        expect_statuses,
        expect_claim_token,
        true,
    )
    .await
}

/// Sets the columns of `task` that differ from `current` when `current` meets the
/// conditions; `guard` repeats them in the statement (`current` was not read here).
async fn update_changed(
    c: &mut Conn,
    current: &TaskRow,
    task: &TaskRow,
    expect_generation: i64,
    expect_statuses: &[TaskStatus],
    expect_claim_token: Option<&str>,
    guard: bool,
) -> Result<bool> {
    let matches = current.generation == expect_generation
        && expect_statuses.contains(&current.status)
        && expect_claim_token.is_none_or(|t| current.claim_token.as_deref() == Some(t));
    if !matches {
        return Ok(false);
    }
    let mut statement = String::from("UPDATE tasks SET ");
    let mut slot = 1;
    macro_rules! set_list {
        (; $($f:ident),*) => {$(
            if current.$f != task.$f {
                slot += 1;
                if slot > 2 {
                    statement.push_str(", ");
                }
                statement.push_str(concat!(stringify!($f), " = $"));
                statement.push_str(&slot.to_string());
            }
        )*};
    }
    row::task_mutable_fields!(set_list);
    if slot == 1 {
        return Ok(true); // nothing changes
    }
    statement.push_str(" WHERE id = $1");
    if guard {
        statement.push_str(&format!(" AND generation = ${} AND status = ${}", slot + 1, slot + 2));
        slot += 2;
        if expect_claim_token.is_some() {
            slot += 1;
            statement.push_str(&format!(" AND claim_token = ${slot}"));
        }
    }
    let mut q = query(&statement).bind(task.id);
    macro_rules! bind_changed {
        (; $($f:ident),*) => {$(
            if current.$f != task.$f {
                q = q.bind(&task.$f);
            }
        )*};
    }
    row::task_mutable_fields!(bind_changed);
    if guard {
        q = q.bind(expect_generation).bind(current.status);
        if let Some(t) = expect_claim_token {
            q = q.bind(t);
        }
    }
    let done = q.execute(&mut *c).await.map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use crate::Store;

    /// The steps of SQLite's plan for `sql` with `args` bound.
    fn query_plan(c: &rusqlite::Connection, sql: &str, args: &[i64]) -> Vec<String> {
        c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Migration 0007: the sweep's selection is served by the partial index over parked rows
    /// (its status test is the index's predicate word for word), and neither a claim's nor a
    /// settle's task update builds a temporary b-tree to evaluate an index predicate. Migration
    /// 0008: nor to test a CHECK constraint's word list, on the run tables' updates and inserts.
    #[tokio::test]
    async fn run_table_writes_build_no_temporary_tree() {
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let c = s.write_conn().await.unwrap();
        let plan = query_plan(&c, crate::sql::EXPIRED_PARKS, &[1, 0, 10]);
        assert!(
            plan.iter().any(|step| step.contains("USING INDEX tasks_parked")),
            "{plan:?}"
        );
        let temporary_trees = |sql: &str| -> usize {
            let mut stmt = c.prepare(&format!("EXPLAIN {sql}")).unwrap();
            let mut rows = stmt.raw_query();
            let mut n = 0;
            while let Some(r) = rows.next().unwrap() {
                n += usize::from(r.get::<_, String>(1).unwrap() == "OpenEphemeral");
            }
            n
        };
        // The claim: the deadline moves (no index holds it since migration 0010).
        assert_eq!(
            temporary_trees(
                "UPDATE tasks SET claim_token = 'k', claimed_at = 1, claimant_id = 1, \
                 await_started_at = 1, deadline_at = 2 WHERE id = 1 AND generation = 1 AND status = 'dispatched'"
            ),
            0
        );
        // A settle changes the status, which the table's CHECK tests.
        assert_eq!(
            temporary_trees(
                "UPDATE tasks SET status = 'completed', settled_at = 2 WHERE id = 1 AND generation = 1 \
                 AND status = 'dispatched' AND claim_token = 'k'"
            ),
            0
        );
        // Writes of every checked column test every word list: the run's whole-row update, a
        // task update naming each checked column, the edge insert.
        for sql in [
            crate::sql::UPDATE_RUN,
            crate::sql::UPDATE_RUN_AND_SEQUENCE,
            "UPDATE runs SET approval_mode = 'ask' WHERE id = 1",
            "UPDATE tasks SET kind = 'tool_task', status = 'completed', origin = 'model', \
             on_failure = 'halt', visibility = 'hidden' WHERE id = 1",
            crate::sql::INSERT_EDGE,
        ] {
            assert_eq!(temporary_trees(sql), 0, "{sql}");
        }
        // The inserts test every CHECK of their table; the one tree left holds their
        // `RETURNING` rows.
        for sql in [crate::sql::INSERT_RUN, crate::sql::INSERT_TASK] {
            assert!(sql.contains("RETURNING"), "{sql}");
            assert_eq!(temporary_trees(sql), 1, "{sql}");
        }
    }

    /// The sweep's revoked-addressee selection reads a revoked executor's open rows from
    /// `tasks_inbox_open` (migration 0009 dropped the whole-table `tasks_inbox`).
    #[tokio::test]
    async fn revoked_parks_read_the_open_inbox_index() {
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let c = s.write_conn().await.unwrap();
        let plan: Vec<String> = c
            .prepare(&format!("EXPLAIN QUERY PLAN {}", crate::sql::REVOKED_PARKS))
            .unwrap()
            .query_map([0_i64, 10], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter().any(|step| step.contains("USING INDEX tasks_inbox_open")),
            "{plan:?}"
        );
    }

    /// The inbox page walks `tasks_inbox_open` in id order and stops at its limit: no sort of
    /// every open row (migration 0007). Its status test names exactly `INBOX_STATUSES`.
    #[tokio::test]
    async fn the_inbox_page_reads_its_index_in_page_order() {
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let c = s.write_conn().await.unwrap();
        let plan = query_plan(&c, crate::sql::INBOX_PAGE, &[1, 0, 50]);
        assert!(
            plan.iter().any(|step| step.contains("USING INDEX tasks_inbox_open")),
            "{plan:?}"
        );
        assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "{plan:?}");
        let named: Vec<&str> = crate::sql::INBOX_PAGE
            .split("t.status = '")
            .skip(1)
            .filter_map(|rest| rest.split('\'').next())
            .collect();
        assert_eq!(named, crate::INBOX_STATUSES.map(crate::TaskStatus::as_str));
    }

    /// A round's reads of a task with its neighbours or its dependencies reach every row by
    /// key: none walks the table (`postgres/plans.rs` pins the same on PostgreSQL).
    #[tokio::test]
    async fn a_rounds_task_reads_by_id_search_by_key() {
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let c = s.write_conn().await.unwrap();
        for (sql, args) in [
            (crate::sql::TASK_NEIGHBOURHOOD, &[1_i64, 1][..]),
            (crate::sql::TASK_AND_DEPS, &[1][..]),
        ] {
            let plan = query_plan(&c, sql, args);
            assert!(!plan.iter().any(|step| step.starts_with("SCAN tasks")), "{plan:?}");
        }
    }
}
