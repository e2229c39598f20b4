//! The SQLite driver: statements on a `rusqlite` connection, run inline on the calling task.
//!
//! Why not sqlx's SQLite driver: it runs every connection on its own thread and sends each
//! statement there and its rows back, a cross-thread hand-off of ≈ 70–120 µs per statement on this
//! kind of machine, paid dozens of times per model round and per claim + commit
//! (docs/decisions/110-sqlite-engine-on-rusqlite.md). SQLite is a library, not a server: a
//! statement on a warm page cache takes a few microseconds, so the engine runs it right where it is
//! asked for, on the tokio worker that holds the connection, and a whole unit of work never leaves
//! that thread.
//!
//! The surface mirrors the part of sqlx the store's shared operations use (`query`,
//! `query_scalar`, `bind`, `fetch_one`, `fetch_optional`, `fetch_all`, `execute`,
//! `rows_affected`), so the operations of `crate::ops` keep one text for
//! both engines. The fetch methods run the statement when called and return a future that is
//! already complete: the `.await` in the shared text costs nothing and never suspends, so no
//! connection is held across a real suspension point by a read.
//!
//! Placeholders are PostgreSQL's `$1`, `$2`, … in the shared SQL text. SQLite reads `$N` as a
//! named parameter numbered by first appearance, so each parameter is bound by its name's
//! number, never by its position (a text that names `$2` before `$1` still binds right).
//!
//! What this costs: a statement blocks its tokio worker while SQLite works (microseconds for
//! the store's indexed statements; a checkpoint inside a commit can take longer), and a wait
//! for another *process* holding the database lock (an admin command beside a server) sleeps
//! in SQLite's busy handler on that worker, up to the busy timeout. Within the process writers
//! never meet that handler: they queue on the writer connection's async mutex first (the
//! writer gate, `super`'s module comment).

use std::future::{Ready, ready};
use std::marker::PhantomData;
use std::sync::Arc;

use rusqlite::types::{FromSql, ToSql, Value, ValueRef};
use rusqlite::{Connection, ErrorCode};
use uuid::Uuid;

use crate::row::{self, Columns};
use crate::{Result, StoreError};

/// Prepared statements kept per connection. The store's fixed statement texts number about a
/// hundred; introspection and the key probe add a few dynamic ones.
pub(crate) const STATEMENT_CACHE: usize = 256;

/// How often a cached statement may recompile before the debug check calls its plan
/// value-dependent: once per schema change, and tests migrate a store at most a few times.
const MAX_RECOMPILES: i32 = 3;

/// The `tracing` target of the SQLite engine's per-statement event (level `TRACE`, the field
/// `sql`), which the benchmarks count; PostgreSQL statements are sqlx's `sqlx::query` events.
pub const STATEMENT_TARGET: &str = "nexus_store::statement";

/// A statement and its arguments, built like sqlx's `Query`.
pub(crate) struct Query<'q> {
    sql: &'q str,
    args: Vec<Box<dyn ToSql + Send + 'q>>,
}

/// A statement whose first column of each row is the answer, like sqlx's `QueryScalar`.
pub(crate) struct QueryScalar<'q, T> {
    query: Query<'q>,
    _out: PhantomData<fn() -> T>,
}

/// A statement over `sql`, whose `$N` placeholders take the `N`th bound argument.
pub(crate) fn query(sql: &str) -> Query<'_> {
    Query { sql, args: Vec::new() }
}

/// [`query`], answering each row's first column as `T` (the store's own operations use the
/// neutral builder's; this one serves the test harness and the driver's tests).
#[cfg(any(test, feature = "testing"))]
pub(crate) fn query_scalar<T: FromSql>(sql: &str) -> QueryScalar<'_, T> {
    QueryScalar {
        query: query(sql),
        _out: PhantomData,
    }
}

/// What a write statement did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Done {
    rows_affected: u64,
}

impl Done {
    pub(crate) fn rows_affected(&self) -> u64 {
        self.rows_affected
    }
}

