//! PostgreSQL: a unit of work's event appends, buffered until its `COMMIT` and sent with it.
//!
//! Under the run row's lock (`Tx::lock_run`, `Tx::try_lock_run`, `Tx::open_door`, a run this
//! unit inserted, or a run an earlier append locked), no other transaction moves the run's
//! `last_event_sequence`, so the unit knows the next sequence without asking. Such an append is
//! kept in the unit ([`Deferred`]) and goes out in the one simple query that ends the unit: a
//! multi-row `INSERT` into `events`, the runs' sequences, and `COMMIT` (one round trip for a
//! unit's events and its commit, instead of one per event and one for the commit:
//! docs/decisions/131-postgres-held-writes.md). No statement of a unit reads
//! `events`, and a run row read inside the unit is given the unit's sequence, as on SQLite.
//! A unit dropped without its commit drops the appends with it, as a rollback would.
//!
//! Writes whose answer the unit does not wait on (the run row's update under the lock, a
//! round's facts, a job deleted with the unit) are buffered too ([`Deferred::buffer`]): they go out
//! in one simple query for all of them just before the unit's next statement (so whatever it
//! reads sees them), or else with the `COMMIT`, in the same round trip.

use std::fmt::Write;

use crate::model::{EventRow, RunRow};
use crate::postgres::{Literal, Stmt};
use crate::{Result, StoreError, check_json, check_text};

/// The run sequences a PostgreSQL unit of work holds under lock, and its appends not yet sent.
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    /// `(run id, the run's latest sequence inside the unit)`, for each run the unit locked.
    locked: Vec<(i64, i64)>,
    /// The appends to send with the `COMMIT`, in order.
    events: Vec<EventRow>,
    /// Buffered writes, in order.
    held: Vec<Stmt>,
    /// The held run updates still in `held` (run id, index), the latest per run: at the
    /// `COMMIT` each also writes its run's sequence, instead of a statement of its own.
    run_updates: Vec<(i64, usize)>,
}

impl Deferred {
    /// The unit holds `run`'s row lock: later appends to it are deferred. A run already noted
    /// keeps the unit's sequence (given to `run`).
    pub(crate) fn note_locked(&mut self, run: &mut RunRow) {
        match self.locked.iter().find(|(id, _)| *id == run.id) {
            Some(&(_, last)) => run.last_event_sequence = last,
            None => self.locked.push((run.id, run.last_event_sequence)),
        }
    }

    /// A run row read inside the unit is given the unit's sequence, when the unit holds it.
    pub(crate) fn note_read(&self, run: &mut RunRow) {
        if let Some(&(_, last)) = self.locked.iter().find(|(id, _)| *id == run.id) {
            run.last_event_sequence = last;
        }
    }

    /// Whether the unit holds `run_id`'s row lock.
    pub(crate) fn holds(&self, run_id: i64) -> bool {
        self.locked.iter().any(|(id, _)| *id == run_id)
    }

    /// Holds `statement` (parameters `$1`, `$2`, … given by `values`, text already checked by
    /// the text guard) until the unit's next statement or its `COMMIT`.
    pub(crate) fn buffer(&mut self, statement: &'static str, values: &[&dyn Literal]) {
        self.held
            .push(Stmt::new(statement, values.iter().map(|v| v.literal()).collect()));
    }

    /// Holds the run's update ([`crate::sql::UPDATE_RUN`], `values` its parameters): at the
    /// `COMMIT` it also writes the run's sequence when the unit appended to the run.
    pub(crate) fn buffer_run_update(&mut self, run_id: i64, values: &[&dyn Literal]) {
        self.run_updates.retain(|(id, _)| *id != run_id);
        self.run_updates.push((run_id, self.held.len()));
        self.buffer(crate::sql::UPDATE_RUN, values);
    }

    /// Holds a statement built with its values.
    pub(crate) fn buffer_statement(&mut self, statement: Stmt) {
        self.held.push(statement);
    }

    /// Whether writes are buffered.
    pub(crate) fn has_buffered(&self) -> bool {
        !self.held.is_empty()
    }

    /// The buffered writes, taken out (`None`: none held).
    pub(crate) fn take_buffered(&mut self) -> Option<Vec<Stmt>> {
        if self.held.is_empty() {
            return None;
        }
        self.run_updates.clear();
        Some(std::mem::take(&mut self.held))
    }

    /// An append sent as its own statement, which locked the run at `sequence`.
    pub(crate) fn note_appended(&mut self, run_id: i64, sequence: i64) {
        match self.locked.iter_mut().find(|(id, _)| *id == run_id) {
            Some(entry) => entry.1 = sequence,
            None => self.locked.push((run_id, sequence)),
        }
    }

    /// Keeps the append when the unit holds the run's lock (`None` otherwise: send it now). The
    /// text guard and the serialization are checked here, as the statement would.
    pub(crate) fn append(
        &mut self,
        run_id: i64,
        kind: crate::EventKind,
        task_key: Option<&str>,
        data: &serde_json::Value,
        at: i64,
    ) -> Result<Option<EventRow>> {
        let Some(entry) = self.locked.iter_mut().find(|(id, _)| *id == run_id) else {
            return Ok(None);
        };
        if let Some(k) = task_key {
            check_text(k)?;
        }
        check_json(data)?;
        let data = serde_json::to_string(data)
            .map_err(|e| StoreError::Corrupt(format!("event data does not serialize: {e}")))?;
        check_text(&data)?;
        entry.1 += 1;
        let row = EventRow {
            run_id,
            sequence: entry.1,
            kind,
            at,
            task_key: task_key.map(str::to_string),
            data,
        };
        self.events.push(row.clone());
        Ok(Some(row))
    }

