//! Run events (migrations 0002, 0011, 0012), written once for both engines; the append's text
//! differs by dialect ([`crate::ops::Dialect`]).

use crate::model::*;
use crate::ops::db::{Db, query, query_scalar};
use crate::ops::on_conn;
use crate::row;
use crate::sql;
use crate::{Result, Store, StoreError, check_text, write_error};

// ---- events ----

/// `known`: the run's `last_event_sequence` as this unit of work last saw it, when it
/// did (used where the dialect has [`crate::ops::Dialect::APPEND_EVENT_AT`]).
pub(crate) async fn append_event<C: Db>(
    c: &mut C,
    run_id: i64,
    known: Option<i64>,
    kind: crate::EventKind,
    task_key: Option<&str>,
    data: &serde_json::Value,
    at: i64,
) -> Result<EventRow> {
    if let Some(k) = task_key {
        check_text(k)?;
    }
    crate::check_json(data)?;
    let data =
        serde_json::to_string(data).map_err(|e| StoreError::Corrupt(format!("event data does not serialize: {e}")))?;
    check_text(&data)?;
    // One statement: the run's sequence moves and the event takes it.
    let sequence: Option<i64> = match (known, C::APPEND_EVENT_AT) {
        (Some(last), Some(text)) => {
            query(text)
                .bind(run_id)
                .bind(last + 1)
                .bind(kind)
                .bind(at)
                .bind(task_key)
                .bind(&data)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Some(last + 1)
        }
        _ => query_scalar(C::APPEND_EVENT)
            .bind(run_id)
            .bind(kind)
            .bind(at)
            .bind(task_key)
            .bind(&data)
            .fetch_optional(&mut *c)
            .await
            .map_err(write_error)?,
    };
    let sequence = sequence.ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))?;
    Ok(EventRow {
        run_id,
        sequence,
        kind,
        at,
        task_key: task_key.map(str::to_string),
        data,
    })
}

/// Moves `runs.last_event_sequence` to the sequence of the unit's last append to the
/// run (SQLite, before the unit commits: [`crate::Tx::commit`]).
pub(crate) async fn store_event_sequence<C: Db>(c: &mut C, run_id: i64, sequence: i64) -> Result<()> {
    let done = query(sql::STORE_EVENT_SEQUENCE)
        .bind(run_id)
        .bind(sequence)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound(format!("run {run_id}")));
    }
    Ok(())
}

pub(crate) async fn latest_event_sequence<C: Db>(c: &mut C, run_id: i64) -> Result<i64> {
    let s: Option<i64> = query_scalar(sql::LATEST_EVENT_SEQUENCE)
        .bind(run_id)
        .fetch_optional(&mut *c)
        .await?;
    s.ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))
}

pub(crate) async fn events_after<C: Db>(c: &mut C, run_id: i64, after: i64, limit: i64) -> Result<Vec<EventRow>> {
    let rows = query(sql::EVENTS_AFTER)
        .bind(run_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(row::event).collect()
}

/// The events operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait EventStore {
    /// The run's events with `sequence > after_sequence`, in order, at most `limit`.
    async fn events_after(&self, run_id: i64, after_sequence: i64, limit: i64) -> Result<Vec<EventRow>>;
    /// `runs.last_event_sequence` (0 before the first event); `NotFound` for no such run.
    async fn latest_event_sequence(&self, run_id: i64) -> Result<i64>;
}

impl EventStore for Store {
    async fn events_after(&self, run_id: i64, after_sequence: i64, limit: i64) -> Result<Vec<EventRow>> {
        on_conn!(self, read, |c| events_after(c, run_id, after_sequence, limit))
    }
    async fn latest_event_sequence(&self, run_id: i64) -> Result<i64> {
        on_conn!(self, read, |c| latest_event_sequence(c, run_id))
    }
}
