//! Group commit: units of work that queue for the writer gate share one SQLite transaction.
//!
//! SQLite admits one writer, so every unit of work waits for the writer gate. A `COMMIT` is a
//! fixed cost (the dirty pages appended to the WAL, the WAL index updated), and units that
//! follow one another touch the same pages (the runs, events and task index pages). So when a
//! unit commits while other writers are queued for the gate, the transaction stays open: the
//! unit's changes are merged (its savepoint released), the gate passes to the next writer,
//! and the unit waits for the shared `COMMIT`. The next unit runs inside the same transaction
//! under its own `SAVEPOINT`, so its rollback undoes only its own work.
//!
//! A group ends with one `COMMIT` when a unit ends and nobody is queued, when it holds
//! [`MAX_UNITS`] units, or when any other user of the write connection (a single-statement
//! write, a migration, `close`) takes the gate: the connection never runs anything outside a
//! unit while a group is open. A waiting member also queues for the gate itself and commits
//! the group when it gets there first, so a group never waits on a writer that went away (a
//! queued caller whose future was dropped); a member whose own future is dropped while it waits
//! leaves a task that does the same. Every member learns the one outcome: a failed
//! `COMMIT` fails them all, and nothing of the group is kept.
//!
//! What this changes for a caller: nothing but timing. `Tx::commit` still returns only after
//! the unit's changes are committed (or with the error that says they are not); readers see a
//! unit's changes only after that commit, as before. In memory (`sqlite::memory:`) the one
//! connection also serves reads, which must not see a group's uncommitted work, so there every
//! unit commits alone.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::watch;

use super::Shared;

/// The most units one `COMMIT` carries (it bounds both a member's wait and what one failed
/// commit takes with it).
pub(crate) const MAX_UNITS: usize = 32;

/// A group's outcome, as every member receives it: `Err` holds SQLite's extended result code
/// and message (a `rusqlite::Error` is not `Clone`).
type Outcome = std::result::Result<(), (i32, String)>;

/// The group-commit state of one write connection. Touched only by the holder of the gate,
/// except the queue counter.
pub(crate) struct Group {
    enabled: bool,
    /// Writers waiting for the gate: whether another unit will follow the one committing.
    queued: AtomicUsize,
    state: StdMutex<State>,
    /// How long the gate has been held in all (nanoseconds; [`GateUse::held`]), and how many
    /// units of work ended.
    held_ns: AtomicU64,
    units: AtomicU64,
}

/// How much the writer gate has been used since the store opened
/// ([`crate::Store::writer_gate_use`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GateUse {
    /// The time units of work held the gate, from taking it to passing it on, summed, with the
    /// holds of waiting members that took it to commit their group ([`wait`]). Single-statement
    /// writes outside a unit are not counted.
    pub held: Duration,
    /// Units of work that ended (committed, rolled back or dropped).
    pub units: u64,
    /// `COMMIT`s run: units per commit is how much group commit merged.
    pub commits: u64,
}

#[derive(Default)]
struct State {
    /// The write connection holds a transaction that a unit began.
    open: bool,
    /// Units whose changes the open transaction holds, merged and waiting for its `COMMIT`.
    members: usize,
    /// Which group is open: advanced when one ends.
    generation: u64,
    /// Tells the waiting members the open group's outcome.
    done: Option<watch::Sender<Option<Outcome>>>,
    /// `COMMIT`s run so far ([`GateUse::commits`]).
    commits: u64,
}

/// How a unit ended (from [`Group::end_unit`]).
pub(crate) enum End {
    /// The unit's work is committed, rolled back as asked, or (`Err`) lost.
    Done(rusqlite::Result<()>),
    /// The unit's work is merged into the open transaction; [`wait`] for its `COMMIT`.
    Wait(Member),
}

/// A unit waiting for its group's `COMMIT`.
pub(crate) struct Member {
    generation: u64,
    done: watch::Receiver<Option<Outcome>>,
}

/// How the unit wants to end.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Commit,
    Rollback,
}

/// Counts a writer as queued until it holds the gate (or gives up).
pub(crate) struct Queued<'a>(&'a Group);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.queued.fetch_sub(1, Ordering::Relaxed);
    }
}

