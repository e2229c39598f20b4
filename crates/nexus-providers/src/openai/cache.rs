//! Reusing earlier encodes: a round costs its new messages, not the whole body again.
//!
//! A run offers the same (frozen) tools list every round and each round's request extends the
//! previous round's entries. Two caches follow from that:
//!
//! - **Tools lists.** The `,"tools":[…]` bytes of the last [`MAX_TOOL_LISTS`] lists, each kept
//!   with a copy of its `Value`s. A request's `tools` hit an entry when they are *identical*
//!   to the copy ([`identical`]): the same members in the same order, the same strings, and
//!   numbers of the same kind and bits. That is stricter than `Value`'s `==` (which ignores
//!   member order and says `0.0 == -0.0`), and it is exactly what the bytes depend on, so a hit
//!   gives the bytes a fresh serialization would. Comparing costs a walk of the values, with no
//!   allocation and no hashing; the list is not re-validated or re-serialized.
//! - **Chains.** A [`Slot`] holds a body up to the end of its last message (the head, the
//!   system message and one message per entry), the SHA-256 state after it, and what it was
//!   made from: the model, the tools entry (by pointer: the slot holds it, so it stays alive),
//!   the system parts and a copy of the entries. A request that has the same model, tools and
//!   system and whose entries start with the slot's reuses it: its new entries are appended,
//!   the tail is written after a copy of the bytes, and the hash continues from the kept
//!   state. Each message depends only on its entry and the bytes of the uploads it inlines,
//!   so equal entries give equal messages; the upload bytes are immutable per upload id
//!   (uploads.md), and a slot also records each inlined upload's length and is reused only
//!   while the blob reader still has those uploads at those lengths.
//!
//!   Comparing the entries with the slot's copy grows with the history. A request that comes
//!   with the caller's word that it continues the slot's last encode ([`Continues`]: its first
//!   `entries` entries are that encode's, which the slot's copy is a prefix of) skips that
//!   comparison: the slot is found by its mark and checked in constant time (its entry count,
//!   its last entry, model, tools, system, inlined uploads). Debug builds compare anyway and
//!   assert the word was true.
//!
//! At most [`MAX_SLOTS`] slots holding at most [`MAX_KEPT_BYTES`] are kept, least recently
//! used first out. A slot is taken out of the cache while it is extended, so concurrent
//! encodes never share one; a failed encode drops its slot.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

use super::encode::{self, Inlined, Layout};
use crate::neutral::{Entry, ModelRequest};
use crate::provider::{BlobReader, ChainMark, Continues, ProviderError};
use crate::slots::{Kept, Slots};

/// How many distinct tools lists are kept.
pub(crate) const MAX_TOOL_LISTS: usize = 8;
/// How many chains' bodies are kept (runs in flight on one instance, each with its own chain).
pub(crate) const MAX_SLOTS: usize = 32;
/// The most body bytes kept over all slots.
pub(crate) const MAX_KEPT_BYTES: usize = 32 << 20;

/// One tools list and its bytes.
struct Tools {
    values: Vec<Value>,
    fragment: Vec<u8>,
}

/// One chain's body so far (see the module docs).
struct Slot {
    model: String,
    tools: Arc<Tools>,
    system: Vec<String>,
    entries: Vec<Entry>,
    inlined: Inlined,
    /// The head and the messages, without the closing `]`.
    bytes: Vec<u8>,
    /// Whether a message has been written (the next one needs a comma).
    any: bool,
    /// The SHA-256 state after `bytes`.
    hasher: Sha256,
    /// Where the tools array sits in `bytes` (`None` without tools).
    tools_at: Option<std::ops::Range<usize>>,
    /// The mark of the encode that last extended it.
    mark: ChainMark,
}

