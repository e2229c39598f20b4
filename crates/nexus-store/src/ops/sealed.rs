//! Sealed requests and bodies (migrations 0015 and 0020), written once for both engines.
//!
//! A record or body may be stored as a delta on its base: the base's first `keep` bytes, then
//! the stored bytes. A write takes a delta from the kernel (which knows what the round's request
//! shares with the round it continues) and stores it as given while the chain behind it is
//! shorter than [`SNAPSHOT_DEPTH`]; at that depth it stores the whole bytes instead, so a read
//! follows at most `SNAPSHOT_DEPTH - 1` bases. Reads always answer the whole bytes.

use crate::ops::db::{Db, query, query_scalar};
use crate::row;
use crate::sql;
use crate::{Result, StoreError, check_text, write_error};

use std::borrow::Cow;

use crate::model::{NewSealedRequest, SealedRequestRow};

/// The delta depth at which a sealed record or body is stored whole.
pub const SNAPSHOT_DEPTH: i64 = 32;

/// Rebuilds whole bytes from a chain read newest first: each link's bytes and the length of
/// its base that comes first (`None`: the link is whole, and ends the chain).
pub(crate) fn rebuild(mut chain: Vec<(Vec<u8>, Option<i64>)>) -> crate::Result<Vec<u8>> {
    let corrupt = || crate::StoreError::Corrupt("a sealed delta chain has no whole base".into());
    let (mut whole, keep) = chain.pop().ok_or_else(corrupt)?;
    if keep.is_some() {
        return Err(corrupt());
    }
    while let Some((tail, keep)) = chain.pop() {
        let keep = keep.unwrap_or(0).max(0) as usize;
        if keep > whole.len() {
            return Err(crate::StoreError::Corrupt(
                "a sealed delta keeps more than its base".into(),
            ));
        }
        whole.truncate(keep);
        whole.extend_from_slice(&tail);
    }
    Ok(whole)
}

/// A sealed record as stored: its text (whole, or the delta), base request id, kept length,
/// depth.
pub(crate) type StoredRecord<'a> = (Cow<'a, str>, Option<i64>, Option<i64>, i64);

/// A sealed body as stored: its bytes (whole, or the delta), base digest, kept length, depth.
pub(crate) type StoredBody<'a> = (Cow<'a, [u8]>, Option<&'a str>, Option<i64>, i64);

/// Whether a delta on a base at `depth` is stored as given (else, at the snapshot depth, the
/// whole bytes are: their base is rebuilt).
pub(crate) fn stored_delta(depth: i64) -> bool {
    depth + 1 < SNAPSHOT_DEPTH
}

/// The record and the body as stored, when that takes no read: each whole, or a delta on a
/// named base whose depth the caller gave, below the snapshot depth. `None` when a base or its
/// depth is not given or a delta would reach the snapshot depth (the engine's insert reads
/// the base).
pub(crate) fn stored_without_reads(new: &NewSealedRequest) -> Option<(StoredRecord<'_>, StoredBody<'_>)> {
    let record = match &new.record_base {
        None => (Cow::Borrowed(new.record.as_str()), None, None, 0),
        Some(base) => {
            let depth = base.depth.filter(|&d| stored_delta(d))?;
            (
                Cow::Borrowed(new.record.as_str()),
                Some(base.id?),
                Some(base.keep),
                depth + 1,
            )
        }
    };
    let body = match &new.body_base {
        None => (Cow::Borrowed(&new.body[..]), None, None, 0),
        Some(base) => {
            let depth = base.depth.filter(|&d| stored_delta(d))?;
            (
                Cow::Borrowed(&new.body[..]),
                Some(base.sha256.as_deref()?),
                Some(base.keep),
                depth + 1,
            )
        }
    };
    Some((record, body))
}

