//! Discovery on the member plane (executor.md §3): the runners eligible for the caller.
//!
//! agent_application addresses are never listed, and an ineligible runner is concealed
//! exactly like an unknown id (404 `not_found`). `presence` is display only: `online` while a
//! push channel is open on this node, `offline` once seen, `not_yet_seen` otherwise.

use nexus_core::codes::Code;
use nexus_store::{Engine, ExecutorKind, ExecutorRow};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::{Kernel, time};

fn stored(text: &str, empty: Value) -> Value {
    serde_json::from_str(text).unwrap_or(empty)
}

impl Kernel {
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
    pub fn discovery_json(&self, e: &ExecutorRow) -> Value {
        json!({
            "public_id": e.public_id,
            "kind": e.kind.as_str(),
            "display_name": e.display_name,
            "status": e.status,
            "assignment_scope": e.assignment_scope.as_str(),
            "served_tools": stored(&e.served_tools, json!([])),
            "environment": stored(&e.environment, json!({})),
            "served_documents": stored(&e.served_documents, json!([])),
            "presence": self.presence(e),
            "last_seen_at": e.last_seen_at.map(time::iso),
        })
    }

    /// `GET /agent_api/v1/executors?kind=runner`: `{executors: [...]}`, by id. `kind` may be
    /// absent; any value but `runner` is 400 `parameter_invalid`.
    pub async fn list_runners(&self, principal: &MemberPrincipal, kind: Option<&str>) -> KernelResult<Value> {
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
                out.push(self.discovery_json(&runner));
            }
        }
        Ok(json!({ "executors": out }))
    }

    /// `GET /agent_api/v1/executors/{id}`: `{executor}`; unknown, not a runner, or ineligible
    /// → 404 `not_found`.
    pub async fn get_runner(&self, principal: &MemberPrincipal, id: Uuid) -> KernelResult<Value> {
        let not_found = || KernelError::new(Code::NotFound, "no such runner is visible to the caller");
        let runner = self.store.executor_by_public_id(id).await?.ok_or_else(not_found)?;
        if !self.runner_eligible_for(&runner, &principal.member).await? {
            return Err(not_found());
        }
        Ok(json!({ "executor": self.discovery_json(&runner) }))
    }
}
