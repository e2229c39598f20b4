//! Conversations (runs.md §12): create (with an idempotency key), the top-level listing and
//! its archive filter, read, children, archive / unarchive (a whole tree at once), the default
//! runner; `inputs.rs` queues, lists and deletes inputs; `turns.rs` opens and ends the turns
//! hosted by runs; `history/` searches and reads the turns (ARCHITECTURE.md has the map).

mod feed;
pub mod history;
pub(crate) mod hosting;
pub(crate) mod inputs;
pub(crate) mod reach;
mod replies;
pub mod stream;
mod timeline;
mod turns;

use nexus_api::common::Pagination;
use nexus_api::conversations::{
    Conversation, ConversationEnvelope, ConversationPage, ConversationParent, ConversationSummary,
};
use nexus_core::codes::Code;
use nexus_store::prelude::*;
use nexus_store::{
    ArchivedFilter, ConversationRow, ConversationSummaryRow, ExecutorKind, ExecutorRow, MemberRow, NewConversation,
    Standing, WorkspaceRow,
};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::error::{KernelError, KernelResult};
use crate::names::Names;
use crate::paging::{page_limit, parse_cursor};
use crate::runs::Idempotent;
use crate::runs::create::idempotency::Idempotency;
use crate::{Conversations, MemberPrincipal, time};

pub use inputs::CreateInputRequest;
pub use requests::{CreateConversationRequest, DefaultRunnerRequest};

mod requests;

/// `GET C/children`: `{conversations}`, the direct children (one page, without `pagination`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConversationChildren {
    /// The children, oldest first.
    pub conversations: Vec<Conversation>,
}

/// A reference given in a body to something the kernel looks up later: a UUID, or a value
/// that is not one (refused by the lookup's own code, in its turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Named {
    Id(Uuid),
    NotAnId,
}

impl Named {
    /// Absent or null → `None`; a UUID string → `Id`; anything else → `NotAnId`.
    pub(crate) fn of(v: Option<&Value>) -> Option<Named> {
        match v {
            None | Some(Value::Null) => None,
            Some(v) => Some(uuid_of(v).map_or(Named::NotAnId, Named::Id)),
        }
    }

    fn id(self) -> Option<Uuid> {
        match self {
            Named::Id(id) => Some(id),
            Named::NotAnId => None,
        }
    }
}

fn refuse(code: Code, message: impl Into<String>) -> KernelError {
    KernelError::new(code, message)
}

/// The `archived` query word: `exclude` (default), `include` or `only`.
fn archived_filter(word: Option<&str>) -> KernelResult<ArchivedFilter> {
    match word {
        None | Some("exclude") => Ok(ArchivedFilter::Exclude),
        Some("include") => Ok(ArchivedFilter::Include),
        Some("only") => Ok(ArchivedFilter::Only),
        Some(other) => Err(refuse(
            Code::ParameterInvalid,
            format!("archived {other:?} is not exclude, include or only"),
        )),
    }
}

/// An optional string member of a body object: absent or null → `None`; a string without
/// U+0000 → its value; anything else → 422 `validation_failed` (reason `invalid`) at `pointer`.
fn opt_string(shell: &Value, key: &str, pointer: &str) -> KernelResult<Option<String>> {
    match shell.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.contains('\0') => Ok(Some(s.clone())),
        Some(_) => Err(KernelError::validation(
            "invalid",
            pointer,
            format!("{key} must be a string without U+0000"),
        )),
    }
}

/// The replay of a receipt stored since the key was first checked (a concurrent twin won),
/// read inside the unit of work.
async fn replay_in(tx: &mut nexus_store::Tx, idem: Option<&Idempotency>, now: i64) -> KernelResult<Option<Value>> {
    match idem {
        Some(idem) => match tx.idempotency_get(&idem.scope_hash, now).await? {
            Some(receipt) => Ok(Some(idem.replay(&receipt)?.1)),
            None => Ok(None),
        },
        None => Ok(None),
    }
}

/// The `pagination` member of a page whose last id is `next` when it was full.
fn page_after(next: Option<i64>) -> Pagination {
    Pagination {
        next_after: next.map(|n| n.to_string()),
    }
}

/// A public id given in a body (`None`: not a UUID string).
fn uuid_of(v: &Value) -> Option<Uuid> {
    v.as_str().and_then(|s| Uuid::parse_str(s).ok())
}

/// A conversation at a glance: its turns and the first line of its last message.
fn summary_of(s: &ConversationSummaryRow) -> ConversationSummary {
    ConversationSummary {
        turn_count: s.turn_count,
        last_activity_at: s.last_activity_at.map(time::iso),
        last_message: s.last_text.as_deref().and_then(crate::runs::summary::first_line),
        last_role: s.last_role.map(|r| r.as_str().to_string()),
    }
}

