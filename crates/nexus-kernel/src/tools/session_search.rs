//! `session_search` (`nexus.conversation.search`, kernel-tools.md §10): the ranked full-text
//! search of the run's workspace's conversation history, in the shape of `GET
//! W/conversation_search` (`conversations/history.rs` runs both).

use nexus_core::bounds;
use nexus_store::{RunRow, Tx};
use serde_json::Value;

use super::{KernelToolOutcome, params};
use crate::conversations::history::{self, SearchAsk};
use crate::error::KernelResult;

const TOOL: &str = "session_search";
const PARAMS: &[&str] = &["query", "archived", "include_auxiliary", "limit", "after"];

pub(crate) async fn run(tx: &mut Tx, run: &RunRow, input: &Value) -> KernelResult<KernelToolOutcome> {
    let ask = match parse(input) {
        Ok(ask) => ask,
        Err(refusal) => return Ok(refusal),
    };
    Ok(match history::search(tx, run.workspace_id, &ask).await? {
        Ok(page) => KernelToolOutcome::json_text(&history::json(&page)),
        Err(refusal) => params::history_refusal(refusal),
    })
}

/// The parameters, typed; the grammar's ranges are `history::search`'s.
fn parse(input: &Value) -> Result<SearchAsk, KernelToolOutcome> {
    let obj = params::object(TOOL, input)?;
    params::only(TOOL, obj, PARAMS)?;
    let query = params::required_text(TOOL, obj, "query")?;
    params::optional(TOOL, obj, "archived", "exclude, include or only", Value::is_string)?;
    let archived =
        history::archived_word(obj.get("archived").and_then(Value::as_str)).map_err(params::history_refusal)?;
    params::optional(TOOL, obj, "include_auxiliary", "a boolean", Value::is_boolean)?;
    let max = bounds::HISTORY_SEARCH_MAX_LIMIT as i64;
    params::optional(TOOL, obj, "limit", &format!("an integer from 1 to {max}"), |v| {
        params::int_in(v, 1, max)
    })?;
    params::optional(TOOL, obj, "after", "a cursor string", Value::is_string)?;
    Ok(SearchAsk {
        query: query.to_string(),
        archived,
        include_auxiliary: obj.get("include_auxiliary").and_then(Value::as_bool).unwrap_or(false),
        limit: obj
            .get("limit")
            .and_then(Value::as_i64)
            .unwrap_or(bounds::HISTORY_SEARCH_DEFAULT_LIMIT as i64),
        after: obj.get("after").and_then(Value::as_str).map(String::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(input: Value) -> String {
        let outcome = parse(&input).expect_err("refused");
        assert!(outcome.is_error);
        outcome.content.as_str().unwrap().to_string()
    }

    #[test]
    fn parameters_are_typed_and_defaulted() {
        let ask = parse(&json!({"query": "deploy notes"})).unwrap();
        assert_eq!(ask.limit, 20);
        assert_eq!(ask.archived, nexus_store::ArchivedFilter::Exclude);
        assert!(!ask.include_auxiliary && ask.after.is_none());
        let ask = parse(
            &json!({"query": "x", "archived": "only", "include_auxiliary": true, "limit": 50,
            "after": "c"}),
        )
        .unwrap();
        assert_eq!(ask.archived, nexus_store::ArchivedFilter::Only);
        assert!(ask.include_auxiliary && ask.limit == 50 && ask.after.as_deref() == Some("c"));
        for bad in [
            json!({"query": ""}),
            json!({"query": " "}),
            json!({}),
            json!({"query": 3}),
            json!({"query": "x", "archived": "all"}),
            json!({"query": "x", "archived": 1}),
            json!({"query": "x", "include_auxiliary": "yes"}),
            json!({"query": "x", "limit": 0}),
            json!({"query": "x", "limit": 51}),
            json!({"query": "x", "after": 5}),
            json!({"query": "x", "colour": 1}),
            json!("x"),
        ] {
            assert!(refused(bad.clone()).starts_with("parameter_invalid: "), "{bad}");
        }
        assert!(refused(json!({"query": "x", "archived": "all"})).contains("\"all\""));
    }
}
