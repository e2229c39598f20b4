//! The PostgreSQL engine's connection pool: sqlx's `PgConnection`s, handed out and taken back
//! without a round trip of their own.
//!
//! sqlx's pool pings a connection when it hands it out (`test_before_acquire`) and again, always,
//! when it takes it back, so every checkout costs two extra round trips to the server besides its
//! statements: on a 2-core machine, where the server's backends and the kernel share the cores,
//! they were a third of the round trips of a settled task
//! (docs/decisions/130-postgres-own-connection-pool.md). Here a connection used within
//! [`PING_AFTER_IDLE`] goes back out as it is: sqlx's executor drains whatever an abandoned
//! statement left pending before it sends the next one (`wait_until_ready`), which is what the
//! release ping did. A connection idle longer is pinged first (a restarted server, a dropped
//! socket), and one returned after a connection fault anywhere in the process ([`note_fault`]) is
//! pinged before it is kept. A unit of work dropped without its `COMMIT` is rolled back on a
//! spawned task before its connection is kept ([`Conn::rollback_on_drop`]).

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgConnection, PgRow};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::prepared::{self, PreparedSet, Stmt};

/// A connection idle this long is pinged before it is handed out.
pub(crate) const PING_AFTER_IDLE: Duration = Duration::from_secs(1);
/// A connection idle this long is closed instead of handed out (sqlx's pool: ten minutes).
const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a checkout waits for a free slot before failing (sqlx's pool: 30 s).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Connection faults seen in this process (I/O, protocol, the server ending the session): a
/// connection checked out across one is pinged when it comes back.
static FAULTS: AtomicU64 = AtomicU64::new(0);

/// Counts `e` when it may have broken its connection (anything but a statement's own refusal).
pub(crate) fn note_fault(e: &sqlx::Error) {
    let fault = match e {
        sqlx::Error::Database(db) => db.code().is_some_and(|c| c.starts_with("08") || c.starts_with("57P")),
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::PoolClosed => true,
        _ => false,
    };
    if fault {
        FAULTS.fetch_add(1, Ordering::Relaxed);
    }
}

/// The pool: at most `max` connections, the idle ones kept newest last.
#[derive(Clone)]
pub(crate) struct Conns {
    inner: Arc<Inner>,
}

struct Inner {
    options: PgConnectOptions,
    slots: Arc<Semaphore>,
    idle: Mutex<Vec<Idle>>,
    closed: AtomicBool,
}

struct Idle {
    conn: PgConnection,
    since: Instant,
    prepared: PreparedSet,
}

/// A checked-out connection; dereferences to sqlx's `PgConnection`, and goes back to the pool
/// when dropped.
pub(crate) struct Conn {
    conn: Option<PgConnection>,
    permit: Option<OwnedSemaphorePermit>,
    pool: Arc<Inner>,
    faults: u64,
    /// An open transaction to roll back before the connection is kept.
    rollback: bool,
    /// The unit statements this connection has prepared (`prepared.rs`).
    prepared: PreparedSet,
    /// Closed rather than kept: a simple query that carried a `PREPARE` has not answered (it
    /// failed, or its future was dropped), so which templates the connection holds is in doubt.
    discard: bool,
}

impl Conns {
    pub(crate) fn new(options: PgConnectOptions, max: u32) -> Self {
        Self {
            inner: Arc::new(Inner {
                options,
                slots: Arc::new(Semaphore::new(max.max(1) as usize)),
                idle: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// A connection: an idle one (pinged first when it idled past [`PING_AFTER_IDLE`]), else a
    /// new one.
    pub(crate) async fn acquire(&self) -> Result<Conn, sqlx::Error> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(sqlx::Error::PoolClosed);
        }
        let permit = tokio::time::timeout(ACQUIRE_TIMEOUT, self.inner.slots.clone().acquire_owned())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let faults = FAULTS.load(Ordering::Relaxed);
        loop {
            let popped = self.inner.idle.lock().expect("pool lock").pop();
            let Some(Idle {
                mut conn,
                since,
                prepared,
            }) = popped
            else {
                break;
            };
            let idle = since.elapsed();
            if idle >= IDLE_TIMEOUT {
                let _ = conn.close().await;
                continue;
            }
            if idle >= PING_AFTER_IDLE && conn.ping().await.is_err() {
                continue;
            }
            return Ok(self.conn(conn, permit, faults, prepared));
        }
        let conn = self.inner.options.connect().await?;
        Ok(self.conn(conn, permit, faults, PreparedSet::default()))
    }

    fn conn(&self, conn: PgConnection, permit: OwnedSemaphorePermit, faults: u64, prepared: PreparedSet) -> Conn {
        Conn {
            conn: Some(conn),
            permit: Some(permit),
            pool: self.inner.clone(),
            faults,
            rollback: false,
            prepared,
            discard: false,
        }
    }

    /// Closes the idle connections and refuses further checkouts; connections out now are
    /// closed as they come back.
    pub(crate) async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.slots.close();
        let idle = std::mem::take(&mut *self.inner.idle.lock().expect("pool lock"));
        for Idle { conn, .. } in idle {
            let _ = conn.close().await;
        }
    }
}

impl Conn {
    /// Marks (or clears) an open transaction on this connection: dropped while marked, the
    /// connection is rolled back before the pool keeps it.
    pub(crate) fn rollback_on_drop(&mut self, open: bool) {
        self.rollback = open;
    }
}

impl Deref for Conn {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        self.conn.as_ref().expect("a live connection")
    }
}

impl DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn.as_mut().expect("a live connection")
    }
}

