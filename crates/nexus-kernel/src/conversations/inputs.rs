//! Conversation inputs (runs.md §12): `POST C/inputs` (with an idempotency key), `GET
//! C/inputs`, `DELETE C/inputs/{id}`. An input is stored `pending`; nothing consumes it yet
//! (turns are issue 25's next part).

use nexus_api::common::ApprovalMode;
use nexus_api::inputs::{Input, InputEnvelope, InputPage};
use nexus_core::approval::Mode;
use nexus_core::bounds;
use nexus_core::codes::Code;
use nexus_core::declaration::{self, AssemblyInput, DeclErrorKind};
use nexus_store::prelude::*;
use nexus_store::{
    ConversationRow, DeliveryMode, InputInsert, InputKind, InputRow, MemberKind, MemberRow, NewInput, WorkspaceRow,
};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{opt_string, page_after, refuse, replay_in, uuid_of};
use crate::error::{KernelError, KernelResult};
use crate::names::Names;
use crate::paging::{page_limit, parse_cursor};
use crate::runs::{AfterCommit, Idempotent};
use crate::{Conversations, MemberPrincipal, time};

/// An approval mode's place from loosest to tightest (runs.md §12: an input may only tighten).
fn tightness(mode: Mode) -> u8 {
    match mode {
        Mode::Bypass => 0,
        Mode::Ask => 1,
        Mode::Rules => 2,
    }
}

/// The grammar-checked body of `POST C/inputs`, before the kernel's checks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InputBody {
    pub(crate) content: Option<String>,
    pub(crate) attachments: Vec<Uuid>,
    pub(crate) to: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) tool_names: Option<Vec<String>>,
    pub(crate) approval_mode: Option<Mode>,
    pub(crate) delivery_mode: DeliveryMode,
    pub(crate) deliver_at: Option<i64>,
}

fn invalid(pointer: &str, message: impl Into<String>) -> KernelError {
    KernelError::validation("invalid", pointer, message)
}

/// `deliver_in`: `^[0-9]+(s|m|h|d)$`, as milliseconds (`None`: the grammar is broken or the
/// span overflows).
fn deliver_in_ms(word: &str) -> Option<i64> {
    let unit = word.chars().last()?;
    let digits = &word[..word.len() - unit.len_utf8()];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale: i64 = match unit {
        's' => 1_000,
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        _ => return None,
    };
    digits.parse::<i64>().ok()?.checked_mul(scale)
}

/// When a scheduled input is delivered, as given: at a time (epoch ms) or after a span (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schedule {
    At(i64),
    In(i64),
}

/// The grammar-checked body of `POST C/inputs` before its schedule is read against the clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InputShape {
    body: InputBody,
    schedule: Option<Schedule>,
}

/// `attachments`: absent, or an array of upload ids.
fn attachments_of(shell: &Value) -> KernelResult<Vec<Uuid>> {
    match shell.get("attachments") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                uuid_of(v).ok_or_else(|| {
                    KernelError::validation(
                        "invalid_attachments",
                        &format!("/input/attachments/{i}"),
                        "an attachment is an upload id",
                    )
                })
            })
            .collect(),
        Some(_) => Err(invalid(
            "/input/attachments",
            "attachments must be an array of upload ids",
        )),
    }
}

/// `model`: absent, or `provider/model`.
fn model_of(shell: &Value) -> KernelResult<Option<String>> {
    let model = opt_string(shell, "model", "/input/model")?;
    if let Some(m) = &model
        && nexus_providers::ModelRef::parse(m).is_none()
    {
        return Err(invalid("/input/model", format!("model {m:?} is not provider/model")));
    }
    Ok(model)
}

/// `tool_names`: absent, or an array of strings without U+0000.
fn tool_names_of(shell: &Value) -> KernelResult<Option<Vec<String>>> {
    match shell.get("tool_names") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(names)) => Ok(Some(
            names
                .iter()
                .map(|n| n.as_str().filter(|s| !s.contains('\0')).map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| invalid("/input/tool_names", "tool_names must be strings"))?,
        )),
        Some(_) => Err(invalid("/input/tool_names", "tool_names must be an array of strings")),
    }
}

/// `approval_mode`: absent, or one of the approval words.
fn approval_mode_of(shell: &Value) -> KernelResult<Option<Mode>> {
    match shell.get("approval_mode") {
        None | Some(Value::Null) => Ok(None),
        given => {
            let mode = given.and_then(Value::as_str).and_then(Mode::from_word);
            Ok(Some(mode.ok_or_else(|| {
                invalid("/input/approval_mode", Mode::refusal(given))
            })?))
        }
    }
}

