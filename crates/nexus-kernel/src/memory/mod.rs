//! Memory (kernel-tools.md §8): paths, scopes, bounds and the owners a run's frozen memory
//! bindings name (declarations.md §8). The model verbs are in `tools/memory_*.rs`; the member
//! door is [`door`].
//!
//! A path is `<scope>/<segment>(/<segment>)*`: each segment matches `[A-Za-z0-9._-]+` and is
//! neither `.` nor `..`; at most 512 bytes; case-sensitive. `<scope>/skills/…` is reserved for
//! skill documents (`<scope>/skills/<name>`), which the model reads but never changes.

pub mod door;

use nexus_store::{MemberKind, MemberRow, MemoryDocRow, MemoryScope, Tx};
use serde_json::Value;
use uuid::Uuid;

use crate::error::KernelResult;

/// A path's bound in bytes.
pub const PATH_BYTES: usize = 512;
/// A document's bound in bytes (`memory_document_too_large`).
pub const DOCUMENT_BYTES: usize = nexus_core::bounds::MEMORY_DOCUMENT;
/// A description's bound in bytes.
pub const DESCRIPTION_BYTES: usize = nexus_core::bounds::DESCRIPTION_BYTES;
/// `memory_ls`: lines before the left-out line.
pub const LS_LINES: usize = 500;
/// `memory_grep`: the default and largest `limit`.
pub const GREP_DEFAULT_LIMIT: i64 = 100;
pub const GREP_MAX_LIMIT: i64 = 1_000;
/// `memory_grep`: the compiled-size limit of a pattern.
pub const PATTERN_SIZE_LIMIT: usize = 1 << 20;
/// `memory_grep`: the byte budget of the result's match lines (within the result-content
/// bound); matches past it are counted on the left-out line.
pub const GREP_OUTPUT_BYTES: usize = 512 * 1024;
/// `memory_read`: the default `limit`.
pub const READ_DEFAULT_LIMIT: i64 = 2_000;

/// The document bound of one scope owner (a write that would pass it is `memory_full`).
pub fn scope_bound(scope: MemoryScope) -> i64 {
    match scope {
        MemoryScope::User => 64,
        MemoryScope::Workspace => 1_024,
        MemoryScope::Conversation => 256,
    }
}

/// A valid document path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemPath {
    pub scope: MemoryScope,
    /// The whole path, scope root included.
    pub full: String,
}

impl MemPath {
    /// The segments after the scope root.
    pub fn segments(&self) -> Vec<&str> {
        self.full.split('/').skip(1).collect()
    }

    /// Whether the path is under the reserved `<scope>/skills/` prefix.
    pub fn is_reserved(&self) -> bool {
        self.segments().first() == Some(&"skills")
    }

    /// `Some(name)` for `<scope>/skills/<name>`: a skill document's path (the name's grammar
    /// is not checked here).
    pub fn skill_name(&self) -> Option<&str> {
        let segs = self.segments();
        (segs.len() == 2 && segs[0] == "skills").then(|| self.full.rsplit('/').next().unwrap_or(""))
    }
}

