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

/// Where blobs live. One implementation today ([`FsBlobs`], `storage.blobs.kind = "fs"`).
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