/// `delivery_mode`: absent (queue), `queue` or `steer`.
fn delivery_mode_of(shell: &Value) -> KernelResult<DeliveryMode> {
    let refusal = || invalid("/input/delivery_mode", "delivery_mode is queue or steer");
    match shell.get("delivery_mode") {
        None | Some(Value::Null) => Ok(DeliveryMode::Queue),
        Some(Value::String(s)) => DeliveryMode::parse(s).ok_or_else(refusal),
        Some(_) => Err(refusal()),
    }
}

/// `deliver_at` or `deliver_in`, in this order: `deliver_at_ambiguous` (both),
/// `deliver_at_not_steerable` (with `steer`), `validation_failed` for the grammar.
fn schedule_of(shell: &Value, mode: DeliveryMode) -> KernelResult<Option<Schedule>> {
    let at = opt_string(shell, "deliver_at", "/input/deliver_at")?;
    let within = opt_string(shell, "deliver_in", "/input/deliver_in")?;
    if at.is_some() && within.is_some() {
        return Err(refuse(
            Code::DeliverAtAmbiguous,
            "give deliver_at or deliver_in, not both",
        ));
    }
    if (at.is_some() || within.is_some()) && mode == DeliveryMode::Steer {
        return Err(refuse(Code::DeliverAtNotSteerable, "a scheduled input cannot steer"));
    }
    match (at, within) {
        (Some(at), _) => Ok(Some(Schedule::At(
            chrono::DateTime::parse_from_rfc3339(&at)
                .map_err(|_| invalid("/input/deliver_at", "deliver_at is an RFC 3339 time with an offset"))?
                .timestamp_millis(),
        ))),
        (None, Some(within)) => Ok(Some(Schedule::In(
            deliver_in_ms(&within).ok_or_else(deliver_in_invalid)?,
        ))),
        (None, None) => Ok(None),
    }
}

fn deliver_in_invalid() -> KernelError {
    invalid("/input/deliver_in", "deliver_in matches ^[0-9]+(s|m|h|d)$")
}

impl InputShape {
    /// The body's grammar, member by member (422 `validation_failed` with the member's
    /// pointer), and the schedule's ([`schedule_of`]).
    pub(crate) fn parse(shell: &Value) -> KernelResult<InputShape> {
        let content = opt_string(shell, "content", "/input/content")?;
        let attachments = attachments_of(shell)?;
        if content.is_none() && attachments.is_empty() {
            return Err(KernelError::validation(
                "content_required",
                "/input/content",
                "content is required unless there are attachments",
            ));
        }
        let to = opt_string(shell, "to", "/input/to")?;
        let model = model_of(shell)?;
        let tool_names = tool_names_of(shell)?;
        let approval_mode = approval_mode_of(shell)?;
        let delivery_mode = delivery_mode_of(shell)?;
        let schedule = schedule_of(shell, delivery_mode)?;
        let body = InputBody {
            content,
            attachments,
            to,
            model,
            tool_names,
            approval_mode,
            delivery_mode,
            deliver_at: None,
        };
        Ok(InputShape { body, schedule })
    }

    /// The body with its delivery time read against `now`: 422 `deliver_at_in_past` (more
    /// than 2 minutes ago), 422 `deliver_at_too_far` (more than 10 years ahead).
    pub(crate) fn at(self, now: i64) -> KernelResult<InputBody> {
        let InputShape { mut body, schedule } = self;
        body.deliver_at = match schedule {
            None => None,
            Some(Schedule::At(at)) => Some(at),
            Some(Schedule::In(ms)) => Some(now.checked_add(ms).ok_or_else(deliver_in_invalid)?),
        };
        if let Some(at) = body.deliver_at {
            if at < now - bounds::DELIVER_AT_PAST_MS {
                return Err(refuse(
                    Code::DeliverAtInPast,
                    "deliver_at is more than 2 minutes in the past",
                ));
            }
            if at > now.saturating_add(bounds::DELIVER_AT_AHEAD_MS) {
                return Err(refuse(Code::DeliverAtTooFar, "deliver_at is more than 10 years ahead"));
            }
        }
        Ok(body)
    }
}

