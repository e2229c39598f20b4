//! What every local tool shares: typed input, bounded output, titles.

use nexus_sdk::runner::ToolResult;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The most text one result carries (64 KiB).
pub const MAX_TEXT: usize = 64 * 1024;

/// The tool input as `T`, or an `is_error` result naming the tool and the fault.
pub fn input<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, Box<ToolResult>> {
    serde_json::from_value(input.clone()).map_err(|e| {
        Box::new(ToolResult::error(format!("invalid input for `{tool}`: {e}")).with_title(tool.to_owned()))
    })
}

/// Parses the input as `T`, runs `body`, and titles whatever comes back (`title` of the
/// parsed input; the bare tool name when the input does not parse).
pub fn run<T: DeserializeOwned, E: Into<Fault>>(
    tool: &str,
    input: &Value,
    title: impl FnOnce(&T) -> String,
    body: impl FnOnce(&T) -> Result<ToolResult, E>,
) -> ToolResult {
    let input: T = match self::input(tool, input) {
        Ok(i) => i,
        Err(e) => return *e,
    };
    let title = title(&input);
    match body(&input) {
        Ok(result) => result,
        Err(fault) => fault.into().into(),
    }
    .with_title(title)
}

/// Why a tool stopped without its normal result.
#[derive(Debug)]
pub enum Fault {
    /// A tool-level error the model reads (`is_error`).
    Error(String),
    /// The call was canceled (`failed`).
    Canceled,
}

impl From<String> for Fault {
    fn from(message: String) -> Fault {
        Fault::Error(message)
    }
}

impl From<Fault> for ToolResult {
    fn from(fault: Fault) -> ToolResult {
        match fault {
            Fault::Error(message) => ToolResult::error(message),
            Fault::Canceled => ToolResult::failed("canceled"),
        }
    }
}

/// `"<tool> <subject>"`, the subject cut to its first line and 80 characters.
pub fn title(tool: &str, subject: &str) -> String {
    let line = subject.lines().next().unwrap_or_default();
    let mut cut: String = line.chars().take(80).collect();
    if cut.len() < subject.len() {
        cut.push('…');
    }
    format!("{tool} {cut}")
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Text the kernel can store: a NUL (refused as `result_unstorable`) becomes U+FFFD.
pub fn storable(text: String) -> String {
    if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text
    }
}

/// Whether the first 8 KiB hold a NUL, the usual sign of a binary file.
pub fn looks_binary(head: &[u8]) -> bool {
    head.iter().take(8 * 1024).any(|&b| b == 0)
}

/// `"1 match"`, `"3 matches"`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `n` bytes in the unit a person reads (`512 B`, `12.5 KiB`, `3.0 MiB`).
pub fn size(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f < KIB {
        format!("{n} B")
    } else if f < KIB * KIB {
        format!("{:.1} KiB", f / KIB)
    } else {
        format!("{:.1} MiB", f / (KIB * KIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_never_splits_a_character() {
        assert_eq!(prefix("héllo", 2), "h");
        assert_eq!(prefix("héllo", 3), "hé");
        assert_eq!(prefix("abc", 10), "abc");
    }

    #[test]
    fn titles_keep_one_short_line() {
        assert_eq!(title("read", "src/lib.rs"), "read src/lib.rs");
        assert_eq!(title("start_process", "make\nmake install"), "start_process make…");
        assert_eq!(title("grep", &"x".repeat(100)).chars().count(), "grep ".len() + 81);
    }

    #[test]
    fn nul_becomes_a_replacement_character_and_sizes_read_well() {
        assert_eq!(storable("a\0b".into()), "a\u{FFFD}b");
        assert_eq!(size(10), "10 B");
        assert_eq!(size(1536), "1.5 KiB");
    }

    #[test]
    fn bad_input_is_an_error_result_naming_the_tool() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct In {
            path: String,
        }
        let err = *input::<In>("read", &serde_json::json!({"file": "x"})).unwrap_err();
        assert!(err.is_error);
        assert_eq!(err.title.as_deref(), Some("read"));
        let nexus_sdk::runner::Block::Text { text } = &err.content[0] else {
            panic!()
        };
        assert!(
            text.contains("invalid input for `read`") && text.contains("path"),
            "{text}"
        );
    }
}