impl Slot {
    fn new(layout: &Layout, req: &ModelRequest, tools: Arc<Tools>) -> Self {
        let mut bytes = Vec::with_capacity(tools.fragment.len() + 8192);
        let mut tools_at = None;
        let any = encode::open(
            &mut bytes,
            layout,
            &req.model,
            &tools.fragment,
            &req.system,
            &mut tools_at,
        );
        let mut hasher = Sha256::new();
        hasher.update(&bytes);
        Self {
            model: req.model.clone(),
            tools,
            system: req.system.clone(),
            entries: Vec::new(),
            inlined: Vec::new(),
            bytes,
            any,
            hasher,
            tools_at,
            mark: ChainMark::fresh(),
        }
    }

    /// Whether `req` (whose tools are `tools`) extends this slot.
    fn fits(&self, req: &ModelRequest, tools: &Arc<Tools>, blobs: &dyn BlobReader) -> bool {
        let n = self.entries.len();
        self.fits_head(req, tools, blobs, n) && self.entries[..] == req.entries[..n]
    }

    /// Whether `req` extends this slot, given that its first `prior` entries are those of the
    /// slot's last encode (the caller's word): everything [`Slot::fits`] checks but the
    /// comparison of the earlier entries, which the word stands for.
    fn continues(&self, req: &ModelRequest, tools: &Arc<Tools>, blobs: &dyn BlobReader, prior: usize) -> bool {
        let fits = self.entries.len() <= prior && self.fits_head(req, tools, blobs, self.entries.len());
        debug_assert!(
            !fits || self.fits(req, tools, blobs),
            "a request said to continue an encode whose entries it does not start with"
        );
        fits
    }

    /// The checks of [`Slot::fits`] that do not grow with the history, for `n` kept entries.
    fn fits_head(&self, req: &ModelRequest, tools: &Arc<Tools>, blobs: &dyn BlobReader, n: usize) -> bool {
        Arc::ptr_eq(&self.tools, tools)
            && n <= req.entries.len()
            && self.model == req.model
            && self.system == req.system
            && (n == 0 || self.entries[n - 1] == req.entries[n - 1])
            && self
                .inlined
                .iter()
                .all(|(upload, len)| blobs.bytes(*upload).map(<[u8]>::len) == Some(*len))
    }

    fn extend(&mut self, entries: &[Entry], blobs: &dyn BlobReader) -> Result<(), ProviderError> {
        self.entries.reserve(entries.len());
        for entry in entries {
            let start = self.bytes.len();
            encode::push_entry(&mut self.bytes, &mut self.any, entry, blobs, &mut self.inlined)?;
            self.hasher.update(&self.bytes[start..]);
            self.entries.push(entry.clone());
        }
        Ok(())
    }
}

impl Kept for Slot {
    fn entries(&self) -> usize {
        self.entries.len()
    }

    fn bytes(&self) -> usize {
        self.bytes.len()
    }

    fn mark(&self) -> Option<ChainMark> {
        Some(self.mark)
    }
}

/// The caches of one adapter.
pub(crate) struct Cache {
    /// Least recently used first.
    tools: Mutex<Vec<Arc<Tools>>>,
    slots: Slots<Slot>,
}

