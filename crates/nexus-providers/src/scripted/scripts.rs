//! Parsed scripts, cached per file and revalidated on every use.
//!
//! `encode` and `send` each need the script as it is on disk *now* (providers.md §7: a script
//! written or edited after start is used, and a script broken after sealing fails at send).
//! Reading and parsing a long script every time is most of what `scripted` used to cost, so the
//! parsed lines are kept with the file's text and a [`Stamp`] of its metadata, and each use
//! starts with one `stat`:
//!
//! - **Fresh.** The stamp is unchanged *and settled*: the file's newest timestamp (`mtime`, and
//!   on Unix `ctime`) is more than [`SETTLE`] older than the moment the cached text was stamped.
//!   Any later write to the file sets `ctime` (and `mtime`) to the time of that write, which is
//!   after the stamping, so it cannot leave a settled stamp unchanged: the cached lines are
//!   exactly what parsing the file would give.
//! - **Otherwise** the file is read again. Same text → the cached lines are kept (and the new
//!   stamp recorded); other text → it is parsed afresh and replaces the entry. Failures (a
//!   missing, unreadable or malformed script) are never cached, so they are reported exactly as
//!   a plain read-and-parse reports them.
//!
//! The settle window is what makes this safe against the coarse timestamp clock: two writes
//! within one clock tick can share every timestamp (and the length), so a stamp that recent
//! proves nothing and the text is compared instead (the "racy clean" rule of git's index). The
//! stamp is taken *before* the read, so a write racing the read changes the stamp and is caught
//! on the next use. The one thing this cannot see is a write that puts the clock back by more
//! than [`SETTLE`] and restores every stamped field.

use std::collections::HashMap;
use std::fmt;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::script::{ScriptLine, parse_script};
use crate::provider::ProviderError;

/// How much older than its stamping a file's newest timestamp must be for an unchanged stamp
/// to prove unchanged text (covers coarse and 1–2 s filesystem timestamps).
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

/// Past this many cached files, the cache starts over (scripts are few; this bounds memory).
const MAX_FILES: usize = 256;

/// One parsed script: its text (to recognize it when re-read) and its lines by thread.
#[derive(Debug)]
pub(crate) struct Script {
    text: String,
    lines: Vec<ScriptLine>,
    /// Thread name → indices into `lines`, in file order.
    threads: HashMap<String, Vec<usize>>,
}

impl Script {
    fn new(text: String, lines: Vec<ScriptLine>) -> Self {
        let mut threads: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, line) in lines.iter().enumerate() {
            threads.entry(line.thread.clone()).or_default().push(i);
        }
        Self { text, lines, threads }
    }

    /// The `k`-th line (0-based) of `thread`.
    pub(crate) fn line(&self, thread: &str, k: usize) -> Option<&ScriptLine> {
        let i = *self.threads.get(thread)?.get(k)?;
        self.lines.get(i)
    }
}

/// What a `stat` says about a file, compared to tell whether it may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    unix: (u64, u64, i64, i64),
}

impl Stamp {
    fn of(meta: &Metadata) -> Self {
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            unix: {
                use std::os::unix::fs::MetadataExt;
                (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec())
            },
        }
    }

    /// The newest of the file's timestamps; `None` when one is unknown.
    fn newest(&self) -> Option<SystemTime> {
        let modified = self.modified?;
        #[cfg(unix)]
        {
            let (_, _, secs, nanos) = self.unix;
            let changed = SystemTime::UNIX_EPOCH
                .checked_add(Duration::new(u64::try_from(secs).ok()?, u32::try_from(nanos).ok()?))?;
            Some(modified.max(changed))
        }
        #[cfg(not(unix))]
        Some(modified)
    }
}

/// A `stat` taken before a read: what [`Scripts::load`] records with the text it is given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stale {
    stamp: Option<Stamp>,
    at: SystemTime,
}

/// The outcome of [`Scripts::probe`].
pub(crate) enum Probe {
    /// The cached script is the file's current content.
    Fresh(Arc<Script>),
    /// Read the file and pass the result to [`Scripts::load`].
    Stale(Stale),
}

struct Cached {
    stamp: Stamp,
    /// When `stamp` was taken (before the read of `script.text`).
    at: SystemTime,
    script: Arc<Script>,
}

