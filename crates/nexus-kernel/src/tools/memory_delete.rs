//! `memory_delete` (`nexus.memory.delete`, kernel-tools.md §8): the result names the deleted
//! path; `memory_not_found` when there is none.

use nexus_store::{MemoryDelete, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use crate::error::KernelResult;
use crate::memory::{self, Owners, arg};

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners) -> KernelResult<KernelToolOutcome> {
    let (path, owner) = arg!(memory::doc_path(input, owners));
    arg!(memory::refuse_reserved(&path));
    Ok(match tx.memory_delete(path.scope, owner, &path.full, None).await? {
        MemoryDelete::Deleted(row) => {
            KernelToolOutcome::text(format!("Deleted {} ({} bytes).", path.full, row.byte_size))
        }
        MemoryDelete::NotFound | MemoryDelete::Stale { .. } => memory::not_found(&path),
    })
}