/// A statement's column names, shared by its rows.
type Names = Arc<[Box<str>]>;

/// One result row, owned: the column names (shared by the rows of one statement) and values.
#[derive(Debug, Clone)]
pub(crate) struct LiteRow {
    names: Names,
    values: Vec<Value>,
    /// Where the next lookup by name starts: the row decoders read columns mostly in select
    /// order, so a lookup usually matches at once instead of scanning 45 names.
    next: std::cell::Cell<usize>,
}

impl<'q> Query<'q> {
    /// Adds the next argument (`$1` first).
    pub(crate) fn bind<T: ToSql + Send + 'q>(mut self, value: T) -> Self {
        self.args.push(Box::new(value));
        self
    }

    /// This statement, answering each row's first column as `T` ([`query_scalar`]).
    pub(crate) fn scalar<T: FromSql>(self) -> QueryScalar<'q, T> {
        QueryScalar {
            query: self,
            _out: PhantomData,
        }
    }

    /// sqlx's switch for keeping a prepared statement, mirrored so a shared operation can turn
    /// it off for PostgreSQL. Here it changes nothing: SQLite plans a statement the same for
    /// every bound value, so the cached statement is always the right one.
    pub(crate) fn persistent(self, _keep: bool) -> Self {
        self
    }

    /// The first row; no row is an error (`QueryReturnedNoRows`), as in sqlx.
    pub(crate) fn fetch_one(self, c: &mut Connection) -> Ready<rusqlite::Result<LiteRow>> {
        ready(
            self.fetch_optional_now(c)
                .and_then(|r| r.ok_or(rusqlite::Error::QueryReturnedNoRows)),
        )
    }

    /// The first row, if any.
    pub(crate) fn fetch_optional(self, c: &mut Connection) -> Ready<rusqlite::Result<Option<LiteRow>>> {
        ready(self.fetch_optional_now(c))
    }

    /// Every row, each decoded by `decode` where it lies (see [`Query::fetch_optional_as`]).
    pub(crate) fn fetch_all_as<T>(
        self,
        c: &mut Connection,
        decode: impl Fn(&RowRef<'_, '_>) -> Result<T>,
    ) -> Ready<Result<Vec<T>>> {
        ready(self.run(c, usize::MAX, |names, row| {
            decode(&RowRef {
                names,
                row,
                next: std::cell::Cell::new(0),
            })
        }))
    }

    /// The first row, if any, decoded by `decode` where it lies (a [`RowRef`]): each column is
    /// read once, into the decoded row, instead of into a [`LiteRow`] first and copied again.
    pub(crate) fn fetch_optional_as<T>(
        self,
        c: &mut Connection,
        decode: impl Fn(&RowRef<'_, '_>) -> Result<T>,
    ) -> Ready<Result<Option<T>>> {
        let rows = self.run(c, 1, |names, row| {
            decode(&RowRef {
                names,
                row,
                next: std::cell::Cell::new(0),
            })
        });
        ready(rows.map(|mut rows| rows.pop()))
    }

    /// Every row.
    pub(crate) fn fetch_all(self, c: &mut Connection) -> Ready<rusqlite::Result<Vec<LiteRow>>> {
        ready(self.run(c, usize::MAX, owned_row))
    }

    /// Runs the statement to its end (rows it returns are dropped) and reports the rows it
    /// changed.
    pub(crate) fn execute(self, c: &mut Connection) -> Ready<rusqlite::Result<Done>> {
        let ran = self.run(c, usize::MAX, |_, _| Ok(())).map(|_| Done {
            rows_affected: c.changes(),
        });
        ready(ran)
    }

    fn fetch_optional_now(self, c: &mut Connection) -> rusqlite::Result<Option<LiteRow>> {
        Ok(self.run(c, 1, owned_row)?.pop())
    }

    /// Prepares (from the connection's cache), binds by placeholder number, and steps through
    /// at most `limit` rows, mapping each. A statement that modifies rows does all its changes
    /// on the first step (SQLite's rule for `RETURNING`), so a limit never loses a write.
    fn run<T, E: From<rusqlite::Error>>(
        self,
        c: &mut Connection,
        limit: usize,
        mut map: impl FnMut(&Names, &rusqlite::Row<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<Vec<T>, E> {
        tracing::trace!(target: STATEMENT_TARGET, sql = self.sql);
        let mut stmt = c.prepare_cached(self.sql)?;
        let slots = bind_slots(self.sql, &stmt)?;
        for (index, &slot) in slots.iter().enumerate() {
            let arg = self.args.get(slot - 1).ok_or(rusqlite::Error::InvalidParameterCount(
                self.args.len(),
                stmt.parameter_count(),
            ))?;
            stmt.raw_bind_parameter(index + 1, arg)?;
        }
        let mut out = Vec::new();
        let mut rows = stmt.raw_query();
        // Named after the first step: a schema change recompiles the statement there, and the
        // recompiled statement's columns are the ones the rows carry.
        let mut names = None;
        while out.len() < limit {
            match rows.next()? {
                Some(row) => {
                    if names.is_none() {
                        names = Some(names_of(self.sql, row.as_ref())?);
                    }
                    if let Some(names) = &names {
                        out.push(map(names, row)?);
                    }
                }
                None => break,
            }
        }
        drop(rows);
        // A schema change recompiles a cached statement once; a statement whose plan reads a
        // bound value recompiles on every execution (`crate::sql`'s module comment).
        debug_assert!(
            stmt.get_status(rusqlite::StatementStatus::RePrepare) <= MAX_RECOMPILES,
            "statement recompiles on every execution (a value-dependent plan): {}",
            self.sql
        );
        Ok(out)
    }
}

impl<'q, T: FromSql> QueryScalar<'q, T> {
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn bind<A: ToSql + Send + 'q>(self, value: A) -> Self {
        Self {
            query: self.query.bind(value),
            _out: PhantomData,
        }
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn fetch_one(self, c: &mut Connection) -> Ready<rusqlite::Result<T>> {
        ready(
            self.query
                .run(c, 1, |_, row| row.get(0))
                .and_then(|mut v| v.pop().ok_or(rusqlite::Error::QueryReturnedNoRows)),
        )
    }

    pub(crate) fn fetch_optional(self, c: &mut Connection) -> Ready<rusqlite::Result<Option<T>>> {
        ready(self.query.run(c, 1, |_, row| row.get(0)).map(|mut v| v.pop()))
    }

    pub(crate) fn fetch_all(self, c: &mut Connection) -> Ready<rusqlite::Result<Vec<T>>> {
        ready(self.query.run(c, usize::MAX, |_, row| row.get(0)))
    }
}

/// How many statement texts [`FACTS`] remembers per thread before it starts over: the store's
/// fixed texts number about a hundred; dynamic ones (introspection, the key probe, the task
/// update that names only changed columns) could grow without bound.
const FACTS_CACHE: usize = 512;

/// Where a statement text lives and how long it is: the key [`FACTS`] files a text under.
/// The store's texts are constants, so the same statement arrives with the same address every
/// time; the entry also keeps the text, and a hit compares it (a dynamic text can reuse a freed
/// one's address).
type TextAddress = (usize, usize);

/// What the driver learns once per statement text (and thread) instead of on every execution.
struct Facts {
    text: Box<str>,
    /// For each of the statement's parameters in SQLite's order, the `$N` it names: the bound
    /// argument it takes (see [`bind_slots`]).
    slots: std::rc::Rc<[usize]>,
    /// The result's column names, once a row has been read (see [`names_of`]); never for a
    /// text with `*`.
    names: Option<Names>,
}

thread_local! {
    /// Statement facts by statement text.
    static FACTS: std::cell::RefCell<std::collections::HashMap<TextAddress, Facts, AddressHash>> =
        std::cell::RefCell::new(std::collections::HashMap::default());
}

/// The `$N` each parameter of `stmt` (prepared from `sql`) names, in SQLite's parameter order,
/// worked out on a text's first execution on this thread and remembered (asking SQLite for each
/// parameter's name and parsing it on every execution was measurable on the inbox path).
fn bind_slots(sql: &str, stmt: &rusqlite::Statement<'_>) -> rusqlite::Result<std::rc::Rc<[usize]>> {
    let address = (sql.as_ptr() as usize, sql.len());
    let cached = FACTS.with(|cache| {
        cache
            .borrow()
            .get(&address)
            .filter(|f| *f.text == *sql && f.slots.len() == stmt.parameter_count())
            .map(|f| f.slots.clone())
    });
    if let Some(slots) = cached {
        return Ok(slots);
    }
    let slots = (1..=stmt.parameter_count())
        .map(|index| match stmt.parameter_name(index) {
            Some(name) => placeholder_number(name)
                .ok_or_else(|| rusqlite::Error::InvalidParameterName(format!("{name} (the store binds $1, $2, …)"))),
            None => Ok(index),
        })
        .collect::<rusqlite::Result<std::rc::Rc<[usize]>>>()?;
    FACTS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= FACTS_CACHE {
            cache.clear();
        }
        cache.insert(
            address,
            Facts {
                text: sql.into(),
                slots: slots.clone(),
                names: None,
            },
        );
    });
    Ok(slots)
}

