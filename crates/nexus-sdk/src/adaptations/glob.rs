//! The model glob of a row's `models`: `*` matches any run of characters (including none),
//! `?` exactly one character, and every other character itself.

/// Whether `text` matches `pattern` as a whole.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // The most recent `*`: its pattern index and the text index it currently absorbs up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn stars_and_question_marks() {
        assert!(glob_match("claude-*", "claude-sonnet-4"));
        assert!(glob_match("claude-*", "claude-"));
        assert!(!glob_match("claude-*", "claude"));
        assert!(!glob_match("claude-*", "xclaude-3"));
        assert!(glob_match("gpt-?", "gpt-5"));
        assert!(!glob_match("gpt-?", "gpt-5o"));
        assert!(glob_match("*-mini", "gpt-5-mini"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(glob_match("*", ""));
        assert!(glob_match("", ""));
        assert!(!glob_match("", "x"));
        assert!(glob_match("codex-*", "codex-mini-latest"));
    }
}
