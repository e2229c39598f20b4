//! Test harness (feature `testing`): a fresh, migrated store per test on each engine.
//!
//! - [`sqlite`]: a database file in its own temporary directory.
//! - [`postgres`]: a uniquely named schema (`t_<uuid>`) in the database named by
//!   `NEXUS_TEST_DATABASE_URL`, dropped (best effort) when the [`TestStore`] drops. Without the
//!   variable, or with the server unreachable, it returns `None`, unless
//!   `NEXUS_REQUIRE_POSTGRES=1`, which turns both cases into a panic.
//! - [`engines`]: SQLite, then PostgreSQL when available.
//!
//! [`TestStore::url`] opens the same store from another process (`nexus --database-url …`):
//! `sqlite://PATH`, or the PostgreSQL URL with `?schema=NAME` (see [`crate::StoreOptions`]).
//! Mind the SQLite single-node lock: the test must drop its own store before a child process
//! opens the same file.
//!
//! [`introspect`] reads a store's schema as raw catalog facts for the parity test, and
//! [`row_count`] counts a table's rows (`schema.rs`); [`seed_member`] and [`new_run`] give the
//! account, workspace, member and run most store tests start from. `measure.rs` holds what the
//! benchmarks measure with: CPU time, the machine's CPU split, statement events, the inbox
//! workload. [`OutsideSession`] is a PostgreSQL session beside the store's pool, for tests
//! that hold row locks.

use std::time::Duration;

use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use crate::postgres::split_schema;
use crate::prelude::*;
use crate::{Store, StoreOptions};

mod measure;
mod outside;
mod schema;

pub use crate::frozen::{forget_all as forget_frozen_contexts, kept_size as frozen_contexts_kept};
pub use measure::*;
pub use outside::OutsideSession;
pub use schema::*;

/// The variable naming the PostgreSQL database tests may use.
pub const DATABASE_URL_VAR: &str = "NEXUS_TEST_DATABASE_URL";
/// Set to `1` to make a missing or unreachable PostgreSQL fail the tests instead of skipping.
pub const REQUIRE_POSTGRES_VAR: &str = "NEXUS_REQUIRE_POSTGRES";
/// `full` (the default) or `normal`: the SQLite test store's `synchronous` setting, so a
/// benchmark can measure both in one sitting from one build.
pub const SQLITE_SYNCHRONOUS_VAR: &str = "NEXUS_TEST_SQLITE_SYNCHRONOUS";

/// The SQLite `synchronous` setting [`SQLITE_SYNCHRONOUS_VAR`] asks for (a panic on any other
/// value, so a typo never measures the wrong setting).
pub fn sqlite_synchronous() -> crate::SqliteSynchronous {
    match std::env::var(SQLITE_SYNCHRONOUS_VAR)
        .ok()
        .as_deref()
        .map(str::to_ascii_lowercase)
    {
        None => crate::SqliteSynchronous::default(),
        Some(v) if v == "full" => crate::SqliteSynchronous::Full,
        Some(v) if v == "normal" => crate::SqliteSynchronous::Normal,
        Some(v) => panic!("{SQLITE_SYNCHRONOUS_VAR}={v}: expected full or normal"),
    }
}

/// How many nodes (PostgreSQL stores over one database, as `nexus serve` processes would
/// open) a benchmark's several-node figure runs on; 1, the default, skips that figure.
pub const BENCH_NODES_VAR: &str = "NEXUS_BENCH_NODES";

/// [`BENCH_NODES_VAR`]'s value, 1 to 8 (a panic on anything else, so a typo never measures
/// one node and calls it two).
pub fn bench_nodes() -> usize {
    match std::env::var(BENCH_NODES_VAR) {
        Err(_) => 1,
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n @ 1..=8) => n,
            _ => panic!("{BENCH_NODES_VAR}={v}: expected a number of nodes from 1 to 8"),
        },
    }
}

