//! Path confinement: every path a tool touches resolves under `root`.
//!
//! A path is first normalized lexically (`.` dropped, `..` popped; a `..` above the root is
//! refused). Then the deepest part of it that exists is canonicalized, which resolves every
//! symbolic link on the way, and must still lie under the canonical root. The rest does not
//! exist yet (a file `write` will create) and so cannot be a link. A dangling link is followed
//! by hand: its target is checked the same way. The tools then open the checked path, never
//! the one they were given, so what was checked is what is opened.

use std::io;
use std::path::{Component, Path, PathBuf};

/// How many dangling links one path may pass through.
const MAX_LINKS: u8 = 40;

/// The canonical folder every path resolves under.
#[derive(Debug, Clone)]
pub struct Root {
    path: PathBuf,
}

/// A path that lies under the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The path to open: its existing part is canonical, the rest does not exist.
    pub real: PathBuf,
    /// The path as the model should see it, relative to the root (`.` for the root).
    pub shown: String,
}

/// Why a path is refused.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// No path was given.
    #[error("the path is empty")]
    Empty,
    /// The path has a NUL byte.
    #[error("the path {0:?} contains a NUL byte")]
    Nul(String),
    /// A relative path climbs above the root with `..`.
    #[error("the path {path:?} leaves the root {root} through `..`; paths resolve under the root")]
    Parent {
        /// The path as given.
        path: String,
        /// The root.
        root: String,
    },
    /// An absolute path outside the root.
    #[error("the path {path:?} is outside the root {root}; give a path relative to the root")]
    Outside {
        /// The path as given.
        path: String,
        /// The root.
        root: String,
    },
    /// A symbolic link on the way leads out of the root.
    #[error("the path {path:?} leads through a symbolic link to {target}, outside the root {root}")]
    Link {
        /// The path as given.
        path: String,
        /// Where the link leads.
        target: String,
        /// The root.
        root: String,
    },
    /// Too many dangling links in a row.
    #[error("the path {0:?} passes through too many symbolic links")]
    Loop(String),
    /// The file system refused to answer.
    #[error("the path {path:?}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The I/O error.
        source: io::Error,
    },
}

