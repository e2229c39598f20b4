//! The conversation's timeline as members see and steer it (runs.md §12): `GET C/turns` and
//! `POST C/cancellation` (the running turn's run stops, and so do the children that turn
//! spawned with `lifetime: turn`). The `cancel` kernel tool stops a turn the same way.

use nexus_api::turns::{Cancellation, Turn, TurnPage};
use nexus_core::codes::Code;
use nexus_store::prelude::*;
use nexus_store::{ConversationRow, RunStatus, TurnRow, Tx};
use serde_json::{Map, json};
use uuid::Uuid;

use super::hosting::ReplyRoute;
use super::refuse;
use crate::error::KernelResult;
use crate::runs::AfterCommit;
use crate::{Conversations, MemberPrincipal, time};

/// The largest turns page, and its default.
const TURNS_MAX: i64 = 200;
const TURNS_DEFAULT: i64 = 50;

impl Conversations<'_> {
    /// The public shape of a turn.
    async fn turn_of(&self, turn: &TurnRow) -> KernelResult<Turn> {
        let run = match turn.run_id {
            Some(id) => self.store.run_by_id(id).await?.map(|r| r.public_id.to_string()),
            None => None,
        };
        Ok(Turn {
            public_id: turn.public_id.to_string(),
            position: turn.position,
            role: turn.role.as_str().into(),
            run_public_id: run,
            status: turn.status.as_str().into(),
            content: turn.content.clone(),
            error: turn.error_key.as_ref().map(|k| json!({"key": k})),
            created_at: time::iso(turn.created_at),
            ended_at: turn.ended_at.map(time::iso),
            rest: Map::new(),
        })
    }

    /// `GET C/turns?after=&limit=` → `{turns, pagination}`: turns by ascending position after
    /// the position `after` (default 0); `next_after` is the last position returned when the
    /// page was full.
    pub async fn list_turns(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        after: Option<i64>,
        limit: Option<i64>,
    ) -> KernelResult<TurnPage> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let conversation = self.conversation_in(&ws, c).await?;
        let after = after.unwrap_or(0);
        if after < 0 {
            return Err(refuse(Code::ParameterInvalid, "after must be a non-negative position"));
        }
        let limit = limit.unwrap_or(TURNS_DEFAULT).clamp(1, TURNS_MAX);
        let rows = self.store.turns_page(conversation.id, after, limit, false).await?;
        let mut turns = Vec::with_capacity(rows.len());
        for t in &rows {
            turns.push(self.turn_of(t).await?);
        }
        let next = (rows.len() as i64 == limit)
            .then(|| rows.last().map(|t| t.position))
            .flatten();
        // Unlike the id cursors of the other listings, the position goes out as a number.
        Ok(TurnPage {
            turns,
            pagination: json!({"next_after": next}),
        })
    }

    /// `POST C/cancellation` → `{conversation_public_id, canceled_turn_public_id | null}`:
    /// stops the running turn's run (a forced stop) and its `lifetime: turn` children's turns.
    pub async fn cancel_conversation(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
    ) -> KernelResult<Cancellation> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let conversation = self.conversation_in(&ws, c).await?;
        let canceled = self.cancel_running_turn(&conversation).await?;
        Ok(Cancellation {
            conversation_public_id: conversation.public_id.to_string(),
            canceled_turn_public_id: canceled.map(|id| id.to_string()),
        })
    }

    /// Stops the conversation's running turn, if any, in one unit of work; returns the turn's
    /// public id.
    pub(crate) async fn cancel_running_turn(&self, conversation: &ConversationRow) -> KernelResult<Option<Uuid>> {
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let mut effects = Vec::new();
        let canceled = self.cancel_turn_in(&mut tx, conversation.id, now, &mut effects).await?;
        tx.commit().await?;
        self.publish(effects).await;
        Ok(canceled)
    }

    /// The stop of a conversation's running turn inside a unit of work, then of the children
    /// that turn spawned with `lifetime: turn` (each a tree of its own, walked without
    /// recursion).
    pub(crate) async fn cancel_turn_in(
        &self,
        tx: &mut Tx,
        conversation_id: i64,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<Option<Uuid>> {
        let mut first = None;
        let mut queue = vec![conversation_id];
        while let Some(id) = queue.pop() {
            let Some(locked) = tx.lock_conversation(id).await? else {
                continue;
            };
            let Some(turn_id) = locked.running_turn_id else {
                continue;
            };
            let Some(turn) = tx.turn_by_id(turn_id).await? else {
                continue;
            };
            if id == conversation_id {
                first = Some(turn.public_id);
            }
            let Some(run_id) = turn.run_id else { continue };
            for child in tx.children_of_run(run_id).await? {
                if ReplyRoute::of(child.reply_route.as_deref()).is_some_and(|r| r.lifetime == "turn") {
                    queue.push(child.id);
                }
            }
            let mut run = tx.lock_run(run_id).await?;
            if !run.status.is_terminal() && run.status != RunStatus::Canceling {
                self.stop_in(tx, &mut run, true, now, effects).await?;
            }
        }
        Ok(first)
    }
}
