//! Opening turns (runs.md §12): when a conversation is idle and live and its head input is
//! due, one unit of work records the user turn, consumes the input (and the due mail that rides
//! along), and — for an agent answerer — opens the assistant turn with its hosted run, whose
//! seed round `r1` is assembled from the answerer's profile with S = the conversation's
//! default runner and N = the input's `tool_names`.
//!
//! The worker's turn pass ([`Kernel::open_due_turns`]) selects conversations by their
//! materialized `wake_at` (migration 0018), so a scheduled input opens its turn at its time and
//! across restarts; a change that makes a turn due wakes the worker after its commit.

use nexus_core::codes::Code;
use nexus_core::declaration::{self, AssemblyInput};
use nexus_store::prelude::*;
use nexus_store::{
    ConversationRow, InputKind, InputRow, MemberKind, MemberRow, NewRun, NewTask, NewTurn, OnFailure, Origin, RunRow,
    RunStatus, TaskKind, TaskRow, TaskStatus, TurnEnd, TurnRole, TurnStatus, Tx, Visibility, WorkspaceRow,
};
use serde_json::{Value, json};

use super::hosting::Hosting;
use crate::error::{KernelError, KernelResult};
use crate::runs::columns::Frozen;
use crate::runs::rows::Graph;
use crate::runs::unit::Unit;
use crate::runs::{AfterCommit, FrozenContext, RequestSurface};
use crate::{Conversations, time};

/// How many due conversations one pass takes.
const TURN_BATCH: i64 = 32;

/// The seed round's key in a hosted run.
pub(crate) const SEED_ROUND: &str = "r1";

/// What the head input asks of the turn, read before the unit of work.
struct TurnPlan {
    /// The hosted run's seed round, or why the turn fails at birth (an error key).
    seed: Result<SeedRound, String>,
    approval_mode: String,
    approval_rules: Value,
}

/// The seed round's frozen context and request surface.
struct SeedRound {
    frozen: FrozenContext,
    surface: RequestSurface,
}

/// The tightest of two approval words (`bypass` → `ask` → `rules`).
fn tighter<'a>(profile: &'a str, input: Option<&'a str>) -> &'a str {
    const ORDER: [&str; 3] = ["bypass", "ask", "rules"];
    let rank = |w: &str| ORDER.iter().position(|x| *x == w).unwrap_or(0);
    match input {
        Some(i) if rank(i) > rank(profile) => i,
        _ => profile,
    }
}

/// The text a turn's prompt entry carries: the head input's content, then each riding mail.
fn prompt_text(head: &InputRow, mail: &[InputRow]) -> String {
    let mut parts: Vec<&str> = Vec::new();
    if let Some(c) = head.content.as_deref() {
        parts.push(c);
    }
    for m in mail.iter().filter(|m| m.id != head.id) {
        if let Some(c) = m.content.as_deref() {
            parts.push(c);
        }
    }
    parts.join("\n\n")
}

/// How a hosted run's end ends its turn: `completed` when its deliverable (the mainline tip)
/// completed; `failed` with the abandoned failure's error key when the run completed without it
/// (its failed round was abandoned: nothing is left to do, and a hosted run cannot be appended
/// to); `canceled` (`run_canceled`) when it was stopped.
fn turn_outcome(run: &RunRow, rows: &[TaskRow]) -> (TurnStatus, Option<String>) {
    if run.status != RunStatus::Completed {
        return (
            TurnStatus::Canceled,
            Some(crate::runs::graph_error::RUN_CANCELED.to_string()),
        );
    }
    let tip = run.deliverable_task_id.and_then(|id| rows.iter().find(|t| t.id == id));
    if tip.is_none_or(|t| t.status == TaskStatus::Completed) {
        return (TurnStatus::Completed, None);
    }
    let abandoned = rows
        .iter()
        .filter(|t| t.failure_resolution == Some(nexus_store::FailureResolution::Abandoned))
        .max_by_key(|t| t.id);
    let key = abandoned.or(tip).and_then(|t| t.error_key.clone());
    (TurnStatus::Failed, key)
}

