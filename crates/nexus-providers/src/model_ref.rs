//! `provider/model` refs (providers.md §1): `provider` matches `[a-z0-9][a-z0-9_-]*`; `model` is
//! the non-empty rest with no whitespace (it may contain `/`).

/// A parsed model ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef<'a> {
    /// The instance name, before the first `/`.
    pub provider: &'a str,
    /// The rest (may contain `/`).
    pub model: &'a str,
}

impl<'a> ModelRef<'a> {
    /// Parses a ref; `None` when it breaks the grammar.
    pub fn parse(s: &'a str) -> Option<Self> {
        let (provider, model) = s.split_once('/')?;
        let mut bytes = provider.bytes();
        let first_ok = bytes
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let rest_ok = bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        let model_ok = !model.is_empty() && !model.chars().any(char::is_whitespace);
        (first_ok && rest_ok && model_ok).then_some(Self { provider, model })
    }
}

#[cfg(test)]
mod tests {
    use super::ModelRef;

    #[test]
    fn grammar() {
        assert_eq!(
            ModelRef::parse("scripted/echo"),
            Some(ModelRef {
                provider: "scripted",
                model: "echo"
            })
        );
        assert_eq!(ModelRef::parse("local/org/model-7b").unwrap().model, "org/model-7b");
        for bad in [
            "",
            "scripted",
            "scripted/",
            "/echo",
            "Scripted/echo",
            "_x/echo",
            "a/b c",
            "a b/c",
        ] {
            assert_eq!(ModelRef::parse(bad), None, "{bad}");
        }
    }
}
