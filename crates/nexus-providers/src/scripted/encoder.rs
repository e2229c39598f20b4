//! The canonical body and its SHA-256, reusing the previous round's work.
//!
//! The kernel builds each round's request from the previous round's entries plus that round's
//! (assistant, results) entries, and the canonical body begins with `entries`. So the body of
//! round `n + 1` starts with the bytes of round `n`'s entries. A [`Slot`] keeps, for one chain:
//!
//! - a copy of the entries it has encoded, to prove that a new request's entries extend them;
//! - their canonical bytes (`{"entries":[e0,…,en`) and the SHA-256 state after those bytes;
//! - the last `tools` and `tools_deferred` arrays and their canonical bytes.
//!
//! Encoding a request then costs a comparison of its entries with the slot's (no
//! serialization), the canonical bytes of the new entries only, a copy of the kept bytes, and
//! the members after `entries`. The result is byte-identical to encoding from scratch: equal
//! entries (`PartialEq`, which compares every string, flag, id and `native` value) have equal
//! canonical bytes, the SHA-256 of a concatenation can be continued from the state after its
//! prefix, and equal `tools` values have equal canonical bytes (JCS sorts members, and
//! `serde_json` numbers that compare equal print alike).
//!
//! A request that extends no slot (a chain's first round, a branch, a request after an
//! edited history, the first after a restart) is encoded from scratch into a new slot. At most
//! [`MAX_SLOTS`] slots holding at most [`MAX_KEPT_BYTES`] of entries are kept; the least
//! recently used go first. A slot is used by one encode at a time (it is taken out of the
//! cache meanwhile), so concurrent encodes never share one.

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical;
use crate::neutral::{Entry, ModelRequest};
use crate::slots::{Kept, Slots};

/// How many chains' prefixes are kept.
pub(crate) const MAX_SLOTS: usize = 8;

/// The most entry bytes kept over all slots (a slot holds about as much again in its copy of
/// the entries).
pub(crate) const MAX_KEPT_BYTES: usize = 32 << 20;

/// The JSON nesting below which `serde_json` surely decodes a value inside a request body (its
/// recursion limit is 128; a request adds at most 3 levels above a value).
const SAFE_DEPTH: usize = 100;

/// One encoded body.
#[derive(Debug)]
pub(crate) struct Encoded {
    /// The canonical bytes of the request.
    pub body: Vec<u8>,
    /// Their SHA-256.
    pub sha256: [u8; 32],
    /// Whether `body` surely decodes (no value nested deeper than [`SAFE_DEPTH`]).
    pub decodable: bool,
    /// Where the `tools` array sits in `body` (the last member: just before the closing `}`).
    pub tools: std::ops::Range<usize>,
}

/// The entries already encoded for one chain, and the bytes and hash state after them.
struct Slot {
    entries: Vec<Entry>,
    /// `{"entries":[` and the entries, comma-separated (no closing bracket).
    bytes: Vec<u8>,
    /// The SHA-256 state after `bytes`.
    hasher: Sha256,
    /// Whether some entry's `native` value is nested deeper than [`SAFE_DEPTH`].
    deep: bool,
    /// The last `tools` and `tools_deferred` (`None` before the first request).
    tools: Option<(Vec<Value>, Vec<Value>)>,
    /// Their canonical bytes.
    tools_bytes: Vec<u8>,
    /// Whether they nest deeper than [`SAFE_DEPTH`].
    tools_deep: bool,
}

impl Slot {
    fn new() -> Self {
        let bytes = canonical::open_entries(Vec::with_capacity(4096));
        let mut hasher = Sha256::new();
        hasher.update(&bytes);
        Self {
            entries: Vec::new(),
            bytes,
            hasher,
            deep: false,
            tools: None,
            tools_bytes: Vec::new(),
            tools_deep: false,
        }
    }