/// A fresh, migrated store for one test. Dropping it removes the temporary directory
/// (SQLite) or drops the schema (PostgreSQL, best effort). `store` may be moved out (and
/// dropped early, say before a child process opens the same SQLite file); the cleanup guards
/// stay with the rest of the value.
pub struct TestStore {
    pub store: Store,
    /// `sqlite` or `postgres`.
    pub dialect: &'static str,
    /// A URL another process can open: `sqlite://PATH`, or the PostgreSQL URL with
    /// `?schema=NAME`.
    pub url: String,
    /// The PostgreSQL schema (`None` for SQLite).
    pub schema: Option<String>,
    /// The PostgreSQL URL without the schema (`None` for SQLite).
    pub base_url: Option<String>,
    /// Keeps the SQLite directory alive; declared after `store` so the pool drops first.
    dir: Option<tempfile::TempDir>,
    /// Drops the PostgreSQL schema.
    _schema_guard: Option<SchemaGuard>,
}

impl TestStore {
    /// Options that open this same store again (`Store::open`).
    pub fn options(&self) -> StoreOptions {
        StoreOptions {
            postgres_max_connections: 5,
            sqlite_synchronous: sqlite_synchronous(),
            ..StoreOptions::new(self.url.clone())
        }
    }

    /// The SQLite file (`None` for PostgreSQL).
    pub fn sqlite_path(&self) -> Option<std::path::PathBuf> {
        self.dir.as_ref().map(|d| d.path().join("nexus.db"))
    }

    /// A PostgreSQL connection of its own to the test's schema (`None` for SQLite).
    async fn raw_postgres(&self) -> Option<sqlx::PgConnection> {
        use sqlx::Connection;
        let (base, schema) = (self.base_url.as_ref()?, self.schema.as_ref()?);
        let mut c = sqlx::PgConnection::connect(base).await.expect("connect");
        let search_path = format!("SET search_path TO \"{schema}\"");
        sqlx::query(sqlx::AssertSqlSafe(search_path))
            .execute(&mut c)
            .await
            .expect("search_path");
        Some(c)
    }

    /// A SQLite connection of its own to the test's file.
    fn raw_sqlite(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.sqlite_path().expect("sqlite")).expect("open")
    }

    /// Runs `sql` on a connection of its own beside the store with the CHECK constraints of
    /// `tables` off (SQLite: `PRAGMA ignore_check_constraints`; PostgreSQL: dropped, in the
    /// test's own schema): writes no door can, to test what a corrupt row does.
    pub async fn execute_unchecked(&self, tables: &[&str], sql: &str) {
        let Some(mut c) = self.raw_postgres().await else {
            let c = self.raw_sqlite();
            c.execute_batch("PRAGMA ignore_check_constraints = ON").expect("pragma");
            c.execute_batch(sql).expect("execute");
            return;
        };
        let checks: Vec<(String, String)> = sqlx::query_as(
            "SELECT t.relname::text, k.conname::text FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid \
             WHERE k.contype = 'c' AND t.relname = ANY($1) AND t.relnamespace = current_schema()::regnamespace",
        )
        .bind(tables.iter().map(|t| t.to_string()).collect::<Vec<_>>())
        .fetch_all(&mut c)
        .await
        .expect("constraints");
        for (table, name) in checks {
            let drop = format!("ALTER TABLE {table} DROP CONSTRAINT \"{name}\"");
            sqlx::query(sqlx::AssertSqlSafe(drop))
                .execute(&mut c)
                .await
                .expect("drop");
        }
        sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(&mut c)
            .await
            .expect("execute");
    }

    /// The first column of the first row `sql` answers, as text, read beside the store (for
    /// a row the store itself refuses to read).
    pub async fn query_text(&self, sql: &str) -> Option<String> {
        match self.raw_postgres().await {
            Some(mut c) => sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
                .fetch_optional(&mut c)
                .await
                .expect("query"),
            None => self.raw_sqlite().query_row(sql, [], |r| r.get(0)).ok(),
        }
    }
}

