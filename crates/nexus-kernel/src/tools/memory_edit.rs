//! `memory_edit` (`nexus.memory.edit`, kernel-tools.md §8): replaces the one occurrence of
//! `old_text` with `new_text` (`memory_edit_no_match`, `memory_edit_ambiguous`); the result
//! states the path and the new byte count.

use nexus_core::results::ToolWord;
use nexus_store::{MemoryPut, NewMemoryDoc, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use super::params::str_arg;
use crate::error::KernelResult;
use crate::memory::{self, MemPath, Owners, Refusal, arg, refusal};

/// `memory_edit {path, old_text, new_text}`: a writable document path and a non-empty
/// `old_text`.
#[derive(Debug)]
struct EditInput {
    path: MemPath,
    owner: i64,
    old_text: String,
    new_text: String,
}

impl EditInput {
    fn parse(input: &Value, owners: &Owners) -> Result<Self, Refusal> {
        let (path, owner) = memory::doc_path(input, owners)?;
        memory::refuse_reserved(&path)?;
        let old_text = str_arg(input, "old_text", true).map_err(Box::new)?.unwrap_or_default();
        if old_text.is_empty() {
            return Err(refusal(
                ToolWord::ParameterInvalid,
                &format!(
                    "`old_text` for {:?} is empty; pass the exact text to replace",
                    path.full
                ),
            ));
        }
        let new_text = str_arg(input, "new_text", true).map_err(Box::new)?.unwrap_or_default();
        Ok(Self {
            old_text: old_text.to_string(),
            new_text: new_text.to_string(),
            path,
            owner,
        })
    }
}

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners, now: i64) -> KernelResult<KernelToolOutcome> {
    let EditInput {
        path,
        owner,
        old_text,
        new_text,
    } = arg!(EditInput::parse(input, owners));
    let (old_text, new_text) = (old_text.as_str(), new_text.as_str());
    let Some(doc) = tx.memory_document(path.scope, owner, &path.full).await? else {
        return Ok(memory::not_found(&path));
    };
    match memory::occurrences(&doc.content, old_text) {
        0 => {
            return Ok(KernelToolOutcome::error(
                ToolWord::MemoryEditNoMatch,
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
                ToolWord::MemoryEditAmbiguous,
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
            MemoryPut::Full { bound } => {
                KernelToolOutcome::error(ToolWord::MemoryFull, &memory::full_sentence(&path, bound))
            }
            // Read and write share the transaction and the scope lock: unreachable.
            MemoryPut::Stale { .. } => KernelToolOutcome::error(
                ToolWord::InternalError,
                &format!("{:?} changed during the edit; read it again and retry", path.full),
            ),
        },
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::memory_scope_tests::{WORKSPACE_ONLY, refusal_word as word};

    #[test]
    fn parse_refuses_an_empty_old_text() {
        let e = EditInput::parse(
            &json!({"path": "workspace/a", "old_text": "a", "new_text": ""}),
            &WORKSPACE_ONLY,
        )
        .unwrap();
        assert_eq!((e.old_text.as_str(), e.new_text.as_str()), ("a", ""));
        assert_eq!(
            word(EditInput::parse(
                &json!({"path": "workspace/a", "old_text": "", "new_text": "b"}),
                &WORKSPACE_ONLY
            )),
            "parameter_invalid"
        );
        // The reserved prefix is refused before the texts are read.
        assert_eq!(
            word(EditInput::parse(
                &json!({"path": "workspace/skills/s"}),
                &WORKSPACE_ONLY
            )),
            "memory_reserved_prefix"
        );
        assert_eq!(
            word(EditInput::parse(
                &json!({"path": "workspace/a", "old_text": "a"}),
                &WORKSPACE_ONLY
            )),
            "parameter_invalid"
        );
    }
}
