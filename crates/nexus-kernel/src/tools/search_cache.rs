//! The kernel's cache of built `tool_search` indexes (kernel-tools.md §11), shared by every
//! clone of a [`Kernel`](crate::Kernel).
//!
//! An index is keyed by the declaring round's frozen context: by its stored digest
//! (`tasks.frozen_digest`, migration 0006: the SHA-256 of the `frozen_context` bytes, written by
//! the same insert and never updated) where the row has one, else by the exact bytes. A hit by
//! digest reads no frozen bytes at all ([`SearchCache::tool_search_declared`] reads the row's
//! head, then the cache; only a miss reads `frozen_context`). A declaration narrowed by `tools`
//! (other bytes, on the child's own row) has another digest and other bytes, so it never reads
//! an index built from a wider one. Continuation rounds copy their chain's frozen context, so a
//! chain shares one index.
//!
//! Rows written before migration 0006 have no digest and take the byte-keyed path: a hit is an
//! equal byte string, compared in full, after a cheap fingerprint (the length and sampled
//! windows) rules most slots out. Each slot also remembers the rows whose bytes were compared
//! equal to it; row ids are never reused and `frozen_context` is written only by the insert, so a
//! later call declared by a remembered row is a hit without the comparison (its bytes' length
//! and fingerprint are still checked).
//!
//! The cache is checked before the frozen context is parsed. The comparison and, on a miss,
//! the read, the parse and the build run outside the lock.
//!
//! Bounded: at most [`MAX_ENTRIES`] indexes, holding at most [`MAX_FROZEN_BYTES`] of frozen
//! context between them (an index's memory is a small multiple of its frozen bytes); the least
//! recently used slot is evicted first, and a frozen context larger than the whole budget is
//! never kept.

use std::future::Future;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use nexus_core::search::SearchIndex;

/// The most indexes kept.
pub const MAX_ENTRIES: usize = 32;
/// The most frozen-context bytes the kept indexes were built from, together.
pub const MAX_FROZEN_BYTES: usize = 16 << 20;

/// The most rows a slot remembers (the oldest is forgotten first).
const ROWS_PER_SLOT: usize = 16;

/// Sampled windows of the fingerprint, and their width in bytes.
const WINDOWS: usize = 64;
const WINDOW: usize = 16;

/// A built index, shared by the calls that hit it.
pub(crate) type Index = Arc<SearchIndex<'static>>;

/// Built `tool_search` indexes by frozen context (see the module docs).
#[derive(Default)]
pub struct SearchCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    slots: Vec<Slot>,
    /// Ticks once per hit or insert; a slot's `used` is the tick of its last one.
    clock: u64,
    /// Sum of the slots' `frozen` lengths.
    bytes: usize,
}

struct Slot {
    frozen: Arc<str>,
    /// The stored digest of `frozen` (`None`: only ever reached by bytes so far).
    digest: Option<Arc<str>>,
    fingerprint: u64,
    index: Index,
    used: u64,
    /// Rows (task ids) whose stored frozen context is `frozen`.
    rows: Vec<i64>,
}

impl Slot {
    fn tag(&mut self, digest: Option<&str>) {
        if self.digest.is_none()
            && let Some(d) = digest
        {
            self.digest = Some(d.into());
        }
    }

    fn remember(&mut self, row: Option<i64>) {
        let Some(row) = row else { return };
        if self.rows.contains(&row) {
            return;
        }
        if self.rows.len() == ROWS_PER_SLOT {
            self.rows.remove(0);
        }
        self.rows.push(row);
    }
}

/// How [`SearchCache::index_of`] found the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// The stored digest: no frozen bytes read, no comparison.
    Digest,
    /// A remembered row: no comparison.
    Row,
    /// Equal bytes, compared in full.
    Bytes,
    /// Built from the bytes (a miss).
    Built,
}