impl Inner {
    fn keep(&self, conn: PgConnection, prepared: PreparedSet) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        self.idle.lock().expect("pool lock").push(Idle {
            conn,
            since: Instant::now(),
            prepared,
        });
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else { return };
        let permit = self.permit.take();
        if self.discard {
            // Dropping the connection closes its socket; the server ends the session.
            return;
        }
        let pool = self.pool.clone();
        let prepared = std::mem::take(&mut self.prepared);
        let check = self.rollback || FAULTS.load(Ordering::Relaxed) != self.faults;
        if !check {
            pool.keep(conn, prepared);
            drop(permit);
            return;
        }
        // Outside a runtime the connection is not kept (dropping it closes the socket).
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let rollback = self.rollback;
        runtime.spawn(async move {
            let ok = if rollback {
                sqlx::raw_sql("ROLLBACK").execute(&mut conn).await.is_ok()
            } else {
                conn.ping().await.is_ok()
            };
            if ok {
                pool.keep(conn, prepared);
            }
            drop(permit);
        });
    }
}

/// A transaction on a checked-out connection (`BEGIN` … `COMMIT`), dereferencing to the
/// connection; dropped without [`Transaction::commit`], it rolls back (see [`Conn`]).
///
/// A lazy one ([`Transaction::lazy`]) sends its `BEGIN` with its first statement: in one simple
/// query with it when that statement is the unit's run lock ([`Transaction::begin_with`]),
/// else just before it ([`Transaction::ensure_begun`]). A unit that ran no statement commits
/// without a round trip.
pub(crate) struct Transaction {
    conn: Conn,
    begun: bool,
}

impl Transaction {
    /// Sends `BEGIN` (`READ COMMITTED`, the server's default).
    pub(crate) async fn begin(conn: Conn) -> Result<Self, sqlx::Error> {
        let mut tx = Self::lazy(conn);
        tx.ensure_begun().await?;
        Ok(tx)
    }

    /// A transaction whose `BEGIN` goes out with its first statement.
    pub(crate) fn lazy(conn: Conn) -> Self {
        Self { conn, begun: false }
    }

    /// Whether `BEGIN` was sent.
    pub(crate) fn begun(&self) -> bool {
        self.begun
    }

    /// Sends `BEGIN` unless it was sent.
    pub(crate) async fn ensure_begun(&mut self) -> Result<(), sqlx::Error> {
        if !self.begun {
            // Marked first: a `BEGIN` abandoned mid-flight still leaves a rollback behind it.
            self.conn.rollback_on_drop(true);
            self.begun = true;
            sqlx::raw_sql("BEGIN").execute(&mut *self.conn).await?;
        }
        Ok(())
    }

