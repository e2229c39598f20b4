//! PostgreSQL: a task update over a row the unit read under its run's lock, buffered until the
//! unit's next statement or its `COMMIT` (`deferred.rs`) instead of sent at once.
//!
//! Every writer of a task holds its run's lock (storage-and-scale.md §3, "Lock order"), so a
//! row this unit read after taking that lock is still the stored row when the unit writes it:
//! the update's conditions (generation, status, claim token) are decided on that row here, as
//! SQLite's engine does, and the answer is known without asking. The held statement still names
//! the conditions, and it fails the unit (a division by zero) if it changes no row: a broken
//! lock order shows up as a failed unit of work, never as a write the kernel believes happened.
//! Only the columns that change are written.

use super::*;
use crate::postgres::{Literal, Stmt};
use crate::tx::Expect;

/// The guarded update of `task` over `before` (`None`: no column changes): a template per set
/// of changed columns (`postgres/prepared.rs`).
fn statement(before: &TaskRow, task: &TaskRow, expect_claim_token: Option<&str>) -> Option<Stmt> {
    let mut columns = Vec::new();
    let mut literals = Vec::new();
    macro_rules! set_list {
        (; $($f:ident),*) => {$(
            if before.$f != task.$f {
                columns.push(stringify!($f));
                literals.push(Literal::literal(&task.$f));
            }
        )*};
    }
    crate::row::task_mutable_fields!(set_list);
    if columns.is_empty() {
        return None;
    }
    literals.push(task.id.to_string());
    literals.push(before.generation.to_string());
    literals.push(before.status.literal());
    if let Some(token) = expect_claim_token {
        literals.push(token.to_string().literal());
    }
    Some(Stmt::new(template(&columns, expect_claim_token.is_some()), literals))
}

/// The buffered update's text writing `columns` (`$1`, … in order), then the row's id, expected
/// generation and status, and, `with_token`, its claim token. It fails (a division by zero) when
/// no row matched.
fn template(columns: &[&str], with_token: bool) -> String {
    let mut text = String::from("WITH u AS (UPDATE tasks SET ");
    for (i, column) in columns.iter().enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        text.push_str(&format!("{column} = ${}", i + 1));
    }
    let n = columns.len();
    text.push_str(&format!(
        " WHERE id = ${} AND generation = ${} AND status = ${}",
        n + 1,
        n + 2,
        n + 3
    ));
    if with_token {
        text.push_str(&format!(" AND claim_token = ${}", n + 4));
    }
    text.push_str(" RETURNING 1) SELECT 1 / count(*) FROM u");
    text
}

