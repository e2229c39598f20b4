//! PostgreSQL: a unit of work's event appends, held until its `COMMIT` and sent with it.
//!
//! Under the run row's lock (`Tx::lock_run`, `Tx::try_lock_run`, `Tx::open_door`, a run this
//! unit inserted, or a run an earlier append locked), no other transaction moves the run's
//! `last_event_sequence`, so the unit knows the next sequence without asking. Such an append is
//! kept in the unit ([`Deferred`]) and goes out in the one simple query that ends the unit: a
//! multi-row `INSERT` into `events`, the runs' sequences, and `COMMIT` (one round trip for a
//! unit's events and its commit, instead of one per event and one for the commit:
//! BENCHMARKS.md, "Issue 27, deliverable 7: fewer round trips"). No statement of a unit reads
//! `events`, and a run row read inside the unit is given the unit's sequence, as on SQLite.
//! A unit dropped without its commit drops the appends with it, as a rollback would.
//!
//! Writes whose answer the unit does not wait on (the run row's update under the lock, a
//! round's facts, a job deleted with the unit) are held too ([`Deferred::hold`]): they go out
//! in one simple query for all of them just before the unit's next statement (so whatever it
//! reads sees them), or else with the `COMMIT`, in the same round trip.

use std::fmt::Write;

use crate::model::{EventRow, RunRow};
use crate::postgres::push_literal;
use crate::{Result, StoreError, check_json, check_text};

/// The run sequences a PostgreSQL unit of work holds under lock, and its appends not yet sent.
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    /// `(run id, the run's latest sequence inside the unit)`, for each run the unit locked.
    locked: Vec<(i64, i64)>,
    /// The appends to send with the `COMMIT`, in order.
    events: Vec<EventRow>,
    /// Held writes, each a statement with its values inlined, in order.
    held: Vec<String>,
}

/// A value inlined into a held statement (`postgres::conns::inline_params`).
pub(crate) enum Lit<'a> {
    Int(i64),
    OptInt(Option<i64>),
    Text(&'a str),
    OptText(Option<&'a str>),
}

impl Lit<'_> {
    fn render(&self) -> String {
        let mut out = String::new();
        match self {
            Lit::Int(n) | Lit::OptInt(Some(n)) => out = n.to_string(),
            Lit::Text(t) | Lit::OptText(Some(t)) => push_literal(&mut out, t),
            Lit::OptInt(None) | Lit::OptText(None) => out.push_str("NULL"),
        }
        out
    }
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
    pub(crate) fn hold(&mut self, statement: &str, values: &[Lit<'_>]) {
        let rendered: Vec<String> = values.iter().map(Lit::render).collect();
        let literals: Vec<&str> = rendered.iter().map(String::as_str).collect();
        self.held.push(crate::postgres::inline_params(statement, &literals));
    }

    /// Holds a statement already rendered with its values inlined.
    pub(crate) fn hold_statement(&mut self, statement: String) {
        self.held.push(statement);
    }

    /// Whether writes are held.
    pub(crate) fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// The held writes as one simple query, taken out (`None`: none held).
    pub(crate) fn take_held(&mut self) -> Option<String> {
        if self.held.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.held).join("; "))
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
        kind: &str,
        task_key: Option<&str>,
        data: &serde_json::Value,
        at: i64,
    ) -> Result<Option<EventRow>> {
        let Some(entry) = self.locked.iter_mut().find(|(id, _)| *id == run_id) else {
            return Ok(None);
        };
        check_text(kind)?;
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
            kind: kind.to_string(),
            at,
            task_key: task_key.map(str::to_string),
            data,
        };
        self.events.push(row.clone());
        Ok(Some(row))
    }

    /// The statements that end the unit: the held writes, the kept appends and the runs'
    /// sequences, then `COMMIT`; `None` when nothing was kept (a plain `COMMIT`).
    pub(crate) fn commit_text(&self) -> Option<String> {
        if self.events.is_empty() {
            if self.held.is_empty() {
                return None;
            }
            return Some(format!("{}; COMMIT", self.held.join("; ")));
        }
        let mut sql = String::with_capacity(
            128 + self
                .events
                .iter()
                .map(|e| e.data.len() + e.kind.len() + 48)
                .sum::<usize>(),
        );
        for held in &self.held {
            sql.push_str(held);
            sql.push_str("; ");
        }
        sql.push_str("INSERT INTO events (run_id, sequence, type, at, task_key, data) VALUES ");
        for (i, e) in self.events.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            let _ = write!(sql, "({}, {}, ", e.run_id, e.sequence);
            push_literal(&mut sql, &e.kind);
            let _ = write!(sql, ", {}, ", e.at);
            match &e.task_key {
                Some(k) => push_literal(&mut sql, k),
                None => sql.push_str("NULL"),
            }
            sql.push_str(", ");
            push_literal(&mut sql, &e.data);
            sql.push(')');
        }
        sql.push_str("; UPDATE runs SET last_event_sequence = v.s FROM (VALUES ");
        let mut first = true;
        for (run_id, last) in &self.locked {
            if !self.events.iter().any(|e| e.run_id == *run_id) {
                continue;
            }
            if !first {
                sql.push_str(", ");
            }
            first = false;
            let _ = write!(sql, "({run_id}::bigint, {last}::bigint)");
        }
        sql.push_str(") AS v(id, s) WHERE runs.id = v.id; COMMIT");
        Some(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_kept_is_a_plain_commit() {
        assert!(Deferred::default().commit_text().is_none());
    }
}