    /// Whether `entries` starts with this slot's entries. The last entry is compared first,
    /// as it is the one most likely to differ.
    fn is_prefix_of(&self, entries: &[Entry]) -> bool {
        let n = self.entries.len();
        n <= entries.len() && (n == 0 || self.entries[n - 1] == entries[n - 1]) && self.entries[..] == entries[..n]
    }

    /// Appends `entries` (which follow the slot's own).
    fn extend(&mut self, entries: &[Entry]) -> Result<(), serde_json::Error> {
        if self.entries.is_empty() {
            // A new slot is about to be extended round after round: leave room for a few.
            self.entries.reserve_exact(entries.len() + entries.len() / 4 + 16);
        } else {
            self.entries.reserve(entries.len());
        }
        for entry in entries {
            let start = self.bytes.len();
            canonical::push_entry(&mut self.bytes, self.entries.is_empty(), entry)?;
            self.hasher.update(&self.bytes[start..]);
            if let Entry::Assistant { native: Some(v), .. } = entry {
                self.deep |= deeper_than(v, SAFE_DEPTH);
            }
            self.entries.push(entry.clone());
        }
        Ok(())
    }

    /// Makes `tools_bytes` those of `req`'s tools (and deferred tools), reusing them when
    /// both equal the last ones.
    fn set_tools(&mut self, req: &ModelRequest) -> Result<(), serde_json::Error> {
        let same = self
            .tools
            .as_ref()
            .is_some_and(|(t, d)| *t == req.tools && *d == req.tools_deferred);
        if !same {
            self.tools_bytes = canonical::tools_member(req)?;
            self.tools_deep = req
                .tools
                .iter()
                .chain(&req.tools_deferred)
                .any(|t| deeper_than(t, SAFE_DEPTH));
            self.tools = Some((req.tools.clone(), req.tools_deferred.clone()));
        }
        Ok(())
    }
}

/// The prefix cache of one `Scripted` (see the module docs).
pub(crate) struct Encoder {
    slots: Slots<Slot>,
}

impl Default for Encoder {
    fn default() -> Self {
        Self {
            slots: Slots::new(MAX_SLOTS, MAX_KEPT_BYTES),
        }
    }
}

impl Kept for Slot {
    fn entries(&self) -> usize {
        self.entries.len()
    }

    fn bytes(&self) -> usize {
        self.bytes.len()
    }
}

impl fmt::Debug for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoder").field("slots", &self.slots.len()).finish()
    }
}

impl Encoder {
    /// The canonical body of `req` and its SHA-256.
    pub(crate) fn encode(&self, req: &ModelRequest) -> Result<Encoded, serde_json::Error> {
        let mut slot = self
            .slots
            .take(|s| s.is_prefix_of(&req.entries))
            .unwrap_or_else(Slot::new);
        let done = slot.entries.len();
        slot.extend(&req.entries[done..])?;
        slot.set_tools(req)?;
        let mut body = Vec::with_capacity(slot.bytes.len() + slot.tools_bytes.len() + 256);
        body.extend_from_slice(&slot.bytes);
        let tail = body.len();
        canonical::close(&mut body, req, &slot.tools_bytes);
        let mut hasher = slot.hasher.clone();
        hasher.update(&body[tail..]);
        let tools_end = body.len() - 1;
        let encoded = Encoded {
            sha256: hasher.finalize().into(),
            decodable: !slot.deep && !slot.tools_deep,
            tools: tools_end - slot.tools_bytes.len()..tools_end,
            body,
        };
        // Freeing a long history's copy is not done under the lock.
        drop(self.slots.keep(slot));
        Ok(encoded)
    }
}

