//! Runs (runs.md §1–§3): the run record, its reads, and the create and append bodies.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::{ApprovalMode, Pagination, RunStatus, Usage};

/// The run record every run route serves (runs.md §1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Run {
    /// The run's id.
    pub public_id: String,
    /// The workspace the run belongs to.
    pub workspace_public_id: String,
    /// The lifecycle status.
    pub status: RunStatus,
    /// The approval mode, frozen at create.
    pub approval_mode: ApprovalMode,
    /// The approval rules, frozen at create (`None` when the run has none).
    #[serde(default)]
    pub approval_rules: Option<Value>,
    /// `{kind: "standalone"}` or `{kind: "conversation", conversation_public_id, turn_public_id}`.
    #[serde(default)]
    pub hosting: Value,
    /// The creating member.
    #[serde(default)]
    pub created_by: Option<String>,
    /// The standalone run's creator, or the hosting conversation's answerer.
    #[serde(default)]
    pub answering_principal: Option<String>,
    /// The agent that receives the run's unrouted tools, asks and approvals.
    #[serde(default)]
    pub declaring_agent: Option<String>,
    /// The run's default runner.
    #[serde(default)]
    pub default_runner_executor_public_id: Option<String>,
    /// The current tip of the authored work.
    #[serde(default)]
    pub deliverable_task_key: Option<String>,
    /// The count of authored envelopes.
    #[serde(default)]
    pub revision: i64,
    /// Why the run needs attention, when it does.
    #[serde(default)]
    pub attention: Option<Attention>,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// RFC 3339 start time.
    #[serde(default)]
    pub started_at: Option<String>,
    /// RFC 3339 end time.
    #[serde(default)]
    pub ended_at: Option<String>,
    /// What the run did and waits on, at a glance: served on `GET W/runs` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<RunSummary>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A run at a glance (`summary` on `GET W/runs`), read for the whole page at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunSummary {
    /// The first non-blank line of the first round's prompt (at most 240 characters read).
    #[serde(default)]
    pub prompt: Option<String>,
    /// The first round's `provider/model`.
    #[serde(default)]
    pub model: Option<String>,
    /// The hosting conversation's title, for a conversation turn's run.
    #[serde(default)]
    pub conversation_title: Option<String>,
    /// The hosted turn's position in its conversation.
    #[serde(default)]
    pub turn_position: Option<i64>,
    /// The run's model rounds.
    #[serde(default)]
    pub rounds: i64,
    /// The run's tool tasks.
    #[serde(default)]
    pub tool_calls: i64,
    /// Input tokens of every round, summed.
    #[serde(default)]
    pub input_tokens: i64,
    /// Output tokens of every round, summed.
    #[serde(default)]
    pub output_tokens: i64,
    /// What the run waits on now (empty when nothing is held, dispatched or awaited).
    #[serde(default)]
    pub waiting_on: Vec<Waiting>,
    /// `started_at` in milliseconds since the Unix epoch (`started_at` is whole seconds).
    #[serde(default)]
    pub started_at_ms: Option<i64>,
    /// `ended_at` in milliseconds since the Unix epoch.
    #[serde(default)]
    pub ended_at_ms: Option<i64>,
}

/// One kind of wait of a run and how many of its tasks wait so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Waiting {
    /// `approval` (held calls), `runner` (dispatched, not yet committed) or `child` (an await
    /// on a child conversation or an input).
    pub on: WaitingOn,
    /// How many tasks wait so.
    pub count: i64,
}

/// What a run's task waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitingOn {
    /// A member's approval.
    Approval,
    /// A runner's claim and commit.
    Runner,
    /// A child conversation or an input.
    Child,
}

/// A run's `attention`: `{reason, task_key}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Attention {
    /// For example `halt_failure`.
    pub reason: String,
    /// The task that needs adjudication.
    #[serde(default)]
    pub task_key: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET R`: the run and its model rounds' usage summed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunRead {
    /// The run.
    pub run: Run,
    /// The usage of every model round of the run, summed.
    #[serde(default)]
    pub usage: Usage,
}

/// `GET W/runs`: one page of runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunPage {
    /// The runs of this page.
    pub runs: Vec<Run>,
    /// The cursor of the next page.
    #[serde(default)]
    pub pagination: Pagination,
}

/// The `{run}` answer of start and stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunEnvelope {
    /// The run.
    pub run: Run,
}

/// The body of `POST W/runs` (runs.md §2), with its optional `Idempotency-Key`.
///
/// Steps are JSON values (the step grammar of runs.md §4); the builders of
/// [`Step`](crate::steps::Step) write the common ones.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// The authored steps, in written order.
    pub steps: Vec<Value>,
    /// The approval mode (required by the server).
    pub approval_mode: ApprovalMode,
    /// `approval_rules` (approvals.md §2), when given.
    pub approval_rules: Option<Value>,
    /// The run's default runner, when given.
    pub default_runner_executor_public_id: Option<String>,
    /// Sent as the `Idempotency-Key` header: a repeat with the same body replays the receipt.
    pub idempotency_key: Option<String>,
}

impl NewRun {
    /// A run with no steps yet, under `approval_mode`.
    pub fn new(approval_mode: ApprovalMode) -> NewRun {
        NewRun {
            steps: Vec::new(),
            approval_mode,
            approval_rules: None,
            default_runner_executor_public_id: None,
            idempotency_key: None,
        }
    }

    /// Appends one step.
    pub fn step(mut self, step: impl Into<Value>) -> NewRun {
        self.steps.push(step.into());
        self
    }

    /// Sets the approval rules.
    pub fn approval_rules(mut self, rules: Value) -> NewRun {
        self.approval_rules = Some(rules);
        self
    }

    /// Sets the default runner.
    pub fn default_runner(mut self, executor_public_id: impl Into<String>) -> NewRun {
        self.default_runner_executor_public_id = Some(executor_public_id.into());
        self
    }

    /// Sends the create with this `Idempotency-Key`.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> NewRun {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The JSON body, `{run: {…}}`.
    pub fn body(&self) -> Value {
        let body = CreateRun {
            run: RunShell {
                steps: self.steps.clone(),
                approval_mode: self.approval_mode.clone(),
                approval_rules: self.approval_rules.clone(),
                default_runner_executor_public_id: self.default_runner_executor_public_id.clone(),
            },
        };
        serde_json::to_value(body).expect("a run body serializes")
    }
}

/// The body of `POST W/runs`: `{run}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreateRun {
    /// The run shell.
    pub run: RunShell,
}

