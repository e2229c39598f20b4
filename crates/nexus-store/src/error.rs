//! Store errors. The kernel maps them to typed kernel errors; nothing here knows HTTP.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused the write (a taken handle, a second active runner name, …).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A row the call requires does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The store cannot be reached or failed underneath (PostgreSQL, through sqlx).
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    /// The SQLite database failed underneath (a full disk, a corrupt file, a busy lock held
    /// by another process beyond the busy timeout, …).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("migration error: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// SQLite: the in-process writer gate stayed taken for the whole busy timeout (a writer
    /// held it that long). The caller may retry.
    #[error("the database is busy: no write slot within the busy timeout")]
    Busy,
    /// A bad URL or option, or a second node on one SQLite file.
    #[error("configuration: {0}")]
    Config(String),
    /// A stored value could not be read back (a corrupt enum word, …).
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// A statement of this unit of work failed in the database (a unique or foreign key
    /// violation, a lost connection, …), so the transaction is void: PostgreSQL aborts it, and
    /// both engines then refuse every further statement and the commit. Drop the
    /// [`crate::Tx`] (it rolls back) and begin again.
    #[error("transaction aborted by an earlier failed statement; drop it and begin again")]
    TxAborted,
    /// A string bound for storage holds U+0000 (`unsupported_text`).
    #[error("unsupported_text: the value contains U+0000")]
    UnsupportedText,
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        crate::postgres::note_fault(&e);
        StoreError::Database(e)
    }
}
