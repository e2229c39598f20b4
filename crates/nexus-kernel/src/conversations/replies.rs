//! A spawned child's first reply (kernel-tools.md §0 background delivery, §4): into the
//! parent's paired await (`wait: true`), or as kernel mail — a `task_result` input of the parent
//! conversation, keyed so it is queued once, past the queue bound and whatever the archive mark
//! (`wait: false`). `lifetime: turn` also completes the hidden obligation the spawning run held.

use nexus_core::bounds;
use nexus_core::pairing;
use nexus_store::{DeliveryMode, InputInsert, InputKind, InputState, NewInput, TaskStatus, TurnStatus, Tx, Wake};
use serde_json::json;

use super::hosting::ReplyRoute;
use crate::error::KernelResult;
use crate::runs::AfterCommit;
use crate::{Conversations, time};

/// The text blocks of a kernel-completed await.
fn text_blocks(text: &str) -> String {
    json!([{"type": "text", "text": text}]).to_string()
}

impl Conversations<'_> {
    /// Completes a running kernel-held await of the spawning run with `text` (idle when it has
    /// already settled: a timed-out wait keeps its timeout).
    async fn complete_await_with(
        &self,
        tx: &mut Tx,
        run_id: i64,
        task_id: i64,
        text: &str,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let mut run = tx.lock_run(run_id).await?;
        let Some(mut task) = tx.task_by_id(task_id).await? else {
            return Ok(());
        };
        if task.status != TaskStatus::Running {
            return Ok(());
        }
        task.content = Some(text_blocks(text));
        task.settled_at = Some(now);
        if self
            .transition(tx, &mut run, &mut task, TaskStatus::Completed, now)
            .await?
        {
            effects.extend(self.after_settle(tx, &mut run, &task, now).await?);
        }
        Ok(())
    }

    /// Delivers the first reply of the child conversation `child_id` where its route says; a
    /// conversation without a route (not spawned) has nowhere to deliver.
    pub(crate) async fn deliver_first_reply(
        &self,
        tx: &mut Tx,
        child_id: i64,
        reply: Option<&str>,
        status: TurnStatus,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let Some(child) = tx.conversation_by_id(child_id).await? else {
            return Ok(());
        };
        let Some(route) = ReplyRoute::of(child.reply_route.as_deref()) else {
            return Ok(());
        };
        let text = reply.unwrap_or_default();
        if let Some(await_task) = route.await_task {
            return self
                .complete_await_with(tx, route.run, await_task, text, now, effects)
                .await;
        }
        let envelope = pairing::task_result_envelope(
            &route.call_key,
            status.as_str(),
            None,
            &pairing::escape_envelope_text(text),
        );
        let key = format!("reply:{}", child.public_id);
        if self
            .queue_mail(tx, route.parent, envelope.clone(), route.wake, key, now)
            .await?
        {
            effects.push(AfterCommit::ConversationEvents(route.parent));
            effects.push(AfterCommit::WakeJobs);
        }
        if let Some(obligation) = route.obligation {
            self.complete_await_with(tx, route.run, obligation, &envelope, now, effects)
                .await?;
        }
        Ok(())
    }

    /// A delegation obligation of a conversation-hosted run completed (its branch settled):
    /// the branch's result is queued once as kernel mail of the hosting conversation, with the
    /// call's `wake`. A standalone run reads it in its mail continuation instead.
    pub(crate) async fn mail_delegation_result(
        &self,
        tx: &mut Tx,
        run: &nexus_store::RunRow,
        obligation: &nexus_store::TaskRow,
        envelope: &str,
        now: i64,
    ) -> KernelResult<()> {
        let Some(hosting) = super::hosting::Hosting::of(&run.hosting) else {
            return Ok(());
        };
        let Some(conversation) = tx.conversation_by_public_id(hosting.conversation_public_id).await? else {
            return Ok(());
        };
        let call = match obligation.declaring_task_id {
            Some(id) => tx.task_by_id(id).await?,
            None => None,
        };
        let wake = call
            .as_ref()
            .and_then(|c| c.tool_input.as_deref())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .and_then(|i| i.get("wake").and_then(serde_json::Value::as_str).and_then(Wake::parse))
            .unwrap_or_default();
        let key = format!("delegation:{}:{}", run.public_id, obligation.key);
        self.queue_mail(tx, conversation.id, envelope.to_string(), wake, key, now)
            .await?;
        Ok(())
    }

    /// Queues kernel mail on a conversation: a `task_result` input, pending, past the queue
    /// bound, once per `mail_key`, with its `input_accepted` event and the wake clock moved.
    /// Returns whether it was queued now (false: the key was already there).
    async fn queue_mail(
        &self,
        tx: &mut Tx,
        conversation_id: i64,
        content: String,
        wake: Wake,
        mail_key: String,
        now: i64,
    ) -> KernelResult<bool> {
        let mail = NewInput {
            public_id: time::new_id(),
            conversation_id,
            kind: InputKind::TaskResult,
            delivery_mode: DeliveryMode::Queue,
            content: Some(content),
            attachments: "[]".into(),
            attachment_upload_ids: Vec::new(),
            model: None,
            tool_names: None,
            approval_mode: None,
            created_by_id: None,
            deliver_at: None,
            created_at: now,
            state: InputState::Pending,
            turn_id: None,
            wake: Some(wake),
            mail_key: Some(mail_key),
        };
        let InputInsert::Inserted(row) = tx.insert_input(mail, bounds::PENDING_INPUTS as i64).await? else {
            return Ok(false);
        };
        let data = json!({"input_public_id": row.public_id, "kind": "task_result", "delivery_mode": "queue"});
        tx.append_conversation_event(
            conversation_id,
            nexus_store::ConversationEventKind::InputAccepted,
            now,
            &data.to_string(),
        )
        .await?;
        tx.refresh_wake(conversation_id).await?;
        Ok(true)
    }
}