    /// Runs `stmts` in one simple query, one round trip, led by `head` and followed by `tail`
    /// (`prepared.rs`: a template this connection has not prepared goes out with its
    /// `PREPARE`): each statement's rows apart, in order, `head`'s set first when there is one.
    /// In `READ COMMITTED` each statement reads the database as it stands when it starts, so a
    /// read after a lock sees what the lock waited for.
    async fn simple(
        &mut self,
        stmts: &[Stmt],
        head: Option<&str>,
        tail: Option<&str>,
    ) -> Result<Vec<Vec<PgRow>>, sqlx::Error> {
        use futures_util::TryStreamExt;
        use sqlx::Executor;
        let conn = &mut self.conn;
        let rendered = prepared::render(stmts, &mut conn.prepared, head, tail);
        // Until the server has answered, the templates just added to the set may or may not be
        // prepared there (the query may fail before them, or this future be dropped before it
        // is sent): the connection is closed rather than kept unless the answer comes.
        conn.discard = rendered.prepares > 0;
        let mut sets = vec![Vec::new()];
        let mut stream = (&mut **conn).fetch_many(sqlx::raw_sql(AssertSqlSafe(rendered.text)));
        let result = async {
            while let Some(item) = stream.try_next().await? {
                match item {
                    sqlx::Either::Left(_done) => sets.push(Vec::new()),
                    sqlx::Either::Right(row) => sets.last_mut().expect("a set").push(row),
                }
            }
            Ok::<_, sqlx::Error>(())
        }
        .await;
        drop(stream);
        result?;
        conn.discard = false;
        // The `PREPARE`s' own (empty) sets.
        sets.drain(..rendered.prepares.min(sets.len()));
        Ok(sets)
    }

    /// Sends `BEGIN` and `stmt` in one simple query, one round trip; returns the statement's
    /// rows (text format).
    pub(crate) async fn begin_with(&mut self, stmt: &Stmt) -> Result<Vec<PgRow>, sqlx::Error> {
        let mut sets = self.begin_with_sets(std::slice::from_ref(stmt)).await?;
        Ok(if sets.len() > 1 {
            sets.swap_remove(1)
        } else {
            Vec::new()
        })
    }

    /// [`Transaction::begin_with`] for several statements: each statement's rows apart, in
    /// order (`BEGIN`'s own set, empty, first).
    pub(crate) async fn begin_with_sets(&mut self, stmts: &[Stmt]) -> Result<Vec<Vec<PgRow>>, sqlx::Error> {
        debug_assert!(!self.begun, "begin_with_sets on a begun transaction");
        self.conn.rollback_on_drop(true);
        self.begun = true;
        self.simple(stmts, Some("BEGIN"), None).await
    }

    /// Sends `stmts` in one simple query on the begun transaction.
    pub(crate) async fn execute_simple(&mut self, stmts: &[Stmt]) -> Result<(), sqlx::Error> {
        debug_assert!(self.begun, "a statement before BEGIN");
        self.simple(stmts, None, None).await.map(drop)
    }

    /// Sends `stmts` and then `reads` in one simple query (led by `BEGIN` when it was not
    /// sent): a unit's buffered writes and the reads that follow them, in one round trip. Each
    /// read's rows, in order.
    pub(crate) async fn reads_after(
        &mut self,
        mut stmts: Vec<Stmt>,
        reads: Vec<Stmt>,
    ) -> Result<Vec<Vec<PgRow>>, sqlx::Error> {
        let head = if self.begun {
            None
        } else {
            self.conn.rollback_on_drop(true);
            self.begun = true;
            Some("BEGIN")
        };
        let n = reads.len();
        stmts.extend(reads);
        let mut sets = self.simple(&stmts, head, None).await?;
        // One set per statement, `BEGIN`'s first when it led; the reads' are the last of them.
        let first = usize::from(head.is_some()) + stmts.len() - n;
        sets.resize_with(first + n, Vec::new);
        Ok(sets.split_off(first))
    }

