//! `session_read` (`nexus.conversation.read`, kernel-tools.md §10). `session_id` must be a
//! conversation of the run's workspace; conversations are not built in this version, so after
//! the parameter checks every id answers `unknown_conversation`.

use serde_json::Value;

use super::{KernelToolOutcome, params};

const PARAMS: &[&str] = &[
    "session_id",
    "around_turn_id",
    "after_position",
    "before_position",
    "limit",
];

pub(crate) fn run(input: &Value) -> KernelToolOutcome {
    let checked = (|| {
        let obj = params::object("session_read", input)?;
        params::only("session_read", obj, PARAMS)?;
        let id = params::required_text("session_read", obj, "session_id")?;
        params::optional(
            "session_read",
            obj,
            "around_turn_id",
            "a turn id string",
            Value::is_string,
        )?;
        for cursor in ["after_position", "before_position"] {
            params::optional("session_read", obj, cursor, "an integer ≥ 0", |v| {
                params::int_in(v, 0, i64::MAX)
            })?;
        }
        params::optional("session_read", obj, "limit", "an integer from 1 to 50", |v| {
            params::int_in(v, 1, 50)
        })?;
        let cursors = ["around_turn_id", "after_position", "before_position"]
            .iter()
            .filter(|k| obj.contains_key(**k))
            .count();
        if cursors > 1 {
            return Err(KernelToolOutcome::error(
                "parameter_invalid",
                "session_read takes at most one of around_turn_id, after_position and before_position",
            ));
        }
        Ok::<String, KernelToolOutcome>(id.to_string())
    })();
    match checked {
        Ok(id) => params::unknown_conversation("session_read", &id),
        Err(refusal) => refusal,
    }
}
