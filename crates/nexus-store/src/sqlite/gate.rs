//! The writer gate: the write connection's async mutex, which every write takes first, and the
//! unit of work that holds it ([`GatedTx`]), alone or in a group ([`group`]).

use std::sync::Arc;
use std::time::Instant;

use rusqlite::Connection;

use super::{GateUse, HeldConn, Shared, SqliteStore, group};
use crate::{Result, StoreError, write_error};

impl SqliteStore {
    /// How long units of work (and waiting members committing their group) have held the
    /// writer gate since the store opened, and how many units ended: over a window, the held
    /// time against the window's length says how close the writes come to SQLite's one-writer
    /// limit (the inbox bench prints it).
    pub fn writer_gate_use(&self) -> GateUse {
        self.group.gate_use()
    }

    /// Waits for every unit of work in flight to end. The connections close when the last
    /// clone drops, and so does the single-node lock.
    pub async fn close(&self) {
        let quiet = self.writer.lock().await;
        self.settle_group(&quiet);
    }

    /// Takes the writer gate, the write connection itself, waiting at most the busy timeout.
    /// A unit of work may find a group's transaction open on it ([`group`]).
    pub(super) async fn gate_for_unit(&self) -> Result<HeldConn> {
        let _queued = self.group.queue();
        tokio::time::timeout(self.busy, self.writer.clone().lock_owned())
            .await
            .map_err(|_| StoreError::Busy)
    }

    /// The writer gate for anything but a unit of work: an open group commits first, so the
    /// connection is in autocommit mode.
    pub(super) async fn gate(&self) -> Result<HeldConn> {
        let conn = self.gate_for_unit().await?;
        self.settle_group(&conn);
        Ok(conn)
    }

    /// Commits an open group. A failure is the group's members' to report (they receive it);
    /// the connection is left in autocommit mode either way.
    pub(super) fn settle_group(&self, conn: &Connection) {
        if let Err(e) = self.group.settle(conn) {
            tracing::warn!(error = %e, "committing a group of SQLite units of work failed");
        }
    }

    /// The principal cache (`crate::principals`).
    pub(crate) fn principals(&self) -> &crate::principals::Principals {
        &self.principals
    }

    /// A reader connection, for one read.
    pub(crate) async fn read_conn(&self) -> Result<HeldConn> {
        self.pool.acquire().await
    }

    /// The write connection for a single write statement (which commits on its own).
    pub(crate) async fn write_conn(&self) -> Result<HeldConn> {
        self.gate().await
    }

    /// A write transaction: the writer gate, then `BEGIN IMMEDIATE` (or a savepoint inside an
    /// open group).
    pub(crate) async fn write_tx(&self) -> Result<GatedTx> {
        let conn = self.gate_for_unit().await?;
        let since = Instant::now();
        let savepoint = match self.group.begin(&conn) {
            Ok(savepoint) => savepoint,
            Err(e) => {
                self.group.note_unit(since);
                return Err(write_error(e));
            }
        };
        Ok(GatedTx {
            conn: Some(conn),
            open: true,
            savepoint,
            group: self.group.clone(),
            writer: self.writer.clone(),
            since,
        })
    }

    /// Opens a unit of work (the writer gate, then `BEGIN IMMEDIATE` or a savepoint).
    pub async fn begin(&self) -> Result<crate::SqliteTx> {
        Ok(crate::SqliteTx::new(self.write_tx().await?))
    }
}

/// A unit of work holding the writer gate, the write connection itself (from
/// [`SqliteStore::write_tx`]). Dropped without [`GatedTx::commit`], it rolls its own work back
/// before the gate opens, so the next writer never finds that work half done.
pub(crate) struct GatedTx {
    /// The gate; `None` once the unit ended.
    conn: Option<HeldConn>,
    /// The unit began and has neither committed nor rolled back.
    open: bool,
    /// The unit runs under a savepoint inside an open group ([`group`]).
    savepoint: bool,
    group: Arc<group::Group>,
    writer: Shared,
    /// When the unit took the gate ([`group::GateUse`]).
    since: Instant,
}

impl GatedTx {
    /// Commits the unit: returns once its changes are committed, alone or with its group.
    /// On failure nothing of the unit is kept.
    pub(crate) async fn commit(mut self) -> rusqlite::Result<()> {
        self.open = false;
        let conn = self.conn.take().expect("an open unit holds the gate");
        let end = self.group.end_unit(&conn, self.savepoint, group::Ending::Commit);
        drop(conn); // the gate passes to the next writer
        self.group.note_unit(self.since);
        match end {
            group::End::Done(r) => r,
            group::End::Wait(member) => group::wait(self.group.clone(), self.writer.clone(), member).await,
        }
    }

    pub(crate) async fn rollback(mut self) -> rusqlite::Result<()> {
        self.open = false;
        let conn = self.conn.take().expect("an open unit holds the gate");
        let end = self.group.end_unit(&conn, self.savepoint, group::Ending::Rollback);
        drop(conn);
        self.group.note_unit(self.since);
        match end {
            group::End::Done(r) => r,
            group::End::Wait(_) => unreachable!("a rollback never waits for a group"),
        }
    }
}

impl Drop for GatedTx {
    fn drop(&mut self) {
        if self.open
            && let Some(conn) = self.conn.take()
        {
            let end = self.group.end_unit(&conn, self.savepoint, group::Ending::Rollback);
            drop(conn);
            self.group.note_unit(self.since);
            if let group::End::Done(Err(e)) = end {
                tracing::warn!(error = %e, "rolling back a dropped SQLite unit of work failed");
            }
        }
    }
}

impl std::ops::Deref for GatedTx {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("an open unit holds the gate")
    }
}

impl std::ops::DerefMut for GatedTx {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("an open unit holds the gate")
    }
}
