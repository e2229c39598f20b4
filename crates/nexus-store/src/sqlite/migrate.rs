//! The SQLite migrator: the embedded migrations applied in order, sqlx's ledger kept, and
//! `PRAGMA foreign_key_check` at the end of each migration.

use std::time::Instant;

use rusqlite::Connection;
use sqlx::migrate::{MigrateError, Migrator};

use super::SqliteStore;
use super::driver::query;
use crate::row::Columns;
use crate::{Result, write_error};

pub(super) static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

/// The migrations ledger, the same table (and rows) sqlx's migrator keeps, so a database
/// migrated by an earlier build reads as migrated.
const LEDGER: &str = "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
)";

impl SqliteStore {
    /// Applies the pending migrations, each in its own transaction with its ledger row,
    /// refusing a ledger that records a failed migration, a changed migration text, or a
    /// migration this build does not have (as sqlx's migrator does).
    ///
    /// Foreign keys are not enforced while a migration runs, as SQLite's table-rebuild procedure
    /// asks (migration 0008 drops and renames tables that others reference); instead each
    /// migration ends with `PRAGMA foreign_key_check`, and any row it reports fails the migration
    /// before its commit. Enforcement is back on when this returns, whatever the outcome.
    pub(super) fn migrate_now(conn: &mut Connection) -> Result<()> {
        // The pragma is a no-op inside a transaction: it is set here, between them.
        conn.pragma_update(None, "foreign_keys", false)?;
        let outcome = Self::migrate_unenforced(conn);
        conn.pragma_update(None, "foreign_keys", true)?;
        outcome
    }

    fn migrate_unenforced(conn: &mut Connection) -> Result<()> {
        conn.execute_batch(LEDGER).map_err(write_error)?;
        let applied = applied_migrations(conn)?;
        let known = |v: i64| MIGRATOR.iter().any(|m| m.version == v);
        for (version, _, success) in &applied {
            if !success {
                return Err(MigrateError::Dirty(*version).into());
            }
            if !known(*version) {
                return Err(MigrateError::VersionMissing(*version).into());
            }
        }
        let mut functions = false;
        for m in MIGRATOR.iter().filter(|m| !m.migration_type.is_down_migration()) {
            if let Some((_, checksum, _)) = applied.iter().find(|(v, _, _)| *v == m.version) {
                if checksum.as_slice() != &*m.checksum {
                    return Err(MigrateError::VersionMismatch(m.version).into());
                }
                continue;
            }
            // Once, before the first migration this call applies: registering a function again
            // would expire every prepared statement of the connection.
            if !functions {
                register_functions(conn)?;
                functions = true;
            }
            let started = Instant::now();
            let apply = |conn: &Connection| -> rusqlite::Result<()> {
                conn.execute_batch(m.sql.as_str())?;
                foreign_keys_hold(conn)?;
                conn.execute(
                    "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                     VALUES (?1, ?2, TRUE, ?3, ?4)",
                    rusqlite::params![
                        m.version,
                        &*m.description,
                        &*m.checksum,
                        i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX)
                    ],
                )?;
                Ok(())
            };
            if m.no_tx {
                apply(conn).map_err(write_error)?;
            } else {
                let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                apply(&tx).map_err(write_error)?;
                tx.commit().map_err(write_error)?;
            }
        }
        Ok(())
    }
}

/// The functions the SQLite migrations call that SQLite has not: `nexus_sha256_hex(text)`, the
/// SHA-256 of the text's bytes in lowercase hex, the digest the task insert computes
/// (`crate::row::frozen_digest`); migration 0014 gives it to rows written before migration 0006
/// (PostgreSQL's migration has `sha256` built in). `NULL` for `NULL`.
fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    use rusqlite::types::ValueRef;
    conn.create_scalar_function(
        "nexus_sha256_hex",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            Ok(match ctx.get_raw(0) {
                ValueRef::Text(bytes) | ValueRef::Blob(bytes) => Some(crate::row::sha256_hex(bytes)),
                ValueRef::Null | ValueRef::Integer(_) | ValueRef::Real(_) => None,
            })
        },
    )
}

/// `PRAGMA foreign_key_check` over the whole database: an error naming the first reference
/// that points nowhere, if any.
fn foreign_keys_hold(conn: &Connection) -> rusqlite::Result<()> {
    let mut check = conn.prepare("PRAGMA foreign_key_check")?;
    let mut rows = check.query([])?;
    match rows.next()? {
        None => Ok(()),
        Some(r) => {
            let table: String = r.get(0)?;
            let rowid: Option<i64> = r.get(1)?;
            let parent: String = r.get(2)?;
            Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
                Some(format!(
                    "the migration leaves {table} row {rowid:?} referring to a missing {parent} row"
                )),
            ))
        }
    }
}

/// The ledger's rows: version, checksum, success. Empty when there is no ledger yet.
pub(super) fn applied_migrations(conn: &mut Connection) -> Result<Vec<(i64, Vec<u8>, bool)>> {
    let exists = query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
        .fetch_optional(conn)
        .into_inner()?
        .is_some();
    if !exists {
        return Ok(Vec::new());
    }
    let rows = query("SELECT version, checksum, success FROM _sqlx_migrations ORDER BY version")
        .fetch_all(conn)
        .into_inner()?;
    rows.iter()
        .map(|r| Ok((r.int("version")?, r.bytes("checksum")?, r.boolean("success")?)))
        .collect()
}

pub(crate) fn pending_of(migrator: &Migrator, applied: &[i64]) -> usize {
    migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration() && !applied.contains(&m.version))
        .count()
}

#[cfg(test)]
mod tests {

    /// The migration runner's closing check finds a reference that points nowhere (foreign keys
    /// are not enforced while a migration runs), and passes when every reference holds.
    #[test]
    fn the_foreign_key_check_refuses_a_dangling_reference() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch(
            "PRAGMA foreign_keys = OFF; CREATE TABLE parent (id INTEGER PRIMARY KEY); \
             CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id BIGINT REFERENCES parent (id)); \
             INSERT INTO parent (id) VALUES (1); INSERT INTO child (id, parent_id) VALUES (5, 1);",
        )
        .unwrap();
        super::foreign_keys_hold(&c).expect("every reference holds");
        c.execute_batch("INSERT INTO child (id, parent_id) VALUES (6, 2)")
            .unwrap();
        let e = super::foreign_keys_hold(&c).unwrap_err();
        assert_eq!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::ConstraintViolation),
            "{e:?}"
        );
        assert!(e.to_string().contains("child row Some(6)"), "{e}");
    }
}