/// The body's grammar and the four delivery refusals (runs.md §12), in this order:
/// `validation_failed` for a member's shape, `deliver_at_ambiguous`, `deliver_at_not_steerable`,
/// `validation_failed` for the time's grammar, `deliver_at_in_past`, `deliver_at_too_far`.
pub(crate) fn parse_input(shell: &Value, now: i64) -> KernelResult<InputBody> {
    InputShape::parse(shell)?.at(now)
}

/// The body of `POST C/inputs`: `{input: {…}}` ([`parse_input`] has the members' grammar).
#[derive(Debug, Clone, PartialEq)]
pub struct CreateInputRequest {
    /// The body as sent: an `Idempotency-Key` is bound to its digest.
    envelope: Value,
    shape: InputShape,
}

impl CreateInputRequest {
    /// 400 `parameter_missing` without an `input` object, then the members' grammar; the
    /// delivery time is read against the clock when applied.
    pub fn parse(body: &Value) -> KernelResult<CreateInputRequest> {
        let Some(shell) = body.get("input").filter(|i| i.is_object()) else {
            return Err(refuse(Code::ParameterMissing, "the body needs an `input` object"));
        };
        Ok(CreateInputRequest {
            shape: InputShape::parse(shell)?,
            envelope: body.clone(),
        })
    }
}

