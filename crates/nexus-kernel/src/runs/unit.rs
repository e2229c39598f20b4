//! A unit of work in flight (storage-and-scale.md §3; docs/glossary.md "unit of work"): the open
//! transaction, the run row locked in it, the clock every write of the unit uses, and the
//! effects to hand to the signals seam once it commits. The settle path, the event writer, the
//! gate's release, the expansion and the kernel tools' child placement take one of these instead
//! of the four values apart.

use nexus_store::{RunRow, Tx};

use super::AfterCommit;

/// The borrowed parts of a unit of work (see the module docs).
pub(crate) struct Unit<'u> {
    pub tx: &'u mut Tx,
    pub run: &'u mut RunRow,
    pub now: i64,
    pub effects: &'u mut Vec<AfterCommit>,
}

impl<'u> Unit<'u> {
    pub fn of(tx: &'u mut Tx, run: &'u mut RunRow, now: i64, effects: &'u mut Vec<AfterCommit>) -> Unit<'u> {
        Unit { tx, run, now, effects }
    }
}
