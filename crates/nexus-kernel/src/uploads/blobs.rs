//! The blob store (uploads.md, storage-and-scale.md §1): immutable bytes keyed by SHA-256.
//!
//! [`FsBlobs`] keeps each blob at `<root>/<sha[0..2]>/<sha>`. Ingest writes a temp file under
//! `<root>/tmp/` while hashing ([`Staging`]), then renames it into place, so a blob is either
//! whole or absent. The same bytes uploaded twice share one file.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// A boxed future of the blob store.
pub type BlobFuture<'a, T> = Pin<Box<dyn Future<Output = io::Result<T>> + Send + 'a>>;

/// A reader over (a range of) a blob.
pub type BlobReader = Pin<Box<dyn AsyncRead + Send>>;

/// Where blobs live: a directory ([`FsBlobs`], `storage.blobs.kind = "fs"`) or the database
/// ([`DbBlobs`], `"database"`, the default of `nexus serve` on PostgreSQL).
pub trait Blobs: Send + Sync + std::fmt::Debug + 'static {
    /// A new staging file for ingest.
    fn stage(&self) -> BlobFuture<'_, Staging>;
    /// Moves finished staged bytes into place under `sha256` (a no-op beyond removing the
    /// temp file when the blob already exists).
    fn put<'a>(&'a self, staged: Staged, sha256: &'a str) -> BlobFuture<'a, ()>;
    /// `len` bytes of the blob from `start`; `None` when the blob is absent.
    fn open_range<'a>(&'a self, sha256: &'a str, start: u64, len: u64) -> BlobFuture<'a, Option<BlobReader>>;
    /// Removes the blob; absent is fine.
    fn delete<'a>(&'a self, sha256: &'a str) -> BlobFuture<'a, ()>;
}

/// Bytes being written: a temp file plus their running SHA-256 and length.
#[derive(Debug)]
pub struct Staging {
    file: tokio::fs::File,
    path: Option<PathBuf>,
    hasher: Sha256,
    len: u64,
}

