//! `memory_read` (`nexus.memory.read`, kernel-tools.md §8): the lines from `offset`
//! (1-indexed), at most `limit` of them, verbatim; a last line when more remain.

use nexus_core::results::ToolWord;
use nexus_store::Tx;
use serde_json::Value;

use super::KernelToolOutcome;
use super::params::int_arg;
use crate::error::KernelResult;
use crate::memory::{self, MemPath, Owners, Refusal, arg};

/// `memory_read {path, offset=1, limit=2000}`.
#[derive(Debug)]
struct ReadInput {
    path: MemPath,
    owner: i64,
    offset: i64,
    limit: i64,
}

impl ReadInput {
    fn parse(input: &Value, owners: &Owners) -> Result<Self, Refusal> {
        let (path, owner) = memory::doc_path(input, owners)?;
        let offset = int_arg(input, "offset", 1, 1, i64::MAX).map_err(Box::new)?;
        let limit = int_arg(input, "limit", memory::READ_DEFAULT_LIMIT, 1, i64::MAX).map_err(Box::new)?;
        Ok(Self {
            path,
            owner,
            offset,
            limit,
        })
    }
}

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners) -> KernelResult<KernelToolOutcome> {
    let ReadInput {
        path,
        owner,
        offset,
        limit,
    } = arg!(ReadInput::parse(input, owners));
    let Some(doc) = tx.memory_document(path.scope, owner, &path.full).await? else {
        return Ok(memory::not_found(&path));
    };
    Ok(read_lines(&path.full, &doc.content, offset, limit))
}

/// The window of `content` a read returns.
pub(crate) fn read_lines(path: &str, content: &str, offset: i64, limit: i64) -> KernelToolOutcome {
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let total = lines.len();
    if total == 0 {
        return KernelToolOutcome::text(format!("({path} is empty: 0 lines)"));
    }
    let start = usize::try_from(offset - 1).unwrap_or(usize::MAX);
    if start >= total {
        return KernelToolOutcome::error(
            ToolWord::ParameterInvalid,
            &format!(
                "`offset` {offset} is past the end of {path:?}, which has {total} lines; pass an offset from 1 to {total}"
            ),
        );
    }
    let end = start
        .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
        .min(total);
    let mut out: String = lines[start..end].concat();
    if end < total {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "({} more lines remain; continue with offset={})",
            total - end,
            end + 1
        ));
    }
    KernelToolOutcome::text(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(o: &KernelToolOutcome) -> &str {
        o.content.as_str().unwrap()
    }

    #[test]
    fn windows() {
        let doc = "a\nb\nc\n";
        assert_eq!(text(&read_lines("p", doc, 1, 2000)), doc);
        assert_eq!(
            text(&read_lines("p", doc, 1, 2)),
            "a\nb\n(1 more lines remain; continue with offset=3)"
        );
        assert_eq!(text(&read_lines("p", doc, 3, 1)), "c\n");
        assert_eq!(text(&read_lines("p", "x\ny", 2, 5)), "y");
        let past = read_lines("p", doc, 4, 1);
        assert!(past.is_error && text(&past).starts_with("parameter_invalid: "));
        assert!(!read_lines("p", "", 1, 1).is_error);
    }

    use crate::tools::memory_scope_tests::WORKSPACE_ONLY;

    #[test]
    fn parse_defaults_and_checks_the_path_first() {
        let r = ReadInput::parse(
            &serde_json::json!({"path": "workspace/a", "offset": null}),
            &WORKSPACE_ONLY,
        )
        .unwrap();
        assert_eq!((r.owner, r.offset, r.limit), (7, 1, memory::READ_DEFAULT_LIMIT));
        // An unavailable scope is named before a bad offset.
        let out = ReadInput::parse(&serde_json::json!({"path": "user/a", "offset": 0}), &WORKSPACE_ONLY).unwrap_err();
        assert!(text(&out).starts_with("memory_path_invalid: "));
        let out = ReadInput::parse(
            &serde_json::json!({"path": "workspace/a", "offset": 0}),
            &WORKSPACE_ONLY,
        )
        .unwrap_err();
        assert!(text(&out).starts_with("parameter_invalid: `offset` must be an integer of at least 1, got 0"));
    }
}
