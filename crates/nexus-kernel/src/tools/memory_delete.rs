//! `memory_delete` (`nexus.memory.delete`, kernel-tools.md §8): the result names the deleted
//! path; `memory_not_found` when there is none.

use nexus_store::{MemoryDelete, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use crate::error::KernelResult;
use crate::memory::{self, MemPath, Owners, Refusal, arg};

/// `memory_delete {path}`: a document path of an available scope, outside `skills/`.
#[derive(Debug)]
struct DeleteInput {
    path: MemPath,
    owner: i64,
}

impl DeleteInput {
    fn parse(input: &Value, owners: &Owners) -> Result<Self, Refusal> {
        let (path, owner) = memory::doc_path(input, owners)?;
        memory::refuse_reserved(&path)?;
        Ok(Self { path, owner })
    }
}

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners) -> KernelResult<KernelToolOutcome> {
    let DeleteInput { path, owner } = arg!(DeleteInput::parse(input, owners));
    Ok(match tx.memory_delete(path.scope, owner, &path.full, None).await? {
        MemoryDelete::Deleted(row) => {
            KernelToolOutcome::text(format!("Deleted {} ({} bytes).", path.full, row.byte_size))
        }
        MemoryDelete::NotFound | MemoryDelete::Stale { .. } => memory::not_found(&path),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::memory_scope_tests::{WORKSPACE_ONLY, refusal_word as word};

    #[test]
    fn parse_refuses_reserved_and_unavailable_paths() {
        assert_eq!(
            DeleteInput::parse(&json!({"path": "workspace/a"}), &WORKSPACE_ONLY)
                .unwrap()
                .owner,
            7
        );
        assert_eq!(
            word(DeleteInput::parse(
                &json!({"path": "workspace/skills/s"}),
                &WORKSPACE_ONLY
            )),
            "memory_reserved_prefix"
        );
        assert_eq!(
            word(DeleteInput::parse(&json!({"path": "conversation/a"}), &WORKSPACE_ONLY)),
            "memory_path_invalid"
        );
        assert_eq!(
            word(DeleteInput::parse(&json!({"path": 3}), &WORKSPACE_ONLY)),
            "parameter_invalid"
        );
    }
}
