//! `memory_write` (`nexus.memory.write`, kernel-tools.md §8): creates or replaces a document,
//! last-writer-wins; the result states the path and the byte count.

use nexus_store::{MemoryPut, NewMemoryDoc, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use crate::error::KernelResult;
use crate::memory::{self, Owners, arg};

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners, now: i64) -> KernelResult<KernelToolOutcome> {
    let (path, owner) = arg!(memory::doc_path(input, owners));
    arg!(memory::refuse_reserved(&path));
    let content = arg!(memory::str_arg(input, "content", true)).unwrap_or_default();
    arg!(memory::check_body(&path.full, content));
    // A replace keeps a description the door set.
    let description = tx
        .memory_document(path.scope, owner, &path.full)
        .await?
        .and_then(|d| d.description);
    let new = NewMemoryDoc {
        scope: path.scope,
        owner_id: owner,
        path: path.full.clone(),
        content: content.to_string(),
        description,
        now,
    };
    Ok(match tx.memory_put(new, None, memory::scope_bound(path.scope)).await? {
        MemoryPut::Written { row, created } => KernelToolOutcome::text(format!(
            "{} {} ({} bytes).",
            if created { "Created" } else { "Replaced" },
            path.full,
            row.byte_size
        )),
        MemoryPut::Full { bound } => KernelToolOutcome::error("memory_full", &memory::full_sentence(&path, bound)),
        // No version was expected and writers of the scope are serialized: unreachable.
        MemoryPut::Stale { .. } => KernelToolOutcome::error(
            "internal_error",
            &format!("{:?} changed during the write; write it again", path.full),
        ),
    })
}
