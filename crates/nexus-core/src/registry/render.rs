//! Macro rendering of description templates (registry.md §6).
//!
//! Grammar: `{{` + `[a-z][a-z0-9_]*` + `}}` with no inner whitespace. Any other brace text is
//! literal. A macro naming a kernel wire name renders as the spelling map's callable for it;
//! any other macro renders as its bare word.

use serde_json::Value;

/// A spelling map M from kernel wire name to callable. `None` means "spell it as itself".
pub trait Spelling {
    fn spell(&self, wire: &str) -> Option<&str>;
}

/// The identity map: the un-aliased (plain) render.
pub struct Identity;

impl Spelling for Identity {
    fn spell(&self, _wire: &str) -> Option<&str> {
        None
    }
}

impl<S: std::hash::BuildHasher> Spelling for std::collections::HashMap<String, String, S> {
    fn spell(&self, wire: &str) -> Option<&str> {
        self.get(wire).map(String::as_str)
    }
}

impl Spelling for std::collections::BTreeMap<String, String> {
    fn spell(&self, wire: &str) -> Option<&str> {
        self.get(wire).map(String::as_str)
    }
}

/// Calls `f` for every macro in `text`, in order, with its inner word.
pub fn macros(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        loop {
            let start = rest.find("{{")?;
            let after = &rest[start + 2..];
            match macro_word(after) {
                Some(word) => {
                    rest = &after[word.len() + 2..];
                    return Some(word);
                }
                None => rest = &rest[start + 1..],
            }
        }
    })
}

/// If `s` starts with `word}}` where word is `[a-z][a-z0-9_]*`, returns word.
fn macro_word(s: &str) -> Option<&str> {
    let bytes = s.as_bytes();
    if !bytes.first().is_some_and(u8::is_ascii_lowercase) {
        return None;
    }
    let len = bytes
        .iter()
        .take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || **b == b'_')
        .count();
    s[len..].starts_with("}}").then(|| &s[..len])
}

/// Renders one text with `spelling`. `is_kernel_wire` decides which words are kernel names.
pub fn render_text(text: &str, spelling: &dyn Spelling) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        match macro_word(after) {
            Some(word) => {
                out.push_str(&rest[..start]);
                let spelled = if super::resolve_wire(word).is_some() {
                    spelling.spell(word).unwrap_or(word)
                } else {
                    word
                };
                out.push_str(spelled);
                rest = &after[word.len() + 2..];
            }
            None => {
                out.push_str(&rest[..start + 1]);
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Renders every `properties.*.description` of a parameter schema, recursively, in place.
pub fn render_schema_descriptions(schema: &mut Value, spelling: &dyn Spelling) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (_, prop) in props.iter_mut() {
        // Text without `{{` holds no macro and renders as itself.
        if let Some(Value::String(d)) = prop.get_mut("description")
            && d.contains("{{")
        {
            *d = render_text(d, spelling);
        }
        render_schema_descriptions(prop, spelling);
        if let Some(items) = prop.get_mut("items") {
            render_schema_descriptions(items, spelling);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn identity_render_spells_kernel_names_as_themselves() {
        assert_eq!(render_text("call {{wait}} now", &Identity), "call wait now");
    }

    #[test]
    fn unknown_macro_renders_as_the_bare_word() {
        assert_eq!(render_text("use {{frobnicate}} here", &Identity), "use frobnicate here");
        let m: HashMap<String, String> = [("frobnicate".into(), "X".into())].into();
        assert_eq!(render_text("{{frobnicate}}", &m), "frobnicate");
    }

    #[test]
    fn non_macro_braces_are_literal() {
        for literal in [
            "{{ wait }}",
            "{{Wait}}",
            "{wait}",
            "{{wait}",
            "{{}}",
            "{{1a}}",
            "{{{",
            "}}",
        ] {
            assert_eq!(render_text(literal, &Identity), literal, "{literal}");
        }
        assert_eq!(render_text("{{{wait}}}", &Identity), "{wait}");
    }

    #[test]
    fn spelling_map_respells_kernel_names() {
        let m: HashMap<String, String> = [("delegate_task".into(), "Agent".into())].into();
        assert_eq!(render_text("{{delegate_task}} then {{wait}}", &m), "Agent then wait");
    }

    #[test]
    fn macros_iterates_words() {
        let words: Vec<&str> = macros("a {{wait}} b {{ x }} {{spawn}}{{send}}").collect();
        assert_eq!(words, ["wait", "spawn", "send"]);
    }
}
