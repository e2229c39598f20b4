//! `session_read` (`nexus.conversation.read`, kernel-tools.md §10): a window of the turns of
//! one conversation of the run's workspace, in the shape of `GET C/history`
//! (`conversations/history.rs` runs both).

use nexus_core::bounds;
use nexus_store::{RunRow, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use super::params::{self, Params};
use crate::conversations::history::{self, ReadAsk};
use crate::error::KernelResult;

const TOOL: &str = "session_read";
const PARAMS: &[&str] = &[
    "session_id",
    "around_turn_id",
    "after_position",
    "before_position",
    "limit",
];

pub(crate) async fn run(tx: &mut Tx, run: &RunRow, input: &Value) -> KernelResult<KernelToolOutcome> {
    let ask = match parse(input) {
        Ok(ask) => ask,
        Err(refusal) => return Ok(refusal),
    };
    Ok(match history::read(tx, run.workspace_id, &ask).await? {
        Ok(page) => KernelToolOutcome::json_text(&history::json(&page)),
        Err(refusal) => params::history_refusal(refusal),
    })
}

/// The parameters, typed; the grammar's ranges are `history::read`'s.
fn parse(input: &Value) -> Result<ReadAsk, KernelToolOutcome> {
    let p = Params::object(TOOL, input)?;
    p.only(PARAMS)?;
    let session_id = p.required_text("session_id")?;
    let around = p.optional("around_turn_id", "a turn id string", Value::as_str)?;
    let after = p.optional("after_position", "an integer ≥ 0", params::int_in(0, i64::MAX))?;
    let before = p.optional("before_position", "an integer ≥ 0", params::int_in(0, i64::MAX))?;
    let max = bounds::HISTORY_READ_MAX_LIMIT as i64;
    let limit = p.optional("limit", &format!("an integer from 1 to {max}"), params::int_in(1, max))?;
    let cursor = history::read_cursor(around.map(String::from), after, before).map_err(params::history_refusal)?;
    Ok(ReadAsk {
        session_id: session_id.to_string(),
        cursor,
        limit: limit.unwrap_or(bounds::HISTORY_READ_DEFAULT_LIMIT as i64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversations::history::ReadCursor;
    use serde_json::json;

    #[test]
    fn parameters_are_typed_and_one_cursor_at_most() {
        let ask = parse(&json!({"session_id": "s"})).unwrap();
        assert_eq!(
            (ask.session_id.as_str(), ask.cursor, ask.limit),
            ("s", ReadCursor::Newest, 20)
        );
        let ask = parse(&json!({"session_id": "s", "around_turn_id": "t", "limit": 50})).unwrap();
        assert_eq!((ask.cursor, ask.limit), (ReadCursor::Around("t".into()), 50));
        let ask = parse(&json!({"session_id": "s", "before_position": 0})).unwrap();
        assert_eq!(ask.cursor, ReadCursor::Before(0));
        for bad in [
            json!({}),
            json!({"session_id": " "}),
            json!({"session_id": "s", "after_position": 1, "before_position": 2}),
            json!({"session_id": "s", "around_turn_id": "t", "after_position": 1}),
            json!({"session_id": "s", "after_position": -1}),
            json!({"session_id": "s", "after_position": "1"}),
            json!({"session_id": "s", "around_turn_id": 7}),
            json!({"session_id": "s", "limit": 0}),
            json!({"session_id": "s", "limit": 51}),
            json!({"session_id": "s", "page": 1}),
        ] {
            let outcome = parse(&bad).expect_err("refused");
            assert!(
                outcome.is_error && outcome.content.as_str().unwrap().starts_with("parameter_invalid: "),
                "{bad}: {outcome:?}"
            );
        }
    }
}