/// The row an insert of `new` answers: stored as `record` and `body` under `id`, its body at
/// `body_depth` (that of a body an earlier round stored under the digest, when there was one).
pub(crate) fn inserted_row(
    new: &NewSealedRequest,
    record: StoredRecord<'_>,
    body: StoredBody<'_>,
    id: i64,
    body_depth: Option<i64>,
) -> SealedRequestRow {
    SealedRequestRow {
        id,
        task_id: new.task_id,
        generation: new.generation,
        record: record.0.into_owned(),
        body_sha256: new.body_sha256.clone(),
        request_bytes: new.request_bytes,
        tools_sha256: new.tools_sha256.clone(),
        body: body.0.into_owned(),
        attempts: new.attempts.clone(),
        created_at: new.created_at,
        record_depth: Some(record.3),
        body_depth,
    }
}

/// A sealed request's insert as the literals of `sql::INSERT_SEALED_REQUEST_WITH_BODY_PG`
/// (`$1`–`$15`, in [`bind_sealed_request!`] and [`bind_sealed_body!`]'s order).
pub(crate) fn sealed_insert_literals(
    new: &NewSealedRequest,
    record: &StoredRecord<'_>,
    body: &StoredBody<'_>,
) -> Vec<String> {
    use crate::postgres::Literal;
    vec![
        new.task_id.literal(),
        new.generation.literal(),
        record.0.literal(),
        new.body_sha256.literal(),
        new.request_bytes.literal(),
        new.tools_sha256.literal(),
        new.attempts.literal(),
        new.created_at.literal(),
        record.1.literal(),
        record.2.literal(),
        record.3.literal(),
        body.0.literal(),
        body.1.literal(),
        body.2.literal(),
        body.3.literal(),
    ]
}

/// Binds a sealed request's columns (`sql::INSERT_SEALED_REQUEST` `$1`–`$11`, the same in
/// `sql::INSERT_SEALED_REQUEST_WITH_BODY_PG`): `$new` a `NewSealedRequest`, `$record` the
/// record as stored (its text, base id, keep, depth).
macro_rules! bind_sealed_request {
    ($q:expr, $new:expr, $record:expr) => {
        $q.bind($new.task_id)
            .bind($new.generation)
            .bind(&$record.0[..])
            .bind(&$new.body_sha256)
            .bind($new.request_bytes)
            .bind(&$new.tools_sha256)
            .bind(&$new.attempts)
            .bind($new.created_at)
            .bind($record.1)
            .bind($record.2)
            .bind($record.3)
    };
}
pub(crate) use bind_sealed_request;

/// Binds a sealed body's columns after its digest (`sql::INSERT_SEALED_BODY` `$2`–`$5`,
/// `sql::INSERT_SEALED_REQUEST_WITH_BODY_PG` `$12`–`$15`): its bytes, base digest, keep, depth.
macro_rules! bind_sealed_body {
    ($q:expr, $body:expr) => {
        $q.bind(&$body.0[..]).bind($body.1).bind($body.2).bind($body.3)
    };
}
pub(crate) use bind_sealed_body;

/// The whole record of sealed request `id`.
async fn sealed_record_whole<C: Db>(c: &mut C, id: i64) -> Result<Vec<u8>> {
    let mut chain = Vec::new();
    let mut at = Some(id);
    while let Some(link) = at {
        let r = query(sql::SEALED_RECORD_LINK)
            .bind(link)
            .fetch_optional(&mut *c)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("sealed request {link} is missing")))?;
        let keep = row::Columns::opt_int(&r, "record_keep")?;
        at = row::Columns::opt_int(&r, "record_base_id")?;
        chain.push((row::Columns::text(&r, "record")?.into_bytes(), at.and(keep)));
    }
    rebuild(chain)
}

/// The whole body stored under `sha256`.
async fn sealed_body_whole<C: Db>(c: &mut C, sha256: &str) -> Result<Vec<u8>> {
    let mut chain = Vec::new();
    let mut at = Some(sha256.to_string());
    while let Some(link) = at {
        let r = query(sql::SEALED_BODY_LINK)
            .bind(&link)
            .fetch_optional(&mut *c)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("sealed body {link} is missing")))?;
        let keep = row::Columns::opt_int(&r, "keep")?;
        at = row::Columns::opt_text(&r, "base_sha256")?;
        chain.push((row::Columns::bytes(&r, "body")?, at.as_ref().and(keep)));
    }
    rebuild(chain)
}

