//! [`Workspace`]: the routes under `W = /agent_api/v1/workspaces/{ws}`.

use reqwest::Method;

use super::conversations::ConversationRef;
use super::memory::MemoryDoor;
use super::run::RunRef;
use super::wire::{self, Route, V1};
use crate::error::Result;
use crate::http::Http;
use nexus_api::approvals::ApprovalPage;
use nexus_api::common::{Page, RunStatus};
use nexus_api::conversations::{ArchivedFilter, ConversationCreated, ConversationPage, NewConversation};
use nexus_api::history::{HistorySearch, SearchPage};
use nexus_api::profile::{MemberKind, MemberList, WorkspaceMember};
use nexus_api::runs::{Created, NewRun, RunPage};

/// One workspace, seen through a member bearer: its runs, conversations, approvals and memory. Made by
/// [`Client::workspace`](crate::Client::workspace); cheap to clone.
#[derive(Debug, Clone)]
pub struct Workspace {
    http: Http,
    id: String,
}

impl Workspace {
    pub(crate) fn new(http: Http, id: &str) -> Workspace {
        Workspace {
            http,
            id: id.to_owned(),
        }
    }

    /// The workspace's id.
    pub fn public_id(&self) -> &str {
        &self.id
    }

    /// A handle on the run `run_public_id` of this workspace (nothing is sent).
    pub fn run(&self, run_public_id: &str) -> RunRef {
        RunRef::new(self.http.clone(), &self.id, run_public_id)
    }

    /// A handle on the conversation `conversation_public_id` of this workspace (nothing is
    /// sent).
    pub fn conversation(&self, conversation_public_id: &str) -> ConversationRef {
        ConversationRef::new(self.http.clone(), &self.id, conversation_public_id)
    }

    fn route(&self) -> Route {
        Route::new(V1).lit("workspaces").seg(&self.id)
    }

    /// `POST W/runs` (+ `Idempotency-Key`): 201 `{run, receipt}`, or the replay of an earlier
    /// create with the same key and body. Refusals: 409 `idempotency_envelope_mismatch`,
    /// 422 `invalid_approval_mode`, `invalid_steps` (with `error.steps`), …
    pub async fn create_run(&self, run: &NewRun) -> Result<Created> {
        let route = self.route().lit("runs");
        wire::call(
            &self.http,
            Method::POST,
            &route,
            Some(&run.body()),
            run.idempotency_key.as_deref(),
        )
        .await
    }

    /// [`Workspace::create_run`], then `POST R/start`: the handle of the started run.
    pub async fn start_run(&self, run: &NewRun) -> Result<(RunRef, Created)> {
        let created = self.create_run(run).await?;
        let handle = self.run(&created.run.public_id);
        handle.start().await?;
        Ok((handle, created))
    }

    /// `GET W/runs?status=&after=&limit=`: the workspace's runs, optionally of one status.
    pub async fn runs(&self, status: Option<&RunStatus>, page: &Page) -> Result<RunPage> {
        let route = self
            .route()
            .lit("runs")
            .query("status", status)
            .query("after", page.after.as_deref())
            .query("limit", page.limit);
        wire::get(&self.http, &route).await
    }

    /// `POST W/conversations` (+ `Idempotency-Key`): 201 `{conversation}`, or the replay of an
    /// earlier create with the same key and body. Refusals: 422 `answerer_not_eligible`,
    /// `runner_not_eligible`, `validation_failed`; 409 `idempotency_envelope_mismatch`.
    pub async fn create_conversation(&self, conversation: &NewConversation) -> Result<ConversationCreated> {
        let route = self.route().lit("conversations");
        wire::call(
            &self.http,
            Method::POST,
            &route,
            Some(&conversation.body()),
            conversation.idempotency_key.as_deref(),
        )
        .await
    }

    /// `GET W/conversations?archived=&after=&limit=`: top-level conversations, oldest first
    /// (the server excludes archived ones when `archived` is `None`).
    pub async fn conversations(&self, archived: Option<ArchivedFilter>, page: &Page) -> Result<ConversationPage> {
        let route = self
            .route()
            .lit("conversations")
            .query("archived", archived)
            .query("after", page.after.as_deref())
            .query("limit", page.limit);
        wire::get(&self.http, &route).await
    }

    /// `GET W/conversation_search?query=&archived=&include_auxiliary=&limit=&after=`: the
    /// ranked search of the workspace's conversation history (titles, prompts and replies),
    /// best first; the shape `session_search` answers. Refusal: 400 `parameter_invalid` (a
    /// blank or over-long query, a limit outside 1–50, a cursor it did not issue, …).
    pub async fn conversation_search(&self, search: &HistorySearch) -> Result<SearchPage> {
        let route = self
            .route()
            .lit("conversation_search")
            .query("query", Some(&search.query))
            .query("archived", search.archived)
            .query("include_auxiliary", search.include_auxiliary)
            .query("limit", search.limit)
            .query("after", search.after.as_deref());
        wire::get(&self.http, &route).await
    }

    /// `GET W/members?kind=`: the members holding standing in the workspace (of one kind
    /// when `kind` is given), by handle.
    pub async fn members(&self, kind: Option<MemberKind>) -> Result<Vec<WorkspaceMember>> {
        let route = self.route().lit("members").query("kind", kind);
        let list: MemberList = wire::get(&self.http, &route).await?;
        Ok(list.members)
    }

    /// `GET W/approvals?after=&limit=`: rows held for an approver, oldest first.
    pub async fn approvals(&self, page: &Page) -> Result<ApprovalPage> {
        let route = self
            .route()
            .lit("approvals")
            .query("after", page.after.as_deref())
            .query("limit", page.limit);
        wire::get(&self.http, &route).await
    }

    /// The member memory door of this workspace (`user/` and `workspace/` documents); a
    /// conversation's `conversation/` scope is [`ConversationRef::memory`].
    pub fn memory(&self) -> MemoryDoor {
        MemoryDoor::new(self.http.clone(), &self.id, None)
    }
}