/// The longest prefix of `s` of at most `n` bytes that ends on a character boundary.
pub(crate) fn head(s: &str, n: usize) -> &str {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn segment_ok(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

const PATH_FORM: &str = "a path is <scope>/<segment>(/<segment>)* with scope user, workspace or conversation \
     and segments of letters, digits, '.', '_' and '-' (not '.' or '..'), at most 512 bytes, such as workspace/notes/deploy.md";

/// Parses a document path; `Err` is the sentence of `memory_path_invalid`.
pub fn parse_path(raw: &str) -> Result<MemPath, String> {
    if raw.len() > PATH_BYTES {
        return Err(format!(
            "the path {:?}… is {} bytes, over the {PATH_BYTES}-byte bound; use a shorter path",
            head(raw, 40),
            raw.len()
        ));
    }
    let mut parts = raw.split('/');
    let root = parts.next().unwrap_or("");
    let Some(scope) = MemoryScope::parse(root) else {
        return Err(if raw.contains('/') {
            format!("{raw:?} has the unknown scope {root:?}; {PATH_FORM}")
        } else {
            format!("{raw:?} is a bare name with no scope; {PATH_FORM}")
        });
    };
    let rest: Vec<&str> = parts.collect();
    if rest.is_empty() || rest == [""] {
        return Err(format!("{raw:?} names a scope but no document; {PATH_FORM}"));
    }
    if let Some(bad) = rest.iter().find(|s| !segment_ok(s)) {
        return Err(format!("{raw:?} has the invalid segment {bad:?}; {PATH_FORM}"));
    }
    Ok(MemPath {
        scope,
        full: raw.to_string(),
    })
}

/// A listing or search prefix: a scope root (`workspace`, `workspace/`) or a longer string
/// prefix (`workspace/notes/`, `workspace/no`). Documents match by plain string prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemPrefix {
    pub scope: MemoryScope,
    /// Never the bare root: `workspace` becomes `workspace/`.
    pub prefix: String,
}

/// Parses a prefix; `Err` is the sentence of `memory_path_invalid`.
pub fn parse_prefix(raw: &str) -> Result<MemPrefix, String> {
    if raw.len() > PATH_BYTES {
        return Err(format!(
            "the path prefix is {} bytes, over the {PATH_BYTES}-byte bound; use a shorter prefix",
            raw.len()
        ));
    }
    let mut parts = raw.split('/');
    let root = parts.next().unwrap_or("");
    let Some(scope) = MemoryScope::parse(root) else {
        return Err(format!(
            "the prefix {raw:?} does not start with a scope; start it with user/, workspace/ or conversation/"
        ));
    };
    let rest: Vec<&str> = parts.collect();
    let last = rest.len().saturating_sub(1);
    for (i, seg) in rest.iter().enumerate() {
        // Only the final segment may be empty (a trailing slash) or partial.
        let ok = if i == last {
            seg.is_empty()
                || seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        } else {
            segment_ok(seg)
        };
        if !ok {
            return Err(format!(
                "the prefix {raw:?} has the invalid segment {seg:?}; {PATH_FORM}"
            ));
        }
    }
    let prefix = if rest.is_empty() {
        format!("{root}/")
    } else {
        raw.to_string()
    };
    Ok(MemPrefix { scope, prefix })
}

/// The scope owners a caller may reach: internal ids of the member (`user/`), the workspace
/// and the conversation. `None`: the scope is not available.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Owners {
    pub user: Option<i64>,
    pub workspace: Option<i64>,
    pub conversation: Option<i64>,
}

impl Owners {
    pub fn of(&self, scope: MemoryScope) -> Option<i64> {
        match scope {
            MemoryScope::User => self.user,
            MemoryScope::Workspace => self.workspace,
            MemoryScope::Conversation => self.conversation,
        }
    }

    /// Resolves a round's frozen memory bindings `{workspace_public_id, conversation_public_id,
    /// user_public_id}` inside the evaluation's transaction.
    pub(crate) async fn of_frozen(tx: &mut Tx, memory: &Value) -> KernelResult<Owners> {
        let id = |k: &str| {
            memory
                .get(k)
                .and_then(Value::as_str)
                .and_then(|s| Uuid::parse_str(s).ok())
        };
        let user = match id("user_public_id") {
            Some(u) => tx.member_id_of(u).await?,
            None => None,
        };
        let workspace = match id("workspace_public_id") {
            Some(w) => tx.workspace_id_of(w).await?,
            None => None,
        };
        // A hosted round names its conversation; a standalone run's binding is null and has no
        // conversation scope. A conversation outside the bound workspace is no scope either.
        let conversation = match id("conversation_public_id") {
            Some(c) => tx
                .conversation_by_public_id(c)
                .await?
                .filter(|row| Some(row.workspace_id) == workspace)
                .map(|row| row.id),
            None => None,
        };
        Ok(Owners {
            user,
            workspace,
            conversation,
        })
    }

