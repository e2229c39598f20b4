//! A conversation's inputs (runs.md §12): the input record, its words, and the create body.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::{ApprovalMode, Pagination, open_words};

open_words! {
    /// Who queued an input.
    pub enum InputKind {
        /// A member's input.
        User = "user",
        /// Kernel mail: a background result or a child's reply.
        TaskResult = "task_result",
    }
}

open_words! {
    /// An input's state (runs.md §12).
    pub enum InputState {
        /// Queued, not yet taken by a turn (only this state can be deleted).
        Pending = "pending",
        /// Bound to the running turn as a steer.
        Steering = "steering",
        /// Taken by a turn.
        Consumed = "consumed",
        /// Deleted while pending.
        Canceled = "canceled",
    }
}

open_words! {
    /// How an input is delivered.
    pub enum DeliveryMode {
        /// Waits for the conversation to be idle and opens a turn.
        Queue = "queue",
        /// Joins the running turn after its next continuation round (queues when idle).
        Steer = "steer",
    }
}

/// One input of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Input {
    /// The input's id.
    pub public_id: String,
    /// Who queued it.
    pub kind: InputKind,
    /// Its state.
    pub state: InputState,
    /// How it is delivered.
    pub delivery_mode: DeliveryMode,
    /// The text, when given.
    #[serde(default)]
    pub content: Option<String>,
    /// The attached uploads.
    #[serde(default)]
    pub attachments: Value,
    /// The model the turn uses, when given.
    #[serde(default)]
    pub model: Option<String>,
    /// The tool names the turn is given, when named.
    #[serde(default)]
    pub tool_names: Option<Vec<String>>,
    /// The tightened approval mode, when given.
    #[serde(default)]
    pub approval_mode: Option<ApprovalMode>,
    /// RFC 3339 (UTC) time the input becomes due, when scheduled.
    #[serde(default)]
    pub deliver_at: Option<String>,
    /// The member who queued it (`None` for kernel mail).
    #[serde(default)]
    pub created_by_public_id: Option<String>,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET C/inputs`: one page of inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InputPage {
    /// The inputs, oldest first.
    pub inputs: Vec<Input>,
    /// The cursor of the next page.
    #[serde(default)]
    pub pagination: Pagination,
}

/// `POST C/inputs`: 201 `{input}`, or 200 with `replayed: true` for a repeated key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InputCreated {
    /// The input as created.
    pub input: Input,
    /// Whether this answer replays an earlier create with the same `Idempotency-Key`.
    #[serde(default)]
    pub replayed: bool,
}

/// The `{input}` answer of a delete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InputEnvelope {
    /// The input.
    pub input: Input,
}

/// The body of `POST C/inputs`, with its optional `Idempotency-Key`. The server checks the
/// fields (for example `deliver_at` with `deliver_in` is 422 `deliver_at_ambiguous`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewInput {
    /// The text (required unless there are attachments).
    pub content: Option<String>,
    /// Upload ids to attach.
    pub attachments: Vec<String>,
    /// The answerer, by id or handle.
    pub to: Option<String>,
    /// The model of the turn.
    pub model: Option<String>,
    /// The tools the turn is given.
    pub tool_names: Option<Vec<String>>,
    /// A tightening of the profile's approval mode.
    pub approval_mode: Option<ApprovalMode>,
    /// Queue (the server's default) or steer.
    pub delivery_mode: Option<DeliveryMode>,
    /// An RFC 3339 time with an offset.
    pub deliver_at: Option<String>,
    /// A delay such as `5m` (`^[0-9]+(s|m|h|d)$`).
    pub deliver_in: Option<String>,
    /// Sent as the `Idempotency-Key` header.
    pub idempotency_key: Option<String>,
}

impl NewInput {
    /// An input with `content`.
    pub fn text(content: impl Into<String>) -> NewInput {
        NewInput {
            content: Some(content.into()),
            ..NewInput::default()
        }
    }

    /// Attaches the upload `upload_public_id`.
    pub fn attach(mut self, upload_public_id: impl Into<String>) -> NewInput {
        self.attachments.push(upload_public_id.into());
        self
    }

    /// Names the answerer.
    pub fn to(mut self, answerer: impl Into<String>) -> NewInput {
        self.to = Some(answerer.into());
        self
    }

    /// Sets the turn's model.
    pub fn model(mut self, model: impl Into<String>) -> NewInput {
        self.model = Some(model.into());
        self
    }

    /// Sets the turn's tool names.
    pub fn tool_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> NewInput {
        self.tool_names = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Tightens the approval mode.
    pub fn approval_mode(mut self, mode: ApprovalMode) -> NewInput {
        self.approval_mode = Some(mode);
        self
    }

    /// Sets the delivery mode.
    pub fn delivery_mode(mut self, mode: DeliveryMode) -> NewInput {
        self.delivery_mode = Some(mode);
        self
    }

    /// Schedules the input at an RFC 3339 time with an offset.
    pub fn deliver_at(mut self, at: impl Into<String>) -> NewInput {
        self.deliver_at = Some(at.into());
        self
    }

    /// Schedules the input after a delay such as `5m`.
    pub fn deliver_in(mut self, delay: impl Into<String>) -> NewInput {
        self.deliver_in = Some(delay.into());
        self
    }

    /// Sends the create with this `Idempotency-Key`.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> NewInput {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The JSON body, `{input: {…}}`, naming only what was set.
    pub fn body(&self) -> Value {
        let body = CreateInput {
            input: InputFields {
                content: self.content.clone(),
                attachments: self.attachments.clone(),
                to: self.to.clone(),
                model: self.model.clone(),
                tool_names: self.tool_names.clone(),
                approval_mode: self.approval_mode.clone(),
                delivery_mode: self.delivery_mode.clone(),
                deliver_at: self.deliver_at.clone(),
                deliver_in: self.deliver_in.clone(),
            },
        };
        serde_json::to_value(body).expect("an input body serializes")
    }
}

/// The body of `POST C/inputs`: `{input}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreateInput {
    /// The input.
    pub input: InputFields,
}

