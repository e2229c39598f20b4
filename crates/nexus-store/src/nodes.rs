//! What several kernel nodes on one PostgreSQL database share besides the tables
//! (storage-and-scale.md §5, §6): notices (`LISTEN` / `NOTIFY`) and the database's clock.
//! SQLite serves one node, so it has neither: its kernel signals in process and reads the
//! process clock.
//!
//! Notices travel on one channel per database and schema ([`Store::notice_channel`]): a test's
//! schema never hears another's. A notice is small text naming what changed; the receiving
//! node reads the facts from the database.

use sqlx::postgres::PgListener;

use crate::{Result, Store, StoreError};

/// The longest payload PostgreSQL's `NOTIFY` takes (8,000 bytes, less a margin).
pub const NOTICE_PAYLOAD_MAX: usize = 7_900;

/// One received notice: its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub payload: String,
}

/// A dedicated `LISTEN` connection on the store's notice channel (PostgreSQL only).
pub struct NoticeListener {
    inner: PgListener,
}

impl std::fmt::Debug for NoticeListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoticeListener").finish_non_exhaustive()
    }
}

impl NoticeListener {
    /// The next notice. `Ok(None)`: the connection was lost and is listening again; notices
    /// sent in between are gone (the caller catches up from the database). `Err`: no
    /// connection could be made; listen again later.
    pub async fn recv(&mut self) -> Result<Option<Notice>> {
        Ok(self.inner.try_recv().await?.map(|n| Notice {
            payload: n.payload().to_string(),
        }))
    }
}

/// The notice channel of a store working in `schema` (`None`: the connection's default).
/// A channel name is an identifier of at most 63 bytes; the schema names are ASCII.
fn channel_of(schema: Option<&str>) -> String {
    let mut channel = match schema {
        Some(s) => format!("nexus.{s}"),
        None => "nexus".to_string(),
    };
    channel.truncate(63);
    channel
}

/// The database clock in Unix milliseconds, read in the statement (`clock_timestamp()`, not
/// the transaction's `now()`).
const DATABASE_CLOCK: &str = "SELECT CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)";

/// Every queued notice in one statement, in order (delivered at its commit).
const NOTIFY_ALL: &str = "SELECT count(pg_notify($1, p)) FROM unnest(CAST($2 AS TEXT[])) AS n(p)";

impl Store {
    /// Whether nodes share this store (PostgreSQL): signals go through notices and the clock is
    /// the database's.
    pub fn is_shared(&self) -> bool {
        matches!(self, Store::Postgres(_))
    }

    /// The channel this store's notices travel on (PostgreSQL only).
    pub fn notice_channel(&self) -> Option<String> {
        match self {
            Store::Sqlite(_) => None,
            Store::Postgres(s) => Some(channel_of(s.schema())),
        }
    }

    /// Opens a dedicated connection listening on the notice channel (PostgreSQL only).
    pub async fn listen(&self) -> Result<NoticeListener> {
        let Store::Postgres(s) = self else {
            return Err(StoreError::Config("notices need PostgreSQL".into()));
        };
        let mut inner = PgListener::connect_with(s.pool()).await?;
        inner.ignore_pool_close_event(false);
        inner.listen(&channel_of(s.schema())).await?;
        Ok(NoticeListener { inner })
    }

    /// Sends `payloads` on the notice channel, in order, in one statement (PostgreSQL only; a
    /// no-op on SQLite). A payload over [`NOTICE_PAYLOAD_MAX`] is the caller's error.
    pub async fn notify_all(&self, payloads: &[String]) -> Result<()> {
        let Store::Postgres(s) = self else { return Ok(()) };
        if payloads.is_empty() {
            return Ok(());
        }
        sqlx::query(NOTIFY_ALL)
            .bind(channel_of(s.schema()))
            .bind(payloads)
            .execute(&mut *s.conn().await?)
            .await?;
        Ok(())
    }

    /// The database's clock in Unix milliseconds (PostgreSQL); `None` on SQLite, whose one node
    /// keeps the process clock.
    pub async fn database_clock_ms(&self) -> Result<Option<i64>> {
        let Store::Postgres(s) = self else { return Ok(None) };
        let ms: i64 = sqlx::query_scalar(DATABASE_CLOCK)
            .fetch_one(&mut *s.conn().await?)
            .await?;
        Ok(Some(ms))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn channels_are_per_schema_and_bounded() {
        assert_eq!(super::channel_of(None), "nexus");
        assert_eq!(super::channel_of(Some("t_1")), "nexus.t_1");
        assert_eq!(super::channel_of(Some(&"s".repeat(80))).len(), 63);
    }
}
