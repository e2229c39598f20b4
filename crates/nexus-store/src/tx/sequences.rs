//! What a unit of work knows of each run's latest event sequence (SQLite: [`RunSequence`];
//! PostgreSQL: `postgres/unit/deferred.rs`), noted as it reads, locks and appends.

use super::*;

impl Tx {
    /// A run row read inside this unit of work (SQLite; PostgreSQL's append reads the sequence
    /// under the row lock each time): the first read notes its stored `last_event_sequence`;
    /// once the unit has appended to the run, the row is given the unit's sequence, which the
    /// stored one lags until the unit writes it.
    pub(super) fn note_read(&mut self, run: &mut RunRow) {
        match self {
            Tx::Sqlite(t) => match t.sequences.iter().find(|e| e.run_id == run.id) {
                Some(entry) => run.last_event_sequence = entry.last,
                None => t.sequences.push(RunSequence {
                    run_id: run.id,
                    last: run.last_event_sequence,
                    stored: true,
                }),
            },
            Tx::Postgres(t) => t.deferred.note_read(run),
        }
    }

    /// A run row this unit of work holds locked: as [`Tx::note_read`], and on PostgreSQL its
    /// later appends are sent with the `COMMIT` (`postgres/unit/deferred.rs`).
    pub(super) fn note_locked(&mut self, run: &mut RunRow) {
        match self {
            Tx::Postgres(t) => t.deferred.note_locked(run),
            Tx::Sqlite(_) => self.note_read(run),
        }
    }

    /// Notes an append at `sequence`: on SQLite the run row does not hold it yet; on
    /// PostgreSQL the append's statement locked the run, so later ones are deferred.
    pub(super) fn note_append(&mut self, run_id: i64, sequence: i64) {
        match self {
            Tx::Sqlite(t) => {
                let appended = RunSequence {
                    run_id,
                    last: sequence,
                    stored: false,
                };
                match t.sequences.iter_mut().find(|e| e.run_id == run_id) {
                    Some(entry) => *entry = appended,
                    None => t.sequences.push(appended),
                }
            }
            Tx::Postgres(t) => t.deferred.note_appended(run_id, sequence),
        }
    }

    pub(super) fn known_sequence(&self, run_id: i64) -> Option<i64> {
        match self {
            Tx::Sqlite(t) => t.sequences.iter().find(|e| e.run_id == run_id).map(|e| e.last),
            Tx::Postgres(_) => None,
        }
    }

    /// The sequence of the unit's appends to the run that its row does not hold yet (SQLite).
    pub(super) fn unstored_sequence(&self, run_id: i64) -> Option<i64> {
        match self {
            Tx::Sqlite(t) => t
                .sequences
                .iter()
                .find(|e| e.run_id == run_id && !e.stored)
                .map(|e| e.last),
            Tx::Postgres(_) => None,
        }
    }

    pub(super) fn mark_stored(&mut self, run_id: i64) {
        if let Tx::Sqlite(t) = self
            && let Some(entry) = t.sequences.iter_mut().find(|e| e.run_id == run_id)
        {
            entry.stored = true;
        }
    }

    /// Writes each run's sequence that the unit's appends moved and no [`Tx::update_run`]
    /// wrote (SQLite; one statement per such run, usually none or one).
    pub(super) async fn store_sequences(&mut self) -> Result<()> {
        let unstored: Vec<(i64, i64)> = match self {
            Tx::Sqlite(t) if !t.void => t
                .sequences
                .iter()
                .filter(|e| !e.stored)
                .map(|e| (e.run_id, e.last))
                .collect(),
            _ => return Ok(()),
        };
        for (run_id, sequence) in unstored {
            tx_dispatch!(self, store_event_sequence(run_id, sequence))?;
            self.mark_stored(run_id);
        }
        Ok(())
    }
}
