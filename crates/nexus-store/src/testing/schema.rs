//! Schema introspection (for the parity test) and row counts, over either engine.

use sqlx::Row;

use crate::{Result, Store};

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
///
/// Full-text structures are each dialect's own machinery (migration 0019): SQLite FTS5 virtual
/// tables (and the shadow tables FTS5 keeps for them), PostgreSQL GIN indexes and tables that
/// hold a `tsvector` column. They are named in `full_text` and left out of everything else, so
/// the parity test compares their names only.
#[derive(Debug, Clone)]
pub struct RawSchema {
    pub dialect: &'static str,
    /// The names of the full-text structures, sorted.
    pub full_text: Vec<String>,
    pub columns: Vec<RawColumn>,
    /// `(table, primary key columns in key order)`, for tables with a primary key.
    pub primary_keys: Vec<(String, Vec<String>)>,
    pub indexes: Vec<RawIndex>,
    pub foreign_keys: Vec<RawForeignKey>,
}

/// Reads the schema of the store's database (PostgreSQL: its current schema).
pub async fn introspect(store: &Store) -> Result<RawSchema> {
    match store {
        Store::Sqlite(s) => introspect_sqlite(&mut *s.read_conn().await?),
        Store::Postgres(s) => introspect_postgres(s.pool()).await,
    }
}

/// Ordinary tables: `pragma_table_list` types FTS5's tables `virtual` and `shadow`.
const SQLITE_TABLES: &str = "m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> '_sqlx_migrations' \
     AND m.name IN (SELECT tl.name FROM pragma_table_list tl WHERE tl.schema = 'main' AND tl.type = 'table')";

fn introspect_sqlite(conn: &mut rusqlite::Connection) -> Result<RawSchema> {
    let (columns, primary_keys) = sqlite_columns(conn)?;
    Ok(RawSchema {
        dialect: "sqlite",
        indexes: sqlite_indexes(conn)?,
        foreign_keys: sqlite_foreign_keys(conn)?,
        full_text: sqlite_full_text(conn)?,
        columns,
        primary_keys,
    })
}

/// `(table, primary key columns in key order)`, as [`RawSchema::primary_keys`].
type PrimaryKeys = Vec<(String, Vec<String>)>;

/// The columns of the ordinary tables, and each table's primary key in key order.
fn sqlite_columns(conn: &mut rusqlite::Connection) -> Result<(Vec<RawColumn>, PrimaryKeys)> {
    use crate::row::Columns;
    use crate::sqlite::driver::query;
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
    let primary_keys = sqlite_primary_keys(pk);
    mark_rowid_aliases(&mut columns, &primary_keys);
    Ok((columns, primary_keys))
}

/// Groups `(table, position, column)` into each table's key columns in key order.
fn sqlite_primary_keys(mut pk: Vec<(String, i64, String)>) -> PrimaryKeys {
    pk.sort();
    let mut primary_keys: PrimaryKeys = Vec::new();
    for (table, _, column) in pk {
        match primary_keys.last_mut() {
            Some((t, cols)) if *t == table => cols.push(column),
            _ => primary_keys.push((table, vec![column])),
        }
    }
    primary_keys
}

/// The rowid alias: a sole INTEGER primary key column.
fn mark_rowid_aliases(columns: &mut [RawColumn], primary_keys: &PrimaryKeys) {
    for (table, cols) in primary_keys {
        if let [only] = cols.as_slice() {
            for c in columns.iter_mut().filter(|c| &c.table == table && &c.name == only) {
                c.identity = c.declared_type.eq_ignore_ascii_case("INTEGER");
            }
        }
    }
}

fn sqlite_indexes(conn: &mut rusqlite::Connection) -> Result<Vec<RawIndex>> {
    use crate::row::Columns;
    use crate::sqlite::driver::{query, query_scalar};
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
    Ok(indexes)
}

fn sqlite_foreign_keys(conn: &mut rusqlite::Connection) -> Result<Vec<RawForeignKey>> {
    use crate::row::Columns;
    use crate::sqlite::driver::query;
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
    Ok(foreign_keys)
}

/// The FTS5 virtual tables.
fn sqlite_full_text(conn: &mut rusqlite::Connection) -> Result<Vec<String>> {
    use crate::sqlite::driver::query_scalar;
    Ok(query_scalar(
        "SELECT tl.name FROM pragma_table_list tl JOIN sqlite_master m ON m.name = tl.name \
         WHERE tl.schema = 'main' AND tl.type = 'virtual' AND m.sql LIKE '%USING fts5%' ORDER BY tl.name",
    )
    .fetch_all(conn)
    .into_inner()?)
}

async fn introspect_postgres(pool: &sqlx::PgPool) -> Result<RawSchema> {
    let text = PgFullText::read(pool).await?;
    let columns = pg_columns(pool, &text).await?;
    let indexes = pg_indexes(pool, &text).await?;
    let primary_keys = indexes
        .iter()
        .filter(|i| i.primary)
        .map(|i| (i.table.clone(), i.columns.clone()))
        .collect();
    Ok(RawSchema {
        dialect: "postgres",
        foreign_keys: pg_foreign_keys(pool, &text).await?,
        full_text: text.names(),
        columns,
        primary_keys,
        indexes,
    })
}

/// PostgreSQL's full-text structures: tables that hold a `tsvector` column and GIN indexes,
/// named and set aside.
struct PgFullText {
    tables: Vec<String>,
    /// (index, table) of each GIN index.
    indexes: Vec<(String, String)>,
}

