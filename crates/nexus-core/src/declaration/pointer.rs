//! JSON pointers (RFC 6901) for refusal paths.

/// `base` + `/` + `segment`, with `~` and `/` escaped in the segment.
pub(crate) fn push(base: &str, segment: &str) -> String {
    let mut out = String::with_capacity(base.len() + segment.len() + 1);
    out.push_str(base);
    out.push('/');
    for c in segment.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// `base` + `/` + `index`.
pub(crate) fn index(base: &str, i: usize) -> String {
    format!("{base}/{i}")
}
