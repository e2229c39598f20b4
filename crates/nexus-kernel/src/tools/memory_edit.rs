//! `memory_edit` (`nexus.memory.edit`, kernel-tools.md §8): replaces the one occurrence of
//! `old_text` with `new_text` (`memory_edit_no_match`, `memory_edit_ambiguous`); the result
//! states the path and the new byte count.

use nexus_store::{MemoryPut, NewMemoryDoc, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use crate::error::KernelResult;
use crate::memory::{self, Owners, arg};

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners, now: i64) -> KernelResult<KernelToolOutcome> {
    let (path, owner) = arg!(memory::doc_path(input, owners));
    arg!(memory::refuse_reserved(&path));
    let old_text = arg!(memory::str_arg(input, "old_text", true)).unwrap_or_default();
    if old_text.is_empty() {
        return Ok(KernelToolOutcome::error(
            "parameter_invalid",
            &format!(
                "`old_text` for {:?} is empty; pass the exact text to replace",
                path.full
            ),
        ));
    }
    let new_text = arg!(memory::str_arg(input, "new_text", true)).unwrap_or_default();
    let Some(doc) = tx.memory_document(path.scope, owner, &path.full).await? else {
        return Ok(memory::not_found(&path));
    };
    match memory::occurrences(&doc.content, old_text) {
        0 => {
            return Ok(KernelToolOutcome::error(
                "memory_edit_no_match",
                &format!(
                    "`old_text` {:?} does not occur in {:?}; read the document with memory_read and copy the text exactly",
                    memory::head(old_text, 80),
                    path.full
                ),
            ));
        }
        1 => {}
        _ => {
            return Ok(KernelToolOutcome::error(
                "memory_edit_ambiguous",
                &format!(
                    "`old_text` {:?} occurs more than once in {:?}; include more surrounding text so that it occurs exactly once",
                    memory::head(old_text, 80),
                    path.full
                ),
            ));
        }
    }
    let content = doc.content.replacen(old_text, new_text, 1);
    arg!(memory::check_body(&path.full, &content));
    let new = NewMemoryDoc {
        scope: path.scope,
        owner_id: owner,
        path: path.full.clone(),
        content,
        description: doc.description.clone(),
        now,
    };
    Ok(
        match tx
            .memory_put(new, Some(doc.lock_version), memory::scope_bound(path.scope))
            .await?
        {
            MemoryPut::Written { row, .. } => {
                KernelToolOutcome::text(format!("Edited {} ({} bytes).", path.full, row.byte_size))
            }
            MemoryPut::Full { bound } => KernelToolOutcome::error("memory_full", &memory::full_sentence(&path, bound)),
            // Read and write share the transaction and the scope lock: unreachable.
            MemoryPut::Stale { .. } => KernelToolOutcome::error(
                "internal_error",
                &format!("{:?} changed during the edit; read it again and retry", path.full),
            ),
        },
    )
}