/// The members of an input (runs.md §12): `content` is required unless there are attachments;
/// `deliver_at` and `deliver_in` exclude each other.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InputFields {
    /// The text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Upload ids to attach.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<String>,
    /// The answerer, by id or handle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The model of the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The tools the turn is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_names: Option<Vec<String>>,
    /// A tightening of the profile's approval mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
    /// `queue` (the default) or `steer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_mode: Option<DeliveryMode>,
    /// An RFC 3339 time with an offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliver_at: Option<String>,
    /// A delay such as `5m` (`^[0-9]+(s|m|h|d)$`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliver_in: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_input_body_names_only_what_was_set() {
        let body = NewInput::text("hi")
            .delivery_mode(DeliveryMode::Steer)
            .approval_mode(ApprovalMode::Rules)
            .tool_names(["echo"])
            .idempotency_key("k")
            .body();
        assert_eq!(
            body,
            json!({"input": {"content": "hi", "delivery_mode": "steer", "approval_mode": "rules",
                             "tool_names": ["echo"]}})
        );
        assert_eq!(
            NewInput::default().attach("u1").deliver_in("5m").body(),
            json!({"input": {"attachments": ["u1"], "deliver_in": "5m"}})
        );
    }

    #[test]
    fn an_unknown_state_still_decodes() {
        let input: Input = serde_json::from_value(json!({
            "public_id": "i", "kind": "user", "state": "expired", "delivery_mode": "queue",
            "content": "x", "attachments": [], "model": null, "tool_names": null,
            "approval_mode": null, "deliver_at": null, "created_by_public_id": "m",
            "created_at": "2026-01-01T00:00:00Z", "priority": 2,
        }))
        .unwrap();
        assert_eq!(input.state, InputState::Other("expired".into()));
        assert_eq!(input.rest.get("priority"), Some(&json!(2)));
    }
}
