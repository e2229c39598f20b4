//! The body of a Messages request (providers.md §5.1), and the cache that makes a round's
//! encode cost little more than its own new entries.
//!
//! **Member order**: `model`, `max_tokens`, `tools` (omitted when empty), `system` (omitted
//! when no part is left), `messages`, `thinking` (only for a `reasoning_effort`, see
//! [`thinking_budget`]), `stream`. No `tool_choice` is sent: the neutral request has nothing
//! for it, and the default (`auto`) is what the kernel wants.
//!
//! **Breakpoints** (`prompt_caching`): the last non-deferred tool (`tools.rs`), the last system
//! block, and the last block of the final user message: three, under the limit of four.
//!
//! **The cache.** A run's round `n + 1` sends round `n`'s entries plus its own, after the same
//! `model`, `max_tokens`, `tools` and `system` (the [`Head`]). A [`Slot`] keeps, for one chain:
//! the head, the entries already written, the bytes of their messages up to the last message
//! that was open (every earlier message is closed: later entries cannot change it), and the
//! SHA-256 state after the head and those bytes. A request whose head is the same bytes and
//! whose entries extend a slot's resumes from there. It costs a comparison of the entries
//! (equal values with members in the same order, so the same bytes), the messages of the new
//! entries (written apart, then kept when closed), one copy of everything into a body
//! allocated at its final size, and the hash of the bytes after the kept ones. The breakpoint
//! of the final user message goes into the body only, so kept bytes never hold it; when it
//! falls inside them (an assistant message ends the list) the body is hashed whole. The kept
//! messages inline uploads: a slot is used only when every upload it inlined is still readable
//! with the same size (uploads are immutable, so the same id has the same bytes).
//!
//! Comparing the entries grows with the history. A request that comes with the caller's word
//! that it continues the slot's last encode ([`Continues`]: its first `entries` entries are
//! that encode's, of which the slot's entries are a prefix) skips it: the slot is found by its
//! mark and checked in constant time (entry count, last kept entry, head, uploads). Debug
//! builds compare anyway and assert the word was true.
//!
//! At most [`MAX_SLOTS`] slots holding at most [`MAX_KEPT_BYTES`] are kept, least recently used
//! evicted first; a slot is taken out while one encode uses it.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::json::{CACHE_CONTROL_MEMBER, blank, same, write_str};
use super::messages::Writer;
use super::tools::{Mode, ToolsCache};
use crate::config::InstanceConfig;
use crate::neutral::{Entry, ModelRequest};
use crate::provider::{BlobReader, ChainMark, Continues, ProviderError};
use crate::slots::{Kept, Slots};

/// How many chains are kept.
const MAX_SLOTS: usize = 8;

/// The most bytes kept over all slots.
const MAX_KEPT_BYTES: usize = 32 << 20;

/// The thinking budget of `reasoning_effort`: `low` 2,048 tokens, `medium` 8,192, `high`
/// 32,768, or a number of tokens given as digits; at most `max_tokens - 1` (the budget must be
/// below `max_tokens`). `None` (no `thinking` member) for no effort, any other word (`none`,
/// `minimal`, …) or a budget below the provider's minimum of 1,024.
pub(crate) fn thinking_budget(effort: Option<&str>, max_tokens: u32) -> Option<u32> {
    let wanted = match effort?.trim() {
        "low" => 2_048,
        "medium" => 8_192,
        "high" => 32_768,
        digits => digits.parse::<u32>().ok()?,
    };
    Some(wanted.min(max_tokens.saturating_sub(1))).filter(|b| *b >= 1_024)
}

/// The members before `messages`: `pre` (`{"model":…,"max_tokens":…` and `,"tools":`), the
/// tools bytes (shared with the tools cache), `post` (`system` and `,"messages":[`).
#[derive(Clone)]
struct Head {
    pre: Vec<u8>,
    tools: Arc<[u8]>,
    post: Vec<u8>,
}

impl Head {
    /// Where the tools array sits in a body that starts with this head.
    fn tools_range(&self) -> Option<std::ops::Range<usize>> {
        (!self.tools.is_empty()).then(|| self.pre.len()..self.pre.len() + self.tools.len())
    }

