//! The sealed-entries cache ([`SealedCache`]): the neutral entries of the rounds this process
//! sealed last, with the provider's mark of the encode that sealed them, held by the kernel's
//! state; `request.rs` keeps and takes them.

use std::collections::VecDeque;
use std::sync::Arc;

use nexus_providers::{ChainMark, Continues, Entry};

/// How many sealed rounds' entries one process keeps.
const SEALED_CACHE_ROUNDS: usize = 16;

/// A sealed round's entries, and the mark its provider gave the encode of exactly these
/// entries ([`nexus_providers::EncodedRequest::chain`]): a continuation that starts with them
/// says so to the provider ([`nexus_providers::Continues`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SealedEntries {
    pub entries: Vec<Entry>,
    pub mark: Option<ChainMark>,
    /// Where the round's stored record and body can be extended (`None`: read from the store).
    pub anchor: Option<SealedAnchor>,
}

/// What a later round's seal stores its record and body against (migration 0020): the sealed
/// request's id and the length of its record up to the end of its last entry, and its body
/// (digest and bytes, to find how much of it the next body keeps).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SealedAnchor {
    pub sealed_id: i64,
    pub record_prefix: usize,
    pub body_sha256: String,
    pub body: Arc<Vec<u8>>,
    /// The stored record's and body's delta depths, when the seal that stored them told
    /// (`None`: the next seal's store reads them).
    pub record_depth: Option<i64>,
    pub body_depth: Option<i64>,
}

impl SealedEntries {
    /// The word that a request starting with these entries continues their encode.
    pub fn continued(&self) -> Option<Continues> {
        self.mark.map(|mark| Continues {
            mark,
            entries: self.entries.len(),
        })
    }
}

/// The neutral entries of the rounds this process sealed last, by (task id, generation). A
/// sealed record is written once and never changed, so a hit is exactly what parsing the
/// stored record gives; a miss (another node sealed it, a restart, eviction) reads the store.
#[derive(Debug, Default)]
pub(crate) struct SealedCache {
    rounds: VecDeque<((i64, i64), SealedEntries)>,
}

impl SealedCache {
    /// Keeps the entries of a committed seal (evicting the oldest beyond the bound).
    pub fn put(&mut self, key: (i64, i64), entries: SealedEntries) {
        self.rounds.retain(|(k, _)| *k != key);
        if self.rounds.len() >= SEALED_CACHE_ROUNDS {
            self.rounds.pop_front();
        }
        self.rounds.push_back((key, entries));
    }

    /// Removes and returns the entries of (task id, generation), if kept.
    pub fn take(&mut self, key: (i64, i64)) -> Option<SealedEntries> {
        let i = self.rounds.iter().position(|(k, _)| *k == key)?;
        self.rounds.remove(i).map(|(_, entries)| entries)
    }
}