    /// The statements that end the unit, before its `COMMIT`: the buffered writes, the kept appends
    /// and the runs' sequences; `None` when nothing was kept (a plain `COMMIT`).
    pub(crate) fn commit_statements(&mut self) -> Option<Vec<Stmt>> {
        if self.events.is_empty() && self.held.is_empty() {
            return None;
        }
        let mut stmts = std::mem::take(&mut self.held);
        if self.events.is_empty() {
            return Some(stmts);
        }
        stmts.push(events_insert(&self.events));
        for (run_id, last) in &self.locked {
            if !self.events.iter().any(|e| e.run_id == *run_id) {
                continue;
            }
            // A buffered update of the run writes the sequence with the rest of the row.
            let held_update = self.run_updates.iter().find(|(id, _)| id == run_id).map(|&(_, i)| i);
            if let Some(i) = held_update
                && let Some(Stmt::Template { literals, .. }) = stmts.get(i)
            {
                let mut row = literals.clone();
                row.push(last.to_string());
                stmts[i] = Stmt::new(crate::sql::UPDATE_RUN_AND_SEQUENCE, row);
                continue;
            }
            stmts.push(Stmt::new(
                crate::sql::STORE_EVENT_SEQUENCE,
                vec![run_id.to_string(), last.to_string()],
            ));
        }
        Some(stmts)
    }
}

/// The most appends one prepared insert carries; a unit with more sends them inlined (a
/// template per count would crowd the connection's prepared statements).
const EVENTS_PER_TEMPLATE: usize = 8;

/// The multi-row insert of `events`.
pub(super) fn events_insert(events: &[EventRow]) -> Stmt {
    let mut text = String::from("INSERT INTO events (run_id, sequence, type, at, task_key, data) VALUES ");
    let mut literals = Vec::with_capacity(events.len() * 6);
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        let p = i * 6;
        let _ = write!(
            text,
            "(${}, ${}, ${}, ${}, ${}, ${})",
            p + 1,
            p + 2,
            p + 3,
            p + 4,
            p + 5,
            p + 6
        );
        let row: [&dyn Literal; 6] = [&e.run_id, &e.sequence, &e.kind, &e.at, &e.task_key, &e.data];
        literals.extend(row.iter().map(|v| v.literal()));
    }
    let stmt = Stmt::new(text, literals);
    if events.len() > EVENTS_PER_TEMPLATE {
        return Stmt::Text(stmt.inlined());
    }
    stmt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_kept_is_a_plain_commit() {
        assert!(Deferred::default().commit_statements().is_none());
    }

    fn locked(d: &mut Deferred, id: i64, last: i64) {
        d.note_locked(&mut RunRow {
            id,
            last_event_sequence: last,
            ..RunRow::default()
        });
    }

    fn texts(stmts: &[Stmt]) -> Vec<String> {
        stmts
            .iter()
            .map(|s| match s {
                Stmt::Template { text, .. } => text.to_string(),
                Stmt::Text(t) => t.clone(),
            })
            .collect()
    }

    #[test]
    fn a_held_run_update_carries_the_sequence_of_the_units_appends() {
        let mut d = Deferred::default();
        locked(&mut d, 1, 10);
        locked(&mut d, 2, 20);
        let data = serde_json::json!({});
        d.append(1, crate::EventKind::TaskClaimed, Some("a"), &data, 5).unwrap();
        d.append(2, crate::EventKind::TaskClaimed, Some("b"), &data, 5).unwrap();
        d.append(2, crate::EventKind::RunStatusChanged, None, &data, 5).unwrap();
        let ints: Vec<i64> = (3..=8).collect();
        let mut row: Vec<&dyn Literal> = vec![&2i64, &"completed"];
        row.extend(ints.iter().map(|n| n as &dyn Literal));
        d.buffer_run_update(2, &row);
        let stmts = d.commit_statements().unwrap();
        let texts = texts(&stmts);
        assert_eq!(texts.len(), 3);
        assert_eq!(texts[0], crate::sql::UPDATE_RUN_AND_SEQUENCE);
        assert!(texts[1].starts_with("INSERT INTO events"), "{}", texts[1]);
        assert_eq!(texts[2], crate::sql::STORE_EVENT_SEQUENCE);
        // Run 2's update writes its last sequence (`$9`); run 1 has none held, so its sequence
        // goes in a statement of its own.
        let Stmt::Template { literals, .. } = &stmts[0] else {
            panic!()
        };
        assert_eq!(literals.last().map(String::as_str), Some("22"));
        let Stmt::Template { literals, .. } = &stmts[2] else {
            panic!()
        };
        assert_eq!(literals, &["1", "11"]);
    }

    #[test]
    fn a_run_update_sent_before_the_commit_leaves_the_sequence_to_its_own_statement() {
        let mut d = Deferred::default();
        locked(&mut d, 1, 10);
        let ints: Vec<i64> = (1..=8).collect();
        d.buffer_run_update(1, &ints.iter().map(|n| n as &dyn Literal).collect::<Vec<_>>());
        assert!(d.take_buffered().is_some());
        d.append(1, crate::EventKind::TaskClaimed, None, &serde_json::json!({}), 5)
            .unwrap();
        let stmts = d.commit_statements().unwrap();
        assert_eq!(stmts.len(), 2);
        let Stmt::Template { text, literals } = &stmts[1] else {
            panic!()
        };
        assert_eq!(text, crate::sql::STORE_EVENT_SEQUENCE);
        assert_eq!(literals, &["1", "11"]);
    }
}
