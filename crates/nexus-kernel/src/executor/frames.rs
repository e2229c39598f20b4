//! The frames of an executor's push channel (executor.md §10), typed. The signals seam carries
//! them as values; they become JSON text only at the edges: the server's WebSocket and the
//! PostgreSQL notice that carries a frame to the other nodes.
//!
//! This file names no `Kernel`: the signals seam, which the kernel holds, imports it.

use nexus_api::inbox::RowKind;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One push-channel frame; it serializes as `{"type": <word>, …members}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PushFrame {
    /// `{"type":"hello","executor_public_id","credential_epoch"}`: the first frame on a channel.
    Hello {
        executor_public_id: Uuid,
        credential_epoch: i64,
    },
    /// `{"type":"work_available","kind","run_public_id","task_key"}`: a row parked in the
    /// executor's inbox.
    WorkAvailable {
        kind: RowKind,
        run_public_id: Uuid,
        task_key: String,
    },
    /// `{"type":"work_canceled","run_public_id","task_key"}`: an inbox row was canceled.
    WorkCanceled { run_public_id: Uuid, task_key: String },
}

impl PushFrame {
    /// The frame as the JSON text a channel sends.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).expect("a push frame always serializes")
    }

    /// A frame from its JSON text (`None` when it is not one).
    pub fn from_text(text: &str) -> Option<PushFrame> {
        serde_json::from_str(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_serialize_with_their_type_first_and_read_back() {
        let run = Uuid::now_v7();
        let frame = PushFrame::WorkAvailable {
            kind: RowKind::ToolCall,
            run_public_id: run,
            task_key: "k".into(),
        };
        assert_eq!(
            frame.to_text(),
            format!(r#"{{"type":"work_available","kind":"tool_call","run_public_id":"{run}","task_key":"k"}}"#)
        );
        assert_eq!(PushFrame::from_text(&frame.to_text()), Some(frame));
        let hello = PushFrame::Hello {
            executor_public_id: run,
            credential_epoch: 3,
        };
        assert_eq!(
            hello.to_text(),
            format!(r#"{{"type":"hello","executor_public_id":"{run}","credential_epoch":3}}"#)
        );
        assert_eq!(PushFrame::from_text(r#"{"type":"nope"}"#), None);
    }
}