/// A user-private runner named `laptop`, managed by `manager_id`.
pub fn new_runner(account_id: i64, manager_id: i64, now: i64) -> crate::NewRunner {
    crate::NewRunner {
        public_id: uuid::Uuid::now_v7(),
        account_id,
        display_name: "laptop".into(),
        assignment_scope: crate::AssignmentScope::UserPrivate,
        manager_id,
        now,
    }
}

impl std::fmt::Debug for TestStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestStore")
            .field("dialect", &self.dialect)
            .field("url", &crate::redact_url(&self.url))
            .finish_non_exhaustive()
    }
}

/// Drops a test schema when it goes out of scope.
struct SchemaGuard {
    base_url: String,
    schema: String,
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        let base = std::mem::take(&mut self.base_url);
        let schema = std::mem::take(&mut self.schema);
        // On a thread with its own runtime: `drop` cannot await, and it may run inside (or
        // outside) the test's runtime. A failure never fails the test.
        let worker = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            runtime.block_on(async move {
                let drop_it = async {
                    let mut conn = PgConnection::connect(&base).await?;
                    // A session of the test may still hold locks in the schema: a dropped,
                    // uncommitted transaction whose queued ROLLBACK never ran because this drop
                    // blocks the test's runtime. The test is over, so end those sessions.
                    sqlx::query(
                        "SELECT pg_terminate_backend(l.pid) FROM pg_locks l \
                         JOIN pg_class c ON c.oid = l.relation \
                         JOIN pg_namespace n ON n.oid = c.relnamespace \
                         WHERE n.nspname = $1 AND l.pid <> pg_backend_pid()",
                    )
                    .bind(&schema)
                    .fetch_all(&mut conn)
                    .await?;
                    let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
                    sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await?;
                    conn.close().await
                };
                match tokio::time::timeout(Duration::from_secs(20), drop_it).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => eprintln!("note: could not drop test schema {schema}: {e}"),
                    Err(_) => eprintln!("note: dropping test schema {schema} timed out"),
                }
            });
        });
        let _ = worker.join();
    }
}

fn require_postgres() -> bool {
    std::env::var(REQUIRE_POSTGRES_VAR).is_ok_and(|v| v == "1")
}

/// A fresh, migrated SQLite store in its own temporary directory.
pub async fn sqlite() -> TestStore {
    let dir = tempfile::Builder::new()
        .prefix("nexus-store-test")
        .tempdir()
        .expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("nexus.db").display());
    let options = StoreOptions {
        sqlite_synchronous: sqlite_synchronous(),
        ..StoreOptions::new(url.clone())
    };
    let store = Store::open(&options).await.expect("open the SQLite test store");
    store.migrate().await.expect("migrate the SQLite test store");
    TestStore {
        store,
        dialect: "sqlite",
        url,
        schema: None,
        base_url: None,
        dir: Some(dir),
        _schema_guard: None,
    }
}

/// A fresh, migrated PostgreSQL store in its own schema, or `None` when PostgreSQL is not
/// configured or not reachable (a panic instead under `NEXUS_REQUIRE_POSTGRES=1`).
pub async fn postgres() -> Option<TestStore> {
    let require = require_postgres();
    let configured = std::env::var(DATABASE_URL_VAR).ok().filter(|u| !u.trim().is_empty());
    let Some(configured) = configured else {
        if require {
            panic!(
                "{REQUIRE_POSTGRES_VAR}=1 but {DATABASE_URL_VAR} is not set: point it at a \
                 PostgreSQL database, e.g. postgres://postgres@127.0.0.1:5432/test"
            );
        }
        return None;
    };
    let (base, _) = split_schema(&configured).expect("a valid NEXUS_TEST_DATABASE_URL");
    let schema = format!("t_{}", Uuid::now_v7().simple());
    if let Err(e) = create_schema(&base, &schema).await {
        let shown = crate::redact_url(&base);
        if require {
            panic!("{REQUIRE_POSTGRES_VAR}=1 but PostgreSQL at {shown} is unusable: {e}");
        }
        eprintln!("note: PostgreSQL at {shown} is unusable ({e}); skipping the PostgreSQL engine");
        return None;
    }
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}schema={schema}");
    let options = StoreOptions {
        postgres_max_connections: 5,
        ..StoreOptions::new(url.clone())
    };
    // From here on the schema exists: the guard drops it even if opening fails.
    let guard = SchemaGuard {
        base_url: base.clone(),
        schema: schema.clone(),
    };
    let store = Store::open(&options).await.expect("open the PostgreSQL test store");
    store.migrate().await.expect("migrate the PostgreSQL test store");
    Some(TestStore {
        store,
        dialect: "postgres",
        url,
        schema: Some(schema),
        base_url: Some(base),
        dir: None,
        _schema_guard: Some(guard),
    })
}

