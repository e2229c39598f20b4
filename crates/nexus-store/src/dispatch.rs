//! `impl Engine for Store`: every method dispatched to the engine the store holds (lib.rs's
//! `dispatch!`, which boxes the PostgreSQL arm).

use uuid::Uuid;

use crate::*;

impl Engine for Store {
    async fn migrate(&self) -> Result<()> {
        dispatch!(self, migrate())
    }
    async fn pending_migrations(&self) -> Result<usize> {
        dispatch!(self, pending_migrations())
    }
    async fn ensure_account(&self, public_id: Uuid, handle: &str, now: i64) -> Result<AccountRow> {
        dispatch!(self, ensure_account(public_id, handle, now))
    }
    async fn account_by_id(&self, id: i64) -> Result<Option<AccountRow>> {
        dispatch!(self, account_by_id(id))
    }
    async fn ensure_workspace(&self, public_id: Uuid, account_id: i64, handle: &str, now: i64) -> Result<WorkspaceRow> {
        dispatch!(self, ensure_workspace(public_id, account_id, handle, now))
    }
    async fn workspace_by_public_id(&self, public_id: Uuid) -> Result<Option<WorkspaceRow>> {
        dispatch!(self, workspace_by_public_id(public_id))
    }
    async fn workspace_by_id(&self, id: i64) -> Result<Option<WorkspaceRow>> {
        dispatch!(self, workspace_by_id(id))
    }
    async fn set_standing(&self, workspace_id: i64, member_id: i64, standing: Standing) -> Result<()> {
        dispatch!(self, set_standing(workspace_id, member_id, standing))
    }
    async fn standing(&self, workspace_id: i64, member_id: i64) -> Result<Option<Standing>> {
        dispatch!(self, standing(workspace_id, member_id))
    }
    async fn create_member(&self, new: NewMember) -> Result<(MemberRow, Option<ExecutorRow>)> {
        dispatch!(self, create_member(new))
    }
    async fn member_by_id(&self, id: i64) -> Result<Option<MemberRow>> {
        dispatch!(self, member_by_id(id))
    }
    async fn member_by_public_id(&self, public_id: Uuid) -> Result<Option<MemberRow>> {
        dispatch!(self, member_by_public_id(public_id))
    }
    async fn member_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<MemberRow>> {
        dispatch!(self, member_by_handle(account_id, handle))
    }
    async fn workspace_members(&self, workspace_id: i64) -> Result<Vec<(MemberRow, Standing)>> {
        dispatch!(self, workspace_members(workspace_id))
    }
    async fn set_member_configuration(&self, member_id: i64, configuration: Option<&str>, now: i64) -> Result<()> {
        dispatch!(self, set_member_configuration(member_id, configuration, now))
    }
    async fn create_runner(&self, new: NewRunner) -> Result<ExecutorRow> {
        dispatch!(self, create_runner(new))
    }
    async fn executor_by_id(&self, id: i64) -> Result<Option<ExecutorRow>> {
        dispatch!(self, executor_by_id(id))
    }
    async fn executor_by_public_id(&self, public_id: Uuid) -> Result<Option<ExecutorRow>> {
        dispatch!(self, executor_by_public_id(public_id))
    }
    async fn active_runner_by_name(&self, account_id: i64, manager_id: i64, name: &str) -> Result<Option<ExecutorRow>> {
        dispatch!(self, active_runner_by_name(account_id, manager_id, name))
    }
    async fn agent_application_of(&self, agent_member_id: i64) -> Result<Option<ExecutorRow>> {
        dispatch!(self, agent_application_of(agent_member_id))
    }
    async fn list_executors(&self, account_id: i64, kind: Option<ExecutorKind>) -> Result<Vec<ExecutorRow>> {
        dispatch!(self, list_executors(account_id, kind))
    }
    async fn advance_executor_epoch(&self, executor_id: i64) -> Result<i64> {
        dispatch!(self, advance_executor_epoch(executor_id))
    }
    async fn revoke_executor(&self, executor_id: i64, now: i64) -> Result<()> {
        dispatch!(self, revoke_executor(executor_id, now))
    }
    async fn put_announcement(&self, executor_id: i64, announcement: &Announcement, now: i64) -> Result<()> {
        dispatch!(self, put_announcement(executor_id, announcement, now))
    }
    async fn mark_executor_seen(&self, executor_id: i64, now: i64) -> Result<()> {
        dispatch!(self, mark_executor_seen(executor_id, now))
    }
    async fn insert_credential(&self, new: NewCredential) -> Result<CredentialRow> {
        dispatch!(self, insert_credential(new))
    }
    async fn credential_by_public_id(&self, public_id: Uuid) -> Result<Option<CredentialRow>> {
        dispatch!(self, credential_by_public_id(public_id))
    }
    async fn credential_with_executor(&self, public_id: Uuid) -> Result<Option<(CredentialRow, Option<ExecutorRow>)>> {
        dispatch!(self, credential_with_executor(public_id))
    }
    async fn revoke_credential(&self, public_id: Uuid, now: i64) -> Result<bool> {
        dispatch!(self, revoke_credential(public_id, now))
    }
    async fn has_transport_credential_at(&self, executor_id: i64, epoch: i64, now: i64) -> Result<bool> {
        dispatch!(self, has_transport_credential_at(executor_id, epoch, now))
    }
    async fn run_by_id(&self, id: i64) -> Result<Option<RunRow>> {
        dispatch!(self, run_by_id(id))
    }
    async fn run_by_public_id(&self, public_id: Uuid) -> Result<Option<RunRow>> {
        dispatch!(self, run_by_public_id(public_id))
    }
    async fn run_in_account(&self, public_id: Uuid, account_id: i64) -> Result<Option<RunInAccount>> {
        dispatch!(self, run_in_account(public_id, account_id))
    }
    async fn runs_of_workspace(
        &self,
        workspace_id: i64,
        status: Option<RunStatus>,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<RunRow>> {
        dispatch!(self, runs_of_workspace(workspace_id, status, after_id, limit))
    }
    async fn runs_of_workspace_newest(
        &self,
        workspace_id: i64,
        status: Option<RunStatus>,
        before_id: i64,
        limit: i64,
    ) -> Result<Vec<RunRow>> {
        dispatch!(self, runs_of_workspace_newest(workspace_id, status, before_id, limit))
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
    async fn events_after(&self, run_id: i64, after_sequence: i64, limit: i64) -> Result<Vec<EventRow>> {
        dispatch!(self, events_after(run_id, after_sequence, limit))
    }
    async fn latest_event_sequence(&self, run_id: i64) -> Result<i64> {
        dispatch!(self, latest_event_sequence(run_id))
    }
    async fn sealed_request(&self, task_id: i64, generation: i64) -> Result<Option<SealedRequestRow>> {
        dispatch!(self, sealed_request(task_id, generation))
    }
    async fn round_cache_facts(&self, run_id: i64) -> Result<Vec<RoundCacheFacts>> {
        dispatch!(self, round_cache_facts(run_id))
    }
    async fn run_summaries(&self, run_ids: &[i64]) -> Result<Vec<RunSummaryRow>> {
        dispatch!(self, run_summaries(run_ids))
    }
    async fn conversation_summaries(&self, conversation_ids: &[i64]) -> Result<Vec<ConversationSummaryRow>> {
        dispatch!(self, conversation_summaries(conversation_ids))
    }
    async fn job_by_id(&self, job_id: i64) -> Result<Option<JobRow>> {
        dispatch!(self, job_by_id(job_id))
    }
    async fn dequeue_jobs(&self, node_id: &str, now: i64, lease_ms: i64, limit: i64) -> Result<Dequeued> {
        dispatch!(self, dequeue_jobs(node_id, now, lease_ms, limit))
    }
    async fn renew_job_lease(&self, job_id: i64, node_id: &str, now: i64, lease_ms: i64) -> Result<bool> {
        dispatch!(self, renew_job_lease(job_id, node_id, now, lease_ms))
    }
    async fn release_node_leases(&self, node_id: &str) -> Result<u64> {
        dispatch!(self, release_node_leases(node_id))
    }
    async fn requeue_job(&self, job_id: i64, available_at: i64) -> Result<bool> {
        dispatch!(self, requeue_job(job_id, available_at))
    }
    async fn delete_job(&self, job_id: i64) -> Result<bool> {
        dispatch!(self, delete_job(job_id))
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
    async fn idempotency_get(&self, scope_hash: &str, now: i64) -> Result<Option<ReceiptRow>> {
        dispatch!(self, idempotency_get(scope_hash, now))
    }
    async fn purge_idempotency_receipts(&self, now: i64) -> Result<u64> {
        dispatch!(self, purge_idempotency_receipts(now))
    }
    async fn conversation_by_id(&self, id: i64) -> Result<Option<ConversationRow>> {
        dispatch!(self, conversation_by_id(id))
    }
    async fn conversation_by_public_id(&self, public_id: Uuid) -> Result<Option<ConversationRow>> {
        dispatch!(self, conversation_by_public_id(public_id))
    }
    async fn top_level_conversations(
        &self,
        workspace_id: i64,
        filter: ArchivedFilter,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<ConversationRow>> {
        dispatch!(self, top_level_conversations(workspace_id, filter, after_id, limit))
    }
    async fn conversation_children(&self, parent_id: i64) -> Result<Vec<ConversationRow>> {
        dispatch!(self, conversation_children(parent_id))
    }
    async fn conversation_events(
        &self,
        conversation_id: i64,
        after_sequence: i64,
        limit: i64,
    ) -> Result<Vec<ConversationEventRow>> {
        dispatch!(self, conversation_events(conversation_id, after_sequence, limit))
    }
    async fn latest_conversation_event_sequence(&self, conversation_id: i64) -> Result<i64> {
        dispatch!(self, latest_conversation_event_sequence(conversation_id))
    }
    async fn conversation_inputs(&self, conversation_id: i64, after_id: i64, limit: i64) -> Result<Vec<InputRow>> {
        dispatch!(self, conversation_inputs(conversation_id, after_id, limit))
    }
    async fn memory_document(&self, scope: MemoryScope, owner_id: i64, path: &str) -> Result<Option<MemoryDocRow>> {
        dispatch!(self, memory_document(scope, owner_id, path))
    }
    async fn memory_documents(
        &self,
        scope: MemoryScope,
        owner_id: i64,
        with_content: bool,
    ) -> Result<Vec<MemoryDocRow>> {
        dispatch!(self, memory_documents(scope, owner_id, with_content))
    }
    async fn memory_put(&self, new: NewMemoryDoc, expected_lock_version: Option<i64>, bound: i64) -> Result<MemoryPut> {
        dispatch!(self, memory_put(new, expected_lock_version, bound))
    }
    async fn memory_delete(
        &self,
        scope: MemoryScope,
        owner_id: i64,
        path: &str,
        expected_lock_version: Option<i64>,
    ) -> Result<MemoryDelete> {
        dispatch!(self, memory_delete(scope, owner_id, path, expected_lock_version))
    }
    async fn workspace_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<WorkspaceRow>> {
        dispatch!(self, workspace_by_handle(account_id, handle))
    }
    async fn upload_by_public_id(&self, public_id: Uuid) -> Result<Option<UploadRow>> {
        dispatch!(self, upload_by_public_id(public_id))
    }
    async fn upload_readable_via_workspace(&self, upload_id: i64, member_id: i64) -> Result<bool> {
        dispatch!(self, upload_readable_via_workspace(upload_id, member_id))
    }
    async fn upload_bound_in_run(&self, upload_id: i64, run_id: i64) -> Result<bool> {
        dispatch!(self, upload_bound_in_run(upload_id, run_id))
    }
    async fn bound_uploads_of_run(&self, run_id: i64) -> Result<Vec<UploadRow>> {
        dispatch!(self, bound_uploads_of_run(run_id))
    }
    async fn put_blob_body(&self, sha256: &str, body: &[u8]) -> Result<()> {
        dispatch!(self, put_blob_body(sha256, body))
    }
    async fn blob_body_range(&self, sha256: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>> {
        dispatch!(self, blob_body_range(sha256, start, len))
    }
    async fn delete_blob_body(&self, sha256: &str) -> Result<()> {
        dispatch!(self, delete_blob_body(sha256))
    }
    async fn turn_by_id(&self, id: i64) -> Result<Option<TurnRow>> {
        dispatch!(self, turn_by_id(id))
    }
    async fn turn_by_public_id(&self, conversation_id: i64, public_id: Uuid) -> Result<Option<TurnRow>> {
        dispatch!(self, turn_by_public_id(conversation_id, public_id))
    }
    async fn turn_of_run(&self, run_id: i64) -> Result<Option<TurnRow>> {
        dispatch!(self, turn_of_run(run_id))
    }
    async fn turns_page(
        &self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
    ) -> Result<Vec<TurnRow>> {
        dispatch!(self, turns_page(conversation_id, position, limit, newest_first))
    }
    async fn last_reply(&self, conversation_id: i64) -> Result<Option<TurnRow>> {
        dispatch!(self, last_reply(conversation_id))
    }
    async fn history_round(&self, conversation_id: i64) -> Result<Option<i64>> {
        dispatch!(self, history_round(conversation_id))
    }
    async fn due_conversations(&self, now: i64, limit: i64) -> Result<Vec<i64>> {
        dispatch!(self, due_conversations(now, limit))
    }
    async fn pending_input_count(&self, conversation_id: i64) -> Result<i64> {
        dispatch!(self, pending_input_count(conversation_id))
    }
    async fn child_by_label(&self, parent_id: i64, label: &str) -> Result<Option<ConversationRow>> {
        dispatch!(self, child_by_label(parent_id, label))
    }
    async fn steers_of_turn(&self, turn_id: i64) -> Result<Vec<InputRow>> {
        dispatch!(self, steers_of_turn(turn_id))
    }
    async fn search_history(&self, search: &HistorySearch<'_>) -> Result<Vec<HistoryHit>> {
        dispatch!(self, search_history(search))
    }
    async fn history_turns(
        &self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
        chars: i64,
    ) -> Result<Vec<HistoryTurn>> {
        dispatch!(
            self,
            history_turns(conversation_id, position, limit, newest_first, chars)
        )
    }
    async fn turn_position(&self, conversation_id: i64, public_id: Uuid) -> Result<Option<i64>> {
        dispatch!(self, turn_position(conversation_id, public_id))
    }
}
