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
//! [`introspect`] reads a store's schema as raw catalog facts for the parity test; [`seed_member`]
//! and [`new_run`] give the account, workspace, member and run most store tests start from.

use std::time::Duration;

use sqlx::{Connection, PgConnection, Row};
use uuid::Uuid;

use crate::postgres::split_schema;
use crate::{Engine, Result, Store, StoreOptions};

/// The variable naming the PostgreSQL database tests may use.
pub const DATABASE_URL_VAR: &str = "NEXUS_TEST_DATABASE_URL";
/// Set to `1` to make a missing or unreachable PostgreSQL fail the tests instead of skipping.
pub const REQUIRE_POSTGRES_VAR: &str = "NEXUS_REQUIRE_POSTGRES";

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
            ..StoreOptions::new(self.url.clone())
        }
    }

    /// The SQLite file (`None` for PostgreSQL).
    pub fn sqlite_path(&self) -> Option<std::path::PathBuf> {
        self.dir.as_ref().map(|d| d.path().join("nexus.db"))
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
    let store = Store::open(&StoreOptions::new(url.clone()))
        .await
        .expect("open the SQLite test store");
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

// ---- schema introspection (for the parity test) ----

/// One column as the catalog reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawColumn {
    pub table: String,
    pub name: String,
    /// SQLite: the declared type (`INTEGER`, `BIGINT`, `TEXT`, …). PostgreSQL:
    /// `information_schema.columns.data_type` (`bigint`, `uuid`, `text`, `boolean`, …).
    pub declared_type: String,
    pub not_null: bool,
    /// The default expression as the catalog prints it.
    pub default: Option<String>,
    /// SQLite: the rowid alias (`INTEGER PRIMARY KEY`). PostgreSQL: an identity column.
    pub identity: bool,
}

/// One index, including those behind primary keys and unique constraints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawIndex {
    pub table: String,
    pub name: String,
    pub columns: Vec<String>,
    pub unique: bool,
    /// The index behind the primary key.
    pub primary: bool,
    /// Behind a `UNIQUE` (or primary key) constraint, rather than `CREATE INDEX`.
    pub constraint: bool,
    /// A partial index's predicate as the catalog prints it.
    pub predicate: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawForeignKey {
    pub table: String,
    pub column: String,
    pub references_table: String,
    pub references_column: String,
}

/// A schema as raw catalog facts (tables other than `_sqlx_migrations`), ordered by table.
#[derive(Debug, Clone)]
pub struct RawSchema {
    pub dialect: &'static str,
    pub columns: Vec<RawColumn>,
    /// `(table, primary key columns in key order)`, for tables with a primary key.
    pub primary_keys: Vec<(String, Vec<String>)>,
    pub indexes: Vec<RawIndex>,
    pub foreign_keys: Vec<RawForeignKey>,
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
            role: "admin".into(),
            steward_id: None,
            agent_executor_public_id: None,
            now,
        })
        .await
        .expect("create_member");
    (account, workspace, member)
}

/// A standalone run in `workspace_id`, created and answered by `member_id`, at `now`.
pub fn new_run(workspace_id: i64, member_id: i64, status: &str, now: i64) -> crate::NewRun {
    crate::NewRun {
        public_id: Uuid::now_v7(),
        workspace_id,
        created_by_id: member_id,
        answering_member_id: member_id,
        declaring_agent_id: None,
        status: status.into(),
        hosting: r#"{"kind":"standalone"}"#.into(),
        approval_mode: "ask".into(),
        approval_rules: None,
        default_runner_id: None,
        revision: 1,
        created_at: now,
        started_at: None,
    }
}

/// Reads the schema of the store's database (PostgreSQL: its current schema).
pub async fn introspect(store: &Store) -> Result<RawSchema> {
    match store {
        Store::Sqlite(s) => introspect_sqlite(&mut *s.read_conn().await?),
        Store::Postgres(s) => introspect_postgres(s.pool()).await,
    }
}

const SQLITE_TABLES: &str = "m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> '_sqlx_migrations'";