impl Root {
    /// Canonicalizes `path`, which must be an existing folder.
    pub fn new(path: &Path) -> io::Result<Root> {
        let path = std::fs::canonicalize(path)
            .map_err(|e| io::Error::new(e.kind(), format!("root {}: {e}", path.display())))?;
        if !path.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("root {} is not a folder", path.display()),
            ));
        }
        Ok(Root { path })
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Resolves `input` (relative to the root, or absolute) to a path under the root.
    pub fn resolve(&self, input: &str) -> Result<Resolved, PathError> {
        if input.is_empty() {
            return Err(PathError::Empty);
        }
        if input.contains('\0') {
            return Err(PathError::Nul(input.to_owned()));
        }
        let given = Path::new(input);
        if given.is_absolute() {
            let lexical = normalize_absolute(given);
            let real = self.confine(input, &lexical, MAX_LINKS).map_err(|e| match e {
                // Not under the root at all (rather than through a link): say so plainly.
                PathError::Link { .. } if !lexical.starts_with(&self.path) => self.outside(input),
                other => other,
            })?;
            let shown = match real.strip_prefix(&self.path) {
                Ok(rel) => display(rel),
                Err(_) => return Err(self.outside(input)),
            };
            return Ok(Resolved { real, shown });
        }
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for component in given.components() {
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(PathError::Parent {
                            path: input.to_owned(),
                            root: self.path.display().to_string(),
                        });
                    }
                }
                Component::Normal(part) => parts.push(part),
                Component::RootDir | Component::Prefix(_) => return Err(self.outside(input)),
            }
        }
        let relative: PathBuf = parts.iter().collect();
        let real = self.confine(input, &self.path.join(&relative), MAX_LINKS)?;
        Ok(Resolved {
            real,
            shown: display(&relative),
        })
    }

    /// The relative form of a path found under the root (by a walk), for output.
    pub fn show(&self, real: &Path) -> String {
        match real.strip_prefix(&self.path) {
            Ok(rel) => display(rel),
            Err(_) => real.display().to_string(),
        }
    }

    fn outside(&self, input: &str) -> PathError {
        PathError::Outside {
            path: input.to_owned(),
            root: self.path.display().to_string(),
        }
    }

    /// Checks the absolute, lexically normal `path`; returns the path to open.
    fn confine(&self, input: &str, path: &Path, links: u8) -> Result<PathBuf, PathError> {
        let io_error = |source| PathError::Io {
            path: input.to_owned(),
            source,
        };
        // The deepest ancestor that exists as an entry (a dangling link counts).
        let mut existing = path.to_path_buf();
        let mut missing: Vec<std::ffi::OsString> = Vec::new();
        loop {
            match std::fs::symlink_metadata(&existing) {
                Ok(_) => break,
                Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                    match (existing.file_name(), existing.parent()) {
                        (Some(name), Some(parent)) => {
                            missing.push(name.to_owned());
                            existing = parent.to_path_buf();
                        }
                        _ => return Err(io_error(e)),
                    }
                }
                Err(e) => return Err(io_error(e)),
            }
        }
        let rest: PathBuf = missing.iter().rev().collect();
        match std::fs::canonicalize(&existing) {
            Ok(real) => {
                if !real.starts_with(&self.path) {
                    return Err(PathError::Link {
                        path: input.to_owned(),
                        target: real.display().to_string(),
                        root: self.path.display().to_string(),
                    });
                }
                Ok(if rest.as_os_str().is_empty() {
                    real
                } else {
                    real.join(rest)
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // `existing` is a dangling link (its parent resolved, or symlink_metadata
                // would have failed): follow it by hand and check where it leads.
                if links == 0 {
                    return Err(PathError::Loop(input.to_owned()));
                }
                let target = std::fs::read_link(&existing).map_err(io_error)?;
                let parent = existing.parent().unwrap_or(Path::new("/"));
                let next = normalize_absolute(&parent.join(target)).join(rest);
                self.confine(input, &next, links - 1)
            }
            Err(e) => Err(io_error(e)),
        }
    }
}

