//! `memory_grep` (`nexus.memory.grep`, kernel-tools.md §8): lines matching a Rust regex
//! (1 MiB compiled-size limit, `memory_pattern_invalid`) as `path:line: text`, in path then
//! line order, at most `limit` (1–1,000, default 100), with a final line when matches were
//! left out.

use nexus_core::results::ToolWord;
use nexus_store::Tx;
use serde_json::Value;

use super::KernelToolOutcome;
use super::memory_ls::Covered;
use super::params::{bool_arg, int_arg, str_arg};
use crate::error::KernelResult;
use crate::memory::{self, Owners, Refusal, arg};

/// `memory_grep {pattern, path?, ignore_case=false, limit=100}`, the pattern compiled.
#[derive(Debug)]
struct GrepInput {
    pattern: String,
    re: regex::Regex,
    limit: i64,
    covered: Covered,
}

impl GrepInput {
    fn parse(input: &Value, owners: &Owners) -> Result<Self, Refusal> {
        let pattern = str_arg(input, "pattern", true).map_err(Box::new)?.unwrap_or_default();
        let ignore_case = bool_arg(input, "ignore_case", false).map_err(Box::new)?;
        let limit = int_arg(input, "limit", memory::GREP_DEFAULT_LIMIT, 1, memory::GREP_MAX_LIMIT).map_err(Box::new)?;
        let re = compile(pattern, ignore_case)?;
        Ok(Self {
            pattern: pattern.to_string(),
            re,
            limit,
            covered: Covered::parse(input, owners)?,
        })
    }
}

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners) -> KernelResult<KernelToolOutcome> {
    let GrepInput {
        pattern,
        re,
        limit,
        covered,
    } = arg!(GrepInput::parse(input, owners));
    let docs = covered.documents(tx, owners, true).await?;
    let prefix = covered.named();
    let limit = usize::try_from(limit).unwrap_or(100);
    let mut lines: Vec<String> = Vec::new();
    let mut bytes = 0usize;
    let mut left_out = 0usize;
    for doc in &docs {
        for (i, line) in doc.content.lines().enumerate() {
            if !re.is_match(line) {
                continue;
            }
            let hit = format!("{}:{}: {}", doc.path, i + 1, line);
            if lines.len() < limit && bytes + hit.len() <= memory::GREP_OUTPUT_BYTES {
                bytes += hit.len() + 1;
                lines.push(hit);
            } else {
                left_out += 1;
            }
        }
    }
    if lines.is_empty() && left_out == 0 {
        return Ok(KernelToolOutcome::text(match prefix {
            Some(p) => format!("No lines match {pattern:?} under {p}."),
            None => format!("No lines match {pattern:?}."),
        }));
    }
    if left_out > 0 {
        lines.push(format!(
            "({left_out} more matching lines not shown; raise `limit` (at most 1000) or narrow `path` or `pattern`)"
        ));
    }
    Ok(KernelToolOutcome::text(lines.join("\n")))
}

/// Compiles the pattern within the compiled-size limit.
pub(crate) fn compile(pattern: &str, ignore_case: bool) -> Result<regex::Regex, memory::Refusal> {
    regex::RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .size_limit(memory::PATTERN_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            let why = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
            memory::refusal(
                ToolWord::MemoryPatternInvalid,
                &format!(
                    "the pattern {:?} is not usable ({why}); fix it in Rust regex syntax or make it smaller",
                    memory::head(pattern, 200)
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(compile("a+b", false).is_ok());
        let bad = compile("(", false).unwrap_err();
        assert!(bad.content.as_str().unwrap().starts_with("memory_pattern_invalid: "));
        assert!(!bad.content.as_str().unwrap().contains('\n'));
        // Past the 1 MiB compiled-size limit.
        let big = compile(r"\w{1000}\w{1000}", false).unwrap_err();
        assert!(big.content.as_str().unwrap().starts_with("memory_pattern_invalid: "));
        assert!(compile("ABC", true).unwrap().is_match("abc"));
    }

    #[test]
    fn parse_compiles_before_reading_the_path() {
        let owners = crate::tools::memory_scope_tests::WORKSPACE_ONLY;
        let word = |v: serde_json::Value| {
            let out = GrepInput::parse(&v, &owners).unwrap_err();
            out.content.as_str().unwrap().split(':').next().unwrap().to_string()
        };
        let g = GrepInput::parse(&serde_json::json!({"pattern": "a", "path": ""}), &owners).unwrap();
        assert_eq!((g.limit, g.covered.named()), (memory::GREP_DEFAULT_LIMIT, None));
        assert_eq!(
            word(serde_json::json!({"pattern": "(", "path": "team/x"})),
            "memory_pattern_invalid"
        );
        assert_eq!(
            word(serde_json::json!({"pattern": "a", "path": "user/"})),
            "memory_path_invalid"
        );
        assert_eq!(
            word(serde_json::json!({"pattern": "a", "limit": 1001})),
            "parameter_invalid"
        );
        assert_eq!(
            word(serde_json::json!({"pattern": "a", "ignore_case": "yes"})),
            "parameter_invalid"
        );
    }
}