/// The length and `WINDOWS` evenly spaced `WINDOW`-byte windows (the whole text when short).
fn fingerprint(frozen: &str) -> u64 {
    let b = frozen.as_bytes();
    let mut h = DefaultHasher::new();
    h.write_usize(b.len());
    if b.len() <= WINDOWS * WINDOW {
        h.write(b);
    } else {
        let step = (b.len() - WINDOW) / (WINDOWS - 1);
        for k in 0..WINDOWS {
            let at = k * step;
            h.write(&b[at..at + WINDOW]);
        }
    }
    h.finish()
}

impl SearchCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of indexes kept.
    pub fn len(&self) -> usize {
        self.lock().slots.len()
    }

    /// Whether no index is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The index of `frozen`, the stored frozen context of task row `row` (`None`: a row not
    /// to remember), and how it was found. The full comparison and, on a miss, `build` (from
    /// the same bytes) run outside the lock.
    pub(crate) fn index_of(
        &self,
        row: Option<i64>,
        frozen: &str,
        build: impl FnOnce(&str) -> SearchIndex<'static>,
    ) -> (Index, Found) {
        self.index_keyed(row, None, frozen, build)
    }

    /// The index of the frozen context whose stored digest is `digest` (on task row `row`):
    /// from the cache without calling `load` on a hit; on a miss, `load` reads the bytes
    /// (`None`: no frozen context, nothing kept) and the index is built from them and kept
    /// under the digest and the bytes.
    pub(crate) async fn index_by_digest<E, Fut>(
        &self,
        row: i64,
        digest: &str,
        load: impl FnOnce() -> Fut,
        build: impl FnOnce(&str) -> SearchIndex<'static>,
    ) -> Result<Option<(Index, Found)>, E>
    where
        Fut: Future<Output = Result<Option<String>, E>>,
    {
        {
            let mut inner = self.lock();
            inner.clock += 1;
            let now = inner.clock;
            if let Some(slot) = inner.slots.iter_mut().find(|s| s.digest.as_deref() == Some(digest)) {
                slot.used = now;
                slot.remember(Some(row));
                return Ok(Some((slot.index.clone(), Found::Digest)));
            }
        }
        let Some(frozen) = load().await? else {
            return Ok(None);
        };
        Ok(Some(self.index_keyed(Some(row), Some(digest), &frozen, build)))
    }

    /// [`Self::index_of`], tagging the slot with `digest` (the stored digest of `frozen`).
    fn index_keyed(
        &self,
        row: Option<i64>,
        digest: Option<&str>,
        frozen: &str,
        build: impl FnOnce(&str) -> SearchIndex<'static>,
    ) -> (Index, Found) {
        let fp = fingerprint(frozen);
        let same = |s: &Slot| s.fingerprint == fp && s.frozen.len() == frozen.len();
        let candidates: Vec<(Arc<str>, Index)> = {
            let mut inner = self.lock();
            inner.clock += 1;
            let now = inner.clock;
            if let Some(row) = row
                && let Some(slot) = inner.slots.iter_mut().find(|s| s.rows.contains(&row))
            {
                if same(slot) {
                    slot.used = now;
                    slot.tag(digest);
                    return (slot.index.clone(), Found::Row);
                }
                // Cannot happen while rows are immutable; forget the row and compare in full.
                slot.rows.retain(|&r| r != row);
            }
            inner
                .slots
                .iter()
                .filter(|s| same(s))
                .map(|s| (s.frozen.clone(), s.index.clone()))
                .collect()
        };
        if let Some((key, index)) = candidates.into_iter().find(|(k, _)| **k == *frozen) {
            let mut inner = self.lock();
            inner.clock += 1;
            let now = inner.clock;
            if let Some(slot) = inner.slots.iter_mut().find(|s| Arc::ptr_eq(&s.frozen, &key)) {
                slot.used = now;
                slot.tag(digest);
                slot.remember(row);
            }
            return (index, Found::Bytes);
        }
        let index: Index = Arc::new(build(frozen));
        if frozen.len() <= MAX_FROZEN_BYTES {
            self.keep(row, digest, frozen, fp, &index);
        }
        (index, Found::Built)
    }

    /// Keeps a built index (`fp`: the fingerprint of `frozen`), evicting the least recently
    /// used slots past the bounds; a slot another call inserted for the same bytes meanwhile
    /// is tagged and reused instead.
    fn keep(&self, row: Option<i64>, digest: Option<&str>, frozen: &str, fp: u64, index: &Index) {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let same = |s: &Slot| s.fingerprint == fp && s.frozen.len() == frozen.len();
        if let Some(slot) = inner.slots.iter_mut().find(|s| same(s) && *s.frozen == *frozen) {
            slot.used = now;
            slot.tag(digest);
            slot.remember(row);
            return;
        }
        while inner.slots.len() >= MAX_ENTRIES || inner.bytes + frozen.len() > MAX_FROZEN_BYTES {
            let Some(oldest) = inner
                .slots
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.used)
                .map(|(i, _)| i)
            else {
                break;
            };
            let gone = inner.slots.swap_remove(oldest);
            inner.bytes -= gone.frozen.len();
        }
        inner.bytes += frozen.len();
        let mut slot = Slot {
            frozen: frozen.into(),
            digest: digest.map(Arc::from),
            fingerprint: fp,
            index: index.clone(),
            used: now,
            rows: Vec::new(),
        };
        slot.remember(row);
        inner.slots.push(slot);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::KernelToolOutcome;
    use super::super::tool_search::build;
    use super::*;
    use crate::runs::FrozenContext;

    fn function(name: &str, description: &str) -> Value {
        json!({"type":"function","function":{"name":name,"description":description,"parameters":{"type":"object"}}})
    }

    fn frozen(tools: Vec<Value>, skills: Vec<Value>) -> String {
        json!({"prompt": "p", "tool_definitions": tools, "environment": {}, "skills": skills}).to_string()
    }

    fn text(out: &KernelToolOutcome) -> String {
        assert!(!out.is_error, "{out:?}");
        out.content.as_str().unwrap().to_string()
    }

    #[test]
    fn a_narrowed_declaration_never_reads_the_wide_index() {
        let wide = frozen(
            vec![
                function("deploy_prod", "Deploys the service."),
                function("read_file", "Reads a file."),
            ],
            vec![json!({"callable":"deploy_prod","name":"runbook","description":"Deploy steps.","source":"runner"})],
        );
        let narrow = frozen(vec![function("read_file", "Reads a file.")], vec![]);
        let cache = SearchCache::new();
        let q = json!({"query": "deploy"});
        // The parent round (row 1) searches its wide declaration.
        let wide_out = text(&cache.tool_search(&q, Some((1, &wide))));
        assert!(wide_out.contains("deploy_prod"), "{wide_out}");
        assert_eq!(cache.len(), 1);
        // Its child (row 2), narrowed by `tools`: its own index, without the wider entry.
        let narrow_out = text(&cache.tool_search(&q, Some((2, &narrow))));
        assert_eq!(narrow_out, r#"{"tools":[],"truncated":false}"#);
        assert_eq!(cache.len(), 2);
        let exact = text(&cache.tool_search(&json!({"query": "deploy_prod"}), Some((2, &narrow))));
        assert_eq!(exact, r#"{"tools":[],"truncated":false}"#);
        // Even a row id the wide index remembers never lends it to other bytes.
        let reused = text(&cache.tool_search(&q, Some((1, &narrow))));
        assert_eq!(reused, r#"{"tools":[],"truncated":false}"#);
        // And the wide one still answers from its own.
        assert_eq!(text(&cache.tool_search(&q, Some((3, &wide)))), wide_out);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn a_hit_returns_the_bytes_of_a_miss() {
        let tools: Vec<Value> = (0..200)
            .map(|i| function(&format!("tool_{i:03}"), &format!("Handles ledger number {i}.")))
            .collect();
        let f = frozen(tools, vec![]);
        for input in [
            json!({"query": "ledger", "limit": 20}),
            json!({"query": "tool_007"}),
            json!({"query": "number 19"}),
            json!({"query": "zeppelin"}),
            json!({"query": " "}),
        ] {
            let cache = SearchCache::new();
            let miss = cache.tool_search(&input, Some((7, &f)));
            let by_row = cache.tool_search(&input, Some((7, &f)));
            let by_bytes = cache.tool_search(&input, Some((8, &f)));
            assert_eq!(by_row, miss);
            assert_eq!(by_bytes, miss);
            // The handler's answer without the cache (the parsed context, the index built
            // for the call).
            let parsed: FrozenContext = serde_json::from_str(&f).unwrap();
            let direct = super::super::tool_search::run(
                &input,
                &super::super::ToolContext {
                    tool_definitions: &parsed.tool_definitions,
                    environment: &json!({}),
                    skills: &parsed.skills,
                    callable: "tool_search",
                },
            );
            assert_eq!(miss, direct);
        }
        let cache = SearchCache::new();
        assert_eq!(cache.index_of(Some(1), &f, build).1, Found::Built);
        let never = |_: &str| -> SearchIndex<'static> { unreachable!("a hit never builds") };
        assert_eq!(cache.index_of(Some(1), &f, never).1, Found::Row);
        assert_eq!(cache.index_of(Some(2), &f, never).1, Found::Bytes);
        assert_eq!(cache.index_of(Some(2), &f, never).1, Found::Row);
        assert_eq!(cache.index_of(None, &f, never).1, Found::Bytes);
        // Same length, one byte apart in the middle: another slot, even under a known row.
        let mut other = f.clone().into_bytes();
        let mid = other.len() / 2 + 3;
        let at = (mid..other.len()).find(|&i| other[i].is_ascii_digit()).unwrap();
        other[at] = if other[at] == b'9' { b'8' } else { b'9' };
        let other = String::from_utf8(other).unwrap();
        assert_eq!(cache.index_of(Some(3), &other, build).1, Found::Built);
        assert_eq!(cache.len(), 2);
        // No declaring round: nothing to search, nothing kept.
        let none = SearchCache::new();
        assert_eq!(
            text(&none.tool_search(&json!({"query": "ledger"}), None)),
            r#"{"tools":[],"truncated":false}"#
        );
        assert!(none.is_empty());
    }

    /// The stored digest of `frozen`, as the store writes it.
    fn digest(frozen: &str) -> String {
        use sha2::{Digest, Sha256};
        format!("{:x}", Sha256::digest(frozen.as_bytes()))
    }

    #[tokio::test]
    async fn a_digest_hit_reads_no_frozen_bytes_and_a_narrowed_digest_never_shares() {
        let wide = frozen(
            vec![
                function("deploy_prod", "Deploys the service."),
                function("read_file", "Reads a file."),
            ],
            vec![],
        );
        let narrow = frozen(vec![function("read_file", "Reads a file.")], vec![]);
        let (dw, dn) = (digest(&wide), digest(&narrow));
        assert_ne!(dw, dn);
        let reads = std::cell::Cell::new(0);
        let load = |f: &str| {
            reads.set(reads.get() + 1);
            let f = f.to_string();
            async move { Ok::<_, ()>(Some(f)) }
        };
        let never = || async { unreachable!("a hit by digest never reads the frozen context") };
        let cache = SearchCache::new();
        let search = |i: &Index| i.search_text("deploy", 5);

        // The first call of the round reads the bytes once and builds.
        let (i, found) = cache
            .index_by_digest(1, &dw, || load(&wide), build)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found, Found::Built);
        assert!(search(&i).contains("deploy_prod"));
        assert_eq!(reads.get(), 1);
        // Later calls of the round, and of later rounds of its chain (other rows, same bytes):
        // no read at all.
        for row in [1, 2, 3] {
            let (j, found) = cache
                .index_by_digest::<(), _>(row, &dw, never, build)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(found, Found::Digest);
            assert!(Arc::ptr_eq(&i, &j));
        }
        assert_eq!(reads.get(), 1);
        // A narrowed child: another digest, so a read, a build and its own index, even under
        // a row id the wide slot remembers.
        let (n, found) = cache
            .index_by_digest(1, &dn, || load(&narrow), build)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found, Found::Built);
        assert_eq!(reads.get(), 2);
        assert_eq!(search(&n), r#"{"tools":[],"truncated":false}"#);
        assert_eq!(cache.len(), 2);
        let (n2, found) = cache
            .index_by_digest::<(), _>(4, &dn, never, build)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found, Found::Digest);
        assert!(Arc::ptr_eq(&n, &n2));
        // A round with a digest but no frozen context: nothing to search, nothing kept.
        let none = cache
            .index_by_digest(5, &digest("x"), || async { Ok::<_, ()>(None) }, build)
            .await
            .unwrap();
        assert!(none.is_none());
        assert_eq!(cache.len(), 2);
        // A read error is the caller's.
        let err = cache
            .index_by_digest(6, &digest("y"), || async { Err("down") }, build)
            .await;
        assert_eq!(err.err(), Some("down"));

        // A slot first reached by bytes (a row written before migration 0006) is the same
        // index for a later digest miss of equal bytes, which tags it: then hits by digest.
        let old = SearchCache::new();
        let (b, found) = old.index_of(Some(7), &wide, build);
        assert_eq!(found, Found::Built);
        let (d, found) = old
            .index_by_digest(8, &dw, || load(&wide), build)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found, Found::Bytes);
        assert!(Arc::ptr_eq(&b, &d));
        let (_, found) = old
            .index_by_digest::<(), _>(9, &dw, never, build)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found, Found::Digest);
        // And the byte-keyed path still finds a slot built by digest.
        assert_eq!(old.index_of(None, &wide, build).1, Found::Bytes);
        assert_eq!(old.len(), 1);
    }

    #[test]
    fn the_least_recently_used_slot_goes_first() {
        let cache = SearchCache::new();
        let ctx: Vec<String> = (0..=MAX_ENTRIES)
            .map(|i| frozen(vec![function(&format!("t{i}"), "x")], vec![]))
            .collect();
        for c in &ctx[..MAX_ENTRIES] {
            cache.index_of(None, c, build);
        }
        // Touch the first: the second is now the oldest.
        assert_eq!(cache.index_of(None, &ctx[0], build).1, Found::Bytes);
        assert_eq!(cache.index_of(None, &ctx[MAX_ENTRIES], build).1, Found::Built);
        assert_eq!(cache.len(), MAX_ENTRIES);
        assert_eq!(cache.index_of(None, &ctx[0], build).1, Found::Bytes);
        assert_eq!(cache.index_of(None, &ctx[1], build).1, Found::Built);
        // A frozen context over the whole budget is answered but not kept.
        let huge = "p".repeat(MAX_FROZEN_BYTES + 1);
        let empty = |_: &str| SearchIndex::owned(vec![], vec![]);
        assert_eq!(cache.index_of(Some(9), &huge, empty).1, Found::Built);
        assert_eq!(cache.index_of(Some(9), &huge, empty).1, Found::Built);
        assert_eq!(cache.len(), MAX_ENTRIES);
        // A slot remembers its latest rows only.
        let one = SearchCache::new();
        for row in 0..=ROWS_PER_SLOT as i64 {
            one.index_of(Some(row), &ctx[0], build);
        }
        assert_eq!(one.index_of(Some(0), &ctx[0], build).1, Found::Bytes);
        assert_eq!(one.index_of(Some(ROWS_PER_SLOT as i64), &ctx[0], build).1, Found::Row);
    }
}
