//! `session_search` (`nexus.conversation.search`, kernel-tools.md §10). It searches the
//! conversation history of the run's workspace; conversations are not built in this version, so
//! a valid query always finds no matches (the route's shape, with no `next_after`).

use serde_json::{Value, json};

use super::{KernelToolOutcome, params};

const PARAMS: &[&str] = &["query", "archived", "include_auxiliary", "limit", "after"];

pub(crate) fn run(input: &Value) -> KernelToolOutcome {
    let checked = (|| {
        let obj = params::object("session_search", input)?;
        params::only("session_search", obj, PARAMS)?;
        let query = params::required_text("session_search", obj, "query")?;
        if query.len() > 1_024 {
            return Err(KernelToolOutcome::error(
                "parameter_invalid",
                &format!("`query` of session_search is {} bytes; keep it to 1,024", query.len()),
            ));
        }
        params::optional("session_search", obj, "archived", "exclude, include or only", |v| {
            matches!(v.as_str(), Some("exclude" | "include" | "only"))
        })?;
        params::optional(
            "session_search",
            obj,
            "include_auxiliary",
            "a boolean",
            Value::is_boolean,
        )?;
        params::optional("session_search", obj, "limit", "an integer from 1 to 50", |v| {
            params::int_in(v, 1, 50)
        })?;
        params::optional("session_search", obj, "after", "a cursor string", Value::is_string)?;
        Ok::<(), KernelToolOutcome>(())
    })();
    match checked {
        Ok(()) => KernelToolOutcome::json_text(&json!({"matches": [], "pagination": {}})),
        Err(refusal) => refusal,
    }
}
