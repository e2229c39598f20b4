//! Runner discovery on the member plane (executor.md §3).

use super::wire::{self, Route, V1};
use nexus_api::executors::{ExecutorEnvelope, ExecutorInfo, ExecutorList};

impl crate::Client {
    /// `GET /agent_api/v1/executors?kind=runner`: the runners eligible for the caller.
    pub async fn runners(&self) -> crate::Result<Vec<ExecutorInfo>> {
        let route = Route::new(V1).lit("executors").query("kind", Some("runner"));
        let list: ExecutorList = wire::get(&self.http, &route).await?;
        Ok(list.executors)
    }

    /// `GET /agent_api/v1/executors/{id}`: one eligible runner (404 `not_found` for an
    /// unknown, ineligible or agent_application id).
    pub async fn runner(&self, executor_public_id: &str) -> crate::Result<ExecutorInfo> {
        let route = Route::new(V1).lit("executors").seg(executor_public_id);
        let read: ExecutorEnvelope = wire::get(&self.http, &route).await?;
        Ok(read.executor)
    }
}