/// The row of a sealed request's body: a delta while its chain is short, else whole (bytes,
/// base digest, kept prefix, depth).
async fn sealed_body_row<'n, C: Db>(
    c: &mut C,
    new: &'n NewSealedRequest,
) -> Result<(std::borrow::Cow<'n, [u8]>, Option<&'n str>, Option<i64>, i64)> {
    let mut body_row: (std::borrow::Cow<'n, [u8]>, Option<&'n str>, Option<i64>, i64) =
        (std::borrow::Cow::Borrowed(&new.body[..]), None, None, 0);
    if let Some(base) = &new.body_base {
        let sha = base.sha256.as_deref().unwrap_or_default();
        let depth: Option<i64> = match base.depth {
            Some(d) => Some(d),
            None => {
                query_scalar(sql::SEALED_BODY_DEPTH)
                    .bind(sha)
                    .fetch_optional(&mut *c)
                    .await?
            }
        };
        match depth {
            Some(d) if stored_delta(d) => body_row = (body_row.0, Some(sha), Some(base.keep), d + 1),
            _ => {
                let mut whole = sealed_body_whole(c, sha).await?;
                whole.truncate(base.keep.max(0) as usize);
                whole.extend_from_slice(&new.body);
                body_row.0 = std::borrow::Cow::Owned(whole);
            }
        }
    }
    Ok(body_row)
}