    /// The scopes available, in path order.
    pub fn available(&self) -> Vec<(MemoryScope, i64)> {
        let mut out: Vec<(MemoryScope, i64)> = MemoryScope::ALL
            .iter()
            .filter_map(|s| self.of(*s).map(|o| (*s, o)))
            .collect();
        out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        out
    }
}

/// The sentence of `memory_path_invalid` for a scope the caller has no owner for.
pub fn unavailable(scope: MemoryScope, raw: &str) -> String {
    match scope {
        MemoryScope::Conversation => format!(
            "{raw:?} is in the conversation/ scope, but this work has no conversation (a standalone run has none); use user/ or workspace/"
        ),
        other => format!(
            "{raw:?} is in the {}/ scope, which is not available to this work; use another scope",
            other.as_str()
        ),
    }
}

/// The controlling human of a member (itself for a human): the owner of its `user/` scope.
pub(crate) fn controlling_human_id(member: &MemberRow) -> i64 {
    match (member.kind, member.steward_id) {
        (MemberKind::Agent, Some(steward)) => steward,
        _ => member.id,
    }
}

/// The skill name grammar: `[a-z0-9](-?[a-z0-9])*`, at most 64 characters.
pub(crate) fn valid_skill_name(name: &str) -> bool {
    let b = name.as_bytes();
    let word = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= nexus_core::bounds::KEY_CHARS
        && word(b[0])
        && word(b[b.len() - 1])
        && b.iter().all(|&c| word(c) || c == b'-')
        && !name.contains("--")
}

/// The `(name, description)` skill documents (`<scope>/skills/<name>` with a skill-grammar
/// name and a description) among `docs`, by name.
pub fn skill_documents(docs: &[MemoryDocRow]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = docs
        .iter()
        .filter_map(|d| {
            let p = parse_path(&d.path).ok()?;
            let name = p.skill_name()?;
            if !valid_skill_name(name) {
                return None;
            }
            Some((name.to_string(), d.description.clone()?))
        })
        .collect();
    out.sort();
    out
}

/// Counts occurrences of `needle` in `hay`, overlapping ones included, stopping at 2.
pub(crate) fn occurrences(hay: &str, needle: &str) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        count += 1;
        if count == 2 {
            break;
        }
        let at = from + i;
        from = at + hay[at..].chars().next().map_or(1, char::len_utf8);
    }
    count
}

/// Unwraps a parameter check: its `Err` is the tool's (error) result.
macro_rules! arg {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(outcome) => return Ok(*outcome),
        }
    };
}
pub(crate) use arg;

// ---- the model verbs' parameters (kernel-tools.md §0: `parameter_invalid`) -----------------

use nexus_core::results::ToolWord;

use crate::tools::KernelToolOutcome;
use crate::tools::params::str_arg;

/// A parameter check's refusal: the tool's error result (boxed: it is large).
pub(crate) type Refusal = Box<KernelToolOutcome>;

/// The refusal `<word>: <sentence>`.
pub(crate) fn refusal(word: ToolWord, sentence: &str) -> Refusal {
    Box::new(KernelToolOutcome::error(word, sentence))
}

/// The `path` parameter as a document path in an available scope, with its owner.
pub(crate) fn doc_path(input: &Value, owners: &Owners) -> Result<(MemPath, i64), Refusal> {
    let raw = str_arg(input, "path", true).map_err(Box::new)?.unwrap_or_default();
    let path = parse_path(raw).map_err(|s| refusal(ToolWord::MemoryPathInvalid, &s))?;
    let owner = owners
        .of(path.scope)
        .ok_or_else(|| refusal(ToolWord::MemoryPathInvalid, &unavailable(path.scope, raw)))?;
    Ok((path, owner))
}

