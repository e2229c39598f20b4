//! Conversation inputs (runs.md §12): `POST C/inputs` (with an idempotency key), `GET
//! C/inputs`, `DELETE C/inputs/{id}`. An input is stored `pending`; nothing consumes it yet
//! (turns are issue 25's next part).

use nexus_core::approval::Mode;
use nexus_core::bounds;
use nexus_core::codes::Code;
use nexus_core::declaration::{self, AssemblyInput, DeclErrorKind};
use nexus_store::{
    ConversationRow, DeliveryMode, Engine, InputInsert, InputKind, InputRow, MemberKind, MemberRow, NewInput,
    WorkspaceRow,
};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{opt_string, refuse, replay_in, uuid_of};
use crate::error::{KernelError, KernelResult};
use crate::names::Names;
use crate::paging::{page_limit, pagination, parse_cursor};
use crate::runs::AfterCommit;
use crate::{Kernel, MemberPrincipal, time};

/// The approval words from loosest to tightest (runs.md §12: an input may only tighten).
const APPROVAL_ORDER: [&str; 3] = ["bypass", "ask", "rules"];

/// The grammar-checked body of `POST C/inputs`, before the kernel's checks.
pub(crate) struct InputBody {
    pub(crate) content: Option<String>,
    pub(crate) attachments: Vec<Uuid>,
    pub(crate) to: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) tool_names: Option<Vec<String>>,
    pub(crate) approval_mode: Option<&'static str>,
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

