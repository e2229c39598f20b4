//! One memoized cache of public names for one projection (a run read, an inbox page, a claim
//! reply): internal ids → workspaces' and members' public ids, executors' public ids and display
//! names, task keys. Each is read from the store at most once per projection.

use std::collections::HashMap;

use nexus_store::prelude::*;
use nexus_store::{ExecutorRow, TaskRow};
use uuid::Uuid;

use crate::Kernel;
use crate::error::KernelResult;

/// Memoized id → public facts lookups for one projection.
#[derive(Default)]
pub(crate) struct Names {
    workspaces: HashMap<i64, Option<Uuid>>,
    members: HashMap<i64, Option<Uuid>>,
    executors: HashMap<i64, Option<(Uuid, String)>>,
    tasks: HashMap<i64, String>,
}

impl Names {
    /// Names that already know the caller's own executor and, when given, a run's workspace
    /// public id (both read by the door before the projection).
    pub(crate) fn knowing(executor: &ExecutorRow, workspace: Option<(i64, Uuid)>) -> Names {
        let mut n = Names::default();
        n.executors
            .insert(executor.id, Some((executor.public_id, executor.display_name.clone())));
        if let Some((id, public_id)) = workspace {
            n.workspaces.insert(id, Some(public_id));
        }
        n
    }

    /// Keeps the keys of rows already read.
    pub(crate) fn know_tasks<'a>(&mut self, rows: impl Iterator<Item = &'a TaskRow>) {
        self.tasks.extend(rows.map(|t| (t.id, t.key.clone())));
    }
}

impl Kernel {
    pub(crate) async fn workspace_public(&self, names: &mut Names, id: i64) -> KernelResult<Option<Uuid>> {
        if let Some(w) = names.workspaces.get(&id) {
            return Ok(*w);
        }
        let w = self.store.workspace_by_id(id).await?.map(|w| w.public_id);
        names.workspaces.insert(id, w);
        Ok(w)
    }

    pub(crate) async fn member_public(&self, names: &mut Names, id: i64) -> KernelResult<Option<Uuid>> {
        if let Some(v) = names.members.get(&id) {
            return Ok(*v);
        }
        let v = self.store.member_by_id(id).await?.map(|m| m.public_id);
        names.members.insert(id, v);
        Ok(v)
    }

    /// An executor's public id and display name.
    pub(crate) async fn executor_public(&self, names: &mut Names, id: i64) -> KernelResult<Option<(Uuid, String)>> {
        if let Some(v) = names.executors.get(&id) {
            return Ok(v.clone());
        }
        let v = self
            .store
            .executor_by_id(id)
            .await?
            .map(|e| (e.public_id, e.display_name));
        names.executors.insert(id, v.clone());
        Ok(v)
    }

    pub(crate) async fn task_key_of(&self, names: &mut Names, id: i64) -> KernelResult<Option<String>> {
        if let Some(k) = names.tasks.get(&id) {
            return Ok(Some(k.clone()));
        }
        let k = self.store.task_by_id(id).await?.map(|t| t.key);
        if let Some(k) = &k {
            names.tasks.insert(id, k.clone());
        }
        Ok(k)
    }
}
