//! PostgreSQL: a task update over a row the unit read under its run's lock, held until the
//! unit's next statement or its `COMMIT` (`tx/deferred.rs`) instead of sent at once.
//!
//! Every writer of a task holds its run's lock (storage-and-scale.md §3, "Lock order"), so a
//! row this unit read after taking that lock is still the stored row when the unit writes it:
//! the update's conditions (generation, status, claim token) are decided on that row here, as
//! SQLite's engine does, and the answer is known without asking. The held statement still names
//! the conditions, and it fails the unit (a division by zero) if it changes no row: a broken
//! lock order shows up as a failed unit of work, never as a write the kernel believes happened.
//! Only the columns that change are written.

use super::*;
use crate::postgres::push_literal;

/// A task column's value written into the held statement.
trait Literal {
    fn push_to(&self, out: &mut String);
}

impl Literal for i64 {
    fn push_to(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }
}

impl Literal for bool {
    fn push_to(&self, out: &mut String) {
        out.push_str(if *self { "TRUE" } else { "FALSE" });
    }
}

impl Literal for String {
    fn push_to(&self, out: &mut String) {
        push_literal(out, self);
    }
}

impl Literal for TaskStatus {
    fn push_to(&self, out: &mut String) {
        push_literal(out, self.as_str());
    }
}

impl<T: Literal> Literal for Option<T> {
    fn push_to(&self, out: &mut String) {
        match self {
            Some(v) => v.push_to(out),
            None => out.push_str("NULL"),
        }
    }
}

/// The guarded update of `task` over `before` (`None`: no column changes).
fn statement(before: &TaskRow, task: &TaskRow, expect_claim_token: Option<&str>) -> Option<String> {
    let mut set = String::new();
    macro_rules! set_list {
        (; $($f:ident),*) => {$(
            if before.$f != task.$f {
                if !set.is_empty() {
                    set.push_str(", ");
                }
                set.push_str(concat!(stringify!($f), " = "));
                Literal::push_to(&task.$f, &mut set);
            }
        )*};
    }
    crate::row::task_mutable_fields!(set_list);
    if set.is_empty() {
        return None;
    }
    let mut sql = format!(
        "WITH u AS (UPDATE tasks SET {set} WHERE id = {} AND generation = {} AND status = ",
        task.id, before.generation
    );
    push_literal(&mut sql, before.status.as_str());
    if let Some(token) = expect_claim_token {
        sql.push_str(" AND claim_token = ");
        push_literal(&mut sql, token);
    }
    sql.push_str(" RETURNING 1) SELECT 1 / count(*) FROM u");
    Some(sql)
}

impl PgTx {
    /// [`Tx::update_task_over`] held, when the unit holds `before`'s run lock (`None`: send the
    /// update now). The text guard and the expected statuses are checked as the statement would.
    pub(super) fn hold_task_update(
        &mut self,
        before: &TaskRow,
        task: &TaskRow,
        expect_statuses: &[TaskStatus],
        expect_claim_token: Option<&str>,
    ) -> Option<Result<bool>> {
        if self.void || before.id != task.id || !self.deferred.holds(before.run_id) {
            return None;
        }
        let checked = crate::row::check_task_row_text(task).and_then(|()| crate::row::status_slots(expect_statuses));
        if let Err(e) = checked {
            return Some(Err(e));
        }
        let matches = expect_statuses.contains(&before.status)
            && expect_claim_token.is_none_or(|t| before.claim_token.as_deref() == Some(t));
        if !matches {
            return Some(Ok(false));
        }
        if let Some(sql) = statement(before, task, expect_claim_token) {
            self.deferred.hold_statement(sql);
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
        assert_eq!(
            statement(&before, &next, Some("tok")).as_deref(),
            Some(
                "WITH u AS (UPDATE tasks SET status = E'completed', content = E'it''s', is_error = TRUE, \
                 settled_at = 5 WHERE id = 7 AND generation = 2 AND status = E'dispatched' AND \
                 claim_token = E'tok' RETURNING 1) SELECT 1 / count(*) FROM u"
            )
        );
    }
}
