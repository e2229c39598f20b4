//! Anchored globs (approvals.md §2): `*` matches any run of characters (newlines included),
//! `?` exactly one character, every other character is literal. There is no escape.

/// Whether `text` matches the anchored `pattern`.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A `tool` pattern: pipe-separated alternatives, each an anchored glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    alternatives: Vec<String>,
}

impl Glob {
    /// Splits `pattern` on `|`. `None` when the pattern or any alternative is empty, or when it
    /// contains NUL (`glob_invalid`).
    pub fn parse_alternatives(pattern: &str) -> Option<Self> {
        if pattern.contains('\0') {
            return None;
        }
        let alternatives: Vec<String> = pattern.split('|').map(str::to_string).collect();
        if alternatives.iter().any(String::is_empty) {
            return None;
        }
        Some(Self { alternatives })
    }

    /// Whether any alternative matches `text`.
    pub fn matches(&self, text: &str) -> bool {
        self.alternatives.iter().any(|a| glob_match(a, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_and_question_are_anchored() {
        assert!(glob_match("memory_*", "memory_read"));
        assert!(!glob_match("memory_*", "xmemory_read"));
        assert!(glob_match("*", ""));
        assert!(glob_match("*", "a\nb"));
        assert!(glob_match("rm *", "rm -rf /"));
        assert!(!glob_match("rm *", "xrm -rf"));
        assert!(glob_match("a?c", "abc"));
        assert!(glob_match("a?c", "aéc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(!glob_match("abc", "abcd"));
        assert!(glob_match("*a*b*", "xxaxxbxx"));
        assert!(!glob_match("*a*b", "xxaxxbx"));
        assert!(glob_match("", ""));
        assert!(!glob_match("", "a"));
        assert!(glob_match("[x]", "[x]"), "brackets are literal");
    }

    #[test]
    fn alternatives_split_on_pipes() {
        let g = Glob::parse_alternatives("read|glob|memory_*").unwrap();
        assert!(g.matches("glob"));
        assert!(g.matches("memory_ls"));
        assert!(!g.matches("grep"));
        assert!(Glob::parse_alternatives("a||b").is_none());
        assert!(Glob::parse_alternatives("").is_none());
        assert!(Glob::parse_alternatives("a|").is_none());
    }
}