/// `.` dropped and `..` popped, for an absolute path (`/..` stays `/`).
fn normalize_absolute(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A relative path with `/` separators, `.` when empty.
fn display(relative: &Path) -> String {
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// A root folder and, beside it, an `outside` folder holding a secret.
    struct Fixture {
        _dir: tempfile::TempDir,
        root: Root,
        outside: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("root/src")).unwrap();
        std::fs::write(base.join("root/src/lib.rs"), "fn main() {}\n").unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret"), "s3cret\n").unwrap();
        Fixture {
            root: Root::new(&base.join("root")).unwrap(),
            outside: base.join("outside"),
            _dir: dir,
        }
    }

    #[track_caller]
    fn refused(root: &Root, input: &str) -> String {
        match root.resolve(input) {
            Ok(r) => panic!("{input:?} was accepted as {r:?}"),
            Err(e) => {
                let message = e.to_string();
                assert!(
                    message.contains(&format!("{input:?}")),
                    "{message} does not name {input:?}"
                );
                message
            }
        }
    }

    #[test]
    fn relative_paths_inside_resolve_and_show_normalized() {
        let f = fixture();
        let r = f.root.resolve("./src/../src/lib.rs").unwrap();
        assert_eq!(r.shown, "src/lib.rs");
        assert_eq!(r.real, f.root.path().join("src/lib.rs"));
        assert_eq!(f.root.resolve(".").unwrap().shown, ".");
        let new = f.root.resolve("a/b/new.txt").unwrap();
        assert_eq!(new.real, f.root.path().join("a/b/new.txt"));
    }

    #[test]
    fn parent_escapes_are_refused() {
        let f = fixture();
        assert!(refused(&f.root, "..").contains("leaves the root"));
        assert!(refused(&f.root, "../outside/secret").contains("leaves the root"));
        assert!(refused(&f.root, "src/../../outside/secret").contains("leaves the root"));
        assert!(refused(&f.root, "src/../..").contains("leaves the root"));
    }

    #[test]
    fn absolute_paths_outside_are_refused_and_inside_are_accepted() {
        let f = fixture();
        let secret = f.outside.join("secret").display().to_string();
        assert!(refused(&f.root, &secret).contains("outside the root"));
        assert!(refused(&f.root, "/etc/passwd").contains("outside the root"));
        // A lexical `..` in an absolute path that starts inside still ends outside.
        let sneaky = format!("{}/../outside/secret", f.root.path().display());
        assert!(refused(&f.root, &sneaky).contains("outside the root"));
        let inside = f.root.path().join("src/lib.rs").display().to_string();
        assert_eq!(f.root.resolve(&inside).unwrap().shown, "src/lib.rs");
    }

    #[test]
    fn a_symlinked_folder_leading_out_is_refused() {
        let f = fixture();
        symlink(&f.outside, f.root.path().join("out")).unwrap();
        assert!(refused(&f.root, "out").contains("symbolic link"));
        assert!(refused(&f.root, "out/secret").contains("symbolic link"));
    }

    #[test]
    fn a_symlinked_file_leading_out_is_refused() {
        let f = fixture();
        symlink(f.outside.join("secret"), f.root.path().join("secret")).unwrap();
        assert!(refused(&f.root, "secret").contains("symbolic link"));
    }

    #[test]
    fn a_symlink_to_a_parent_is_refused() {
        let f = fixture();
        symlink("..", f.root.path().join("up")).unwrap();
        symlink("../..", f.root.path().join("src/up2")).unwrap();
        assert!(refused(&f.root, "up").contains("symbolic link"));
        assert!(refused(&f.root, "up/outside/secret").contains("symbolic link"));
        assert!(refused(&f.root, "src/up2/outside/secret").contains("symbolic link"));
    }

    #[test]
    fn a_missing_nested_path_under_a_symlink_out_is_refused() {
        let f = fixture();
        symlink(&f.outside, f.root.path().join("out")).unwrap();
        assert!(refused(&f.root, "out/new/deeper/file.txt").contains("symbolic link"));
    }

    #[test]
    fn a_dangling_symlink_leading_out_is_refused() {
        let f = fixture();
        symlink(f.outside.join("not-yet"), f.root.path().join("dangling")).unwrap();
        symlink("../nowhere/new", f.root.path().join("dangling-rel")).unwrap();
        assert!(refused(&f.root, "dangling").contains("symbolic link"));
        assert!(refused(&f.root, "dangling/x").contains("symbolic link"));
        assert!(refused(&f.root, "dangling-rel").contains("symbolic link"));
    }

    #[test]
    fn symlinks_that_stay_inside_are_followed() {
        let f = fixture();
        symlink("src", f.root.path().join("source")).unwrap();
        symlink("src/not-yet.rs", f.root.path().join("later")).unwrap();
        let r = f.root.resolve("source/lib.rs").unwrap();
        assert_eq!(r.real, f.root.path().join("src/lib.rs"));
        assert_eq!(r.shown, "source/lib.rs");
        // A dangling link inside resolves to its target, which is then created there.
        assert_eq!(
            f.root.resolve("later").unwrap().real,
            f.root.path().join("src/not-yet.rs")
        );
    }

    #[test]
    fn a_symlink_loop_is_an_error_not_a_hang() {
        let f = fixture();
        symlink("b", f.root.path().join("a")).unwrap();
        symlink("a", f.root.path().join("b")).unwrap();
        assert!(f.root.resolve("a").is_err());
    }

    #[test]
    fn empty_and_nul_paths_are_refused() {
        let f = fixture();
        assert!(matches!(f.root.resolve(""), Err(PathError::Empty)));
        assert!(matches!(f.root.resolve("a\0b"), Err(PathError::Nul(_))));
    }

    #[test]
    fn the_root_must_be_an_existing_folder() {
        let f = fixture();
        assert!(Root::new(&f.root.path().join("missing")).is_err());
        assert!(Root::new(&f.root.path().join("src/lib.rs")).is_err());
    }
}