fn introspect_sqlite(conn: &mut rusqlite::Connection) -> Result<RawSchema> {
    use crate::row::Columns;
    use crate::sqlite::driver::{query, query_scalar};
    let rows = query(&format!(
        "SELECT m.name AS table_name, p.name AS column_name, p.type AS declared_type, \
         p.\"notnull\" AS not_null, p.dflt_value AS default_value, p.pk AS pk \
         FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE {SQLITE_TABLES} \
         ORDER BY m.name, p.cid"
    ))
    .fetch_all(conn)
    .into_inner()?;
    let mut columns = Vec::new();
    let mut pk: Vec<(String, i64, String)> = Vec::new();
    for r in &rows {
        let table = r.text("table_name")?;
        let name = r.text("column_name")?;
        let declared_type = r.text("declared_type")?;
        let pk_position = r.int("pk")?;
        if pk_position > 0 {
            pk.push((table.clone(), pk_position, name.clone()));
        }
        columns.push(RawColumn {
            table,
            name,
            declared_type,
            not_null: r.int("not_null")? != 0,
            default: r.opt_text("default_value")?,
            identity: false,
        });
    }
    pk.sort();
    let mut primary_keys: Vec<(String, Vec<String>)> = Vec::new();
    for (table, _, column) in pk {
        match primary_keys.last_mut() {
            Some((t, cols)) if *t == table => cols.push(column),
            _ => primary_keys.push((table, vec![column])),
        }
    }
    // The rowid alias: a sole INTEGER primary key column.
    for (table, cols) in &primary_keys {
        if let [only] = cols.as_slice() {
            for c in columns.iter_mut().filter(|c| &c.table == table && &c.name == only) {
                c.identity = c.declared_type.eq_ignore_ascii_case("INTEGER");
            }
        }
    }

    let rows = query(&format!(
        "SELECT m.name AS table_name, il.name AS index_name, il.\"unique\" AS is_unique, \
         il.origin AS origin, \
         (SELECT s.sql FROM sqlite_master s WHERE s.type = 'index' AND s.name = il.name) AS definition \
         FROM sqlite_master m JOIN pragma_index_list(m.name) il WHERE {SQLITE_TABLES} \
         ORDER BY m.name, il.name"
    ))
    .fetch_all(conn)
    .into_inner()?;
    let mut indexes = Vec::new();
    for r in &rows {
        let name = r.text("index_name")?;
        let origin = r.text("origin")?;
        let definition = r.opt_text("definition")?;
        let columns: Vec<String> = query_scalar("SELECT name FROM pragma_index_info($1) ORDER BY seqno")
            .bind(&name)
            .fetch_all(conn)
            .into_inner()?;
        let predicate = definition.as_deref().and_then(|d| {
            let upper = d.to_ascii_uppercase();
            upper
                .find(" WHERE ")
                .map(|at| d[at + " WHERE ".len()..].trim().to_string())
        });
        indexes.push(RawIndex {
            table: r.text("table_name")?,
            name,
            columns,
            unique: r.int("is_unique")? != 0,
            primary: origin == "pk",
            constraint: origin == "pk" || origin == "u",
            predicate,
        });
    }

    let rows = query(&format!(
        "SELECT m.name AS table_name, f.\"from\" AS column_name, f.\"table\" AS references_table, \
         f.\"to\" AS references_column \
         FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f WHERE {SQLITE_TABLES} \
         ORDER BY m.name, f.\"from\""
    ))
    .fetch_all(conn)
    .into_inner()?;
    let mut foreign_keys = Vec::new();
    for r in &rows {
        foreign_keys.push(RawForeignKey {
            table: r.text("table_name")?,
            column: r.text("column_name")?,
            references_table: r.text("references_table")?,
            references_column: r.text("references_column")?,
        });
    }
    Ok(RawSchema {
        dialect: "sqlite",
        columns,
        primary_keys,
        indexes,
        foreign_keys,
    })
}

