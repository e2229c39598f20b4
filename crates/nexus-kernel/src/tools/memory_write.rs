//! `memory_write` (`nexus.memory.write`, kernel-tools.md §8): creates or replaces a document,
//! last-writer-wins; the result states the path and the byte count.

use nexus_store::{MemoryPut, NewMemoryDoc, Tx};
use serde_json::Value;

use nexus_core::results::ToolWord;

use super::KernelToolOutcome;
use super::params::str_arg;
use crate::error::KernelResult;
use crate::memory::{self, MemPath, Owners, Refusal, arg};

/// `memory_write {path, content}`: a writable document path and a storable body.
#[derive(Debug)]
struct WriteInput {
    path: MemPath,
    owner: i64,
    content: String,
}

impl WriteInput {
    fn parse(input: &Value, owners: &Owners) -> Result<Self, Refusal> {
        let (path, owner) = memory::doc_path(input, owners)?;
        memory::refuse_reserved(&path)?;
        let content = str_arg(input, "content", true).map_err(Box::new)?.unwrap_or_default();
        memory::check_body(&path.full, content)?;
        Ok(Self {
            path,
            owner,
            content: content.to_string(),
        })
    }
}

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners, now: i64) -> KernelResult<KernelToolOutcome> {
    let WriteInput { path, owner, content } = arg!(WriteInput::parse(input, owners));
    // A replace keeps a description the door set.
    let description = tx
        .memory_document(path.scope, owner, &path.full)
        .await?
        .and_then(|d| d.description);
    let new = NewMemoryDoc {
        scope: path.scope,
        owner_id: owner,
        path: path.full.clone(),
        content,
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
        MemoryPut::Full { bound } => {
            KernelToolOutcome::error(ToolWord::MemoryFull, &memory::full_sentence(&path, bound))
        }
        // No version was expected and writers of the scope are serialized: unreachable.
        MemoryPut::Stale { .. } => KernelToolOutcome::error(
            ToolWord::InternalError,
            &format!("{:?} changed during the write; write it again", path.full),
        ),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::memory_scope_tests::{WORKSPACE_ONLY, refusal_word as word};

    #[test]
    fn parse_refuses_in_order() {
        let w = WriteInput::parse(&json!({"path": "workspace/a", "content": "x"}), &WORKSPACE_ONLY).unwrap();
        assert_eq!((w.path.full.as_str(), w.content.as_str()), ("workspace/a", "x"));
        // A missing `content` is refused, not written as an empty document.
        assert_eq!(
            word(WriteInput::parse(&json!({"path": "workspace/a"}), &WORKSPACE_ONLY)),
            "parameter_invalid"
        );
        assert_eq!(
            word(WriteInput::parse(
                &json!({"path": "workspace/skills/x", "content": 1}),
                &WORKSPACE_ONLY
            )),
            "memory_reserved_prefix"
        );
        assert_eq!(
            word(WriteInput::parse(
                &json!({"path": "workspace/a", "content": "a\u{0}"}),
                &WORKSPACE_ONLY
            )),
            "parameter_invalid"
        );
        let big = "x".repeat(memory::DOCUMENT_BYTES + 1);
        assert_eq!(
            word(WriteInput::parse(
                &json!({"path": "workspace/a", "content": big}),
                &WORKSPACE_ONLY
            )),
            "memory_document_too_large"
        );
    }
}
