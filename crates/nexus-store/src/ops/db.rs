//! The connection the store's operations are written over, once for both engines ([`Db`]),
//! and the engine-neutral statement builder ([`query`], [`query_scalar`]) whose text is
//! sqlx's: `query(SQL).bind(x).fetch_all(&mut *c).await?`.
//!
//! [`Db`] is implemented by `rusqlite::Connection` (through the SQLite driver,
//! `crate::sqlite::driver`) and by `sqlx::PgConnection`; an operation is an ordinary generic
//! function `async fn op<C: Db>(c: &mut C, …)`, monomorphized once per engine, so a statement
//! costs what the engine's own call costs (no dispatch per statement; PostgreSQL boxes each
//! statement's future, [`Db::Fut`]). A pooled connection and
//! an open transaction both deref to the engine's connection type. Where the dialects need
//! different text, [`Dialect`] (a supertrait) picks it by that type.
//!
//! A bound value must bind on both engines ([`Arg`]); a public id binds through [`uid`] (TEXT
//! on SQLite, `uuid` on PostgreSQL). A statement failure is a [`DbError`], which `?` turns into
//! the engine's [`StoreError`] and `write_error` classifies (unique and foreign key
//! violations).

use std::future::{Future, ready};
use std::marker::PhantomData;

use rusqlite::types::{FromSql, ToSql, ToSqlOutput};
use sqlx::postgres::{PgArgumentBuffer, PgArguments, PgRow, PgTypeInfo};
use sqlx::{Postgres, Row};
use uuid::Uuid;

use super::Dialect;
use crate::row::Columns;
use crate::sqlite::driver;
use crate::{Result, StoreError, WriteFailure};

/// A statement's answer, or its failure as the driver reported it.
pub(crate) type DbResult<T> = std::result::Result<T, DbError>;

/// A statement failure as the engine's driver reported it.
#[derive(Debug)]
pub(crate) enum DbError {
    Sqlite(rusqlite::Error),
    Postgres(sqlx::Error),
}

impl From<DbError> for StoreError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Sqlite(e) => e.into(),
            DbError::Postgres(e) => e.into(),
        }
    }
}

impl WriteFailure for DbError {
    fn classify(self) -> StoreError {
        match self {
            DbError::Sqlite(e) => e.classify(),
            DbError::Postgres(e) => e.classify(),
        }
    }
}

/// A value a statement binds: one that both engines encode.
pub(crate) trait Arg<'q>: ToSql + sqlx::Encode<'q, Postgres> + sqlx::Type<Postgres> + Send + 'q {}
impl<'q, T: ToSql + sqlx::Encode<'q, Postgres> + sqlx::Type<Postgres> + Send + 'q> Arg<'q> for T {}

/// A value a statement answers ([`query_scalar`]): one that both engines decode.
pub(crate) trait Out:
    FromSql + for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres> + Send + Unpin + 'static
{
}
impl<T: FromSql + for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres> + Send + Unpin + 'static> Out for T {}

/// A public id as a statement binds it: lowercase hyphenated TEXT on SQLite, `uuid` on
/// PostgreSQL.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Uid(Uuid);

/// The public id `id` as a statement binds it ([`Uid`]).
pub(crate) fn uid(id: Uuid) -> Uid {
    Uid(id)
}

impl ToSql for Uid {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0.hyphenated().to_string()))
    }
}

impl sqlx::Type<Postgres> for Uid {
    fn type_info() -> PgTypeInfo {
        <Uuid as sqlx::Type<Postgres>>::type_info()
    }
}

impl sqlx::Encode<'_, Postgres> for Uid {
    fn encode_by_ref(
        &self,
        buf: &mut PgArgumentBuffer,
    ) -> std::result::Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <Uuid as sqlx::Encode<'_, Postgres>>::encode_by_ref(&self.0, buf)
    }
}

/// What a write statement did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Done(u64);

impl Done {
    pub(crate) fn rows_affected(&self) -> u64 {
        self.0
    }
}

