//! `session_search` (`nexus.conversation.search`, kernel-tools.md §10): the ranked full-text
//! search of the run's workspace's conversation history, in the shape of `GET
//! W/conversation_search` (`conversations/history.rs` runs both).

use nexus_core::bounds;
use nexus_store::{RunRow, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use super::params::{self, Params};
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
    let p = Params::object(TOOL, input)?;
    p.only(PARAMS)?;
    let query = p.required_text("query")?;
    let archived = p.optional("archived", "exclude, include or only", Value::as_str)?;
    let archived = history::archived_word(archived).map_err(params::history_refusal)?;
    let include_auxiliary = p.optional("include_auxiliary", "a boolean", Value::as_bool)?;
    let max = bounds::HISTORY_SEARCH_MAX_LIMIT as i64;
    let limit = p.optional("limit", &format!("an integer from 1 to {max}"), params::int_in(1, max))?;
    let after = p.optional("after", "a cursor string", Value::as_str)?;
    Ok(SearchAsk {
        query: query.to_string(),
        archived,
        include_auxiliary: include_auxiliary.unwrap_or(false),
        limit: limit.unwrap_or(bounds::HISTORY_SEARCH_DEFAULT_LIMIT as i64),
        after: after.map(String::from),
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