pub(crate) async fn insert_sealed_request<C: Db>(c: &mut C, new: &NewSealedRequest) -> Result<SealedRequestRow> {
    check_text(&new.record)?;
    check_text(&new.body_sha256)?;
    check_text(&new.attempts)?;
    let body_row = sealed_body_row(c, new).await?;
    // The record, the same way as the body.
    let mut record_row: (std::borrow::Cow<'_, str>, Option<i64>, Option<i64>, i64) =
        (std::borrow::Cow::Borrowed(&new.record), None, None, 0);
    if let Some(base) = &new.record_base {
        let id = base.id.unwrap_or_default();
        let depth: Option<i64> = match base.depth {
            Some(d) => Some(d),
            None => {
                query_scalar(sql::SEALED_RECORD_DEPTH)
                    .bind(id)
                    .fetch_optional(&mut *c)
                    .await?
            }
        };
        match depth {
            Some(d) if stored_delta(d) => record_row = (record_row.0, Some(id), Some(base.keep), d + 1),
            _ => {
                let mut whole = sealed_record_whole(c, id).await?;
                whole.truncate(base.keep.max(0) as usize);
                whole.extend_from_slice(new.record.as_bytes());
                let whole =
                    String::from_utf8(whole).map_err(|_| StoreError::Corrupt("a sealed record is not UTF-8".into()))?;
                record_row.0 = std::borrow::Cow::Owned(whole);
            }
        }
    }
    let with_body = C::INSERT_SEALED_REQUEST_WITH_BODY;
    let (id, body_depth) = if let Some(both) = with_body {
        // One statement for the record and the body (PostgreSQL).
        let q = crate::ops::sealed::bind_sealed_request!(query(both), new, record_row);
        let r = crate::ops::sealed::bind_sealed_body!(q, body_row)
            .fetch_one(&mut *c)
            .await
            .map_err(write_error)?;
        (row::Columns::int(&r, "id")?, row::Columns::opt_int(&r, "body_depth")?)
    } else {
        let q = query_scalar(sql::INSERT_SEALED_BODY).bind(&new.body_sha256);
        let inserted: Option<i64> = crate::ops::sealed::bind_sealed_body!(q, body_row)
            .fetch_optional(&mut *c)
            .await
            .map_err(write_error)?;
        // A body an earlier round stored already keeps its own depth.
        let body_depth = match inserted {
            Some(depth) => Some(depth),
            None => {
                query_scalar(sql::SEALED_BODY_DEPTH)
                    .bind(&new.body_sha256)
                    .fetch_optional(&mut *c)
                    .await?
            }
        };
        let q = query_scalar(sql::INSERT_SEALED_REQUEST);
        let id: i64 = crate::ops::sealed::bind_sealed_request!(q, new, record_row)
            .fetch_one(&mut *c)
            .await
            .map_err(write_error)?;
        (id, body_depth)
    };
    Ok(inserted_row(new, record_row, body_row, id, body_depth))
}

/// The sealed request of (task, generation), its record and body whole.
pub(crate) async fn sealed_request<C: Db>(
    c: &mut C,
    task_id: i64,
    generation: i64,
) -> Result<Option<SealedRequestRow>> {
    let Some(r) = query(sql::SEALED_REQUEST)
        .bind(task_id)
        .bind(generation)
        .fetch_optional(&mut *c)
        .await?
    else {
        return Ok(None);
    };
    let mut sealed = row::sealed_request(&r)?;
    let record_base = row::Columns::opt_int(&r, "record_base_id")?;
    let record_keep = row::Columns::opt_int(&r, "record_keep")?;
    let body_base = row::Columns::opt_text(&r, "base_sha256")?;
    let body_keep = row::Columns::opt_int(&r, "keep")?;
    if let (Some(base), Some(keep)) = (record_base, record_keep) {
        let mut whole = sealed_record_whole(c, base).await?;
        whole.truncate(keep.max(0) as usize);
        whole.extend_from_slice(sealed.record.as_bytes());
        sealed.record =
            String::from_utf8(whole).map_err(|_| StoreError::Corrupt("a sealed record is not UTF-8".into()))?;
    }
    if let (Some(base), Some(keep)) = (body_base, body_keep) {
        let mut whole = sealed_body_whole(c, &base).await?;
        whole.truncate(keep.max(0) as usize);
        whole.extend_from_slice(&sealed.body);
        sealed.body = whole;
    }
    Ok(Some(sealed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SealedBase;

    fn new(record_base: Option<SealedBase>, body_base: Option<SealedBase>) -> NewSealedRequest {
        NewSealedRequest {
            task_id: 1,
            generation: 1,
            record: "r".into(),
            body_sha256: "b".into(),
            request_bytes: 1,
            tools_sha256: None,
            body: vec![1],
            attempts: "[]".into(),
            created_at: 0,
            record_base,
            body_base,
        }
    }

    fn base(id: Option<i64>, sha: Option<&str>, depth: Option<i64>) -> SealedBase {
        SealedBase {
            id,
            sha256: sha.map(str::to_string),
            keep: 5,
            depth,
        }
    }

    /// Stored without a read: whole, or a delta on a named base of known depth below the
    /// snapshot depth; anything else is left to the engine's insert, which reads the base.
    #[test]
    fn only_whole_bytes_and_known_shallow_deltas_are_stored_without_reads() {
        let whole = new(None, None);
        let (record, body) = stored_without_reads(&whole).expect("whole");
        assert_eq!((record.1, record.2, record.3), (None, None, 0));
        assert_eq!((body.1, body.2, body.3), (None, None, 0));
        let shallow = new(Some(base(Some(7), None, Some(3))), Some(base(None, Some("a"), Some(3))));
        let (record, body) = stored_without_reads(&shallow).expect("deltas");
        assert_eq!((record.1, record.2, record.3), (Some(7), Some(5), 4));
        assert_eq!((body.1, body.2, body.3), (Some("a"), Some(5), 4));
        let last = SNAPSHOT_DEPTH - 2;
        assert!(stored_without_reads(&new(Some(base(Some(7), None, Some(last))), None)).is_some());
        for unread in [
            new(Some(base(Some(7), None, None)), None),
            new(Some(base(Some(7), None, Some(last + 1))), None),
            new(Some(base(None, None, Some(3))), None),
            new(None, Some(base(None, Some("a"), None))),
            new(None, Some(base(None, None, Some(3)))),
        ] {
            assert!(stored_without_reads(&unread).is_none(), "{unread:?}");
        }
    }
}