/// A connection the store's operations run on: either engine's (see the module docs). Every
/// future is `Send`, so a handler that awaits an operation stays `Send`.
pub(crate) trait Db: Dialect + Send {
    /// An owned result row.
    type Row: Columns + Send;
    /// A result row as a decoder reads it (SQLite: in place, while the statement stands on it).
    type Ref<'r>: Columns;
    /// The engine's statement with its arguments.
    type Query<'q>: Send;
    /// A statement's future: a named type (no opaque one), so an operation's future is `Send`
    /// for every lifetime (rustc could not prove that through `impl Future` here).
    type Fut<'a, T: Send + 'a>: Future<Output = T> + Send + 'a
    where
        Self: 'a;

    fn query<'q>(sql: &'static str) -> Self::Query<'q>;
    fn bind<'q, T: Arg<'q>>(q: Self::Query<'q>, value: T) -> Self::Query<'q>;
    /// sqlx's switch for keeping a prepared statement (PostgreSQL); SQLite ignores it.
    fn persistent(q: Self::Query<'_>, keep: bool) -> Self::Query<'_>;
    fn fetch_all<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Vec<Self::Row>>>;
    fn fetch_optional<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Option<Self::Row>>>;
    fn fetch_one<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Self::Row>>;
    fn execute<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Done>>;
    /// The first column of the first row, if any.
    fn scalar_optional<'a, 'q: 'a, T: Out>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Option<T>>>;
    /// The first column of every row.
    fn scalar_all<'a, 'q: 'a, T: Out>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Vec<T>>>;
    /// The driver's "no row" error (what `fetch_one` answers on an empty result).
    fn no_rows() -> DbError;
    /// Every row, each decoded by `decode` (SQLite: where it lies, without an owned copy).
    fn fetch_all_as<'a, 'q: 'a, T: Send + 'a, F>(
        &'a mut self,
        q: Self::Query<'q>,
        decode: F,
    ) -> Self::Fut<'a, Result<Vec<T>>>
    where
        F: for<'r> Fn(&Self::Ref<'r>) -> Result<T> + Send + 'a;
    /// The first row, if any, decoded by `decode`.
    fn fetch_optional_as<'a, 'q: 'a, T: Send + 'a, F>(
        &'a mut self,
        q: Self::Query<'q>,
        decode: F,
    ) -> Self::Fut<'a, Result<Option<T>>>
    where
        F: for<'r> Fn(&Self::Ref<'r>) -> Result<T> + Send + 'a;
}

impl Db for rusqlite::Connection {
    type Row = driver::LiteRow;
    type Fut<'a, T: Send + 'a>
        = std::future::Ready<T>
    where
        Self: 'a;
    type Ref<'r> = driver::RowRef<'r, 'r>;
    type Query<'q> = driver::Query<'q>;

    fn query<'q>(sql: &'static str) -> Self::Query<'q> {
        driver::query(sql)
    }
    fn bind<'q, T: Arg<'q>>(q: Self::Query<'q>, value: T) -> Self::Query<'q> {
        q.bind(value)
    }
    fn persistent(q: Self::Query<'_>, keep: bool) -> Self::Query<'_> {
        q.persistent(keep)
    }
    // The driver runs a statement when asked and answers a completed future; the answer goes
    // on as `Ready`, which holds no borrow, so the operations' futures stay `Send` for every
    // lifetime (an `async` body here captured its arguments' lifetimes, which rustc could not
    // prove `Send` in general).
    fn fetch_all<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Vec<Self::Row>>> {
        ready(q.fetch_all(self).into_inner().map_err(DbError::Sqlite))
    }
    fn fetch_optional<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Option<Self::Row>>> {
        ready(q.fetch_optional(self).into_inner().map_err(DbError::Sqlite))
    }
    fn fetch_one<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Self::Row>> {
        ready(q.fetch_one(self).into_inner().map_err(DbError::Sqlite))
    }
    fn execute<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Done>> {
        let done = q.execute(self).into_inner().map_err(DbError::Sqlite);
        ready(done.map(|d| Done(d.rows_affected())))
    }
    fn scalar_optional<'a, 'q: 'a, T: Out>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Option<T>>> {
        ready(
            q.scalar::<T>()
                .fetch_optional(self)
                .into_inner()
                .map_err(DbError::Sqlite),
        )
    }
    fn scalar_all<'a, 'q: 'a, T: Out>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Vec<T>>> {
        ready(q.scalar::<T>().fetch_all(self).into_inner().map_err(DbError::Sqlite))
    }
    fn no_rows() -> DbError {
        DbError::Sqlite(rusqlite::Error::QueryReturnedNoRows)
    }
    fn fetch_all_as<'a, 'q: 'a, T: Send + 'a, F>(
        &'a mut self,
        q: Self::Query<'q>,
        decode: F,
    ) -> Self::Fut<'a, Result<Vec<T>>>
    where
        F: for<'r> Fn(&Self::Ref<'r>) -> Result<T> + Send + 'a,
    {
        ready(q.fetch_all_as(self, |r| decode(r)).into_inner())
    }
    fn fetch_optional_as<'a, 'q: 'a, T: Send + 'a, F>(
        &'a mut self,
        q: Self::Query<'q>,
        decode: F,
    ) -> Self::Fut<'a, Result<Option<T>>>
    where
        F: for<'r> Fn(&Self::Ref<'r>) -> Result<T> + Send + 'a,
    {
        ready(q.fetch_optional_as(self, |r| decode(r)).into_inner())
    }
}