impl Conversations<'_> {
    /// Sets `summary` on each conversation of a page (`ids` their row ids, in order), read
    /// for the whole page at once.
    async fn summarize_conversations(&self, page: &mut [Conversation], ids: &[i64]) -> KernelResult<()> {
        let rows = self.store.conversation_summaries(ids).await?;
        let by_id: std::collections::HashMap<i64, &ConversationSummaryRow> =
            rows.iter().map(|r| (r.conversation_id, r)).collect();
        let empty = ConversationSummaryRow::default();
        for (conversation, id) in page.iter_mut().zip(ids) {
            conversation.summary = Some(summary_of(by_id.get(id).copied().unwrap_or(&empty)));
        }
        Ok(())
    }

    /// Keeps the receipt of a created resource beside it and commits: the new `response`, or
    /// the replay of a concurrent twin's receipt (this unit of work then rolls back).
    async fn commit_created<T: Serialize>(
        &self,
        mut tx: nexus_store::Tx,
        idem: Option<&Idempotency>,
        response: T,
        now: i64,
    ) -> KernelResult<Idempotent<T>> {
        if let Some(idem) = idem {
            let stored = serde_json::to_value(&response).expect("a created reply serializes");
            if let Some((_, replay)) = self.put_receipt(&mut tx, idem, 201, &stored, now).await? {
                return Ok(Idempotent::Replayed(replay));
            }
        }
        tx.commit().await?;
        Ok(Idempotent::Fresh(response))
    }

    /// The conversation `c` of workspace `ws`, or 404 `not_found`.
    async fn conversation_in(&self, ws: &WorkspaceRow, c: Uuid) -> KernelResult<ConversationRow> {
        self.store
            .conversation_by_public_id(c)
            .await?
            .filter(|row| row.workspace_id == ws.id)
            .ok_or_else(|| refuse(Code::NotFound, "no such conversation"))
    }

    /// The answerer a conversation may have: a member of the workspace's account with write
    /// standing in the workspace. Anything else (an unknown id, a malformed one, a member
    /// without standing) is 422 `answerer_not_eligible`.
    async fn eligible_answerer(&self, ws: &WorkspaceRow, id: Named) -> KernelResult<MemberRow> {
        let not_eligible = || {
            refuse(
                Code::AnswererNotEligible,
                "the answerer is not a member with write standing in this workspace",
            )
            .with_path("/conversation/answering_user_public_id")
        };
        let id = id.id().ok_or_else(not_eligible)?;
        let member = self.store.member_by_public_id(id).await?.ok_or_else(not_eligible)?;
        let standing = self.store.standing(ws.id, member.id).await?;
        if member.account_id != ws.account_id || standing < Some(Standing::Write) {
            return Err(not_eligible());
        }
        Ok(member)
    }

    /// The runner named by `id` when it exists as a runner of the answerer's account
    /// (`Ok(None)`: no such runner) and whether it is eligible for the answerer.
    async fn runner_for(&self, id: Uuid, answerer: &MemberRow) -> KernelResult<Option<(ExecutorRow, bool)>> {
        let Some(runner) = self.store.executor_by_public_id(id).await? else {
            return Ok(None);
        };
        if runner.kind != ExecutorKind::Runner || runner.account_id != answerer.account_id {
            return Ok(None);
        }
        let eligible = self.runner_eligible_for(&runner, answerer).await?;
        Ok(Some((runner, eligible)))
    }

    /// The public shape of a conversation (no `summary`: the listing adds it).
    async fn conversation_of(
        &self,
        names: &mut Names,
        ws: &WorkspaceRow,
        row: &ConversationRow,
    ) -> KernelResult<Conversation> {
        let answerer = self.member_public(names, row.answering_member_id).await?;
        let creator = self.member_public(names, row.created_by_id).await?;
        let runner = match row.default_runner_id {
            Some(id) => self.executor_public(names, id).await?.map(|(public_id, _)| public_id),
            None => None,
        };
        let parent = match row.parent_id {
            Some(parent_id) => {
                let spawn_task_key = match row.spawn_task_id {
                    Some(t) => self.task_key_of(names, t).await?,
                    None => None,
                };
                let parent = self.store_conversation_public(parent_id).await?;
                Some(ConversationParent {
                    public_id: parent.map(|p| p.to_string()).unwrap_or_default(),
                    spawn_task_key,
                    label: row.label.clone(),
                    rest: Map::new(),
                })
            }
            None => None,
        };
        Ok(Conversation {
            public_id: row.public_id.to_string(),
            workspace_public_id: ws.public_id.to_string(),
            title: row.title.clone(),
            answering_user_public_id: answerer.map(|id| id.to_string()),
            created_by_public_id: creator.map(|id| id.to_string()),
            default_runner_executor_public_id: runner.map(|id| id.to_string()),
            parent,
            archived: row.archived_at.is_some(),
            archived_at: row.archived_at.map(time::iso),
            created_at: time::iso(row.created_at),
            summary: None,
            rest: Map::new(),
        })
    }

    /// `{conversation}`: the envelope of read, archive and default runner.
    async fn conversation_envelope(
        &self,
        ws: &WorkspaceRow,
        row: &ConversationRow,
    ) -> KernelResult<ConversationEnvelope> {
        let mut names = Names::default();
        Ok(ConversationEnvelope {
            conversation: self.conversation_of(&mut names, ws, row).await?,
        })
    }

    /// A parent conversation's public id (children are few; no cache).
    async fn store_conversation_public(&self, id: i64) -> KernelResult<Option<Uuid>> {
        Ok(self.store.conversation_by_id(id).await?.map(|c| c.public_id))
    }

    /// A create route's `Idempotency-Key`, bound to its scope and body (`envelope`): `Err`
    /// holds the replay of a stored receipt (or the refusal of a different body).
    async fn idempotency_open(
        &self,
        principal: &MemberPrincipal,
        route: &str,
        ids: &[Uuid],
        key: Option<&str>,
        envelope: &Value,
    ) -> KernelResult<Result<Option<Idempotency>, Value>> {
        let Some(key) = key else {
            return Ok(Ok(None));
        };
        let idem = Idempotency::new(principal.member.public_id, route, ids, key, envelope)?;
        match self.store.idempotency_get(&idem.scope_hash, self.now_ms()).await? {
            Some(receipt) => Ok(Err(idem.replay(&receipt)?.1)),
            None => Ok(Ok(Some(idem))),
        }
    }

    /// The default runner a create names, when eligible for the answerer (else 422
    /// `runner_not_eligible`).
    async fn named_default_runner(
        &self,
        named: Option<Named>,
        answerer: &MemberRow,
    ) -> KernelResult<Option<ExecutorRow>> {
        let Some(named) = named else {
            return Ok(None);
        };
        let not_eligible = || {
            refuse(
                Code::RunnerNotEligible,
                "the default runner is not eligible for the conversation's answerer",
            )
            .with_path("/conversation/default_runner_executor_public_id")
        };
        let id = named.id().ok_or_else(not_eligible)?;
        match self.runner_for(id, answerer).await? {
            Some((runner, true)) => Ok(Some(runner)),
            _ => Err(not_eligible()),
        }
    }

    /// `POST W/conversations` (runs.md §12): `{conversation}` as created, or the replay of a
    /// repeated `Idempotency-Key`. Refusals in order: the body's
    /// ([`CreateConversationRequest::parse`]: 400 `parameter_missing`, 422
    /// `validation_failed`), the key's grammar, 409 `idempotency_envelope_mismatch`, 422
    /// `answerer_not_eligible`, 422 `runner_not_eligible`.
    pub async fn create_conversation(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        request: KernelResult<CreateConversationRequest>,
        idempotency_key: Option<&str>,
    ) -> KernelResult<Idempotent<ConversationEnvelope>> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let request = request?;
        let route = "POST /workspaces/{workspace}/conversations";
        let idem = match self
            .idempotency_open(principal, route, &[workspace], idempotency_key, &request.envelope)
            .await?
        {
            Ok(idem) => idem,
            Err(replay) => return Ok(Idempotent::Replayed(replay)),
        };
        let answerer = match request.answerer {
            None => principal.member.clone(),
            Some(id) => self.eligible_answerer(&ws, id).await?,
        };
        let runner = self.named_default_runner(request.runner, &answerer).await?;
        // The response's names are read now, not through the pool inside the unit of work.
        let mut names = Names::default();
        self.member_public(&mut names, answerer.id).await?;
        self.member_public(&mut names, principal.member.id).await?;
        if let Some(r) = &runner {
            self.executor_public(&mut names, r.id).await?;
        }
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        if let Some(replay) = replay_in(&mut tx, idem.as_ref(), now).await? {
            return Ok(Idempotent::Replayed(replay));
        }
        let row = tx
            .insert_conversation(NewConversation {
                public_id: time::new_id(),
                workspace_id: ws.id,
                created_by_id: principal.member.id,
                answering_member_id: answerer.id,
                default_runner_id: runner.as_ref().map(|r| r.id),
                title: request.title,
                parent_id: None,
                spawn_task_id: None,
                label: None,
                reply_route: None,
                created_at: now,
            })
            .await?;
        let response = ConversationEnvelope {
            conversation: self.conversation_of(&mut names, &ws, &row).await?,
        };
        self.commit_created(tx, idem.as_ref(), response, now).await
    }

    /// `GET W/conversations?archived=&after=&limit=`: the workspace's top-level conversations,
    /// oldest first, each with its `summary`, and the paging member.
    pub async fn list_conversations(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        archived: Option<&str>,
        after: Option<&str>,
        limit: Option<i64>,
    ) -> KernelResult<ConversationPage> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let filter = archived_filter(archived)?;
        let after = parse_cursor(after)?;
        let limit = page_limit(limit);
        let rows = self.store.top_level_conversations(ws.id, filter, after, limit).await?;
        let mut names = Names::default();
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(self.conversation_of(&mut names, &ws, row).await?);
        }
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        self.summarize_conversations(&mut out, &ids).await?;
        let next = (rows.len() as i64 == limit)
            .then(|| rows.last().map(|r| r.id))
            .flatten();
        Ok(ConversationPage {
            conversations: out,
            pagination: page_after(next),
        })
    }

    /// `GET C`: `{conversation}`.
    pub async fn read_conversation(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
    ) -> KernelResult<ConversationEnvelope> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let row = self.conversation_in(&ws, c).await?;
        self.conversation_envelope(&ws, &row).await
    }

    /// `GET C/children`: `{conversations}`, the direct children, oldest first.
    pub async fn conversation_children(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
    ) -> KernelResult<ConversationChildren> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let row = self.conversation_in(&ws, c).await?;
        let rows = self.store.conversation_children(row.id).await?;
        let mut names = Names::default();
        let mut out = Vec::with_capacity(rows.len());
        for child in &rows {
            out.push(self.conversation_of(&mut names, &ws, child).await?);
        }
        Ok(ConversationChildren { conversations: out })
    }

    /// `POST C/archive` (`archive: true`) and `POST C/unarchive`: the conversation and its
    /// descendants together; a child answers 409 `subagent_follows_parent`. Repeating either is
    /// harmless. Archiving a live conversation appends `conversation_archived` to its feed.
    /// `{conversation}`.
    pub async fn archive_conversation(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        archive: bool,
    ) -> KernelResult<ConversationEnvelope> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let row = self.conversation_in(&ws, c).await?;
        if row.parent_id.is_some() {
            return Err(refuse(
                Code::SubagentFollowsParent,
                "a child conversation is archived and unarchived with its parent",
            ));
        }
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        tx.archive_conversation_tree(row.id, archive.then_some(now)).await?;
        // The wake clock of every conversation of the tree (an archived one opens no turn).
        let mut tree = vec![row.id];
        while let Some(id) = tree.pop() {
            tx.refresh_wake(id).await?;
            tree.extend(self.store.conversation_children(id).await?.iter().map(|c| c.id));
        }
        if archive && row.archived_at.is_none() {
            tx.append_conversation_event(
                row.id,
                nexus_store::ConversationEventKind::ConversationArchived,
                now,
                "{}",
            )
            .await?;
        }
        let row = tx
            .conversation_by_public_id(c)
            .await?
            .ok_or_else(|| refuse(Code::NotFound, "no such conversation"))?;
        tx.commit().await?;
        self.publish(vec![
            crate::runs::AfterCommit::ConversationEvents(row.id),
            crate::runs::AfterCommit::WakeJobs,
        ])
        .await;
        self.conversation_envelope(&ws, &row).await
    }

    /// The runner a default-runner change names: 404 `runner_not_found` (no such runner in the
    /// account), 422 `runner_not_eligible` (not eligible for the conversation's answerer).
    async fn eligible_default_runner(&self, row: &ConversationRow, id: Uuid) -> KernelResult<i64> {
        let answerer = self
            .store
            .member_by_id(row.answering_member_id)
            .await?
            .ok_or_else(|| refuse(Code::NotFound, "the conversation's answerer is gone"))?;
        match self.runner_for(id, &answerer).await? {
            None => Err(refuse(Code::RunnerNotFound, "no such runner")),
            Some((_, false)) => Err(refuse(
                Code::RunnerNotEligible,
                "the runner is not eligible for the conversation's answerer",
            )),
            Some((runner, true)) => Ok(runner.id),
        }
    }

    /// `PUT C/default_runner` ([`DefaultRunnerRequest`]): affects later turns only. 404
    /// `runner_not_found` (no such runner in the account), 422 `runner_not_eligible` (not
    /// eligible for the answerer). `{conversation}`.
    pub async fn put_conversation_default_runner(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        request: KernelResult<DefaultRunnerRequest>,
    ) -> KernelResult<ConversationEnvelope> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let row = self.conversation_in(&ws, c).await?;
        let request = request?;
        let runner_id = match request.runner {
            Some(id) => Some(self.eligible_default_runner(&row, id).await?),
            None => None,
        };
        let mut tx = self.store.begin().await?;
        tx.set_conversation_default_runner(row.id, runner_id).await?;
        let row = tx
            .conversation_by_public_id(c)
            .await?
            .ok_or_else(|| refuse(Code::NotFound, "no such conversation"))?;
        tx.commit().await?;
        self.conversation_envelope(&ws, &row).await
    }
}
