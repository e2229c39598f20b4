//! PostgreSQL's unit of work: how it keeps the contract stated atop `tx.rs` in as few round
//! trips as it can. Private to the engine; the kernel sees only [`crate::Tx`].
//!
//! - `locked.rs`: `BEGIN` rides with the run lock and the reads a `RunLock` names; a seal's
//!   insert rides too, and the unit restarts when the round is not sealable.
//! - `buffered.rs`, `update.rs`, `deferred.rs`: writes the unit does not wait on (and a task
//!   update over a row the unit knows) are buffered until its next statement or its `COMMIT`;
//!   its event appends go with the `COMMIT`.
//! - `after_buffered.rs`: a statement whose answer the unit waits on ends the simple query that
//!   sends the buffered writes.
//! - `reserved.rs`: ids taken ahead of inserts by the unit's first key probe, so the inserts are
//!   buffered too.

use crate::model::*;
use crate::{Result, StoreError, postgres, voids_transaction};

mod after_buffered;
mod buffered;
mod deferred;
mod locked;
mod reserved;
mod update;

/// An open PostgreSQL transaction (`READ COMMITTED`).
pub struct PgTx {
    pub(crate) tx: postgres::Transaction,
    pub(crate) void: bool,
    /// The runs the unit holds locked and the appends it sends with its `COMMIT`.
    pub(crate) deferred: deferred::Deferred,
    /// The task rows the unit knows as stored (`tx/known.rs`).
    pub(crate) known: crate::tx::Known,
    /// The run's answering member, read with a claim door's lock (`Tx::open_claim_door`).
    pub(crate) answerer: Option<Box<crate::MemberRow>>,
    /// Ids taken ahead of the unit's inserts (`reserved.rs`), once the unit asks for some.
    ids: Option<Box<reserved::ReservedIds>>,
}

impl PgTx {
    pub(crate) fn new(tx: postgres::Transaction) -> Self {
        Self {
            tx,
            void: false,
            deferred: deferred::Deferred::default(),
            known: crate::tx::Known::default(),
            answerer: None,
            ids: None,
        }
    }

    /// Whether the next statement is the unit's first, with nothing held before it: then
    /// `BEGIN` goes out with it (`postgres/conns.rs`, `Tx::lock_run`, `Tx::open_door`).
    pub(crate) fn first_statement(&self) -> bool {
        !self.void && !self.tx.begun() && !self.deferred.has_buffered()
    }
}

impl std::fmt::Debug for PgTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgTx")
    }
}