type PgQuery<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

// Each statement's future is boxed, as a `dyn Future + Send`: sqlx's futures capture the
// statement's lifetimes, and rustc could not prove them `Send` for every lifetime inside the
// operations' futures. A statement here is a network round trip; the box is one allocation.
impl Db for sqlx::PgConnection {
    type Row = PgRow;
    type Fut<'a, T: Send + 'a>
        = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>
    where
        Self: 'a;
    type Ref<'r> = PgRow;
    type Query<'q> = PgQuery<'q>;

    fn query<'q>(sql: &'static str) -> Self::Query<'q> {
        sqlx::query(sql)
    }
    fn bind<'q, T: Arg<'q>>(q: Self::Query<'q>, value: T) -> Self::Query<'q> {
        q.bind(value)
    }
    fn persistent(q: Self::Query<'_>, keep: bool) -> Self::Query<'_> {
        q.persistent(keep)
    }
    fn fetch_all<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Vec<Self::Row>>> {
        Box::pin(async move { q.fetch_all(self).await.map_err(DbError::Postgres) })
    }
    fn fetch_optional<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Option<Self::Row>>> {
        Box::pin(async move { q.fetch_optional(self).await.map_err(DbError::Postgres) })
    }
    fn fetch_one<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Self::Row>> {
        Box::pin(async move { q.fetch_one(self).await.map_err(DbError::Postgres) })
    }
    fn execute<'a, 'q: 'a>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Done>> {
        Box::pin(async move {
            let done = q.execute(self).await.map_err(DbError::Postgres)?;
            Ok(Done(done.rows_affected()))
        })
    }
    fn scalar_optional<'a, 'q: 'a, T: Out>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Option<T>>> {
        Box::pin(async move {
            match q.fetch_optional(self).await.map_err(DbError::Postgres)? {
                Some(r) => Ok(Some(r.try_get(0).map_err(DbError::Postgres)?)),
                None => Ok(None),
            }
        })
    }
    fn scalar_all<'a, 'q: 'a, T: Out>(&'a mut self, q: Self::Query<'q>) -> Self::Fut<'a, DbResult<Vec<T>>> {
        Box::pin(async move {
            let rows = q.fetch_all(self).await.map_err(DbError::Postgres)?;
            rows.iter().map(|r| r.try_get(0).map_err(DbError::Postgres)).collect()
        })
    }
    fn no_rows() -> DbError {
        DbError::Postgres(sqlx::Error::RowNotFound)
    }
    fn fetch_all_as<'a, 'q: 'a, T: Send + 'a, F>(
        &'a mut self,
        q: Self::Query<'q>,
        decode: F,
    ) -> Self::Fut<'a, Result<Vec<T>>>
    where
        F: for<'r> Fn(&Self::Ref<'r>) -> Result<T> + Send + 'a,
    {
        Box::pin(async move { q.fetch_all(self).await?.iter().map(decode).collect() })
    }
    fn fetch_optional_as<'a, 'q: 'a, T: Send + 'a, F>(
        &'a mut self,
        q: Self::Query<'q>,
        decode: F,
    ) -> Self::Fut<'a, Result<Option<T>>>
    where
        F: for<'r> Fn(&Self::Ref<'r>) -> Result<T> + Send + 'a,
    {
        Box::pin(async move { q.fetch_optional(self).await?.map(|r| decode(&r)).transpose() })
    }
}