/// Hashes a [`TextAddress`] by mixing its two words, instead of running SipHash over the whole
/// statement text (several kilobytes for a joined read) on every execution.
#[derive(Default, Clone, Copy)]
struct AddressHash;

impl std::hash::BuildHasher for AddressHash {
    type Hasher = AddressHasher;
    fn build_hasher(&self) -> AddressHasher {
        AddressHasher(0)
    }
}

struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }
    fn write_u64(&mut self, word: u64) {
        // A multiplicative mix (the 64-bit golden ratio); the table's low bits then spread.
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The column names of `stmt`, prepared from `sql`. A text that names its columns (no `*`) has the
/// same names on every connection and schema, so they are built once per thread and shared;
/// building them per execution (a string per column, 60-odd for a joined task row) was about 4 % of
/// the inbox path's CPU (docs/decisions/118-sqlite-driver-caches.md). A text with `*` takes its
/// columns from the schema, which a migration can change under a cached statement: its names are
/// built from the statement every time. The text is looked up first and scanned for `*` only when
/// its names are not remembered (a text with `*` never has them).
fn names_of(sql: &str, stmt: &rusqlite::Statement<'_>) -> rusqlite::Result<Names> {
    let address = (sql.as_ptr() as usize, sql.len());
    let cached = FACTS.with(|cache| {
        cache
            .borrow()
            .get(&address)
            .filter(|f| *f.text == *sql)
            .and_then(|f| f.names.clone())
            .filter(|names| names.len() == stmt.column_count())
    });
    if let Some(names) = cached {
        return Ok(names);
    }
    let names = column_names(stmt)?;
    if sql.contains('*') {
        return Ok(names);
    }
    // The run binds before it names, so the text's entry is there unless the cache started
    // over in between; then the names are remembered on a later execution.
    FACTS.with(|cache| {
        if let Some(f) = cache.borrow_mut().get_mut(&address).filter(|f| *f.text == *sql) {
            f.names = Some(names.clone());
        }
    });
    Ok(names)
}

/// The statement's column names, for its rows to share.
fn column_names(stmt: &rusqlite::Statement<'_>) -> rusqlite::Result<Names> {
    (0..stmt.column_count())
        .map(|i| stmt.column_name(i).map(Box::from))
        .collect()
}

/// `$N` or `?N` → `N` (1-based); anything else is not a placeholder the store writes.
fn placeholder_number(name: &str) -> Option<usize> {
    let digits = name.strip_prefix('$').or_else(|| name.strip_prefix('?'))?;
    digits.parse().ok().filter(|n| *n > 0)
}

fn owned_row(names: &Names, row: &rusqlite::Row<'_>) -> rusqlite::Result<LiteRow> {
    let mut values = Vec::with_capacity(names.len());
    for i in 0..names.len() {
        let value = Value::try_from(row.get_ref(i)?)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))?;
        values.push(value);
    }
    Ok(LiteRow {
        names: names.clone(),
        values,
        next: std::cell::Cell::new(0),
    })
}

