//! Canonical order and the size bound (declarations.md §6).

use std::borrow::Cow;

use serde_json::Value;

use super::entry::duplicate_name_of;
use super::error::{DeclError, DeclErrorKind};
use crate::{bounds, jcs};

/// Sorts entries by callable (shape 5: its duplicate-check name) in byte order, ties broken by
/// canonical JSON. Stable, independent of the input order, and done by moving (no copies).
pub fn sort(entries: &mut [Value]) {
    let order: Vec<usize> = {
        let mut keys = sort_keys(entries);
        // Stable: equal names (only in sets that were never validated) keep their input order
        // after the canonical-JSON tie-break. Canonical JSON is built only for such ties.
        keys.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| jcs::to_string(&entries[a.1]).cmp(&jcs::to_string(&entries[b.1])))
        });
        keys.into_iter().map(|(_, i)| i).collect()
    };
    permute(entries, order);
}

/// Every entry's sort name (its duplicate-check name, `""` when it has none) with its index.
fn sort_keys(entries: &[Value]) -> Vec<(Cow<'_, str>, usize)> {
    entries
        .iter()
        .enumerate()
        .map(|(i, v)| (duplicate_name_of(v).unwrap_or(Cow::Borrowed("")), i))
        .collect()
}

/// A duplicate-check name and the input index of its entry.
pub(crate) struct Named<'a> {
    /// The name's first 16 bytes, big-endian, zero-padded. When two prefixes differ they order
    /// the names as their bytes do, so most comparisons of a sort never read the names.
    prefix: u128,
    pub name: Cow<'a, str>,
    pub index: usize,
}

impl<'a> Named<'a> {
    pub fn new(name: Cow<'a, str>, index: usize) -> Self {
        let mut head = [0u8; 16];
        for (slot, &b) in head.iter_mut().zip(name.as_bytes()) {
            *slot = b;
        }
        Self {
            prefix: u128::from_be_bytes(head),
            name,
            index,
        }
    }
}

/// The names of `entries` that have a duplicate-check name, sorted by [`sort_names`]. For a
/// valid set (every entry named, no name twice) the indices are the canonical order (§6),
/// since rendering never changes a name.
pub(crate) fn sorted_names(entries: &[Value]) -> Vec<Named<'_>> {
    let mut names: Vec<Named<'_>> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, v)| duplicate_name_of(v).map(|n| Named::new(n, i)))
        .collect();
    sort_names(&mut names);
    names
}

/// Sorts names in byte order, then by input index.
pub(crate) fn sort_names(names: &mut [Named<'_>]) {
    names.sort_unstable_by(|a, b| {
        a.prefix
            .cmp(&b.prefix)
            .then_with(|| a.name.as_bytes().cmp(b.name.as_bytes()))
            .then(a.index.cmp(&b.index))
    });
}

/// In [`sort_names`] order, the position of the entry that reuses a name and comes first in
/// input order (what a scan in input order with a set of seen names reports first).
pub(crate) fn first_duplicate(sorted: &[Named<'_>]) -> Option<usize> {
    let mut first: Option<usize> = None;
    for k in 1..sorted.len() {
        let (a, b) = (&sorted[k - 1], &sorted[k]);
        if a.prefix == b.prefix && a.name == b.name && first.is_none_or(|f| b.index < sorted[f].index) {
            first = Some(k);
        }
    }
    first
}

/// Reorders `entries` so that position `i` holds the entry that was at `order[i]`, by swapping
/// along the permutation's cycles (no allocation, each entry moved once per cycle step).
pub(crate) fn permute(entries: &mut [Value], mut order: Vec<usize>) {
    debug_assert_eq!(order.len(), entries.len());
    const DONE: usize = usize::MAX;
    for start in 0..order.len() {
        if order[start] == DONE {
            continue;
        }
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = DONE;
            if from == start {
                break;
            }
            entries.swap(at, from);
            at = from;
        }
    }
}

/// Refuses a set whose canonical JSON passes `tool_definitions_bound` (413
/// `content_too_large`).
pub fn check_bound(entries: &[Value], path: &str) -> Result<(), DeclError> {
    let mut len = 0;
    for e in entries {
        len += canonical_len(e);
        if len > bounds::TOOL_DEFINITIONS {
            break;
        }
    }
    check_set_len(len, entries.len(), path)
}

/// [`check_bound`] for a set of `count` entries whose canonical lengths sum to `entries_len`:
/// the array adds its brackets and the commas between entries.
pub(crate) fn check_set_len(entries_len: usize, count: usize, path: &str) -> Result<(), DeclError> {
    let len = 2 + count.saturating_sub(1) + entries_len;
    if len > bounds::TOOL_DEFINITIONS {
        return Err(DeclError::of_kind(
            DeclErrorKind::TooLarge,
            path,
            format!(
                "the declaration's canonical JSON passes {} bytes",
                bounds::TOOL_DEFINITIONS
            ),
            None,
        ));
    }
    Ok(())
}

/// The byte length of `value`'s canonical JSON (RFC 8785) without building it. Member order
/// does not change the length, so only escapes and number forms need care.
pub fn canonical_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => match n.as_i64() {
            Some(i) if i.unsigned_abs() < (1u64 << 53) => {
                let digits = if i == 0 {
                    1
                } else {
                    i.unsigned_abs().ilog10() as usize + 1
                };
                digits + usize::from(i < 0)
            }
            _ => jcs::len(value),
        },
        Value::String(s) => string_len(s),
        Value::Array(a) => 2 + a.len().saturating_sub(1) + a.iter().map(canonical_len).sum::<usize>(),
        Value::Object(m) => {
            2 + m.len().saturating_sub(1)
                + m.iter()
                    .map(|(k, v)| string_len(k) + 1 + canonical_len(v))
                    .sum::<usize>()
        }
    }
}

fn string_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    if !needs_escape(bytes) {
        return 2 + bytes.len();
    }
    2 + bytes
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// Whether any byte is a control character, `"` or `\`, eight bytes at a time.
#[inline]
fn needs_escape(bytes: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    #[inline]
    fn escapes(x: u64) -> bool {
        let zero_byte = |x: u64| x.wrapping_sub(LO) & !x & HI;
        // Bytes below 0x20 (the high bit of x must be clear for the test to be exact).
        let below = x.wrapping_sub(LO * 0x20) & !x & HI;
        below | zero_byte(x ^ (LO * b'"' as u64)) | zero_byte(x ^ (LO * b'\\' as u64)) != 0
    }
    let n = bytes.len();
    if n < 8 {
        return bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
    }
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("eight bytes"));
    let mut i = 0;
    while i + 8 <= n {
        if escapes(word(i)) {
            return true;
        }
        i += 8;
    }
    // The tail: the last eight bytes, overlapping bytes already tested.
    i < n && escapes(word(n - 8))
}
