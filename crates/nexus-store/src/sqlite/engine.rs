//! The SQLite store's migrator ([`crate::Migrations`]); the areas' methods are [`crate::Store`]'s
//! (`crate::ops`).

use super::SqliteStore;
use super::migrate::{MIGRATOR, applied_migrations, pending_of};
use crate::Result;

impl crate::Migrations for SqliteStore {
    async fn migrate(&self) -> Result<()> {
        let mut conn = self.gate().await?;
        Self::migrate_now(&mut conn)
    }

    async fn pending_migrations(&self) -> Result<usize> {
        let mut conn = self.pool.acquire().await?;
        let applied: Vec<i64> = applied_migrations(&mut conn)?.into_iter().map(|(v, _, _)| v).collect();
        Ok(pending_of(&MIGRATOR, &applied))
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use crate::Store;

    /// The engines' dispatch (`crate::ops::on_conn!`, `crate::tx`'s) keeps PostgreSQL's futures
    /// (sqlx's; about 8.7 KB each in a release build) boxed, so a store call's future on SQLite
    /// is about as small as the SQLite engine's own: its connection's and its operation's. Every
    /// kernel and handler future that awaits a store call carries it, and axum and tower move a
    /// handler's future several times per request.
    #[tokio::test]
    async fn the_engine_dispatch_does_not_size_sqlite_futures_by_postgres() {
        use crate::prelude::*;
        use std::mem::size_of_val;
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let id = uuid::Uuid::nil();
        let read = {
            let mut c = s.read_conn().await.unwrap();
            size_of_val(&s.read_conn()) + size_of_val(&crate::ops::executors::credential_with_executor(&mut *c, id))
        };
        let pairs = [
            (
                "credential_with_executor",
                read,
                size_of_val(&ts.store.credential_with_executor(id)),
            ),
            ("begin", size_of_val(&s.begin()), size_of_val(&ts.store.begin())),
        ];
        let mut tx = ts.store.begin().await.unwrap();
        let engine = {
            let crate::Tx::Sqlite(t) = &mut tx else { unreachable!() };
            size_of_val(&crate::ops::runs::lock_run(&mut *t.tx, 1))
        };
        let unit = ("Tx::lock_run", engine, size_of_val(&tx.lock_run(1)));
        for (what, engine, dispatched) in pairs.into_iter().chain([unit]) {
            assert!(
                dispatched <= engine + 256,
                "{what}: the dispatched future is {dispatched} bytes, the SQLite engine's {engine}"
            );
        }
        tx.rollback().await.unwrap();
    }
}