impl Default for Cache {
    fn default() -> Self {
        Self {
            tools: Mutex::new(Vec::new()),
            slots: Slots::new(MAX_SLOTS, MAX_KEPT_BYTES),
        }
    }
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools = self.tools.lock().map_or(0, |t| t.len());
        f.debug_struct("Cache")
            .field("tool_lists", &tools)
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl Cache {
    /// The body of `req` and its SHA-256: byte for byte what an uncached encode gives. With
    /// `prior`, the slot of that encode is tried first, without comparing the earlier entries.
    pub fn encode(
        &self,
        layout: &Layout,
        req: &ModelRequest,
        blobs: &dyn BlobReader,
        prior: Option<Continues>,
    ) -> Result<crate::provider::BodyParts, ProviderError> {
        let tools = self.tools(&req.tools)?;
        let mut slot = prior
            .filter(|p| p.entries <= req.entries.len())
            .and_then(|p| {
                self.slots
                    .take_marked(p.mark, |s| s.continues(req, &tools, blobs, p.entries))
            })
            .or_else(|| self.slots.take(|s| s.fits(req, &tools, blobs)))
            .unwrap_or_else(|| Slot::new(layout, req, tools));
        let done = slot.entries.len();
        slot.extend(&req.entries[done..], blobs)?;
        let mut body = Vec::with_capacity(slot.bytes.len() + 160);
        body.extend_from_slice(&slot.bytes);
        let tail = body.len();
        encode::close(&mut body, layout, &req.options);
        let mut hasher = slot.hasher.clone();
        hasher.update(&body[tail..]);
        let sha = hasher.finalize().into();
        let tools_at = slot.tools_at.clone();
        slot.mark = ChainMark::fresh();
        let mark = slot.mark;
        // Freeing a long history is not done under the lock.
        drop(self.slots.keep(slot));
        Ok((body, sha, tools_at, Some(mark)))
    }

    /// The tools entry for `tools`: a kept one identical to it, or a new one (validated and
    /// serialized once).
    fn tools(&self, tools: &[Value]) -> Result<Arc<Tools>, ProviderError> {
        // The comparisons run outside the lock, over a snapshot of the (few) entries.
        let kept: Vec<Arc<Tools>> = self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let hit = kept.into_iter().rev().find(|t| identical_lists(&t.values, tools));
        let entry = match hit {
            Some(entry) => entry,
            None => Arc::new(Tools {
                fragment: encode::tools_fragment(tools)?,
                values: tools.to_vec(),
            }),
        };
        let mut lists = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        lists.retain(|t| !Arc::ptr_eq(t, &entry));
        lists.push(entry.clone());
        let excess = lists.len().saturating_sub(MAX_TOOL_LISTS);
        lists.drain(..excess);
        Ok(entry)
    }
}

fn identical_lists(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| identical(x, y))
}

/// Whether `a` and `b` serialize to the same bytes: equal as `Value`s *and* with members in
/// the same order and numbers of the same kind (a float compared by its bits).
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => identical_numbers(x, y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => identical_lists(x, y),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
        }
        _ => false,
    }
}