impl PgFullText {
    async fn read(pool: &sqlx::PgPool) -> Result<Self> {
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT table_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND data_type = 'tsvector' ORDER BY 1",
        )
        .fetch_all(pool)
        .await?;
        let indexes: Vec<(String, String)> = sqlx::query_as(
            "SELECT i.relname::text, t.relname::text FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid \
             JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_am am ON am.oid = i.relam \
             JOIN pg_namespace n ON n.oid = i.relnamespace \
             WHERE n.nspname = current_schema() AND am.amname = 'gin' ORDER BY 1",
        )
        .fetch_all(pool)
        .await?;
        Ok(Self { tables, indexes })
    }

    /// Whether a table (or an index on it) is full-text machinery, left out of the comparison.
    fn set_aside(&self, table: &str, index: Option<&str>) -> bool {
        self.tables.iter().any(|t| t == table) || index.is_some_and(|i| self.indexes.iter().any(|(x, _)| x == i))
    }

    /// The structures' names, sorted. A full-text table's own GIN indexes are part of it; a
    /// GIN index on another table is a full-text structure of its own.
    fn names(&self) -> Vec<String> {
        let mut full_text = self.tables.clone();
        for (index, table) in &self.indexes {
            if !self.tables.contains(table) {
                full_text.push(index.clone());
            }
        }
        full_text.sort();
        full_text
    }
}

async fn pg_columns(pool: &sqlx::PgPool, text: &PgFullText) -> Result<Vec<RawColumn>> {
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
        let table: String = r.try_get("table_name")?;
        if text.set_aside(&table, None) {
            continue;
        }
        columns.push(RawColumn {
            table,
            name: r.try_get("column_name")?,
            declared_type: r.try_get("data_type")?,
            not_null: r.try_get::<String, _>("is_nullable")? == "NO",
            default: r.try_get("column_default")?,
            identity: r.try_get::<String, _>("is_identity")? == "YES",
        });
    }
    Ok(columns)
}

async fn pg_indexes(pool: &sqlx::PgPool, text: &PgFullText) -> Result<Vec<RawIndex>> {
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
        if !text.set_aside(&index.table, Some(&index.name)) {
            indexes.push(index);
        }
    }
    Ok(indexes)
}

async fn pg_foreign_keys(pool: &sqlx::PgPool, text: &PgFullText) -> Result<Vec<RawForeignKey>> {
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
        let table: String = r.try_get("table_name")?;
        if text.set_aside(&table, None) {
            continue;
        }
        foreign_keys.push(RawForeignKey {
            table,
            column: r.try_get("column_name")?,
            references_table: r.try_get("references_table")?,
            references_column: r.try_get("references_column")?,
        });
    }
    Ok(foreign_keys)
}

/// How many rows of `table` meet `condition` (PostgreSQL: in the store's schema), for tests
/// that look at what is stored. Both are spliced into the statement: SQL the test writes, never
/// input.
pub async fn row_count(store: &Store, table: &str, condition: &str) -> Result<i64> {
    let sql = format!("SELECT count(*) FROM {table} WHERE {condition}");
    match store {
        Store::Sqlite(s) => {
            let mut conn = s.read_conn().await?;
            Ok(crate::sqlite::driver::query_scalar::<i64>(&sql)
                .fetch_one(&mut conn)
                .into_inner()?)
        }
        Store::Postgres(s) => Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(s.pool()).await?),
    }
}

/// Brings the planner's statistics up to date, as autovacuum would on a live store: PostgreSQL
/// `ANALYZE` (a benchmark that has just loaded its tables runs it before it measures). SQLite
/// plans the store's statements without statistics: nothing to do.
pub async fn analyze(store: &Store) -> Result<()> {
    match store {
        Store::Sqlite(_) => Ok(()),
        Store::Postgres(s) => {
            sqlx::query("ANALYZE").execute(s.pool()).await?;
            Ok(())
        }
    }
}

/// Adds `n` settled tool tasks to the store's first run, each after the one before it
/// (`prefill-1` … `prefill-n`), then brings the planner's statistics up to date ([`analyze`]):
/// a store that has grown, for benchmarks that measure whether a round's cost grows with it.
/// One statement text for both dialects (a recursive count, no `generate_series`).
pub async fn prefill_tasks(store: &Store, n: u64) -> Result<()> {
    let tasks = format!(
        "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < {n}) \
         INSERT INTO tasks (run_id, key, kind, status, generation, origin, on_failure, visibility, \
         mainline, structured_present, is_error, created_at) SELECT (SELECT min(id) FROM runs), \
         'prefill-' || i, 'tool_task', 'completed', 1, 'model', 'propagate', 'visible', FALSE, \
         FALSE, FALSE, 0 FROM g"
    );
    let edges = "INSERT INTO task_edges (task_id, depends_on_id, kind) SELECT t.id, p.id, 'after' \
         FROM tasks t JOIN tasks p ON p.run_id = t.run_id AND p.key = 'prefill-' || \
         (CAST(substr(t.key, 9) AS BIGINT) - 1) WHERE t.key LIKE 'prefill-%' AND t.key <> 'prefill-1'";
    match store {
        Store::Sqlite(s) => {
            let c = s.write_conn().await?;
            c.execute_batch(&format!("BEGIN; {tasks}; {edges}; COMMIT"))?;
        }
        Store::Postgres(s) => {
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("BEGIN; {tasks}; {edges}; COMMIT")))
                .execute(s.pool())
                .await?;
        }
    }
    analyze(store).await
}
