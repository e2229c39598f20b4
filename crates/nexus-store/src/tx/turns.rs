//! Turns and the conversation state that drives them (migration 0018, runs.md §12), inside
//! the unit of work.

use super::*;
use crate::{ConversationRow, InputRow, NewTurn, TurnEnd, TurnRow};

impl Tx {
    /// The conversation row, locked for the unit of work (`None`: no such row).
    pub async fn lock_conversation(&mut self, id: i64) -> Result<Option<ConversationRow>> {
        tx_dispatch!(self, lock_conversation(id))
    }

    pub async fn conversation_by_id(&mut self, id: i64) -> Result<Option<ConversationRow>> {
        tx_dispatch!(self, conversation_by_id(id))
    }

    /// Inserts a turn at the conversation's next position.
    pub async fn insert_turn(&mut self, new: NewTurn) -> Result<TurnRow> {
        tx_dispatch!(self, insert_turn(&new))
    }

    pub async fn turn_by_id(&mut self, id: i64) -> Result<Option<TurnRow>> {
        tx_dispatch!(self, turn_by_id(id))
    }

    /// The assistant turn a run hosts.
    pub async fn turn_of_run(&mut self, run_id: i64) -> Result<Option<TurnRow>> {
        tx_dispatch!(self, turn_of_run(run_id))
    }

    /// `running → end.status`; false when the turn had already ended.
    pub async fn end_turn(&mut self, id: i64, end: TurnEnd) -> Result<bool> {
        tx_dispatch!(self, end_turn(id, &end))
    }

    /// Records the history length before the prompt of the turn `run_id` hosts.
    pub async fn set_replay_from(&mut self, run_id: i64, entries: i64) -> Result<()> {
        tx_dispatch!(self, set_replay_from(run_id, entries))
    }

    /// Sets or clears the conversation's running turn and recomputes its `wake_at`.
    pub async fn set_running_turn(&mut self, conversation_id: i64, turn_id: Option<i64>) -> Result<()> {
        tx_dispatch!(self, set_running_turn(conversation_id, turn_id))
    }

    /// Recomputes the conversation's `wake_at`.
    pub async fn refresh_wake(&mut self, conversation_id: i64) -> Result<()> {
        tx_dispatch!(self, refresh_wake(conversation_id))
    }

    /// The earliest due pending input that may open a turn.
    pub async fn head_input(&mut self, conversation_id: i64, now: i64) -> Result<Option<InputRow>> {
        tx_dispatch!(self, head_input(conversation_id, now))
    }

    /// Every due pending mail input, oldest first.
    pub async fn due_mail(&mut self, conversation_id: i64, now: i64) -> Result<Vec<InputRow>> {
        tx_dispatch!(self, due_mail(conversation_id, now))
    }

    /// The steers bound to a turn and not yet delivered, oldest first.
    pub async fn steers_of_turn(&mut self, turn_id: i64) -> Result<Vec<InputRow>> {
        tx_dispatch!(self, steers_of_turn(turn_id))
    }

    /// `pending | steering → consumed` by `turn_id`; false when it was neither.
    pub async fn consume_input(&mut self, id: i64, turn_id: i64) -> Result<bool> {
        tx_dispatch!(self, consume_input(id, turn_id))
    }

    /// The steers still bound to `turn_id` fall back to the queue.
    pub async fn release_steers(&mut self, turn_id: i64) -> Result<u64> {
        tx_dispatch!(self, release_steers(turn_id))
    }

    pub async fn child_by_label(&mut self, parent_id: i64, label: &str) -> Result<Option<ConversationRow>> {
        tx_dispatch!(self, child_by_label(parent_id, label))
    }

    /// The child conversations spawned by the tasks of a run.
    pub async fn children_of_run(&mut self, run_id: i64) -> Result<Vec<ConversationRow>> {
        tx_dispatch!(self, children_of_run(run_id))
    }

    /// The child conversation a spawn call created.
    pub async fn child_of_spawn(&mut self, task_id: i64) -> Result<Option<ConversationRow>> {
        tx_dispatch!(self, child_of_spawn(task_id))
    }

    pub async fn pending_input_count(&mut self, conversation_id: i64) -> Result<i64> {
        tx_dispatch!(self, pending_input_count(conversation_id))
    }
}