    pub(crate) async fn commit(mut self) -> Result<(), sqlx::Error> {
        if self.begun {
            sqlx::raw_sql("COMMIT").execute(&mut *self.conn).await?;
        }
        self.conn.rollback_on_drop(false);
        Ok(())
    }

    /// Sends `stmts` and `COMMIT` in one simple query: the unit's deferred writes and its commit
    /// in one round trip. A failed statement stops the rest; the transaction is then rolled back
    /// as the connection returns.
    pub(crate) async fn commit_with(mut self, stmts: &[Stmt]) -> Result<(), sqlx::Error> {
        let head = if self.begun {
            None
        } else {
            self.conn.rollback_on_drop(true);
            Some("BEGIN")
        };
        self.simple(stmts, head, Some("COMMIT")).await?;
        self.conn.rollback_on_drop(false);
        Ok(())
    }

    /// Rolls the transaction back and continues on another pooled connection, lazy again
    /// (`BEGIN` goes out with its next statement). The old connection is released first (its
    /// rollback frees its slot); if no other is to be had, the transaction is left without a
    /// connection and the caller's unit must be void (it sends nothing more).
    pub(crate) async fn reopen(&mut self) -> Result<(), sqlx::Error> {
        let conns = Conns {
            inner: self.conn.pool.clone(),
        };
        let detached = Conn {
            conn: None,
            permit: None,
            pool: conns.inner.clone(),
            faults: 0,
            rollback: false,
            prepared: PreparedSet::default(),
            discard: false,
        };
        drop(std::mem::replace(&mut self.conn, detached));
        self.begun = false;
        self.conn = conns.acquire().await?;
        Ok(())
    }

    pub(crate) async fn rollback(mut self) -> Result<(), sqlx::Error> {
        if self.begun {
            sqlx::raw_sql("ROLLBACK").execute(&mut *self.conn).await?;
        }
        self.conn.rollback_on_drop(false);
        Ok(())
    }
}

/// `statement` with its parameters `$1`, `$2`, … replaced by `literals` (already SQL literals:
/// integers, or quoted text holding no quote), for [`Transaction::begin_with`].
pub(crate) fn inline_params(statement: &str, literals: &[&str]) -> String {
    let mut out = String::with_capacity(statement.len() + 64);
    let mut rest = statement;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..].bytes().take_while(u8::is_ascii_digit).count();
        let n: usize = rest[at + 1..at + 1 + digits].parse().expect("a numbered parameter");
        out.push_str(literals[n - 1]);
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    out
}

/// `text` as an escape string literal (`E'…'`), whose meaning does not depend on
/// `standard_conforming_strings`. The caller has refused U+0000 (the text guard).
pub(crate) fn push_literal(out: &mut String, text: &str) {
    out.push_str("E'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("''"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

impl Deref for Transaction {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        debug_assert!(self.begun, "a statement before BEGIN");
        &self.conn
    }
}

impl DerefMut for Transaction {
    fn deref_mut(&mut self) -> &mut PgConnection {
        debug_assert!(self.begun, "a statement before BEGIN");
        &mut self.conn
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parameters_are_inlined_by_number() {
        assert_eq!(
            super::inline_params("SELECT a FROM t WHERE id = $1 AND b = $2 OR c = $1", &["7", "'x'"]),
            "SELECT a FROM t WHERE id = 7 AND b = 'x' OR c = 7"
        );
        assert_eq!(
            super::inline_params("SELECT $10, $1", &["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]),
            "SELECT 10, 1"
        );
        assert_eq!(super::inline_params("SELECT 1", &[]), "SELECT 1");
    }

    #[test]
    fn literals_escape_quotes_and_backslashes() {
        let mut s = String::new();
        super::push_literal(&mut s, r#"it's a \"quote\" \n"#);
        assert_eq!(s, r#"E'it''s a \\"quote\\" \\n'"#);
    }
}