/// Whether `value` nests arrays and objects more than `limit` deep (recursing at most `limit`
/// levels).
fn deeper_than(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(|v| deeper_than(v, limit - 1)),
        Value::Object(members) => limit == 0 || members.values().any(|v| deeper_than(v, limit - 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::neutral::RequestOptions;

    fn req(entries: Vec<Entry>) -> ModelRequest {
        ModelRequest {
            provider: "scripted".into(),
            model: "m".into(),
            system: vec!["s".into()],
            entries,
            tools_deferred: vec![],
            tools: vec![json!({"name":"t","b":[1,2.5]})],
            options: RequestOptions::default(),
        }
    }

    fn check(encoder: &Encoder, r: &ModelRequest) {
        let e = encoder.encode(r).unwrap();
        assert_eq!(e.body, serde_jcs::to_vec(r).unwrap());
        assert_eq!(e.sha256, <[u8; 32]>::from(Sha256::digest(&e.body)));
    }

    #[test]
    fn growing_branching_and_shrinking_histories() {
        let encoder = Encoder::default();
        let mut entries = vec![];
        for i in 0..30 {
            check(&encoder, &req(entries.clone()));
            entries.push(Entry::user_text(format!("u{i}")));
        }
        assert_eq!(encoder.slots.len(), 1, "one chain, one slot");
        // A branch from the middle, then both alternately.
        let mut branch = entries[..10].to_vec();
        for i in 0..5 {
            branch.push(Entry::user_text(format!("b{i}")));
            entries.push(Entry::user_text(format!("m{i}")));
            check(&encoder, &req(branch.clone()));
            check(&encoder, &req(entries.clone()));
        }
        assert_eq!(encoder.slots.len(), 2);
        // Shorter, edited, other tools.
        check(&encoder, &req(entries[..3].to_vec()));
        let mut edited = entries.clone();
        edited[0] = Entry::user_text("changed");
        check(&encoder, &req(edited));
        let mut tools = req(entries.clone());
        tools.tools = vec![json!({"b":[1,2.5],"name":"t"})];
        check(&encoder, &tools);
        tools.tools = vec![json!({"name":"t","b":[1,2.6]})];
        check(&encoder, &tools);
        tools.tools_deferred = vec![json!({"name":"d","a":true})];
        check(&encoder, &tools);
        tools.tools_deferred.clear();
        check(&encoder, &tools);
        // Many chains: bounded.
        for i in 0..20 {
            check(&encoder, &req(vec![Entry::user_text(format!("chain {i}"))]));
        }
        assert_eq!(encoder.slots.len(), MAX_SLOTS);
    }

    #[test]
    fn kept_bytes_are_bounded() {
        let encoder = Encoder::default();
        let big = || {
            let mut slot = Slot::new();
            slot.bytes.resize(MAX_KEPT_BYTES / 2 + 1, b' ');
            slot
        };
        assert!(encoder.slots.keep(big()).is_empty());
        let evicted = encoder.slots.keep(big());
        assert_eq!(evicted.len(), 1, "the older one goes");
        assert_eq!(encoder.slots.len(), 1);
    }

    #[test]
    fn depth() {
        let mut v = json!(1);
        for _ in 0..5 {
            v = json!([v]);
        }
        assert!(deeper_than(&v, 4));
        assert!(!deeper_than(&v, 5));
        assert!(!deeper_than(&json!({"a":"b"}), 1));
        assert!(deeper_than(&json!({"a":{}}), 1));
    }

    /// A value too deep for `serde_json` to decode is encoded, and flagged.
    #[test]
    fn deep_values_are_flagged() {
        let mut v = json!(null);
        for _ in 0..150 {
            v = json!([v]);
        }
        let encoder = Encoder::default();
        let mut r = req(vec![Entry::Assistant {
            text: None,
            tool_calls: vec![],
            native: Some(v.clone()),
        }]);
        let e = encoder.encode(&r).unwrap();
        assert!(!e.decodable);
        assert!(ModelRequest::from_json_bytes(&e.body).is_err());
        r.entries.clear();
        assert!(encoder.encode(&r).unwrap().decodable);
        r.tools = vec![v];
        assert!(!encoder.encode(&r).unwrap().decodable);
    }
}
