//! A PostgreSQL session outside a test store's pool, on the store's schema: a test holds row
//! locks with it to make a unit of work wait, or to make one a deadlock victim.

use sqlx::{Connection, PgConnection, Row};

use super::TestStore;

/// One connection of its own (`None` on SQLite, which has no row locks to hold).
pub struct OutsideSession {
    conn: PgConnection,
}

impl OutsideSession {
    /// Connects to the test store's database with its schema first on the search path.
    pub async fn open(ts: &TestStore) -> Option<Self> {
        let (base, schema) = (ts.base_url.as_deref()?, ts.schema.as_deref()?);
        let conn = PgConnection::connect(base).await.expect("an outside session connects");
        let mut session = Self { conn };
        session
            .execute(&format!("SET search_path TO \"{schema}\""))
            .await
            .expect("the schema on the search path");
        Some(session)
    }

    /// Runs one statement (a test's own text), its rows discarded.
    pub async fn execute(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(&mut self.conn)
            .await
            .map(|_| ())
    }

    /// The rows of a query whose columns are all `BIGINT` (a test's own text).
    pub async fn fetch_ints(&mut self, sql: &str) -> Vec<Vec<i64>> {
        sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
            .fetch_all(&mut self.conn)
            .await
            .expect("the query runs")
            .iter()
            .map(|r| (0..r.len()).map(|i| r.get::<i64, _>(i)).collect())
            .collect()
    }

    /// Whether some other session waits for this session's transaction (a row lock it holds).
    pub async fn is_waited_for(&mut self) -> bool {
        sqlx::query(
            "SELECT EXISTS (SELECT 1 FROM pg_locks \
             WHERE locktype = 'transactionid' AND NOT granted \
             AND transactionid::text::bigint = txid_current() % 4294967296)",
        )
        .fetch_one(&mut self.conn)
        .await
        .expect("pg_locks reads")
        .get::<bool, _>(0)
    }
}