/// Where `column` is among `names`. The search starts at `next`, which then moves past the
/// match: the row decoders read columns mostly in select order, so a lookup usually matches at
/// once instead of scanning 45 names.
fn column_index(names: &Names, next: &std::cell::Cell<usize>, column: &str) -> Result<usize> {
    let n = names.len();
    let start = next.get();
    let found = (0..n)
        .map(|k| (start + k) % n)
        .find(|&i| &*names[i] == column)
        .ok_or_else(|| StoreError::Corrupt(format!("the row has no column {column:?}")))?;
    next.set(found + 1);
    Ok(found)
}

/// `value` read as `T`, or `Corrupt` naming `column`.
fn typed<T: FromSql>(column: &str, value: ValueRef<'_>) -> Result<T> {
    T::column_result(value)
        .map_err(|e| StoreError::Corrupt(format!("column {column:?} does not read as the stored type: {e}")))
}

impl LiteRow {
    fn typed<T: FromSql>(&self, column: &str) -> Result<T> {
        let i = column_index(&self.names, &self.next, column)?;
        typed(column, ValueRef::from(&self.values[i]))
    }
}

/// [`Columns`] for a SQLite row type with a `typed` read by column name.
macro_rules! columns_by_name {
    ($row:ty) => {
        impl Columns for $row {
            fn public_id(&self, column: &str) -> Result<Uuid> {
                row::parse_public_id(column, &self.text(column)?)
            }
            fn opt_public_id(&self, column: &str) -> Result<Option<Uuid>> {
                self.opt_text(column)?
                    .map(|t| row::parse_public_id(column, &t))
                    .transpose()
            }
            fn int(&self, column: &str) -> Result<i64> {
                self.typed(column)
            }
            fn opt_int(&self, column: &str) -> Result<Option<i64>> {
                self.typed(column)
            }
            fn float(&self, column: &str) -> Result<f64> {
                self.typed(column)
            }
            fn text(&self, column: &str) -> Result<String> {
                self.typed(column)
            }
            fn opt_text(&self, column: &str) -> Result<Option<String>> {
                self.typed(column)
            }
            fn boolean(&self, column: &str) -> Result<bool> {
                self.typed(column)
            }
            fn bytes(&self, column: &str) -> Result<Vec<u8>> {
                self.typed(column)
            }
        }
    };
}

