//! `impl Engine for Store`: every method dispatched to the engine the store holds (lib.rs's
//! `dispatch!`, which boxes the PostgreSQL arm).

use crate::*;

impl Engine for Store {
    async fn migrate(&self) -> Result<()> {
        dispatch!(self, migrate())
    }
    async fn pending_migrations(&self) -> Result<usize> {
        dispatch!(self, pending_migrations())
    }
    async fn tasks_of_run(&self, run_id: i64, after_id: i64, limit: i64) -> Result<Vec<TaskRow>> {
        dispatch!(self, tasks_of_run(run_id, after_id, limit))
    }
    async fn task_by_key(&self, run_id: i64, key: &str) -> Result<Option<TaskRow>> {
        dispatch!(self, task_by_key(run_id, key))
    }
    async fn task_by_id(&self, id: i64) -> Result<Option<TaskRow>> {
        dispatch!(self, task_by_id(id))
    }
    async fn tasks_declared_by(&self, run_id: i64, declaring_id: i64) -> Result<Vec<TaskRow>> {
        dispatch!(self, tasks_declared_by(run_id, declaring_id))
    }
    async fn task_neighbourhood(&self, run_id: i64, id: i64) -> Result<Vec<TaskRow>> {
        dispatch!(self, task_neighbourhood(run_id, id))
    }

    async fn task_and_deps(&self, id: i64) -> Result<Vec<TaskRow>> {
        dispatch!(self, task_and_deps(id))
    }
    async fn edges_of_run(&self, run_id: i64) -> Result<Vec<EdgeRow>> {
        dispatch!(self, edges_of_run(run_id))
    }
    async fn edges_from(&self, task_id: i64) -> Result<Vec<EdgeRow>> {
        dispatch!(self, edges_from(task_id))
    }
    async fn sealed_request(&self, task_id: i64, generation: i64) -> Result<Option<SealedRequestRow>> {
        dispatch!(self, sealed_request(task_id, generation))
    }
    async fn round_cache_facts(&self, run_id: i64) -> Result<Vec<RoundCacheFacts>> {
        dispatch!(self, round_cache_facts(run_id))
    }
    async fn expired_parks(&self, now: i64, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
        dispatch!(self, expired_parks(now, after_task_id, limit))
    }
    async fn revoked_parks(&self, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
        dispatch!(self, revoked_parks(after_task_id, limit))
    }
    async fn held_approvals(&self, workspace_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<TaskRow>> {
        dispatch!(self, held_approvals(workspace_id, after_task_id, limit))
    }
    async fn inbox_page(&self, executor_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<(TaskRow, RunRow)>> {
        dispatch!(self, inbox_page(executor_id, after_task_id, limit))
    }
}