/// `memory_reserved_prefix` for a write, edit or delete under `<scope>/skills/`.
pub(crate) fn refuse_reserved(path: &MemPath) -> Result<(), Refusal> {
    if path.is_reserved() {
        return Err(refusal(
            ToolWord::MemoryReservedPrefix,
            &format!(
                "{:?} is under the reserved {}/skills/ prefix, which holds skill documents managed by people; write outside skills/, for example {}/notes/…",
                path.full,
                path.scope.as_str(),
                path.scope.as_str()
            ),
        ));
    }
    Ok(())
}

/// A document body for a write: no U+0000 (which cannot be stored), at most 65,536 bytes.
pub(crate) fn check_body(path: &str, content: &str) -> Result<(), Refusal> {
    if content.contains('\0') {
        return Err(refusal(
            ToolWord::ParameterInvalid,
            &format!("the content for {path:?} contains U+0000, which cannot be stored; remove it"),
        ));
    }
    if content.len() > DOCUMENT_BYTES {
        return Err(refusal(
            ToolWord::MemoryDocumentTooLarge,
            &format!(
                "the document {path:?} would be {} bytes, over the {DOCUMENT_BYTES}-byte bound; shorten it or split it across several documents",
                content.len()
            ),
        ));
    }
    Ok(())
}

/// The `memory_full` sentence.
pub(crate) fn full_sentence(path: &MemPath, bound: i64) -> String {
    format!(
        "{:?} would be a new document, but the {}/ scope already holds its bound of {bound} documents; delete or reuse one (see the listing) first",
        path.full,
        path.scope.as_str()
    )
}

/// The `memory_not_found` result.
pub(crate) fn not_found(path: &MemPath) -> KernelToolOutcome {
    KernelToolOutcome::error(
        ToolWord::MemoryNotFound,
        &format!(
            "no document exists at {:?}; check the path with memory_ls or memory_grep, or create it with memory_write",
            path.full
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let p = parse_path("workspace/notes/deploy.md").unwrap();
        assert_eq!(p.scope, MemoryScope::Workspace);
        assert!(!p.is_reserved());
        assert!(parse_path("user/a").is_ok());
        assert!(parse_path("conversation/a_b-c.d").is_ok());
        for bad in [
            "notes",
            "team/a",
            "workspace",
            "workspace/",
            "workspace/a/",
            "workspace//a",
            "workspace/./a",
            "workspace/../a",
            "workspace/a b",
            "Workspace/a",
            "workspace/é",
            "",
        ] {
            assert!(parse_path(bad).is_err(), "{bad}");
        }
        let long = format!("workspace/{}", "a".repeat(502));
        assert_eq!(long.len(), 512);
        assert!(parse_path(&long).is_ok());
        assert!(parse_path(&format!("{long}b")).is_err());
        let s = parse_path("user/skills/style-guide").unwrap();
        assert!(s.is_reserved());
        assert_eq!(s.skill_name(), Some("style-guide"));
        assert_eq!(parse_path("user/skills/a/b").unwrap().skill_name(), None);
        assert!(parse_path("user/skills/a/b").unwrap().is_reserved());
        assert!(!parse_path("user/skillsx/a").unwrap().is_reserved());
    }

    #[test]
    fn prefixes() {
        assert_eq!(parse_prefix("workspace").unwrap().prefix, "workspace/");
        assert_eq!(parse_prefix("workspace/").unwrap().prefix, "workspace/");
        assert_eq!(parse_prefix("workspace/no").unwrap().prefix, "workspace/no");
        assert!(parse_prefix("notes").is_err());
        assert!(parse_prefix("workspace/../x").is_err());
        assert!(parse_prefix("workspace/a b").is_err());
    }

    #[test]
    fn counting() {
        assert_eq!(occurrences("abc", "x"), 0);
        assert_eq!(occurrences("abc", "b"), 1);
        assert_eq!(occurrences("aaa", "aa"), 2);
        assert_eq!(occurrences("ébé", "é"), 2);
    }
}