columns_by_name!(LiteRow);
columns_by_name!(RowRef<'_, '_>);

/// A result row read in place, while its statement is positioned on it (see
/// [`Query::fetch_optional_as`]): the [`Columns`] a decoder reads come straight from SQLite.
pub(crate) struct RowRef<'a, 'r> {
    names: &'a Names,
    row: &'a rusqlite::Row<'r>,
    /// Where the next lookup by name starts (as [`LiteRow`]'s).
    next: std::cell::Cell<usize>,
}

impl RowRef<'_, '_> {
    fn typed<T: FromSql>(&self, column: &str) -> Result<T> {
        let i = column_index(self.names, &self.next, column)?;
        typed(column, self.row.get_ref(i)?)
    }
}

/// A unique or primary-key violation (a taken handle, a used task key, …).
pub(crate) fn is_unique_violation(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error(),
        Some(e) if e.code == ErrorCode::ConstraintViolation
            && matches!(
                e.extended_code,
                rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
            )
    )
}

/// A foreign key violation (a referenced row is missing).
pub(crate) fn is_foreign_key_violation(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error(),
        Some(e) if e.code == ErrorCode::ConstraintViolation
            && e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
    )
}

/// The database's own message for an error (`UNIQUE constraint failed: …`).
pub(crate) fn message(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqliteFailure(e, Some(m)) => format!("{m} ({e})"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