impl Conversations<'_> {
    /// The worker's turn pass: opens the turns of every conversation whose wake time has
    /// come. Returns how many conversations it looked at.
    pub async fn open_due_turns(&self) -> KernelResult<usize> {
        let due = self.store.due_conversations(self.now_ms(), TURN_BATCH).await?;
        for id in &due {
            if let Err(e) = self.open_turn(*id).await {
                tracing::warn!(error = %e, conversation = id, "opening a turn failed; the next pass retries");
            }
        }
        Ok(due.len())
    }

    /// The seed round for `head`, from the answerer's profile (its assembly, model and
    /// instructions), or the key of the reason the turn cannot start. `history` is the round
    /// its history starts from ([`nexus_store::TurnStore::history_round`]): the latest turn that left a sealed
    /// round, so a turn that failed at birth takes none of the turns before it with it.
    async fn plan_turn(
        &self,
        ws: &WorkspaceRow,
        conversation: &ConversationRow,
        answerer: &MemberRow,
        head: &InputRow,
        mail: &[InputRow],
        history: Option<i64>,
    ) -> KernelResult<TurnPlan> {
        let profile = crate::profile::configuration_read(answerer.configuration.as_deref());
        let word = |k: &str| profile.get(k).and_then(Value::as_str).map(str::to_string);
        let approval_mode = tighter(
            word("approval_mode").as_deref().unwrap_or("bypass"),
            head.approval_mode.map(nexus_store::ApprovalMode::as_str),
        )
        .to_string();
        let approval_rules = profile.get("approval_rules").cloned().unwrap_or(Value::Null);
        let plan = |seed| TurnPlan {
            seed,
            approval_mode: approval_mode.clone(),
            approval_rules: approval_rules.clone(),
        };
        let Some(model) = head.model.clone().or_else(|| word("default_model")) else {
            return Ok(plan(Err("model_required".into())));
        };
        if let Err(e) = self
            .providers
            .catalog()
            .resolve(&model, &|var| std::env::var_os(var).is_some())
        {
            return Ok(plan(Err(e.as_str().into())));
        }
        let runner = match conversation.default_runner_id {
            Some(id) => self.store.executor_by_id(id).await?.map(|r| r.public_id),
            None => None,
        };
        let mut input = AssemblyInput::from_configuration(&profile);
        input.default_runner_executor_public_id = runner;
        input.tool_names = head
            .tool_names
            .as_deref()
            .and_then(|t| serde_json::from_str::<Vec<String>>(t).ok());
        self.gather_facts_in(answerer, Some(ws), &mut input).await?;
        let assembly = match declaration::assemble_owned(input) {
            Ok(a) => a,
            Err(e) => return Ok(plan(Err(e.reason.to_string()))),
        };
        let user = match (answerer.kind, answerer.steward_id) {
            (MemberKind::Agent, Some(s)) => self.store.member_by_id(s).await?.map(|m| m.public_id),
            _ => Some(answerer.public_id),
        };
        let attachments: Vec<String> = serde_json::from_str(&head.attachments).unwrap_or_default();
        let frozen = FrozenContext {
            prompt: prompt_text(head, mail),
            results: Vec::new(),
            attachments,
            tool_definitions: assembly.tool_definitions,
            environment: assembly.environment,
            skills: assembly.skills,
            memory: json!({
                "workspace_public_id": ws.public_id,
                "conversation_public_id": conversation.public_id,
                "user_public_id": user,
            }),
            approval_mode: approval_mode.clone(),
            approval_rules: approval_rules.clone(),
            fan_on_failure: "absorb".into(),
            history,
        };
        let surface = RequestSurface {
            model,
            reasoning_effort: None,
            max_output_tokens: None,
            instructions: word("instructions"),
        };
        Ok(plan(Ok(SeedRound { frozen, surface })))
    }

    /// Opens the next turn of one conversation, if it is idle, live and its head input is due.
    /// One unit of work: the conversation is locked first, so two passes (or two nodes) never
    /// open the same turn; the plan's reads (profile, runners) go through the pool meanwhile.
    pub(crate) async fn open_turn(&self, conversation_id: i64) -> KernelResult<()> {
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let Some(conversation) = tx.lock_conversation(conversation_id).await? else {
            return Ok(());
        };
        let head = match (conversation.running_turn_id, conversation.archived_at) {
            (None, None) => tx.head_input(conversation.id, now).await?,
            _ => None,
        };
        let Some(head) = head else {
            tx.refresh_wake(conversation.id).await?;
            tx.commit().await?;
            return Ok(());
        };
        let mail = tx.due_mail(conversation.id, now).await?;
        let gone = |what: &str| KernelError::new(Code::InternalError, format!("the conversation's {what} is gone"));
        let answerer = self
            .store
            .member_by_id(conversation.answering_member_id)
            .await?
            .ok_or_else(|| gone("answerer"))?;
        let ws = self
            .store
            .workspace_by_id(conversation.workspace_id)
            .await?
            .ok_or_else(|| gone("workspace"))?;
        let plan = match answerer.kind {
            MemberKind::Agent => {
                let history = self.store.history_round(conversation.id).await?;
                Some(
                    self.plan_turn(&ws, &conversation, &answerer, &head, &mail, history)
                        .await?,
                )
            }
            MemberKind::Human => None,
        };

        let mut effects = vec![AfterCommit::ConversationEvents(conversation.id)];
        let user_turn = tx
            .insert_turn(NewTurn {
                public_id: time::new_id(),
                conversation_id: conversation.id,
                role: TurnRole::User,
                status: TurnStatus::Completed,
                input_id: Some(head.id),
                run_id: None,
                content: Some(prompt_text(&head, &mail)),
                error_key: None,
                created_at: now,
            })
            .await?;
        for input in std::iter::once(&head).chain(mail.iter().filter(|m| m.id != head.id)) {
            tx.consume_input(input.id, user_turn.id).await?;
        }
        let started = |turn: &nexus_store::TurnRow, run: Option<uuid::Uuid>| {
            json!({
                "turn_public_id": turn.public_id,
                "role": turn.role.as_str(),
                "position": turn.position,
                "run_public_id": run,
            })
        };
        tx.append_conversation_event(
            conversation.id,
            nexus_store::ConversationEventKind::TurnStarted,
            now,
            &started(&user_turn, None).to_string(),
        )
        .await?;
        if let Some(plan) = plan {
            self.open_assistant_turn(&mut tx, &conversation, &answerer, &head, plan, now, &mut effects)
                .await?;
        }
        tx.refresh_wake(conversation.id).await?;
        tx.commit().await?;
        effects.push(AfterCommit::WakeJobs);
        self.publish(effects).await;
        Ok(())
    }

    /// The assistant turn and its hosted run (status `running`, seed round `r1` ready), or —
    /// when the plan failed — a turn born `failed` with the plan's error key.
    #[allow(clippy::too_many_arguments)]
    async fn open_assistant_turn(
        &self,
        tx: &mut Tx,
        conversation: &ConversationRow,
        answerer: &MemberRow,
        head: &InputRow,
        plan: TurnPlan,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let seed = match plan.seed {
            Ok(seed) => seed,
            Err(key) => return self.fail_assistant_turn(tx, conversation, key, now, effects).await,
        };
        let turn_public_id = time::new_id();
        let hosting = Hosting {
            conversation_public_id: conversation.public_id,
            turn_public_id,
        };
        let created_by = match head.kind {
            InputKind::User => head.created_by_id.unwrap_or(conversation.created_by_id),
            InputKind::TaskResult => conversation.created_by_id,
        };
        let (approval_mode, approval_rules) =
            crate::runs::gate::stored_approval(&plan.approval_mode, &plan.approval_rules)?;
        let mut run = tx
            .insert_run(NewRun {
                public_id: time::new_id(),
                workspace_id: conversation.workspace_id,
                created_by_id: created_by,
                answering_member_id: answerer.id,
                declaring_agent_id: Some(answerer.id),
                status: RunStatus::Running,
                hosting: hosting.to_stored(),
                approval_mode,
                approval_rules,
                default_runner_id: conversation.default_runner_id,
                revision: 0,
                created_at: now,
                started_at: Some(now),
            })
            .await?;
        let turn = tx
            .insert_turn(NewTurn {
                public_id: turn_public_id,
                conversation_id: conversation.id,
                role: TurnRole::Assistant,
                status: TurnStatus::Running,
                input_id: None,
                run_id: Some(run.id),
                content: None,
                error_key: None,
                created_at: now,
            })
            .await?;
        self.seed_hosted_run(tx, &mut run, seed, now, effects).await?;
        tx.set_running_turn(conversation.id, Some(turn.id)).await?;
        let data = json!({
            "turn_public_id": turn.public_id,
            "role": "assistant",
            "position": turn.position,
            "run_public_id": run.public_id,
        });
        tx.append_conversation_event(
            conversation.id,
            nexus_store::ConversationEventKind::TurnStarted,
            now,
            &data.to_string(),
        )
        .await?;
        effects.push(AfterCommit::RunEvents(run.id));
        Ok(())
    }

    /// A turn that fails at birth (`key` says why): a `failed` assistant turn and its
    /// `turn_ended` event, and a spawned child's first reply to its parent with the reason.
    async fn fail_assistant_turn(
        &self,
        tx: &mut Tx,
        conversation: &ConversationRow,
        key: String,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let turn = tx
            .insert_turn(NewTurn {
                public_id: time::new_id(),
                conversation_id: conversation.id,
                role: TurnRole::Assistant,
                status: TurnStatus::Failed,
                input_id: None,
                run_id: None,
                content: None,
                error_key: Some(key.clone()),
                created_at: now,
            })
            .await?;
        let data = json!({"turn_public_id": turn.public_id, "status": "failed", "error": {"key": key}});
        tx.append_conversation_event(
            conversation.id,
            nexus_store::ConversationEventKind::TurnEnded,
            now,
            &data.to_string(),
        )
        .await?;
        // A spawned child that cannot answer still answers its parent, with the reason.
        let reason = format!("{key}: the child's turn could not start");
        self.deliver_first_reply(tx, conversation.id, Some(&reason), TurnStatus::Failed, now, effects)
            .await
    }

    /// The hosted run's seed round: its mainline model task (the run's deliverable), the
    /// `tasks_appended` event, and the first scheduling pass.
    async fn seed_hosted_run(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        seed: SeedRound,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let task = tx
            .insert_task(NewTask {
                run_id: run.id,
                key: SEED_ROUND.into(),
                kind: TaskKind::Model,
                status: TaskStatus::Waiting,
                generation: 1,
                origin: Origin::Kernel,
                on_failure: OnFailure::Propagate,
                visibility: Visibility::Visible,
                mainline: true,
                frozen_context: Some(Frozen::Model(Box::new(seed.frozen)).to_text()),
                request_surface: Some(serde_json::to_string(&seed.surface).expect("surface serializes")),
                created_at: now,
                ..Default::default()
            })
            .await?;
        run.deliverable_task_id = Some(task.id);
        run.revision = 1;
        tx.update_run(run).await?;
        self.emit(
            &mut Unit::of(tx, run, now, effects),
            nexus_store::EventKind::TasksAppended,
            None,
            json!({"keys": [SEED_ROUND], "origin": "kernel"}),
        )
        .await?;
        let mut g = Graph::load(tx, run.id).await?;
        self.schedule_all(tx, run, &mut g, now, effects).await
    }

    /// Ends the assistant turn a hosted run answered, in the run's ending unit of work: the
    /// reply is the final mainline round's text, the status [`turn_outcome`]'s; bound steers
    /// fall back to the queue; the conversation goes idle; a spawned child's first reply goes
    /// where its route says.
    pub(crate) async fn end_hosted_turn(
        &self,
        tx: &mut Tx,
        run: &nexus_store::RunRow,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let Some(turn) = tx.turn_of_run(run.id).await? else {
            return Ok(());
        };
        // The conversation row before the turn's (storage-and-scale.md §3, "Lock order"): an
        // archive updates the conversation first and its trigger then the turns' search rows,
        // so ending the turn first and going idle after could deadlock against it.
        tx.lock_conversation(turn.conversation_id).await?;
        // The unit's own view of the rows: the round that just settled is not committed yet.
        let g = Graph::load(tx, run.id).await?;
        let rows = &g.tasks;
        let final_round = rows
            .iter()
            .filter(|t| t.kind == TaskKind::Model && t.mainline && t.status == TaskStatus::Completed)
            .max_by_key(|t| t.id);
        let reply = final_round.and_then(crate::runs::StoredReply::of).and_then(|r| r.text);
        let (status, error_key) = turn_outcome(run, rows);
        // The history a later turn replays ends at the last round that has a sealed request.
        let replayable = rows
            .iter()
            .filter(|t| {
                t.kind == TaskKind::Model
                    && t.mainline
                    && matches!(t.status, TaskStatus::Completed | TaskStatus::Failed)
            })
            .max_by_key(|t| t.id)
            .map(|t| t.id);
        let ended = tx
            .end_turn(
                turn.id,
                TurnEnd {
                    status,
                    content: reply.clone(),
                    error_key: error_key.clone(),
                    final_task_id: replayable,
                    at: now,
                },
            )
            .await?;
        if !ended {
            return Ok(());
        }
        tx.release_steers(turn.id).await?;
        tx.set_running_turn(turn.conversation_id, None).await?;
        let mut data = json!({
            "turn_public_id": turn.public_id,
            "status": status.as_str(),
            "run_public_id": run.public_id,
        });
        if let Some(key) = &error_key {
            data["error"] = json!({"key": key});
        }
        tx.append_conversation_event(
            turn.conversation_id,
            nexus_store::ConversationEventKind::TurnEnded,
            now,
            &data.to_string(),
        )
        .await?;
        effects.push(AfterCommit::ConversationEvents(turn.conversation_id));
        effects.push(AfterCommit::WakeJobs);
        self.deliver_first_reply(tx, turn.conversation_id, reply.as_deref(), status, now, effects)
            .await
    }
}