fn identical_numbers(x: &Number, y: &Number) -> bool {
    if x.is_f64() || y.is_f64() {
        x.is_f64() && y.is_f64() && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
    } else {
        x == y
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;
    use uuid::Uuid;

    use super::*;
    use crate::config::{InstanceConfig, Kind};
    use crate::neutral::{Part, RawToolCall, RequestOptions};

    fn layout() -> Layout {
        Layout::of(&InstanceConfig::of(Kind::Openai))
    }

    fn tool(name: &str) -> Value {
        json!({"type":"function","function":{"name":name,"description":"d","parameters":{"type":"object","properties":{}},"strict":false}})
    }

    fn req(entries: Vec<Entry>) -> ModelRequest {
        ModelRequest {
            provider: "o".into(),
            model: "m".into(),
            system: vec!["s".into()],
            entries,
            tools: vec![tool("a"), tool("b")],
            tools_deferred: vec![],
            options: RequestOptions {
                max_output_tokens: Some(10),
                reasoning_effort: None,
            },
        }
    }

    fn round(i: usize) -> [Entry; 2] {
        [
            Entry::Assistant {
                text: Some(format!("r{i}")),
                tool_calls: vec![RawToolCall {
                    id: format!("c{i}"),
                    name: "a".into(),
                    arguments: "{}".into(),
                }],
                native: None,
            },
            Entry::ToolResult {
                call_id: format!("c{i}"),
                name: "a".into(),
                output: format!("out {i}"),
                is_error: false,
            },
        ]
    }

    /// The cached encode equals the uncached one, and its digest is the body's.
    fn check(cache: &Cache, r: &ModelRequest, blobs: &dyn BlobReader) {
        let (body, sha, ..) = cache.encode(&layout(), r, blobs, None).unwrap();
        assert_eq!(
            String::from_utf8(body.clone()).unwrap(),
            String::from_utf8(encode::body(&layout(), r, blobs).unwrap()).unwrap()
        );
        assert_eq!(sha, <[u8; 32]>::from(Sha256::digest(&body)));
    }

    #[test]
    fn growing_branching_and_changing_requests() {
        let cache = Cache::default();
        let mut entries = vec![Entry::user_text("go")];
        for i in 0..20 {
            check(&cache, &req(entries.clone()), &crate::provider::NoBlobs);
            entries.extend(round(i));
        }
        assert_eq!(cache.slots.len(), 1, "one chain, one slot");
        assert_eq!(cache.tools.lock().unwrap().len(), 1);
        let mut branch = entries[..7].to_vec();
        for i in 0..4 {
            branch.push(Entry::user_text(format!("b{i}")));
            entries.push(Entry::user_text(format!("m{i}")));
            check(&cache, &req(branch.clone()), &crate::provider::NoBlobs);
            check(&cache, &req(entries.clone()), &crate::provider::NoBlobs);
        }
        assert_eq!(cache.slots.len(), 2);
        // Shorter, edited, other system, model or options.
        check(&cache, &req(entries[..3].to_vec()), &crate::provider::NoBlobs);
        let mut edited = req(entries.clone());
        edited.entries[0] = Entry::user_text("changed");
        check(&cache, &edited, &crate::provider::NoBlobs);
        edited.system = vec!["other".into()];
        check(&cache, &edited, &crate::provider::NoBlobs);
        edited.model = "n".into();
        check(&cache, &edited, &crate::provider::NoBlobs);
        edited.options.max_output_tokens = None;
        edited.options.reasoning_effort = Some("low".into());
        check(&cache, &edited, &crate::provider::NoBlobs);
        // Tools that are equal as values but not as bytes.
        let mut reordered = req(entries.clone());
        reordered.tools[0] = json!({"function":{"name":"a","description":"d","parameters":{"type":"object","properties":{}},"strict":false},"type":"function"});
        assert_eq!(reordered.tools[0], tool("a"), "equal as values");
        check(&cache, &reordered, &crate::provider::NoBlobs);
        let mut zero = req(entries.clone());
        zero.tools[1]["function"]["parameters"]["minimum"] = json!(0.0);
        check(&cache, &zero, &crate::provider::NoBlobs);
        zero.tools[1]["function"]["parameters"]["minimum"] = json!(-0.0);
        check(&cache, &zero, &crate::provider::NoBlobs);
        zero.tools[1]["function"]["parameters"]["minimum"] = json!(0);
        check(&cache, &zero, &crate::provider::NoBlobs);
        // Many chains: bounded.
        for i in 0..MAX_SLOTS + 5 {
            let mut r = req(vec![Entry::user_text(format!("chain {i}"))]);
            r.tools.push(tool(&format!("t{i}")));
            check(&cache, &r, &crate::provider::NoBlobs);
        }
        assert_eq!(cache.slots.len(), MAX_SLOTS);
        assert_eq!(cache.tools.lock().unwrap().len(), MAX_TOOL_LISTS);
    }

    /// Encodes `r` continuing `prior` and checks it against the uncached encode; its mark.
    fn check_continuing(cache: &Cache, r: &ModelRequest, prior: Option<Continues>) -> ChainMark {
        let blobs = crate::provider::NoBlobs;
        let (body, sha, _, mark) = cache.encode(&layout(), r, &blobs, prior).unwrap();
        assert_eq!(body, encode::body(&layout(), r, &blobs).unwrap());
        assert_eq!(sha, <[u8; 32]>::from(Sha256::digest(&body)));
        mark.expect("a mark")
    }

    #[test]
    fn continuing_by_mark_gives_the_same_bytes() {
        let cache = Cache::default();
        let mut r = req(vec![Entry::user_text("go")]);
        let mut mark = check_continuing(&cache, &r, None);
        for i in 0..10 {
            let prior = Continues {
                mark,
                entries: r.entries.len(),
            };
            r.entries.extend(round(i));
            mark = check_continuing(&cache, &r, Some(prior));
        }
        assert_eq!(cache.slots.len(), 1, "the chain kept one slot");
        let by_mark = || cache.slots.taken_by_mark.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(by_mark(), 10, "every round after the first resumed by its mark");
        // Another request that extends the slot (found by comparison) moves it on: the word for
        // the one before finds no slot by its mark, and comparison encodes it.
        let old = Continues {
            mark,
            entries: r.entries.len(),
        };
        let mut branch = r.clone();
        branch.entries.push(Entry::user_text("branch"));
        check_continuing(&cache, &branch, None);
        let mut next = r.clone();
        next.entries.extend(round(99));
        check_continuing(&cache, &next, Some(old));
        // A word the slot cannot take (another system) is ignored.
        let prior = Continues {
            mark: check_continuing(&cache, &r, None),
            entries: r.entries.len(),
        };
        let mut other = next.clone();
        other.system = vec!["other".into()];
        check_continuing(&cache, &other, Some(prior));
        // A word counting more entries than the request has is ignored.
        let prior = Continues {
            mark: check_continuing(&cache, &next, None),
            entries: next.entries.len() + 1,
        };
        check_continuing(&cache, &next, Some(prior));
        assert_eq!(by_mark(), 10, "no other request resumed by a mark");
    }

    #[test]
    fn a_failed_encode_leaves_no_slot_and_inlined_uploads_are_rechecked() {
        let cache = Cache::default();
        let upload = Uuid::from_u128(7);
        let image = Entry::Attachments {
            parts: vec![Part::Image {
                upload,
                media_type: "image/png".into(),
            }],
        };
        let r = req(vec![Entry::user_text("go"), image]);
        let err = cache
            .encode(&layout(), &r, &crate::provider::NoBlobs, None)
            .unwrap_err();
        assert!(err.detail.unwrap().contains(&upload.to_string()));
        assert!(cache.slots.len() == 0);
        let mut blobs: HashMap<Uuid, Vec<u8>> = HashMap::from([(upload, b"png".to_vec())]);
        check(&cache, &r, &blobs);
        let mut longer = r.clone();
        longer.entries.push(Entry::user_text("more"));
        blobs.insert(upload, b"png, but longer".to_vec());
        check(&cache, &longer, &blobs);
        blobs.clear();
        assert!(
            cache.encode(&layout(), &longer, &blobs, None).is_err(),
            "a vanished upload is noticed"
        );
    }

    #[test]
    fn kept_bytes_are_bounded() {
        let cache = Cache::default();
        let big = || {
            let tools = Arc::new(Tools {
                values: vec![],
                fragment: vec![],
            });
            let mut slot = Slot::new(&layout(), &req(vec![]), tools);
            slot.bytes.resize(MAX_KEPT_BYTES / 2 + 1, b' ');
            slot
        };
        assert!(cache.slots.keep(big()).is_empty());
        assert_eq!(cache.slots.keep(big()).len(), 1, "the older one goes");
    }

    #[test]
    fn identity_is_stricter_than_equality() {
        assert!(identical(
            &json!({"a":1,"b":[1.5,"x",null,true]}),
            &json!({"a":1,"b":[1.5,"x",null,true]})
        ));
        assert!(!identical(&json!({"a":1,"b":2}), &json!({"b":2,"a":1})));
        assert!(!identical(&json!(1), &json!(1.0)));
        assert!(!identical(&json!(0.0), &json!(-0.0)));
        assert!(!identical(&json!([1]), &json!([1, 2])));
        assert!(!identical(&json!({"a":1}), &json!({"a":1,"b":2})));
        assert!(!identical(&json!("1"), &json!(1)));
    }
}