fn run(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

fn outcome_error(e: &rusqlite::Error) -> (i32, String) {
    let code = match e {
        rusqlite::Error::SqliteFailure(f, _) => f.extended_code,
        _ => rusqlite::ffi::SQLITE_ERROR,
    };
    (code, e.to_string())
}

fn to_error((code, message): (i32, String)) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some(message))
}

fn vanished() -> rusqlite::Error {
    to_error((
        rusqlite::ffi::SQLITE_ABORT,
        "SQLite rolled back the open transaction; the group's work was not committed".into(),
    ))
}

impl Group {
    /// `enabled: false` commits every unit alone (the in-memory database).
    pub(crate) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            queued: AtomicUsize::new(0),
            state: StdMutex::default(),
            held_ns: AtomicU64::new(0),
            units: AtomicU64::new(0),
        }
    }

    /// Counts a unit that took the gate at `since` and is passing it on now.
    pub(crate) fn note_unit(&self, since: Instant) {
        self.note_held(since);
        self.units.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds a hold of the gate from `since` until now that is not a unit of work's: a waiting
    /// member (or the task a dropped member leaves) that took the gate to commit its group.
    fn note_held(&self, since: Instant) {
        let held = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.held_ns.fetch_add(held, Ordering::Relaxed);
    }

    /// The gate's use so far.
    pub(crate) fn gate_use(&self) -> GateUse {
        GateUse {
            held: Duration::from_nanos(self.held_ns.load(Ordering::Relaxed)),
            units: self.units.load(Ordering::Relaxed),
            commits: self.state().commits,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks a writer as waiting for the gate while the returned guard lives.
    pub(crate) fn queue(&self) -> Queued<'_> {
        self.queued.fetch_add(1, Ordering::Relaxed);
        Queued(self)
    }

    /// Starts a unit on the gate holder's connection: `BEGIN IMMEDIATE`, or a `SAVEPOINT`
    /// inside the open group. Returns whether the unit is a savepoint.
    pub(crate) fn begin(&self, conn: &Connection) -> rusqlite::Result<bool> {
        let mut s = self.state();
        if s.open {
            run(conn, "SAVEPOINT nexus_unit")?;
            return Ok(true);
        }
        run(conn, "BEGIN IMMEDIATE")?;
        s.open = true;
        s.members = 0;
        Ok(false)
    }

    /// Commits the open group, if any, before the gate holder uses the connection for anything
    /// but a unit of work.
    pub(crate) fn settle(&self, conn: &Connection) -> rusqlite::Result<()> {
        let mut s = self.state();
        if s.open {
            Self::commit_now(conn, &mut s)?;
        }
        Ok(())
    }

    /// Ends the gate holder's unit. A commit merges the unit and either commits the group now
    /// or, with writers queued and room left, leaves it open for them ([`End::Wait`]).
    pub(crate) fn end_unit(&self, conn: &Connection, savepoint: bool, ending: Ending) -> End {
        let mut s = self.state();
        if !s.open || conn.is_autocommit() {
            // SQLite ended the transaction itself (an I/O or full-disk failure rolls it back).
            let lost = s.open && (s.members > 0 || ending == Ending::Commit);
            Self::finish(&mut s, Err(outcome_error(&vanished())));
            return End::Done(if lost { Err(vanished()) } else { Ok(()) });
        }
        match ending {
            Ending::Commit => {
                if savepoint && let Err(e) = run(conn, "RELEASE nexus_unit") {
                    // The unit's work cannot be merged: undo it, the group goes on.
                    let undone = run(conn, "ROLLBACK TO nexus_unit").and_then(|()| run(conn, "RELEASE nexus_unit"));
                    if undone.is_err() {
                        let _ = Self::abandon(conn, &mut s, &e);
                        return End::Done(Err(e));
                    }
                    return self.after_unit(conn, &mut s, Err(e));
                }
                s.members += 1;
                if self.enabled && s.members < MAX_UNITS && self.queued.load(Ordering::Relaxed) > 0 {
                    let done = s.done.get_or_insert_with(|| watch::channel(None).0).subscribe();
                    return End::Wait(Member {
                        generation: s.generation,
                        done,
                    });
                }
                End::Done(Self::commit_now(conn, &mut s))
            }
            Ending::Rollback if !savepoint => {
                // The group's first unit: no member is merged yet, so the whole transaction goes.
                let r = run(conn, "ROLLBACK");
                Self::finish(&mut s, Ok(()));
                End::Done(r)
            }
            Ending::Rollback => {
                let undone = run(conn, "ROLLBACK TO nexus_unit").and_then(|()| run(conn, "RELEASE nexus_unit"));
                if let Err(e) = undone {
                    return End::Done(Self::abandon(conn, &mut s, &e).and(Err(e)));
                }
                self.after_unit(conn, &mut s, Ok(()))
            }
        }
    }

    /// After a unit undid its own work inside a group: the members still wait for a `COMMIT`,
    /// now or by a later unit.
    fn after_unit(&self, conn: &Connection, s: &mut State, own: rusqlite::Result<()>) -> End {
        if s.members == 0 {
            let r = run(conn, "ROLLBACK");
            Self::finish(s, Ok(()));
            return End::Done(own.and(r));
        }
        if !(self.enabled && s.members < MAX_UNITS && self.queued.load(Ordering::Relaxed) > 0) {
            let committed = Self::commit_now(conn, s);
            return End::Done(own.and(committed));
        }
        End::Done(own)
    }

    /// `COMMIT`s the open transaction and tells its members.
    fn commit_now(conn: &Connection, s: &mut State) -> rusqlite::Result<()> {
        s.commits += 1;
        match run(conn, "COMMIT") {
            Ok(()) => {
                Self::finish(s, Ok(()));
                Ok(())
            }
            Err(e) => {
                // A failed COMMIT may leave the transaction open: nothing of it is kept.
                if !conn.is_autocommit() {
                    let _ = run(conn, "ROLLBACK");
                }
                Self::finish(s, Err(outcome_error(&e)));
                Err(e)
            }
        }
    }

    /// Rolls the whole group back after a failure that left it unusable.
    fn abandon(conn: &Connection, s: &mut State, e: &rusqlite::Error) -> rusqlite::Result<()> {
        let r = if conn.is_autocommit() {
            Ok(())
        } else {
            run(conn, "ROLLBACK")
        };
        Self::finish(s, Err(outcome_error(e)));
        r
    }

    fn finish(s: &mut State, outcome: Outcome) {
        if let Some(done) = s.done.take() {
            done.send_replace(Some(outcome));
        }
        s.open = false;
        s.members = 0;
        s.generation = s.generation.wrapping_add(1);
    }

    /// Commits the group `generation` if it is still open (the caller holds the gate).
    fn settle_for(&self, conn: &Connection, generation: u64) {
        let mut s = self.state();
        if s.open && s.generation == generation {
            let _ = Self::commit_now(conn, &mut s);
        }
    }
}

/// Commits a group whose waiting member went away (its caller's future was dropped) before
/// the outcome came: a task queues for the gate and commits the group if it is still open, so
/// the work never sits in an open transaction until some later writer happens by.
struct Orphan {
    group: Arc<Group>,
    writer: Shared,
    generation: u64,
    armed: bool,
}

impl Drop for Orphan {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // no runtime left: the store is going away, and its next writer settles
        };
        let (group, writer, generation) = (self.group.clone(), self.writer.clone(), self.generation);
        runtime.spawn(async move {
            let held = writer.lock_owned().await;
            let since = Instant::now();
            group.settle_for(&held, generation);
            drop(held);
            group.note_held(since);
        });
    }
}

/// Waits for `member`'s group to commit, queuing for the gate meanwhile so that, if no later
/// unit commits the group first, this member does (and, dropped before the outcome, leaves a
/// task that does).
pub(crate) async fn wait(group: Arc<Group>, writer: Shared, member: Member) -> rusqlite::Result<()> {
    let Member { generation, mut done } = member;
    let mut orphan = Orphan {
        group: group.clone(),
        writer: writer.clone(),
        generation,
        armed: true,
    };
    loop {
        tokio::select! {
            biased;
            outcome = done.wait_for(Option::is_some) => {
                orphan.armed = false;
                return match outcome.ok().and_then(|o| o.clone()) {
                    Some(Ok(())) => Ok(()),
                    Some(Err(e)) => Err(to_error(e)),
                    None => Err(vanished()),
                };
            }
            held = writer.clone().lock_owned() => {
                let since = Instant::now();
                group.settle_for(&held, generation);
                drop(held);
                group.note_held(since);
            }
        }
    }
}