impl PgTx {
    /// [`Tx::update_task`] over `before`, the stored row, buffered when the unit holds its run
    /// lock (`None`: send the update now). The text guard is checked as the statement would.
    pub(crate) fn buffer_task_update(
        &mut self,
        before: &TaskRow,
        task: &TaskRow,
        expect: &Expect<'_>,
    ) -> Option<Result<bool>> {
        if self.void || before.id != task.id || !self.deferred.holds(before.run_id) {
            return None;
        }
        if let Err(e) = crate::row::check_task_row_text(task) {
            return Some(Err(e));
        }
        let matches = before.generation == expect.generation
            && expect.statuses.contains(&before.status)
            && expect
                .claim_token
                .is_none_or(|t| before.claim_token.as_deref() == Some(t));
        if !matches {
            return Some(Ok(false));
        }
        if let Some(sql) = statement(before, task, expect.claim_token) {
            self.deferred.buffer_statement(sql);
        }
        Some(Ok(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_only_the_changed_columns_under_the_conditions() {
        let before = TaskRow {
            id: 7,
            generation: 2,
            status: TaskStatus::Dispatched,
            content: Some("old".into()),
            ..TaskRow::default()
        };
        assert_eq!(statement(&before, &before, None), None);
        let mut next = before.clone();
        next.status = TaskStatus::Completed;
        next.content = Some("it's".into());
        next.is_error = true;
        next.settled_at = Some(5);
        next.claim_token = None;
        let held = statement(&before, &next, Some("tok")).unwrap();
        assert_eq!(
            held,
            Stmt::new(
                "WITH u AS (UPDATE tasks SET status = $1, content = $2, is_error = $3, settled_at = $4 \
                 WHERE id = $5 AND generation = $6 AND status = $7 AND claim_token = $8 RETURNING 1) \
                 SELECT 1 / count(*) FROM u",
                [
                    "E'completed'",
                    "E'it''s'",
                    "TRUE",
                    "5",
                    "7",
                    "2",
                    "E'dispatched'",
                    "E'tok'"
                ]
                .map(String::from)
                .to_vec(),
            )
        );
        assert_eq!(
            held.inlined(),
            "WITH u AS (UPDATE tasks SET status = E'completed', content = E'it''s', is_error = TRUE, \
             settled_at = 5 WHERE id = 7 AND generation = 2 AND status = E'dispatched' AND \
             claim_token = E'tok' RETURNING 1) SELECT 1 / count(*) FROM u"
        );
    }

    /// Every template a unit of work sends in its simple queries prepares against the schema:
    /// each parameter's type follows from where it stands (`postgres/prepared.rs`; an inlined
    /// literal needed no such context).
    #[tokio::test]
    async fn every_unit_template_prepares() {
        let Some(ts) = crate::testing::postgres().await else {
            return;
        };
        let crate::Store::Postgres(s) = &ts.store else {
            unreachable!()
        };
        let mut c = s.pool().acquire().await.unwrap();
        let mut columns = Vec::new();
        macro_rules! names {
            (; $($f:ident),*) => {$( columns.push(stringify!($f)); )*};
        }
        crate::row::task_mutable_fields!(names);
        let mut texts: Vec<String> = [
            crate::sql::LOCK_RUN_PG,
            crate::sql::TASK_BY_ID,
            crate::sql::ROUND_FOR_REPLY,
            crate::sql::DOOR_RUN_PG,
            crate::sql::TASK_BY_RUN_PUBLIC_ID_AND_KEY_PG,
            crate::sql::DOOR_ANSWERER_PG,
            crate::sql::INSERT_JOB_BUFFERED,
            crate::sql::DELETE_JOB,
            crate::sql::TAKE_JOB,
            crate::sql::SEARCH_HEAD_PG,
            crate::sql::INSERT_EDGE,
            crate::sql::SET_SEALED_ATTEMPTS,
            crate::sql::UPDATE_RUN,
            crate::sql::UPDATE_RUN_AND_SEQUENCE,
            crate::sql::PUT_ROUND_FACTS,
            crate::sql::STORE_EVENT_SEQUENCE,
            crate::sql::EDGES_INTO_UNLESS_AWAITING,
            crate::sql::TASKS_OF_QUIESCENT_RUN_UNLESS_DEPENDED,
            crate::sql::EDGES_FROM,
            crate::sql::USED_TASK_KEYS,
            crate::sql::INSERT_JOB,
            crate::sql::INSERT_TASK_WITH_BODY_PG,
            crate::sql::INSERT_TASK_WITH_ID_PG,
            crate::sql::RESERVE_IDS,
            crate::sql::INSERT_JOB_WITH_ID,
            crate::sql::INSERT_SEALED_REQUEST_WITH_BODY_PG,
        ]
        .map(String::from)
        .to_vec();
        texts.push(template(&columns, true));
        texts.push(template(&columns[..1], false));
        let event = crate::model::EventRow {
            run_id: 1,
            sequence: 1,
            kind: crate::EventKind::TaskClaimed,
            at: 1,
            task_key: None,
            data: "{}".into(),
        };
        for n in 1..=8 {
            match super::super::deferred::events_insert(&vec![event.clone(); n]) {
                Stmt::Template { text, .. } => texts.push(text.into_owned()),
                Stmt::Text(t) => panic!("{n} events inlined: {t}"),
            }
        }
        for (i, text) in texts.iter().enumerate() {
            let prepared = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("PREPARE probe_{i} AS {text}")))
                .execute(&mut *c)
                .await;
            assert!(prepared.is_ok(), "{text}: {prepared:?}");
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DEALLOCATE probe_{i}")))
                .execute(&mut *c)
                .await
                .unwrap();
        }
    }
}
