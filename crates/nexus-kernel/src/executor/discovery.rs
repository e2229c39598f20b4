//! Discovery on the member plane (executor.md §3): the runners eligible for the caller.
//!
//! agent_application addresses are never listed, and an ineligible runner is concealed
//! exactly like an unknown id (404 `not_found`). `presence` is display only: `online` while a
//! push channel is open on this node, `offline` once seen, `not_yet_seen` otherwise.

use nexus_api::executors::{ExecutorEnvelope, ExecutorInfo, ExecutorList};
use nexus_core::codes::Code;
use nexus_store::prelude::*;
use nexus_store::{ExecutorKind, ExecutorRow};
use serde::de::DeserializeOwned;
use serde_json::Map;
use uuid::Uuid;

use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::{Executor, time};

/// A stored announcement part; unreadable text reads as empty (discovery is display only).
fn stored<T: DeserializeOwned + Default>(text: &str) -> T {
    serde_json::from_str(text).unwrap_or_default()
}

impl Executor<'_> {
    /// `presence` of an executor (display only, never used for routing).
    pub fn presence(&self, executor: &ExecutorRow) -> &'static str {
        if self.state.signals.executor_connected(executor.public_id) {
            "online"
        } else if executor.last_seen_at.is_some() {
            "offline"
        } else {
            "not_yet_seen"
        }
    }

    /// The discovery projection of one runner.
    pub fn discovery_info(&self, e: &ExecutorRow) -> ExecutorInfo {
        ExecutorInfo {
            public_id: e.public_id.to_string(),
            kind: e.kind.as_str().to_string(),
            display_name: e.display_name.clone(),
            status: e.status.as_str().to_string(),
            assignment_scope: e.assignment_scope.as_str().to_string(),
            served_tools: stored(&e.served_tools),
            environment: stored::<Map<_, _>>(&e.environment),
            served_documents: stored(&e.served_documents),
            presence: self.presence(e).to_string(),
            last_seen_at: e.last_seen_at.map(time::iso),
            rest: Map::new(),
        }
    }

    /// `GET /agent_api/v1/executors?kind=runner`: `{executors: [...]}`, by id. `kind` may be
    /// absent; any value but `runner` is 400 `parameter_invalid`.
    pub async fn list_runners(&self, principal: &MemberPrincipal, kind: Option<&str>) -> KernelResult<ExecutorList> {
        if let Some(k) = kind
            && k != "runner"
        {
            return Err(KernelError::new(
                Code::ParameterInvalid,
                format!("kind must be \"runner\", got {k:?}"),
            ));
        }
        let member = &principal.member;
        let mut out = Vec::new();
        for runner in self
            .store
            .list_executors(member.account_id, Some(ExecutorKind::Runner))
            .await?
        {
            if self.runner_eligible_for(&runner, member).await? {
                out.push(self.discovery_info(&runner));
            }
        }
        Ok(ExecutorList { executors: out })
    }

    /// `GET /agent_api/v1/executors/{id}`: `{executor}`; unknown, not a runner, or ineligible
    /// → 404 `not_found`.
    pub async fn get_runner(&self, principal: &MemberPrincipal, id: Uuid) -> KernelResult<ExecutorEnvelope> {
        let not_found = || KernelError::new(Code::NotFound, "no such runner is visible to the caller");
        let runner = self.store.executor_by_public_id(id).await?.ok_or_else(not_found)?;
        if !self.runner_eligible_for(&runner, &principal.member).await? {
            return Err(not_found());
        }
        Ok(ExecutorEnvelope {
            executor: self.discovery_info(&runner),
        })
    }
}