/// The run shell of a create (runs.md §2). Raw graph fields are refused (422
/// `edge_authoring_refused`); edges come only from written order, `after` and `results`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunShell {
    /// The steps, in written order (the step grammar, runs.md §4).
    #[schema(value_type = Vec<Object>)]
    pub steps: Vec<Value>,
    /// `bypass`, `ask` or `rules` (approvals.md).
    pub approval_mode: ApprovalMode,
    /// The approval rules (`rules` mode; approvals.md §2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_rules: Option<Value>,
    /// The run's default runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_runner_executor_public_id: Option<String>,
}

/// The receipt of an accepted envelope (runs.md §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Receipt {
    /// The keys of the rows written, in written order.
    #[serde(default)]
    pub accepted_task_keys: Vec<String>,
    /// The request's step tree, each step with its key.
    #[serde(default)]
    pub steps: Value,
    /// The new deliverable.
    #[serde(default)]
    pub deliverable_task_key: Option<String>,
    /// The run's revision after this envelope.
    #[serde(default)]
    pub revision: i64,
    /// Each authored `ask` key's resolution token (returned only here).
    #[serde(default)]
    pub resolution_tokens: Map<String, Value>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Receipt {
    /// The resolution token of the authored ask `key`.
    pub fn resolution_token(&self, key: &str) -> Option<&str> {
        self.resolution_tokens.get(key).and_then(Value::as_str)
    }
}

/// `POST W/runs`: 201 `{run, receipt}`, or 200 with `replayed: true` for a repeated key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Created {
    /// The run as created (as it was then, on a replay).
    pub run: Run,
    /// The receipt of its first envelope.
    pub receipt: Receipt,
    /// Whether this answer replays an earlier create with the same `Idempotency-Key`.
    // Served only on a replay: the first answer has no `replayed` member.
    #[serde(default, skip_serializing_if = "is_false")]
    pub replayed: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The body of `POST R/tasks` (runs.md §3), with its optional `Idempotency-Key`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Append {
    /// The steps; the first waits on the current deliverable, the last becomes the new one.
    pub steps: Vec<Value>,
    /// Refuse with 409 `stale_revision` unless the run is at this revision.
    pub expected_revision: Option<i64>,
    /// Sent as the `Idempotency-Key` header.
    pub idempotency_key: Option<String>,
}

impl Append {
    /// An envelope with no steps yet.
    pub fn new() -> Append {
        Append::default()
    }

    /// Appends one step.
    pub fn step(mut self, step: impl Into<Value>) -> Append {
        self.steps.push(step.into());
        self
    }

    /// Refuse unless the run is at `revision`.
    pub fn expected_revision(mut self, revision: i64) -> Append {
        self.expected_revision = Some(revision);
        self
    }

    /// Sends the append with this `Idempotency-Key`.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Append {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The JSON body, `{steps, expected_revision?}`.
    pub fn body(&self) -> Value {
        let body = AppendSteps {
            steps: self.steps.clone(),
            expected_revision: self.expected_revision,
        };
        serde_json::to_value(body).expect("an append body serializes")
    }
}

/// The body of `POST R/tasks` (runs.md §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AppendSteps {
    /// The steps, in written order (the step grammar, runs.md §4).
    #[schema(value_type = Vec<Object>)]
    pub steps: Vec<Value>,
    /// Refuse with 409 `stale_revision` unless the run's revision is this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<i64>,
}

/// `POST R/tasks`: `{receipt}`, with `replayed: true` for a repeated key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Appended {
    /// The envelope's receipt.
    pub receipt: Receipt,
    /// Whether this answer replays an earlier append with the same `Idempotency-Key`.
    // Served only on a replay: the first answer has no `replayed` member.
    #[serde(default, skip_serializing_if = "is_false")]
    pub replayed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_run_keeps_the_members_it_does_not_name() {
        let run: Run = serde_json::from_value(json!({
            "public_id": "r", "workspace_public_id": "w", "status": "running",
            "approval_mode": "ask", "created_at": "2026-01-01T00:00:00Z",
            "approval_rules": null, "attention": null, "priority": 3,
        }))
        .unwrap();
        assert_eq!(run.status, RunStatus::Running);
        assert_eq!(run.approval_rules, None);
        assert_eq!(run.rest.get("priority"), Some(&json!(3)));
    }

    #[test]
    fn the_create_body_names_only_what_was_set() {
        let body = NewRun::new(ApprovalMode::Bypass)
            .step(json!({"ask": {"prompt": "?"}}))
            .idempotency_key("k")
            .body();
        assert_eq!(
            body,
            json!({"run": {"steps": [{"ask": {"prompt": "?"}}], "approval_mode": "bypass"}})
        );
        let append = Append::new().step(json!({"ask": {"prompt": "?"}})).expected_revision(2);
        assert_eq!(
            append.body(),
            json!({"steps": [{"ask": {"prompt": "?"}}], "expected_revision": 2})
        );
    }
}