    fn new(req: &ModelRequest, max_tokens: u32, tools: Arc<[u8]>, caching: bool) -> Self {
        let mut pre = Vec::with_capacity(64 + req.model.len());
        pre.extend_from_slice(br#"{"model":"#);
        write_str(&mut pre, &req.model);
        pre.extend_from_slice(br#","max_tokens":"#);
        pre.extend_from_slice(max_tokens.to_string().as_bytes());
        if !tools.is_empty() {
            pre.extend_from_slice(br#","tools":"#);
        }
        let mut post = Vec::with_capacity(64 + req.system.iter().map(String::len).sum::<usize>());
        system(&mut post, &req.system, caching);
        post.extend_from_slice(br#","messages":["#);
        Self { pre, tools, post }
    }

    fn len(&self) -> usize {
        self.pre.len() + self.tools.len() + self.post.len()
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.pre);
        out.extend_from_slice(&self.tools);
        out.extend_from_slice(&self.post);
    }

    /// The same bytes (the tools compared by identity first: the cache hands out one copy).
    fn same(&self, other: &Head) -> bool {
        self.pre == other.pre
            && self.post == other.post
            && (Arc::ptr_eq(&self.tools, &other.tools) || self.tools == other.tools)
    }
}

/// The entries written into a slot's bytes, and what resuming after them needs.
struct Slot {
    head: Head,
    /// The entries whose messages are in `messages`.
    entries: Vec<Entry>,
    /// Their messages (all closed), as written after the head.
    messages: Vec<u8>,
    /// The SHA-256 state after the head and `messages`.
    hasher: Sha256,
    /// The end of the last user block in `messages`.
    user_block_end: Option<usize>,
    /// The uploads inlined in `messages`, with their sizes.
    uploads: Vec<(Uuid, usize)>,
    /// The mark of the encode that last used it.
    mark: ChainMark,
}

impl Slot {
    fn new(head: Head) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(&head.pre);
        hasher.update(&head.tools);
        hasher.update(&head.post);
        Self {
            head,
            entries: Vec::new(),
            messages: Vec::new(),
            hasher,
            user_block_end: None,
            uploads: Vec::new(),
            mark: ChainMark::fresh(),
        }
    }

    fn kept_bytes(&self) -> usize {
        self.head.len() + self.messages.len()
    }

    /// Whether a request with `head` and `entries` can resume from this slot.
    fn fits(&self, head: &Head, entries: &[Entry], blobs: &dyn BlobReader) -> bool {
        self.fits_head(head, entries, blobs) && self.entries.iter().zip(entries).all(|(a, b)| same_entry(a, b))
    }

    /// Whether a request with `head` and `entries` can resume from this slot, given that its
    /// first `prior` entries are those of the slot's last encode (the caller's word, which
    /// stands for the comparison of the earlier entries).
    fn continues(&self, head: &Head, entries: &[Entry], blobs: &dyn BlobReader, prior: usize) -> bool {
        let fits = self.entries.len() <= prior && self.fits_head(head, entries, blobs);
        debug_assert!(
            !fits || self.fits(head, entries, blobs),
            "a request said to continue an encode whose entries it does not start with"
        );
        fits
    }

    /// The checks of [`Slot::fits`] that do not grow with the history.
    fn fits_head(&self, head: &Head, entries: &[Entry], blobs: &dyn BlobReader) -> bool {
        let n = self.entries.len();
        n <= entries.len()
            && (n == 0 || same_entry(&self.entries[n - 1], &entries[n - 1]))
            && self.head.same(head)
            && self
                .uploads
                .iter()
                .all(|(id, len)| blobs.bytes(*id).map(<[u8]>::len) == Some(*len))
    }

    /// Appends the messages now closed (`closed`, written after `entries`), and what follows
    /// from them.
    fn extend(&mut self, closed: &[u8], entries: &[Entry], user_block_end: Option<usize>, uploads: &[(Uuid, usize)]) {
        if self.messages.is_empty() {
            // A new slot is about to be extended round after round: leave room for a few.
            self.messages.reserve_exact(closed.len() + closed.len() / 4 + 4096);
            self.entries.reserve_exact(entries.len() + entries.len() / 4 + 16);
        }
        self.hasher.update(closed);
        self.messages.extend_from_slice(closed);
        self.entries.extend(entries.iter().cloned());
        self.user_block_end = user_block_end;
        self.uploads.extend_from_slice(uploads);
    }
}

impl Kept for Slot {
    fn entries(&self) -> usize {
        self.entries.len()
    }

    fn bytes(&self) -> usize {
        self.kept_bytes()
    }

    fn mark(&self) -> Option<ChainMark> {
        Some(self.mark)
    }
}

/// Whether two entries give the same bytes (`native` compared with member order).
fn same_entry(a: &Entry, b: &Entry) -> bool {
    match (a, b) {
        (
            Entry::Assistant {
                text: ta,
                tool_calls: ca,
                native: na,
            },
            Entry::Assistant {
                text: tb,
                tool_calls: cb,
                native: nb,
            },
        ) => {
            ta == tb
                && ca == cb
                && match (na, nb) {
                    (Some(x), Some(y)) => same(x, y),
                    (x, y) => x.is_none() && y.is_none(),
                }
        }
        _ => a == b,
    }
}

/// The encoder of one adapter: the tools cache and the chains' slots.
pub(crate) struct Encoder {
    tools: ToolsCache,
    slots: Slots<Slot>,
}

impl Default for Encoder {
    fn default() -> Self {
        Self {
            tools: ToolsCache::default(),
            slots: Slots::new(MAX_SLOTS, MAX_KEPT_BYTES),
        }
    }
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("tools", &self.tools)
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl Encoder {
    /// The body of `req` under `config`, and its SHA-256. With `prior`, the slot of that
    /// encode is tried first, without comparing the earlier entries.
    pub(crate) fn body(
        &self,
        req: &ModelRequest,
        blobs: &dyn BlobReader,
        config: &InstanceConfig,
        prior: Option<Continues>,
    ) -> Result<crate::provider::BodyParts, ProviderError> {
        // The model's capabilities matter only for a default budget or tool search.
        let caps = (req.options.max_output_tokens.is_none() || config.server_tool_search)
            .then(|| config.capabilities(&req.model));
        let max_tokens = match (req.options.max_output_tokens, &caps) {
            (Some(n), _) => n,
            (None, caps) => caps.as_ref().map_or(0, |c| c.max_output_tokens),
        };
        let mode = Mode {
            caching: config.prompt_caching,
            search: config.server_tool_search && caps.as_ref().is_some_and(|c| c.native_tool_search),
        };
        let tools = self.tools.get(&req.tools, &req.tools_deferred, mode)?;
        let head = Head::new(req, max_tokens, tools, config.prompt_caching);
        let continued = prior.filter(|p| p.entries <= req.entries.len()).and_then(|p| {
            self.slots
                .take_marked(p.mark, |s| s.continues(&head, &req.entries, blobs, p.entries))
        });
        let mut slot = match continued.or_else(|| self.slots.take(|s| s.fits(&head, &req.entries, blobs))) {
            Some(slot) => slot,
            None => Slot::new(head),
        };

        // The new entries' messages, in message coordinates (after the kept ones).
        let done = slot.entries.len();
        let base = slot.messages.len();
        let mut fresh = Vec::with_capacity(4096);
        let mut writer = Writer::new(&mut fresh, base, blobs, base > 0, slot.user_block_end);
        for (i, entry) in req.entries.iter().enumerate().skip(done) {
            writer.entry(i, entry)?;
        }
        writer.finish();
        let (user_block_end, opened, uploads) = (writer.last_user_block_end, writer.opened, writer.uploads);
        // Keep the messages now closed: all but the last one.
        let mut open_from = 0;
        if let Some(mark) = opened {
            open_from = mark.pos - base;
            let entries = &req.entries[done..mark.entry];
            slot.extend(
                &fresh[..open_from],
                entries,
                mark.user_block_end,
                &uploads[..mark.uploads],
            );
        }
        let (kept, open) = (&slot.messages[..], &fresh[open_from..]);

        let marker = user_block_end.filter(|_| config.prompt_caching).map(|end| end - 1);
        let thinking = thinking_budget(req.options.reasoning_effort.as_deref(), max_tokens);
        let mut body = Vec::with_capacity(slot.head.len() + kept.len() + open.len() + 128);
        let tools_at = slot.head.tools_range();
        slot.head.write(&mut body);
        // The final user message's last block, before its closing brace.
        match marker {
            Some(m) if m < kept.len() => {
                body.extend_from_slice(&kept[..m]);
                body.extend_from_slice(CACHE_CONTROL_MEMBER);
                body.extend_from_slice(&kept[m..]);
                body.extend_from_slice(open);
            }
            Some(m) => {
                body.extend_from_slice(kept);
                body.extend_from_slice(&open[..m - kept.len()]);
                body.extend_from_slice(CACHE_CONTROL_MEMBER);
                body.extend_from_slice(&open[m - kept.len()..]);
            }
            None => {
                body.extend_from_slice(kept);
                body.extend_from_slice(open);
            }
        }
        body.push(b']');
        if let Some(budget) = thinking {
            body.extend_from_slice(br#","thinking":{"type":"enabled","budget_tokens":"#);
            body.extend_from_slice(budget.to_string().as_bytes());
            body.push(b'}');
        }
        body.extend_from_slice(if config.streams() {
            br#","stream":true}"#
        } else {
            br#","stream":false}"#
        });

        let hashed = slot.head.len() + kept.len();
        let sha = if marker.is_some_and(|m| m < kept.len()) {
            Sha256::digest(&body).into()
        } else {
            let mut hasher = slot.hasher.clone();
            hasher.update(&body[hashed..]);
            hasher.finalize().into()
        };
        slot.mark = ChainMark::fresh();
        let mark = slot.mark;
        // Freeing a long history is not done under the lock.
        drop(self.slots.keep(slot));
        Ok((body, sha, tools_at, Some(mark)))
    }

    #[cfg(test)]
    fn slot_count(&self) -> usize {
        self.slots.len()
    }
}

/// `,"system":[…]`: a text block per non-blank part, the last with a breakpoint when caching;
/// nothing when no part is left.
fn system(out: &mut Vec<u8>, parts: &[String], caching: bool) {
    let parts: Vec<&String> = parts.iter().filter(|p| !blank(p)).collect();
    if parts.is_empty() {
        return;
    }
    out.extend_from_slice(br#","system":["#);
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"type":"text","text":"#);
        write_str(out, part);
        if caching && i + 1 == parts.len() {
            out.extend_from_slice(CACHE_CONTROL_MEMBER);
        }
        out.push(b'}');
    }
    out.push(b']');
}

#[cfg(test)]
mod tests;