/// The body's grammar and the four delivery refusals (runs.md §12), in this order:
/// `validation_failed` for a member's shape, `deliver_at_ambiguous`, `deliver_at_not_steerable`,
/// `validation_failed` for the time's grammar, `deliver_at_in_past`, `deliver_at_too_far`.
pub(crate) fn parse_input(shell: &Value, now: i64) -> KernelResult<InputBody> {
    let content = opt_string(shell, "content", "/input/content")?;
    let attachments = match shell.get("attachments") {
        None | Some(Value::Null) => Vec::new(),
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
            .collect::<KernelResult<Vec<_>>>()?,
        Some(_) => {
            return Err(invalid(
                "/input/attachments",
                "attachments must be an array of upload ids",
            ));
        }
    };
    if content.is_none() && attachments.is_empty() {
        return Err(KernelError::validation(
            "content_required",
            "/input/content",
            "content is required unless there are attachments",
        ));
    }
    let to = opt_string(shell, "to", "/input/to")?;
    let model = opt_string(shell, "model", "/input/model")?;
    if let Some(m) = &model
        && nexus_providers::ModelRef::parse(m).is_none()
    {
        return Err(invalid("/input/model", format!("model {m:?} is not provider/model")));
    }
    let tool_names = match shell.get("tool_names") {
        None | Some(Value::Null) => None,
        Some(Value::Array(names)) => Some(
            names
                .iter()
                .map(|n| n.as_str().filter(|s| !s.contains('\0')).map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| invalid("/input/tool_names", "tool_names must be strings"))?,
        ),
        Some(_) => return Err(invalid("/input/tool_names", "tool_names must be an array of strings")),
    };
    let approval_mode = match shell.get("approval_mode") {
        None | Some(Value::Null) => None,
        given => {
            let word = given
                .and_then(Value::as_str)
                .and_then(|s| APPROVAL_ORDER.into_iter().find(|w| *w == s));
            Some(word.ok_or_else(|| invalid("/input/approval_mode", Mode::refusal(given)))?)
        }
    };
    let delivery_mode = match shell.get("delivery_mode") {
        None | Some(Value::Null) => DeliveryMode::Queue,
        Some(Value::String(s)) => {
            DeliveryMode::parse(s).ok_or_else(|| invalid("/input/delivery_mode", "delivery_mode is queue or steer"))?
        }
        Some(_) => return Err(invalid("/input/delivery_mode", "delivery_mode is queue or steer")),
    };
    let at = opt_string(shell, "deliver_at", "/input/deliver_at")?;
    let within = opt_string(shell, "deliver_in", "/input/deliver_in")?;
    if at.is_some() && within.is_some() {
        return Err(refuse(
            Code::DeliverAtAmbiguous,
            "give deliver_at or deliver_in, not both",
        ));
    }
    if (at.is_some() || within.is_some()) && delivery_mode == DeliveryMode::Steer {
        return Err(refuse(Code::DeliverAtNotSteerable, "a scheduled input cannot steer"));
    }
    let deliver_at = match (at, within) {
        (Some(at), _) => Some(
            chrono::DateTime::parse_from_rfc3339(&at)
                .map_err(|_| invalid("/input/deliver_at", "deliver_at is an RFC 3339 time with an offset"))?
                .timestamp_millis(),
        ),
        (None, Some(within)) => Some(
            deliver_in_ms(&within)
                .and_then(|ms| now.checked_add(ms))
                .ok_or_else(|| invalid("/input/deliver_in", "deliver_in matches ^[0-9]+(s|m|h|d)$"))?,
        ),
        (None, None) => None,
    };
    if let Some(at) = deliver_at {
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
    Ok(InputBody {
        content,
        attachments,
        to,
        model,
        tool_names,
        approval_mode,
        delivery_mode,
        deliver_at,
    })
}

impl Kernel {
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
        if let Some(word) = input.approval_mode {
            let rank = |w: &str| APPROVAL_ORDER.iter().position(|x| *x == w);
            let floor = profile.get("approval_mode").and_then(Value::as_str).and_then(rank);
            if floor.is_some_and(|f| rank(word).is_some_and(|r| r < f)) {
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
    async fn input_json(&self, names: &mut Names, row: &InputRow) -> KernelResult<Value> {
        let creator = match row.created_by_id {
            Some(id) => self.member_public(names, id).await?,
            None => None,
        };
        let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
        Ok(json!({
            "public_id": row.public_id,
            "kind": row.kind.as_str(),
            "state": row.state.as_str(),
            "delivery_mode": row.delivery_mode.as_str(),
            "content": row.content,
            "attachments": parse(&row.attachments),
            "model": row.model,
            "tool_names": row.tool_names.as_deref().map(parse),
            "approval_mode": row.approval_mode,
            "deliver_at": row.deliver_at.map(time::iso),
            "created_by_public_id": creator,
            "created_at": time::iso(row.created_at),
        }))
    }

    /// `POST C/inputs` (runs.md §12): 201 `{input}` (state `pending`; `input_accepted` on the
    /// feed), or 200 with
    /// `replayed: true`. Refusals in order: 400 `parameter_missing` (no `input` object), the
    /// key's grammar, 409 `idempotency_envelope_mismatch`, the body's grammar and delivery
    /// ([`parse_input`]), the answerer's checks, 422 `invalid_attachments`, then under the
    /// conversation's lock 409 `conversation_archived` and 409 `input_queue_full`.
    pub async fn create_input(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        body: &Value,
        idempotency_key: Option<&str>,
    ) -> KernelResult<(u16, Value)> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let conversation = self.conversation_in(&ws, c).await?;
        let Some(shell) = body.get("input").filter(|i| i.is_object()) else {
            return Err(refuse(Code::ParameterMissing, "the body needs an `input` object"));
        };
        let route = "POST /workspaces/{workspace}/conversations/{conversation}/inputs";
        let idem = match self
            .idempotency_open(principal, route, &[workspace, c], idempotency_key, body)
            .await?
        {
            Ok(idem) => idem,
            Err(replay) => return Ok(replay),
        };
        let input = parse_input(shell, self.now_ms())?;
        self.check_against_answerer(&ws, &conversation, &input).await?;
        let upload_ids = self.attachment_uploads(principal, &input.attachments).await?;

        // The response's names are read now: inside the unit of work a pool read would wait
        // for a second connection while this one holds the conversation's lock.
        let mut names = Names::default();
        self.member_public(&mut names, principal.member.id).await?;
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        if let Some(replay) = replay_in(&mut tx, idem.as_ref(), now).await? {
            return Ok(replay);
        }
        // A steer sent while a reply runs binds to that turn; otherwise it simply queues.
        let running = tx
            .lock_conversation(conversation.id)
            .await?
            .and_then(|c| c.running_turn_id);
        let steer_turn = running.filter(|_| input.delivery_mode == DeliveryMode::Steer);
        let new = NewInput {
            public_id: time::new_id(),
            conversation_id: conversation.id,
            kind: InputKind::User,
            delivery_mode: input.delivery_mode,
            content: input.content,
            attachments: Value::from(input.attachments.iter().map(Uuid::to_string).collect::<Vec<_>>()).to_string(),
            attachment_upload_ids: upload_ids,
            model: input.model,
            tool_names: input.tool_names.map(|n| Value::from(n).to_string()),
            approval_mode: input.approval_mode.map(str::to_string),
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
        };
        // The insert locks the conversation row; its archive mark is read under that lock.
        let inserted = tx.insert_input(new, bounds::PENDING_INPUTS as i64).await?;
        let archived = tx
            .conversation_by_public_id(c)
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
        let response = json!({"input": self.input_json(&mut names, &row).await?});
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
    ) -> KernelResult<Value> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let conversation = self.conversation_in(&ws, c).await?;
        let after = parse_cursor(after)?;
        let limit = page_limit(limit);
        let rows = self.store.conversation_inputs(conversation.id, after, limit).await?;
        let mut names = Names::default();
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(self.input_json(&mut names, row).await?);
        }
        let next = (rows.len() as i64 == limit)
            .then(|| rows.last().map(|r| r.id))
            .flatten();
        Ok(json!({"inputs": out, "pagination": pagination(next)}))
    }

    /// `DELETE C/inputs/{id}`: a `pending` input becomes `canceled`; `{input}`. 404
    /// `not_found`, 409 `input_not_pending`.
    pub async fn delete_input(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        input: Uuid,
    ) -> KernelResult<Value> {
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
        Ok(json!({"input": self.input_json(&mut names, &row).await?}))
    }
}
