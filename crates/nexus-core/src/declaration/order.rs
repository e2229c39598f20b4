//! Canonical order and the size bound (declarations.md §6).

use serde_json::Value;

use super::entry::duplicate_name_of;
use super::error::{DeclError, DeclErrorKind};
use crate::{bounds, jcs};

/// Sorts entries by callable (shape 5: its duplicate-check name) in byte order, ties broken by
/// canonical JSON. Stable, and independent of the input order.
pub fn sort(entries: &mut Vec<Value>) {
    let mut keyed: Vec<(String, Value)> = entries
        .drain(..)
        .map(|v| (duplicate_name_of(&v).map(|n| n.into_owned()).unwrap_or_default(), v))
        .collect();
    keyed.sort_by(|a, b| {
        a.0.as_bytes()
            .cmp(b.0.as_bytes())
            .then_with(|| jcs::to_string(&a.1).cmp(&jcs::to_string(&b.1)))
    });
    entries.extend(keyed.into_iter().map(|(_, v)| v));
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
                let digits = if i == 0 { 1 } else { i.unsigned_abs().ilog10() as usize + 1 };
                digits + usize::from(i < 0)
            }
            _ => jcs::len(value),
        },
        Value::String(s) => string_len(s),
        Value::Array(a) => 2 + a.len().saturating_sub(1) + a.iter().map(canonical_len).sum::<usize>(),
        Value::Object(m) => {
            2 + m.len().saturating_sub(1)
                + m.iter().map(|(k, v)| string_len(k) + 1 + canonical_len(v)).sum::<usize>()
        }
    }
}

fn string_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}