impl Cached {
    /// Whether `stamp`, taken now, proves the file still holds `script.text`.
    fn proves(&self, stamp: &Stamp, settle: Duration) -> bool {
        self.stamp == *stamp
            && self
                .stamp
                .newest()
                .and_then(|newest| self.at.duration_since(newest).ok())
                .is_some_and(|age| age > settle)
    }
}

/// `script_not_found`'s detail: the file, and the folder it was looked for in (absolute, as
/// the server's working directory is not the reader's), where a script is to be written.
pub(crate) fn not_found(path: &Path, file: &str) -> String {
    let mut folder = path;
    for _ in file.split('/') {
        folder = folder.parent().unwrap_or(folder);
    }
    let folder = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
    format!(
        "script_not_found: {file} (looked in {}; write it there, or use scripted/echo)",
        folder.display()
    )
}

/// The cache of parsed scripts, by path.
pub(crate) struct Scripts {
    files: Mutex<HashMap<PathBuf, Cached>>,
    /// [`SETTLE`], except in tests.
    settle: Duration,
}

impl Default for Scripts {
    fn default() -> Self {
        Self::with_settle(SETTLE)
    }
}

impl fmt::Debug for Scripts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files = self.files.lock().map_or(0, |files| files.len());
        f.debug_struct("Scripts").field("files", &files).finish()
    }
}

impl Scripts {
    fn with_settle(settle: Duration) -> Self {
        Self {
            files: Mutex::new(HashMap::new()),
            settle,
        }
    }

    /// Stats `path`: the cached script when that proves it current, else what to read.
    pub(crate) fn probe(&self, path: &Path) -> Probe {
        let at = SystemTime::now();
        let stamp = std::fs::metadata(path).ok().map(|meta| Stamp::of(&meta));
        if let Some(stamp) = &stamp {
            let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(cached) = files.get(path)
                && cached.proves(stamp, self.settle)
            {
                return Probe::Fresh(Arc::clone(&cached.script));
            }
        }
        Probe::Stale(Stale { stamp, at })
    }