impl Staging {
    /// Appends a chunk.
    pub async fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.file.write_all(chunk).await?;
        self.hasher.update(chunk);
        self.len += chunk.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Flushes the bytes to disk and returns their digest.
    pub async fn finish(mut self) -> io::Result<Staged> {
        self.file.flush().await?;
        self.file.sync_all().await?;
        let path = self.path.take().expect("a staging file has a path until finished");
        Ok(Staged {
            path: Some(path),
            sha256: hex::encode(std::mem::take(&mut self.hasher).finalize()),
            byte_size: self.len,
        })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Finished staged bytes, not yet in place. Dropped without [`Blobs::put`], the temp file is
/// removed.
#[derive(Debug)]
pub struct Staged {
    path: Option<PathBuf>,
    /// Lowercase hex SHA-256.
    pub sha256: String,
    pub byte_size: u64,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Blobs in a local directory (a shared volume with several nodes).
#[derive(Debug, Clone)]
pub struct FsBlobs {
    root: PathBuf,
}

impl FsBlobs {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/<sha[0..2]>/<sha>`; `None` for a key that is not 64 lowercase hex digits.
    pub fn path_of(&self, sha256: &str) -> Option<PathBuf> {
        let valid = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| self.root.join(&sha256[..2]).join(sha256))
    }
}

fn bad_key() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "a blob key is 64 lowercase hex digits")
}

impl Blobs for FsBlobs {
    fn stage(&self) -> BlobFuture<'_, Staging> {
        Box::pin(async move {
            let dir = self.root.join("tmp");
            tokio::fs::create_dir_all(&dir).await?;
            let path = dir.join(format!("{}.part", uuid::Uuid::now_v7()));
            let file = tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .await?;
            Ok(Staging {
                file,
                path: Some(path),
                hasher: Sha256::new(),
                len: 0,
            })
        })
    }

    fn put<'a>(&'a self, mut staged: Staged, sha256: &'a str) -> BlobFuture<'a, ()> {
        Box::pin(async move {
            let target = self.path_of(sha256).ok_or_else(bad_key)?;
            let from = staged.path.take().expect("staged bytes have a path until put");
            if let Some(dir) = target.parent() {
                tokio::fs::create_dir_all(dir).await?;
            }
            // Same digest, same bytes: replacing an existing blob is harmless and atomic.
            let renamed = tokio::fs::rename(&from, &target).await;
            if renamed.is_err() {
                let _ = tokio::fs::remove_file(&from).await;
            }
            renamed
        })
    }

    fn open_range<'a>(&'a self, sha256: &'a str, start: u64, len: u64) -> BlobFuture<'a, Option<BlobReader>> {
        Box::pin(async move {
            let path = self.path_of(sha256).ok_or_else(bad_key)?;
            let mut file = match tokio::fs::File::open(&path).await {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            if start > 0 {
                file.seek(io::SeekFrom::Start(start)).await?;
            }
            Ok(Some(Box::pin(file.take(len)) as BlobReader))
        })
    }

    fn delete<'a>(&'a self, sha256: &'a str) -> BlobFuture<'a, ()> {
        Box::pin(async move {
            let path = self.path_of(sha256).ok_or_else(bad_key)?;
            match tokio::fs::remove_file(&path).await {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        })
    }
}

/// How many bytes one read of a blob kept in the database fetches.
const DB_CHUNK: u64 = 1024 * 1024;

/// Blobs kept in the database (`blob_bodies`, migration 0022), so every node on one database
/// serves every upload and capture. Ingest stages in a local directory while hashing, as
/// [`FsBlobs`] does, then writes the bytes in one statement; a read streams the range in
/// 1 MiB chunks through a bounded pipe, so a large read never sits whole in memory.
#[derive(Clone)]
pub struct DbBlobs {
    store: nexus_store::Store,
    /// Where ingest stages (`<staging>/tmp/`).
    staging: FsBlobs,
}

impl DbBlobs {
    /// Blobs in `store`, staged under `staging_dir`.
    pub fn new(store: nexus_store::Store, staging_dir: impl Into<PathBuf>) -> Self {
        Self {
            store,
            staging: FsBlobs::new(staging_dir),
        }
    }
}

impl std::fmt::Debug for DbBlobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbBlobs")
            .field("dialect", &self.store.dialect())
            .field("staging", &self.staging.root())
            .finish()
    }
}

fn store_error(e: nexus_store::StoreError) -> io::Error {
    io::Error::other(e)
}

impl Blobs for DbBlobs {
    fn stage(&self) -> BlobFuture<'_, Staging> {
        self.staging.stage()
    }

    fn put<'a>(&'a self, staged: Staged, sha256: &'a str) -> BlobFuture<'a, ()> {
        Box::pin(async move {
            self.staging.path_of(sha256).ok_or_else(bad_key)?;
            let path = staged.path.as_ref().expect("staged bytes have a path until put");
            let bytes = tokio::fs::read(path).await?;
            use nexus_store::prelude::*;
            self.store.put_blob_body(sha256, &bytes).await.map_err(store_error)
            // Dropping `staged` removes the temp file.
        })
    }

    fn open_range<'a>(&'a self, sha256: &'a str, start: u64, len: u64) -> BlobFuture<'a, Option<BlobReader>> {
        Box::pin(async move {
            use nexus_store::prelude::*;
            self.staging.path_of(sha256).ok_or_else(bad_key)?;
            let first_len = len.min(DB_CHUNK);
            let Some(first) = self
                .store
                .blob_body_range(sha256, start, first_len)
                .await
                .map_err(store_error)?
            else {
                return Ok(None);
            };
            let (mut writer, reader) = tokio::io::duplex(DB_CHUNK as usize);
            let store = self.store.clone();
            let sha = sha256.to_string();
            tokio::spawn(async move {
                let (mut chunk, mut asked) = (first, first_len);
                let (mut at, mut left) = (start, len);
                loop {
                    let n = chunk.len() as u64;
                    // Done: the reader left, the blob ended (a short chunk), or the range did.
                    if writer.write_all(&chunk).await.is_err() || n < asked || n >= left {
                        return;
                    }
                    at += n;
                    left -= n;
                    asked = left.min(DB_CHUNK);
                    chunk = match store.blob_body_range(&sha, at, asked).await {
                        Ok(Some(c)) if !c.is_empty() => c,
                        Ok(_) => return,
                        Err(e) => {
                            tracing::warn!(error = %e, sha256 = %sha, "reading a blob from the database failed");
                            return;
                        }
                    };
                }
            });
            Ok(Some(Box::pin(reader) as BlobReader))
        })
    }

    fn delete<'a>(&'a self, sha256: &'a str) -> BlobFuture<'a, ()> {
        Box::pin(async move {
            use nexus_store::prelude::*;
            self.store.delete_blob_body(sha256).await.map_err(store_error)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stage_put_read_delete() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = FsBlobs::new(dir.path());
        let mut s = blobs.stage().await.unwrap();
        s.write(b"hello ").await.unwrap();
        s.write(b"world").await.unwrap();
        let staged = s.finish().await.unwrap();
        assert_eq!(staged.byte_size, 11);
        let sha = staged.sha256.clone();
        assert_eq!(sha, hex::encode(Sha256::digest(b"hello world")));
        blobs.put(staged, &sha).await.unwrap();
        assert!(blobs.path_of(&sha).unwrap().exists());
        // The temp directory holds nothing after the rename.
        assert_eq!(std::fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);

        let mut r = blobs.open_range(&sha, 6, 5).await.unwrap().unwrap();
        let mut out = String::new();
        r.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "world");

        blobs.delete(&sha).await.unwrap();
        blobs.delete(&sha).await.unwrap();
        assert!(blobs.open_range(&sha, 0, 1).await.unwrap().is_none());
        assert!(blobs.path_of("../etc").is_none());
    }

    /// The database store on every engine: staged, put, read in ranges across its chunks,
    /// deleted.
    #[tokio::test]
    async fn database_blobs_stage_put_read_delete() {
        for ts in nexus_store::testing::engines().await {
            let dir = tempfile::tempdir().unwrap();
            let blobs = DbBlobs::new(ts.store.clone(), dir.path());
            let body: Vec<u8> = (0..(DB_CHUNK as usize * 2 + 10)).map(|i| (i % 251) as u8).collect();
            let mut s = blobs.stage().await.unwrap();
            s.write(&body).await.unwrap();
            let staged = s.finish().await.unwrap();
            let sha = staged.sha256.clone();
            blobs.put(staged, &sha).await.unwrap();
            let read = |start: u64, len: u64| {
                let blobs = blobs.clone();
                let sha = sha.clone();
                async move {
                    let mut r = blobs.open_range(&sha, start, len).await.unwrap().unwrap();
                    let mut out = Vec::new();
                    r.read_to_end(&mut out).await.unwrap();
                    out
                }
            };
            assert_eq!(read(0, body.len() as u64).await, body, "{}", ts.dialect);
            assert_eq!(read(5, 7).await, body[5..12]);
            let from = DB_CHUNK - 3;
            assert_eq!(
                read(from, DB_CHUNK + 6).await,
                body[from as usize..(2 * DB_CHUNK + 3) as usize]
            );
            assert_eq!(read(2 * DB_CHUNK, 100).await, body[2 * DB_CHUNK as usize..]);
            // Nothing staged is left behind.
            assert_eq!(std::fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
            blobs.delete(&sha).await.unwrap();
            blobs.delete(&sha).await.unwrap();
            assert!(blobs.open_range(&sha, 0, 1).await.unwrap().is_none());
            assert!(blobs.open_range("../etc", 0, 1).await.is_err());
        }
    }

    #[tokio::test]
    async fn a_dropped_staging_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = FsBlobs::new(dir.path());
        let mut s = blobs.stage().await.unwrap();
        s.write(b"partial").await.unwrap();
        drop(s);
        assert_eq!(std::fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }
}
