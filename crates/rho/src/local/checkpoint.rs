//! The workspace state before a mutating call: git HEAD and `git status` inside a work
//! tree; otherwise a tree hash over the root's files.
//!
//! The tree hash is `sha256:<hex>` of the sorted relative paths, sizes and modification times
//! (nanoseconds) of at most [`MAX_ENTRIES`] files (the same walk as `glob`: ignored files and
//! `.git` skipped, links not followed). A hash describes its tree completely, so `dirty` is
//! `false`. A root in a repository without commits has no HEAD and gets the tree hash too.

use std::path::Path;
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use super::Checkpoint;
use super::env::{git, in_work_tree};
use super::glob::walk;

/// The most files the tree hash covers; past it, the hash also says it stopped.
pub const MAX_ENTRIES: usize = 100_000;

/// The root's checkpoint, or `None` when the root cannot be read at all.
pub fn checkpoint(root: &Path) -> Option<Checkpoint> {
    // A `.git` entry in the root or above is what makes a work tree; looking for it costs a
    // few `stat`s, while asking `git` costs a process (milliseconds) before every call.
    if has_git_marker(root)
        && in_work_tree(root)
        && let Some(head) = git(root, &["rev-parse", "--verify", "-q", "HEAD"])
    {
        // Only the served root counts: pathspec `.` is relative to `-C root`.
        let status = git(root, &["status", "--porcelain", "--", "."])?;
        return Some(Checkpoint {
            hash: head,
            dirty: !status.is_empty(),
        });
    }
    tree_hash(root).map(|hash| Checkpoint { hash, dirty: false })
}

/// Whether `root` or one of its ancestors holds a `.git` entry (a folder, or the file a
/// linked work tree or submodule has).
fn has_git_marker(root: &Path) -> bool {
    root.ancestors().any(|dir| dir.join(".git").symlink_metadata().is_ok())
}

/// `sha256:<hex>` over the root's files.
pub fn tree_hash(root: &Path) -> Option<String> {
    std::fs::metadata(root).ok()?;
    let mut entries: Vec<(String, u64, u128)> = Vec::new();
    let mut complete = true;
    for entry in walk(root) {
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            continue;
        }
        if entries.len() == MAX_ENTRIES {
            complete = false;
            break;
        }
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
        entries.push((relative.to_string_lossy().into_owned(), meta.len(), modified));
    }
    entries.sort();
    let mut hasher = Sha256::new();
    for (path, size, modified) in &entries {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(size.to_be_bytes());
        hasher.update(modified.to_be_bytes());
    }
    if !complete {
        hasher.update(b"\0truncated");
    }
    Some(format!("sha256:{}", hex::encode(hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::tests::TestRoot;

    #[test]
    fn outside_git_the_tree_hash_follows_the_files() {
        let t = TestRoot::new();
        t.file("a.txt", "1");
        let first = checkpoint(t.root.path()).unwrap();
        assert!(first.hash.starts_with("sha256:") && first.hash.len() == 7 + 64);
        assert!(!first.dirty);
        assert_eq!(
            checkpoint(t.root.path()).unwrap(),
            first,
            "stable while nothing changes"
        );
        t.file("a.txt", "22");
        let second = checkpoint(t.root.path()).unwrap();
        assert_ne!(second.hash, first.hash);
        t.file("b/c.txt", "");
        assert_ne!(checkpoint(t.root.path()).unwrap().hash, second.hash);
    }

    #[test]
    fn inside_git_head_and_dirtiness() {
        let t = TestRoot::new();
        t.git_init();
        t.file("a.txt", "1");
        // No commit yet: the tree hash.
        assert!(checkpoint(t.root.path()).unwrap().hash.starts_with("sha256:"));
        let head = t.git_commit();
        assert_eq!(
            checkpoint(t.root.path()).unwrap(),
            Checkpoint {
                hash: head.clone(),
                dirty: false
            }
        );
        t.file("a.txt", "2");
        assert_eq!(
            checkpoint(t.root.path()).unwrap(),
            Checkpoint {
                hash: head,
                dirty: true
            }
        );
    }

    #[test]
    fn a_root_below_a_repository_gets_its_head() {
        let t = TestRoot::new();
        t.git_init();
        t.file("sub/a.txt", "1");
        let head = t.git_commit();
        let sub = t.root.path().join("sub");
        assert!(has_git_marker(&sub), "the marker is found above the root");
        assert_eq!(checkpoint(&sub).unwrap().hash, head);
    }

    #[test]
    fn a_missing_root_has_no_checkpoint() {
        assert_eq!(checkpoint(Path::new("/definitely/not/here")), None);
    }
}
