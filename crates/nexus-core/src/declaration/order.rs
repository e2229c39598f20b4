//! Canonical order and the size bound (declarations.md §6).

use std::borrow::Cow;

use serde_json::Value;

use super::entry::duplicate_name_of;
use super::error::{DeclError, DeclErrorKind};
use crate::{bounds, jcs};

/// Sorts entries by callable (shape 5: its duplicate-check name) in byte order, ties broken by
/// canonical JSON. Stable, independent of the input order, and done by moving (no copies).
pub fn sort(entries: &mut Vec<Value>) {
    let perm: Vec<usize> = {
        let names: Vec<Cow<'_, str>> = entries
            .iter()
            .map(|v| duplicate_name_of(v).unwrap_or(Cow::Borrowed("")))
            .collect();
        let mut perm: Vec<usize> = (0..entries.len()).collect();
        perm.sort_by(|&a, &b| {
            names[a]
                .as_bytes()
                .cmp(names[b].as_bytes())
                .then_with(|| jcs::to_string(&entries[a]).cmp(&jcs::to_string(&entries[b])))
        });
        perm
    };
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return;
    }
    let mut slots: Vec<Option<Value>> = entries.drain(..).map(Some).collect();
    entries.extend(perm.into_iter().map(|i| slots[i].take().expect("a permutation")));
}

/// Refuses a set whose canonical JSON passes `tool_definitions_bound` (413
/// `content_too_large`).
pub fn check_bound(entries: &[Value], path: &str) -> Result<(), DeclError> {
    let mut len = 2 + entries.len().saturating_sub(1);
    for e in entries {
        len += canonical_len(e);
        if len > bounds::TOOL_DEFINITIONS {
            break;
        }
    }
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
fn needs_escape(bytes: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(LO) & !x & HI;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // Bytes below 0x20 (the high bit of x must be clear for the test to be exact).
        let below = x.wrapping_sub(LO * 0x20) & !x & HI;
        if below | zero_byte(x ^ (LO * b'"' as u64)) | zero_byte(x ^ (LO * b'\\' as u64)) != 0 {
            return true;
        }
    }
    let rest = chunks.remainder();
    if rest.is_empty() {
        return false;
    }
    // Pad the tail with a byte that needs no escape and test it the same way.
    let mut pad = [b'A'; 8];
    pad[..rest.len()].copy_from_slice(rest);
    let x = u64::from_le_bytes(pad);
    let below = x.wrapping_sub(LO * 0x20) & !x & HI;
    below | zero_byte(x ^ (LO * b'"' as u64)) | zero_byte(x ^ (LO * b'\\' as u64)) != 0
}
