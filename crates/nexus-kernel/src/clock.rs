//! The kernel's clock (storage-and-scale.md §5, "Clock"): every deadline, lease and `*_at` the
//! kernel writes or compares is read from it ([`Clock::now_ms`], through `Kernel::now_ms`).
//!
//! - SQLite (one node): the process clock ([`crate::time::now_ms`]).
//! - PostgreSQL (several nodes): the database's clock. The node reads `clock_timestamp()`
//!   ([`DatabaseClock::read`]) when it starts and on every sweep pass, and between two reads
//!   advances it by this process's monotonic clock (which no wall-clock step or skew moves).
//!   A read never moves it back (the midway guess errs by up to half a round trip).
//!   So every node counts from the one database clock, give or take half a round trip and the
//!   monotonic clock's drift over one sweep interval (microseconds), and a unit of work pays
//!   no extra round trip for it (docs/decisions/141-database-clock.md).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

use nexus_store::Store;

use crate::time;

/// Where now comes from.
#[derive(Debug)]
pub enum Clock {
    /// The process clock (SQLite: one node).
    Process,
    /// The database's clock (PostgreSQL: every node agrees).
    Database(DatabaseClock),
}

impl Clock {
    /// The clock a kernel over `store` uses.
    pub fn for_store(store: &Store) -> Self {
        if store.is_shared() {
            Clock::Database(DatabaseClock::new())
        } else {
            Clock::Process
        }
    }

    /// Now, in Unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::Process => time::now_ms(),
            Clock::Database(c) => c.now_ms(),
        }
    }

    /// Reads the database's clock again (PostgreSQL; nothing on SQLite).
    pub async fn read(&self, store: &Store) -> nexus_store::Result<()> {
        match self {
            Clock::Process => Ok(()),
            Clock::Database(c) => c.read(store).await,
        }
    }
}

/// The database's clock, advanced by the monotonic clock between reads.
#[derive(Debug)]
pub struct DatabaseClock {
    /// The origin of the monotonic count.
    base: Instant,
    /// The database's clock at `base` (ms); [`UNREAD`] until the first read.
    at_base: AtomicI64,
}

/// `at_base` before the first read: the process clock stands in.
const UNREAD: i64 = i64::MIN;

impl DatabaseClock {
    fn new() -> Self {
        Self {
            base: Instant::now(),
            at_base: AtomicI64::new(UNREAD),
        }
    }

    fn now_ms(&self) -> i64 {
        match self.at_base.load(Ordering::Relaxed) {
            UNREAD => time::now_ms(),
            at_base => at_base + self.base.elapsed().as_millis() as i64,
        }
    }

    /// Reads the database's clock; it was read about halfway through the round trip.
    async fn read(&self, store: &Store) -> nexus_store::Result<()> {
        let sent = self.base.elapsed();
        let Some(db) = store.database_clock_ms().await? else {
            return Ok(());
        };
        let received = self.base.elapsed();
        let midway = (sent + (received - sent) / 2).as_millis() as i64;
        self.set_base(db - midway);
        Ok(())
    }

    /// Takes a new reading of the database's clock at `base`, never backwards: the midway guess
    /// is off by up to half a round trip (more when the answer waits for a busy core), and a
    /// step back left a job this node had just made available (`available_at` = its now) not
    /// yet due at its next dequeue (the round benchmark's driver stopped on it; the serve loop
    /// waited for its next poll).
    fn set_base(&self, at_base: i64) {
        self.at_base.fetch_max(at_base, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unread_database_clock_is_the_process_clock_and_a_read_one_moves_monotonically() {
        let c = DatabaseClock::new();
        let before = time::now_ms();
        let now = c.now_ms();
        assert!(now >= before && now <= time::now_ms());
        // As if the database read 1,000,000 ms at base: now counts from there.
        c.at_base.store(1_000_000, Ordering::Relaxed);
        let a = c.now_ms();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = c.now_ms();
        assert!((1_000_000..1_000_000 + 60_000).contains(&a), "{a}");
        assert!(b >= a + 5, "{a} {b}");
    }

    #[test]
    fn a_read_behind_the_clock_does_not_move_it_back() {
        let c = DatabaseClock::new();
        c.at_base.store(1_000_000, Ordering::Relaxed);
        let before = c.now_ms();
        // A later read that lands 3 ms behind (its answer waited for a core).
        c.set_base(999_997);
        assert!(c.now_ms() >= before, "{before} {}", c.now_ms());
        // One ahead still moves it forward.
        c.set_base(1_000_050);
        assert!(c.now_ms() >= 1_000_050);
    }
}