/// A statement over `sql` (its `$N` take the `N`th bound argument), for a connection `C`.
pub(crate) fn query<'q, C: Db>(sql: &'static str) -> Query<'q, C> {
    Query { q: C::query(sql) }
}

/// [`query`], answering each row's first column as `T`.
pub(crate) fn query_scalar<'q, C: Db, T: Out>(sql: &'static str) -> QueryScalar<'q, C, T> {
    QueryScalar {
        query: query(sql),
        _out: PhantomData,
    }
}

/// A statement and its arguments, built like sqlx's `Query`.
pub(crate) struct Query<'q, C: Db> {
    q: C::Query<'q>,
}

impl<'q, C: Db> Query<'q, C> {
    /// Adds the next argument (`$1` first).
    pub(crate) fn bind<T: Arg<'q>>(self, value: T) -> Self {
        Query {
            q: C::bind(self.q, value),
        }
    }
    /// Whether PostgreSQL keeps the statement prepared (see [`Db::persistent`]).
    pub(crate) fn persistent(self, keep: bool) -> Self {
        Query {
            q: C::persistent(self.q, keep),
        }
    }
    pub(crate) fn fetch_all<'a>(self, c: &'a mut C) -> C::Fut<'a, DbResult<Vec<C::Row>>>
    where
        'q: 'a,
    {
        c.fetch_all(self.q)
    }
    pub(crate) fn fetch_optional<'a>(self, c: &'a mut C) -> C::Fut<'a, DbResult<Option<C::Row>>>
    where
        'q: 'a,
    {
        c.fetch_optional(self.q)
    }
    pub(crate) fn fetch_one<'a>(self, c: &'a mut C) -> C::Fut<'a, DbResult<C::Row>>
    where
        'q: 'a,
    {
        c.fetch_one(self.q)
    }
    pub(crate) fn execute<'a>(self, c: &'a mut C) -> C::Fut<'a, DbResult<Done>>
    where
        'q: 'a,
    {
        c.execute(self.q)
    }
    /// Every row, each decoded by `decode` (SQLite: where it lies).
    pub(crate) fn fetch_all_as<'a, T: Send + 'a, F>(self, c: &'a mut C, decode: F) -> C::Fut<'a, Result<Vec<T>>>
    where
        'q: 'a,
        F: for<'r> Fn(&C::Ref<'r>) -> Result<T> + Send + 'a,
    {
        c.fetch_all_as(self.q, decode)
    }
    /// The first row, if any, decoded by `decode`.
    pub(crate) fn fetch_optional_as<'a, T: Send + 'a, F>(self, c: &'a mut C, decode: F) -> C::Fut<'a, Result<Option<T>>>
    where
        'q: 'a,
        F: for<'r> Fn(&C::Ref<'r>) -> Result<T> + Send + 'a,
    {
        c.fetch_optional_as(self.q, decode)
    }
}

/// A statement whose first column of each row is the answer, like sqlx's `QueryScalar`.
pub(crate) struct QueryScalar<'q, C: Db, T> {
    query: Query<'q, C>,
    _out: PhantomData<fn() -> T>,
}

impl<'q, C: Db, T: Out> QueryScalar<'q, C, T> {
    pub(crate) fn bind<A: Arg<'q>>(self, value: A) -> Self {
        QueryScalar {
            query: self.query.bind(value),
            _out: PhantomData,
        }
    }
    pub(crate) async fn fetch_one(self, c: &mut C) -> DbResult<T> {
        match c.scalar_optional(self.query.q).await? {
            Some(v) => Ok(v),
            None => Err(C::no_rows()),
        }
    }
    pub(crate) fn fetch_optional<'a>(self, c: &'a mut C) -> C::Fut<'a, DbResult<Option<T>>>
    where
        'q: 'a,
    {
        c.scalar_optional(self.query.q)
    }
    pub(crate) fn fetch_all<'a>(self, c: &'a mut C) -> C::Fut<'a, DbResult<Vec<T>>>
    where
        'q: 'a,
    {
        c.scalar_all(self.query.q)
    }
}