async fn introspect_postgres(pool: &sqlx::PgPool) -> Result<RawSchema> {
    let rows = sqlx::query(
        "SELECT table_name::text AS table_name, column_name::text AS column_name, \
         data_type::text AS data_type, is_nullable::text AS is_nullable, \
         column_default::text AS column_default, is_identity::text AS is_identity \
         FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name <> '_sqlx_migrations' \
         ORDER BY table_name, ordinal_position",
    )
    .fetch_all(pool)
    .await?;
    let mut columns = Vec::new();
    for r in &rows {
        columns.push(RawColumn {
            table: r.try_get("table_name")?,
            name: r.try_get("column_name")?,
            declared_type: r.try_get("data_type")?,
            not_null: r.try_get::<String, _>("is_nullable")? == "NO",
            default: r.try_get("column_default")?,
            identity: r.try_get::<String, _>("is_identity")? == "YES",
        });
    }

    let rows = sqlx::query(
        "SELECT t.relname::text AS table_name, i.relname::text AS index_name, \
         ix.indisunique AS is_unique, ix.indisprimary AS is_primary, \
         EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid \
                 AND c.conrelid = t.oid AND c.contype IN ('u', 'p')) AS from_constraint, \
         pg_get_expr(ix.indpred, ix.indrelid) AS predicate, \
         ARRAY(SELECT a.attname::text \
               FROM unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) \
               JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum \
               ORDER BY k.ord) AS columns \
         FROM pg_index ix \
         JOIN pg_class i ON i.oid = ix.indexrelid \
         JOIN pg_class t ON t.oid = ix.indrelid \
         JOIN pg_namespace n ON n.oid = t.relnamespace \
         WHERE n.nspname = current_schema() AND t.relname <> '_sqlx_migrations' \
         ORDER BY 1, 2",
    )
    .fetch_all(pool)
    .await?;
    let mut indexes = Vec::new();
    let mut primary_keys = Vec::new();
    for r in &rows {
        let index = RawIndex {
            table: r.try_get("table_name")?,
            name: r.try_get("index_name")?,
            columns: r.try_get("columns")?,
            unique: r.try_get("is_unique")?,
            primary: r.try_get("is_primary")?,
            constraint: r.try_get("from_constraint")?,
            predicate: r.try_get("predicate")?,
        };
        if index.primary {
            primary_keys.push((index.table.clone(), index.columns.clone()));
        }
        indexes.push(index);
    }

    let rows = sqlx::query(
        "SELECT cl.relname::text AS table_name, a.attname::text AS column_name, \
         rcl.relname::text AS references_table, ra.attname::text AS references_column \
         FROM pg_constraint c \
         CROSS JOIN LATERAL unnest(c.conkey, c.confkey) AS k(col, refcol) \
         JOIN pg_class cl ON cl.oid = c.conrelid \
         JOIN pg_namespace n ON n.oid = cl.relnamespace \
         JOIN pg_class rcl ON rcl.oid = c.confrelid \
         JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.col \
         JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = k.refcol \
         WHERE c.contype = 'f' AND n.nspname = current_schema() \
         ORDER BY 1, 2",
    )
    .fetch_all(pool)
    .await?;
    let mut foreign_keys = Vec::new();
    for r in &rows {
        foreign_keys.push(RawForeignKey {
            table: r.try_get("table_name")?,
            column: r.try_get("column_name")?,
            references_table: r.try_get("references_table")?,
            references_column: r.try_get("references_column")?,
        });
    }
    Ok(RawSchema {
        dialect: "postgres",
        columns,
        primary_keys,
        indexes,
        foreign_keys,
    })
}

/// This process's CPU time so far (user + system, every thread: the runtime's workers and the
/// store's connection threads), from `/proc/self/stat` in clock ticks (100 Hz on Linux).
/// `None` where there is no procfs. The benchmarks report it beside wall time: on a shared
/// machine it moves far less with other load than wall time does.
pub fn process_cpu() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 (utime) and 15 (stime) overall; 12 and 13 after the state field.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(std::time::Duration::from_millis(ticks * 10))
}

/// The whole machine's CPU time so far, by where it went (`/proc/stat`'s first line, in clock
/// ticks); `None` where there is no procfs. Over a bench window, [`MachineCpu::since`] says
/// what share of both cores the machine spent outside this process's reach: `steal` is time a
/// virtual machine's cores were ready to run but the host ran something else, `idle` time no
/// thread could run. On this kind of machine the two move between sittings and explain much of
/// the spread in the throughput figures (BENCHMARKS.md, "sixth sitting").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MachineCpu {
    pub user: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub steal: u64,
    /// Every field of the line summed (nice, irq and softirq included).
    pub total: u64,
}