impl Conversations<'_> {
    /// The checks that need the answerer, in order: `to` names the answerer (422
    /// `answerer_not_eligible`), `approval_mode` only tightens the profile's (422
    /// `validation_failed`, reason `approval_mode_loosened`), every `tool_names` entry is a
    /// callable of the assembly (422 `tool_not_declared`).
    async fn check_against_answerer(
        &self,
        ws: &WorkspaceRow,
        conversation: &ConversationRow,
        input: &InputBody,
    ) -> KernelResult<()> {
        let answerer = self
            .store
            .member_by_id(conversation.answering_member_id)
            .await?
            .ok_or_else(|| refuse(Code::AnswererNotEligible, "the conversation's answerer is gone"))?;
        if let Some(to) = &input.to
            && *to != answerer.public_id.to_string()
            && *to != answerer.handle
        {
            return Err(
                refuse(Code::AnswererNotEligible, "to must name the conversation's answerer").with_path("/input/to"),
            );
        }
        let profile = match answerer.kind {
            MemberKind::Agent => crate::profile::configuration_read(answerer.configuration.as_deref()),
            MemberKind::Human => Value::Null,
        };
        if let Some(mode) = input.approval_mode {
            let floor = profile
                .get("approval_mode")
                .and_then(Value::as_str)
                .and_then(Mode::from_word);
            if floor.is_some_and(|f| tightness(mode) < tightness(f)) {
                return Err(KernelError::validation(
                    "approval_mode_loosened",
                    "/input/approval_mode",
                    "approval_mode may only tighten the profile's (bypass → ask → rules)",
                ));
            }
        }
        if let Some(names) = &input.tool_names {
            self.check_tool_names(ws, conversation, &answerer, &profile, names)
                .await?;
        }
        Ok(())
    }

    /// Runs the answerer's assembly with S = the conversation's default runner and N = `names`;
    /// only a name outside the callables refuses here (422 `tool_not_declared`). A human
    /// answerer has no declaration, so any name is undeclared.
    async fn check_tool_names(
        &self,
        ws: &WorkspaceRow,
        conversation: &ConversationRow,
        answerer: &MemberRow,
        profile: &Value,
        names: &[String],
    ) -> KernelResult<()> {
        if answerer.kind == MemberKind::Human {
            if let Some(first) = names.first() {
                return Err(refuse(Code::ToolNotDeclared, "a human answerer declares no tools")
                    .with_detail(first.clone())
                    .with_path("/input/tool_names/0"));
            }
            return Ok(());
        }
        let mut input = AssemblyInput::from_configuration(profile);
        input.default_runner_executor_public_id = match conversation.default_runner_id {
            Some(id) => self.store.executor_by_id(id).await?.map(|r| r.public_id),
            None => None,
        };
        input.tool_names = Some(names.to_vec());
        self.gather_facts_in(answerer, Some(ws), &mut input).await?;
        match declaration::assemble_owned(input) {
            Err(e) if e.kind == DeclErrorKind::ToolNotDeclared => {
                let mut err = KernelError::from(e);
                err.path = err.path.map(|p| format!("/input{p}"));
                Err(err)
            }
            _ => Ok(()),
        }
    }

    /// The attachments' uploads: each must exist and be readable by the caller (its own
    /// upload, or one bound in a workspace where the caller has standing), else 422
    /// `validation_failed`, reason `invalid_attachments`.
    async fn attachment_uploads(&self, principal: &MemberPrincipal, ids: &[Uuid]) -> KernelResult<Vec<i64>> {
        let mut out = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            let readable = match self.store.upload_by_public_id(*id).await? {
                Some(u) if u.creator_member_id == Some(principal.member.id) => Some(u.id),
                Some(u)
                    if self
                        .store
                        .upload_readable_via_workspace(u.id, principal.member.id)
                        .await? =>
                {
                    Some(u.id)
                }
                _ => None,
            };
            out.push(readable.ok_or_else(|| {
                KernelError::validation(
                    "invalid_attachments",
                    &format!("/input/attachments/{i}"),
                    "the caller cannot read this upload",
                )
            })?);
        }
        Ok(out)
    }

    /// The public shape of an input.
    async fn input_of(&self, names: &mut Names, row: &InputRow) -> KernelResult<Input> {
        let creator = match row.created_by_id {
            Some(id) => self.member_public(names, id).await?,
            None => None,
        };
        Ok(Input {
            public_id: row.public_id.to_string(),
            kind: row.kind.as_str().into(),
            state: row.state.as_str().into(),
            delivery_mode: row.delivery_mode.as_str().into(),
            content: row.content.clone(),
            attachments: serde_json::from_str(&row.attachments).unwrap_or(Value::Null),
            model: row.model.clone(),
            tool_names: row.tool_names.as_deref().and_then(|s| serde_json::from_str(s).ok()),
            approval_mode: row.approval_mode.map(ApprovalMode::from),
            deliver_at: row.deliver_at.map(time::iso),
            created_by_public_id: creator.map(|id| id.to_string()),
            created_at: time::iso(row.created_at),
            rest: Map::new(),
        })
    }

    /// The input row to insert (`steer_turn`: the running turn a steer binds to).
    fn new_input(
        principal: &MemberPrincipal,
        conversation: &ConversationRow,
        input: InputBody,
        upload_ids: Vec<i64>,
        steer_turn: Option<i64>,
        now: i64,
    ) -> NewInput {
        NewInput {
            public_id: time::new_id(),
            conversation_id: conversation.id,
            kind: InputKind::User,
            delivery_mode: input.delivery_mode,
            content: input.content,
            attachments: Value::from(input.attachments.iter().map(Uuid::to_string).collect::<Vec<_>>()).to_string(),
            attachment_upload_ids: upload_ids,
            model: input.model,
            tool_names: input.tool_names.map(|n| Value::from(n).to_string()),
            approval_mode: input.approval_mode,
            created_by_id: Some(principal.member.id),
            deliver_at: input.deliver_at,
            created_at: now,
            state: match steer_turn {
                Some(_) => nexus_store::InputState::Steering,
                None => nexus_store::InputState::Pending,
            },
            turn_id: steer_turn,
            wake: None,
            mail_key: None,
        }
    }

    /// Queues the input under the conversation's lock: 409 `conversation_archived` (its
    /// archive mark is read under that lock), 409 `input_queue_full`; appends
    /// `input_accepted` to the feed and refreshes the wake clock.
    async fn queue_input(
        &self,
        tx: &mut nexus_store::Tx,
        principal: &MemberPrincipal,
        conversation: &ConversationRow,
        input: InputBody,
        upload_ids: Vec<i64>,
        now: i64,
    ) -> KernelResult<InputRow> {
        // A steer sent while a reply runs binds to that turn; otherwise it simply queues.
        let running = tx
            .lock_conversation(conversation.id)
            .await?
            .and_then(|c| c.running_turn_id);
        let steer_turn = running.filter(|_| input.delivery_mode == DeliveryMode::Steer);
        let new = Self::new_input(principal, conversation, input, upload_ids, steer_turn, now);
        // The insert locks the conversation row; its archive mark is read under that lock.
        let inserted = tx.insert_input(new, bounds::PENDING_INPUTS as i64).await?;
        let archived = tx
            .conversation_by_public_id(conversation.public_id)
            .await?
            .is_none_or(|row| row.archived_at.is_some());
        if archived {
            return Err(refuse(
                Code::ConversationArchived,
                "the conversation is archived; unarchive it to add inputs",
            ));
        }
        let row = match inserted {
            InputInsert::Inserted(row) | InputInsert::Existing(row) => row,
            InputInsert::Full { bound } => {
                return Err(refuse(
                    Code::InputQueueFull,
                    format!("the conversation already holds {bound} pending inputs"),
                ));
            }
        };
        let data = json!({"input_public_id": row.public_id, "delivery_mode": row.delivery_mode.as_str()});
        tx.append_conversation_event(
            conversation.id,
            nexus_store::ConversationEventKind::InputAccepted,
            now,
            &data.to_string(),
        )
        .await?;
        tx.refresh_wake(conversation.id).await?;
        Ok(row)
    }

    /// `POST C/inputs` (runs.md §12): `{input}` as created (state `pending`;
    /// `input_accepted` on the feed), or the replay of a repeated `Idempotency-Key`. Refusals
    /// in order: the body's ([`CreateInputRequest::parse`]), the key's grammar, 409
    /// `idempotency_envelope_mismatch`, the delivery time, the answerer's checks, 422
    /// `invalid_attachments`, then under the conversation's lock 409 `conversation_archived`
    /// and 409 `input_queue_full`.
    pub async fn create_input(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        request: KernelResult<CreateInputRequest>,
        idempotency_key: Option<&str>,
    ) -> KernelResult<Idempotent<InputEnvelope>> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let conversation = self.conversation_in(&ws, c).await?;
        let request = request?;
        let route = "POST /workspaces/{workspace}/conversations/{conversation}/inputs";
        let idem = match self
            .idempotency_open(principal, route, &[workspace, c], idempotency_key, &request.envelope)
            .await?
        {
            Ok(idem) => idem,
            Err(replay) => return Ok(Idempotent::Replayed(replay)),
        };
        let input = request.shape.at(self.now_ms())?;
        self.check_against_answerer(&ws, &conversation, &input).await?;
        let upload_ids = self.attachment_uploads(principal, &input.attachments).await?;

        // The response's names are read now: inside the unit of work a pool read would wait
        // for a second connection while this one holds the conversation's lock.
        let mut names = Names::default();
        self.member_public(&mut names, principal.member.id).await?;
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        if let Some(replay) = replay_in(&mut tx, idem.as_ref(), now).await? {
            return Ok(Idempotent::Replayed(replay));
        }
        let row = self
            .queue_input(&mut tx, principal, &conversation, input, upload_ids, now)
            .await?;
        let response = InputEnvelope {
            input: self.input_of(&mut names, &row).await?,
        };
        let created = self.commit_created(tx, idem.as_ref(), response, now).await?;
        self.publish(vec![
            AfterCommit::ConversationEvents(conversation.id),
            AfterCommit::WakeJobs,
        ])
        .await;
        Ok(created)
    }

    /// `GET C/inputs?after=&limit=`: every input of the conversation, oldest first.
    pub async fn list_inputs(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        after: Option<&str>,
        limit: Option<i64>,
    ) -> KernelResult<InputPage> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let conversation = self.conversation_in(&ws, c).await?;
        let after = parse_cursor(after)?;
        let limit = page_limit(limit);
        let rows = self.store.conversation_inputs(conversation.id, after, limit).await?;
        let mut names = Names::default();
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(self.input_of(&mut names, row).await?);
        }
        let next = (rows.len() as i64 == limit)
            .then(|| rows.last().map(|r| r.id))
            .flatten();
        Ok(InputPage {
            inputs: out,
            pagination: page_after(next),
        })
    }

    /// `DELETE C/inputs/{id}`: a `pending` input becomes `canceled`; `{input}`. 404
    /// `not_found`, 409 `input_not_pending`.
    pub async fn delete_input(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        input: Uuid,
    ) -> KernelResult<InputEnvelope> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let conversation = self.conversation_in(&ws, c).await?;
        let mut tx = self.store.begin().await?;
        let row = tx
            .input_by_public_id(conversation.id, input)
            .await?
            .ok_or_else(|| refuse(Code::NotFound, "no such input"))?;
        if !tx.cancel_pending_input(row.id).await? {
            return Err(refuse(Code::InputNotPending, "only a pending input can be deleted"));
        }
        tx.refresh_wake(conversation.id).await?;
        let row = tx
            .input_by_public_id(conversation.id, input)
            .await?
            .ok_or_else(|| refuse(Code::NotFound, "no such input"))?;
        tx.commit().await?;
        let mut names = Names::default();
        Ok(InputEnvelope {
            input: self.input_of(&mut names, &row).await?,
        })
    }
}