    /// The script `read` from `path` after `stale` was probed; `file` names it in errors.
    pub(crate) fn load(
        &self,
        path: &Path,
        file: &str,
        stale: Stale,
        read: std::io::Result<String>,
    ) -> Result<Arc<Script>, ProviderError> {
        let text = match read {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ProviderError::error(not_found(path, file)));
            }
            Err(e) => return Err(ProviderError::error(format!("script_unreadable: {file}: {e}"))),
        };
        {
            let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(cached) = files.get_mut(path)
                && cached.script.text == text
            {
                if let Some(stamp) = stale.stamp {
                    cached.stamp = stamp;
                    cached.at = stale.at;
                }
                return Ok(Arc::clone(&cached.script));
            }
        }
        let lines = parse_script(file, &text)?;
        let script = Arc::new(Script::new(text, lines));
        if let Some(stamp) = stale.stamp {
            let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
            if files.len() >= MAX_FILES && !files.contains_key(path) {
                files.clear();
            }
            files.insert(
                path.to_path_buf(),
                Cached {
                    stamp,
                    at: stale.at,
                    script: Arc::clone(&script),
                },
            );
        }
        Ok(script)
    }

    /// [`Scripts::probe`] then, when needed, a blocking read and [`Scripts::load`].
    pub(crate) fn get(&self, path: &Path, file: &str) -> Result<Arc<Script>, ProviderError> {
        match self.probe(path) {
            Probe::Fresh(script) => Ok(script),
            Probe::Stale(stale) => self.load(path, file, stale, std::fs::read_to_string(path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(script: &Script) -> Vec<Option<String>> {
        script.lines.iter().map(|l| l.text.clone()).collect()
    }

    #[test]
    fn lines_by_thread() {
        let lines = parse_script(
            "s",
            "{\"text\":\"m0\"}\n{\"thread\":\"t\",\"text\":\"t0\"}\n{\"text\":\"m1\"}\n",
        )
        .unwrap();
        let script = Script::new(String::new(), lines);
        assert_eq!(script.line("main", 1).unwrap().text.as_deref(), Some("m1"));
        assert_eq!(script.line("t", 0).unwrap().text.as_deref(), Some("t0"));
        assert!(script.line("t", 1).is_none());
        assert!(script.line("other", 0).is_none());
    }

    /// Same-length rewrites in quick succession (one timestamp tick) are all seen.
    #[test]
    fn rewrites_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let scripts = Scripts::default();
        for i in 0..20 {
            let text = format!("{{\"text\":\"v{:02}\"}}\n", i % 10);
            std::fs::write(&path, &text).unwrap();
            let got = scripts.get(&path, "s.jsonl").unwrap();
            assert_eq!(text_of(&got), vec![Some(format!("v{:02}", i % 10))]);
        }
        // A stamp that is not settled never proves the text.
        assert!(matches!(scripts.probe(&path), Probe::Stale(_)));
    }

    /// A settled file is served without a read; a write after that is seen.
    #[test]
    fn settled_files_are_not_reread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let scripts = Scripts::with_settle(Duration::ZERO);
        std::fs::write(&path, "{\"text\":\"v1\"}\n").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let first = scripts.get(&path, "s.jsonl").unwrap();
        assert!(matches!(scripts.probe(&path), Probe::Fresh(s) if Arc::ptr_eq(&s, &first)));
        std::fs::write(&path, "{\"text\":\"v22\"}\n").unwrap();
        assert!(matches!(scripts.probe(&path), Probe::Stale(_)));
        assert_eq!(
            text_of(&scripts.get(&path, "s.jsonl").unwrap()),
            vec![Some("v22".into())]
        );
    }

    fn secs_since_epoch(t: SystemTime) -> i64 {
        i64::try_from(t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()).unwrap()
    }

    #[test]
    fn settled_stamp_is_trusted_and_any_change_is_not() {
        let now = SystemTime::now();
        let stamp = Stamp {
            len: 10,
            modified: Some(now - Duration::from_secs(10)),
            #[cfg(unix)]
            unix: (1, 2, secs_since_epoch(now - Duration::from_secs(10)), 0),
        };
        let cached = Cached {
            stamp,
            at: now,
            script: Arc::new(Script::new(String::new(), vec![])),
        };
        assert!(cached.proves(&stamp, SETTLE));
        assert!(!cached.proves(&Stamp { len: 11, ..stamp }, SETTLE));
        let touched = Stamp {
            modified: Some(now),
            ..stamp
        };
        assert!(!cached.proves(&touched, SETTLE));
        let recent = Cached {
            stamp,
            at: now - Duration::from_secs(9),
            script: Arc::new(Script::new(String::new(), vec![])),
        };
        assert!(!recent.proves(&stamp, SETTLE), "within the settle window");
    }

    /// The folder named is the scripts folder, even for a script in a subfolder.
    #[test]
    fn not_found_names_the_scripts_folder() {
        let d = not_found(Path::new("/srv/nexus/scripts/team/plan.jsonl"), "team/plan.jsonl");
        assert_eq!(
            d,
            "script_not_found: team/plan.jsonl (looked in /srv/nexus/scripts; write it there, or use scripted/echo)"
        );
    }

    #[test]
    fn failures_are_reported_and_not_cached() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let scripts = Scripts::default();
        assert_eq!(
            scripts.get(&path, "s.jsonl").unwrap_err().detail.unwrap(),
            format!(
                "script_not_found: s.jsonl (looked in {}; write it there, or use scripted/echo)",
                dir.path().display()
            )
        );
        std::fs::write(&path, "{\"text\":\"ok\"}\n").unwrap();
        assert!(scripts.get(&path, "s.jsonl").is_ok());
        std::fs::write(&path, "{\"stop\":\"later\"}\n").unwrap();
        for _ in 0..2 {
            let d = scripts.get(&path, "s.jsonl").unwrap_err().detail.unwrap();
            assert!(d.starts_with("script_malformed: s.jsonl line 1: stop must be"), "{d}");
        }
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        let d = scripts.get(&path, "s.jsonl").unwrap_err().detail.unwrap();
        assert_eq!(d, "script_unreadable: s.jsonl: stream did not contain valid UTF-8");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            scripts.get(&path, "s.jsonl").unwrap_err().detail.unwrap(),
            format!(
                "script_not_found: s.jsonl (looked in {}; write it there, or use scripted/echo)",
                dir.path().display()
            )
        );
    }
}