impl MachineCpu {
    /// Reads the counters now.
    pub fn now() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        Self::parse(stat.lines().next()?)
    }

    /// Parses the aggregate `cpu …` line: user nice system idle iowait irq softirq steal
    /// (guest time is already counted in user and nice, so it is not added again).
    fn parse(line: &str) -> Option<Self> {
        let mut words = line.split_whitespace();
        if words.next()? != "cpu" {
            return None;
        }
        let f: Vec<u64> = words
            .take(8)
            .map(str::parse)
            .collect::<std::result::Result<_, _>>()
            .ok()?;
        let [user, nice, system, idle, iowait, irq, softirq, steal] = f[..] else {
            return None;
        };
        Some(Self {
            user,
            system,
            idle,
            iowait,
            steal,
            total: user + nice + system + idle + iowait + irq + softirq + steal,
        })
    }

    /// The counters accumulated between `start` and `self`.
    pub fn since(self, start: Self) -> Self {
        Self {
            user: self.user.saturating_sub(start.user),
            system: self.system.saturating_sub(start.system),
            idle: self.idle.saturating_sub(start.idle),
            iowait: self.iowait.saturating_sub(start.iowait),
            steal: self.steal.saturating_sub(start.steal),
            total: self.total.saturating_sub(start.total),
        }
    }

    /// One line for a bench report: each share of the machine's CPU time, in percent.
    pub fn shares(&self) -> String {
        let pct = |v: u64| 100.0 * v as f64 / self.total.max(1) as f64;
        format!(
            "user {:.1} %, system {:.1} %, idle {:.1} %, iowait {:.1} %, steal {:.1} %",
            pct(self.user),
            pct(self.system),
            pct(self.idle),
            pct(self.iowait),
            pct(self.steal)
        )
    }
}

/// A `tracing` subscriber for the benchmarks that sees only the store's per-statement events
/// (the SQLite engine's [`crate::SQLITE_STATEMENT_TARGET`], sqlx's `sqlx::query` on PostgreSQL)
/// and hands each one's statement text (whitespace collapsed; `None` when the event carries
/// none) to the function it wraps. It records nothing else.
pub struct StatementEvents<F>(pub F);

/// Whether a `tracing` target is a store statement event.
fn is_statement(target: &str) -> bool {
    target == crate::SQLITE_STATEMENT_TARGET || target == "sqlx::query"
}

struct SqlText(Option<String>);

impl tracing::field::Visit for SqlText {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if self.0.is_none() && matches!(field.name(), "sql" | "summary" | "db.statement") {
            self.0 = Some(value.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }
}

impl<F: Fn(Option<&str>) + Send + Sync + 'static> tracing::Subscriber for StatementEvents<F> {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        is_statement(metadata.target())
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if is_statement(event.metadata().target()) {
            let mut text = SqlText(None);
            event.record(&mut text);
            (self.0)(text.0.as_deref());
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The inbox benchmarks' workload (the kernel's `settle` and the server's `inbox`): one runner
/// tool and runs of one step that calls it, written once so both measure the same rows.
pub mod inbox_bench {
    use serde_json::{Value, json};
    use uuid::Uuid;

    /// A runner's announcement of `echo`: replayable (`read_only`, `intrinsic`), ten minutes.
    pub fn echo_announcement() -> Value {
        json!({"tools": [{
            "name": "echo",
            "description": "Echo the input.",
            "input_schema": {"type": "object"},
            "effect_profile": {"kind": "read_only", "destructive": false, "effect_scope": "closed",
                               "idempotency": "intrinsic", "reconciliation": "none"},
            "timeout_ms": 600000,
        }]})
    }

    /// The run body of the `k`th task: one step keyed `t` calling `echo` on `runner`, bypass.
    pub fn echo_run(k: usize, runner: Uuid) -> Value {
        json!({"run": {"approval_mode": "bypass", "steps": [{"key": "t", "tool": {
            "name": "echo", "input": {"i": k},
            "route": {"kind": "runner", "runner_executor_public_id": runner},
        }}]}})
    }
}

#[cfg(test)]
mod tests {
    use super::MachineCpu;

    #[test]
    fn the_machine_cpu_line_is_read_by_field_and_differenced() {
        let start = MachineCpu::parse("cpu  100 5 40 800 10 1 2 30 0 0").expect("a cpu line");
        assert_eq!(
            start,
            MachineCpu {
                user: 100,
                system: 40,
                idle: 800,
                iowait: 10,
                steal: 30,
                total: 988,
            }
        );
        let end = MachineCpu::parse("cpu  160 5 60 900 10 1 2 50 7 0").expect("a cpu line");
        let window = end.since(start);
        assert_eq!(
            (window.user, window.system, window.idle, window.steal, window.total),
            (60, 20, 100, 20, 200)
        );
        assert_eq!(
            window.shares(),
            "user 30.0 %, system 10.0 %, idle 50.0 %, iowait 0.0 %, steal 10.0 %"
        );
        // A per-core line, a short line and a non-number are not the aggregate.
        assert_eq!(MachineCpu::parse("cpu0 1 2 3 4 5 6 7 8"), None);
        assert_eq!(MachineCpu::parse("cpu 1 2 3"), None);
        assert_eq!(MachineCpu::parse("cpu 1 2 x 4 5 6 7 8"), None);
    }
}
