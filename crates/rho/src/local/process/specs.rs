//! The three process tools' entries.

use nexus_sdk::runner::{EffectProfile, ToolSpec};
use serde_json::json;

use super::{MAX_WAIT_MS, START_PROFILE, START_TIMEOUT_MS, STOP_PROFILE};

/// `start_process`.
pub fn start_spec() -> ToolSpec {
    ToolSpec::new("start_process", START_PROFILE)
        .timeout_ms(START_TIMEOUT_MS)
        .description(
            "Start a shell command (`/bin/sh -c`) in the background under the workspace root and \
             return its `process_id` at once. stdout and stderr are captured together; read them \
             with `read_process`, end the command with `stop_process`. stdin is closed, so the \
             command must not wait for input.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command, e.g. `cargo test`."},
                "cwd": {"type": "string", "description": "Folder to run in, relative to the root (default: the root)."},
                "env": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Extra environment variables."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        }))
}

/// `read_process`.
pub fn read_spec() -> ToolSpec {
    ToolSpec::new("read_process", EffectProfile::READ)
        .description(
            "Return the output a started process wrote since the last read, and whether it is \
             still running or its exit code. With `wait_ms`, first wait up to that long for the \
             process to exit (returning as soon as it does). Unread output beyond 64 KiB is \
             dropped oldest first, so read long-running processes regularly.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "process_id": {"type": "string", "description": "The id start_process returned."},
                "wait_ms": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS, "description": "Wait up to this long for the process to exit (default 0)."}
            },
            "required": ["process_id"],
            "additionalProperties": false
        }))
}

/// `stop_process`.
pub fn stop_spec() -> ToolSpec {
    ToolSpec::new("stop_process", STOP_PROFILE)
        .description(
            "Stop a started process and everything it started: SIGTERM, then SIGKILL if it is \
             still running 2 seconds later. Returns its last output and exit status.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "process_id": {"type": "string", "description": "The id start_process returned."}
            },
            "required": ["process_id"],
            "additionalProperties": false
        }))
}