async fn create_schema(base: &str, schema: &str) -> std::result::Result<(), String> {
    let work = async {
        let mut conn = PgConnection::connect(base).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
            .execute(&mut conn)
            .await?;
        conn.close().await
    };
    match tokio::time::timeout(Duration::from_secs(10), work).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out after 10 s".into()),
    }
}

/// Every engine available: SQLite, then PostgreSQL when configured and reachable.
pub async fn engines() -> Vec<TestStore> {
    let mut all = vec![sqlite().await];
    all.extend(postgres().await);
    all
}

/// An account `acme`, its workspace `main` and a human member `ada` in it (no standing), at
/// `now`: the rows most store tests start from.
pub async fn seed_member(store: &Store, now: i64) -> (crate::AccountRow, crate::WorkspaceRow, crate::MemberRow) {
    let account = store
        .ensure_account(Uuid::now_v7(), "acme", now)
        .await
        .expect("ensure_account");
    let workspace = store
        .ensure_workspace(Uuid::now_v7(), account.id, "main", now)
        .await
        .expect("ensure_workspace");
    let (member, _) = store
        .create_member(crate::NewMember {
            public_id: Uuid::now_v7(),
            account_id: account.id,
            kind: crate::MemberKind::Human,
            handle: "ada".into(),
            display_name: "Ada".into(),
            role: crate::MemberRole::Admin,
            steward_id: None,
            agent_executor_public_id: None,
            now,
        })
        .await
        .expect("create_member");
    (account, workspace, member)
}

/// Stores `texts` as completed turns of the conversation, alternating user and assistant from a
/// user turn, the i-th created at `now + i`, in one unit of work (turns are the kernel's turn
/// engine's to write; tests of what reads them seed them here).
pub async fn seed_turns(store: &Store, conversation_id: i64, texts: &[&str], now: i64) -> Vec<crate::TurnRow> {
    let mut tx = store.begin().await.expect("begin");
    let mut turns = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let turn = tx
            .insert_turn(crate::NewTurn {
                public_id: Uuid::now_v7(),
                conversation_id,
                role: if i % 2 == 0 {
                    crate::TurnRole::User
                } else {
                    crate::TurnRole::Assistant
                },
                status: crate::TurnStatus::Completed,
                input_id: None,
                run_id: None,
                content: Some(text.to_string()),
                error_key: None,
                created_at: now + i as i64,
            })
            .await
            .expect("insert_turn");
        turns.push(turn);
    }
    tx.commit().await.expect("commit");
    turns
}

/// A standalone run in `workspace_id`, created and answered by `member_id`, at `now`.
pub fn new_run(workspace_id: i64, member_id: i64, status: crate::RunStatus, now: i64) -> crate::NewRun {
    crate::NewRun {
        public_id: Uuid::now_v7(),
        workspace_id,
        created_by_id: member_id,
        answering_member_id: member_id,
        declaring_agent_id: None,
        status,
        hosting: crate::Hosting::Standalone,
        approval_mode: crate::ApprovalMode::Ask,
        approval_rules: None,
        default_runner_id: None,
        revision: 1,
        created_at: now,
        started_at: None,
    }
}
