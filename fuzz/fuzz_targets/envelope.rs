//! The result envelope (runs.md §8, results): a tool's `content` → stored blocks → what the
//! model reads. Input: a JSON value (the content) or `{"content", "status", "is_error",
//! "error_key", "error_detail", "head", "input_json"}`.
//!
//! Properties: stored blocks read back to themselves and normalize to themselves; the
//! `Serialize` impl writes what `to_json` builds; rendering is deterministic and attaches only
//! linked uploads; escaping leaves none of the escaped sequences and changes nothing but the
//! `<` of those; an envelope around any output has exactly one opening and one closing tag.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nexus_core::pairing::{
    ESCAPED_SEQUENCES, EnvelopeHead, MEDIA_TYPES, MediaInfo, MediaJudge, SettledView, answer_envelope,
    escape_envelope_text, render_content, render_result, task_result_envelope,
};
use nexus_core::results::{
    Block, blocks_from_json, blocks_to_json, linked_uploads, normalize_content, text_projection,
};
use serde_json::Value;

/// Decides media facts from the id's digits, so every branch of `render_content` is reachable.
struct Judge;

impl MediaJudge for Judge {
    fn media_of(&self, id: &str) -> Option<MediaInfo> {
        let d = u64::from_str_radix(&id[..1], 16).ok()?;
        (d % 4 != 0).then(|| MediaInfo {
            content_type: MEDIA_TYPES.get(d as usize % 7).copied().unwrap_or("text/plain").to_string(),
            byte_size: d << (d + 8),
            name: format!("upload-{d}"),
        })
    }
    fn accepts(&self, content_type: &str, byte_size: u64) -> bool {
        content_type != "application/pdf" && byte_size % 3 != 0
    }
}

fn check_escape(s: &str) {
    let e = escape_envelope_text(s);
    for seq in ESCAPED_SEQUENCES {
        assert!(!e.contains(seq), "escaped text still holds {seq:?}");
    }
    assert_eq!(e.replace("&lt;", "<"), s.replace("&lt;", "<"), "escaping changed more than `<`");
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        if let Ok(s) = std::str::from_utf8(data) {
            check_escape(s);
        }
        return;
    };
    let field = |k: &str| value.get(k).and_then(Value::as_str);
    let content = value.get("content").unwrap_or(&value);

    let Ok(blocks) = normalize_content(content) else {
        return;
    };
    let stored = blocks_to_json(&blocks);
    assert_eq!(blocks_from_json(&stored).as_ref(), Some(&blocks), "stored blocks do not read back");
    assert_eq!(normalize_content(&stored).as_ref(), Ok(&blocks), "normalize is not idempotent");
    assert_eq!(serde_json::to_value(&blocks).expect("blocks serialize"), stored);

    let (text, attachments) = render_content(&blocks, &Judge);
    assert_eq!((text.clone(), attachments.clone()), render_content(&blocks, &Judge));
    let linked: Vec<String> = linked_uploads(&blocks).iter().map(|u| u.to_string()).collect();
    for a in &attachments {
        assert!(linked.contains(a), "attached {a} is not linked");
    }
    let projection = text_projection(&blocks);
    if blocks.iter().all(|b| matches!(b, Block::Text(_))) {
        assert_eq!(text, projection);
    }

    let view = SettledView {
        status: field("status").unwrap_or("completed"),
        is_error: value.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        content: &blocks,
        error_key: field("error_key"),
        error_detail: field("error_detail"),
    };
    let rendered = render_result(&view, &Judge);
    if rendered.is_error {
        assert!(rendered.output.starts_with("<tool_use_error>") && rendered.output.ends_with("</tool_use_error>"));
    }

    for output in [&text, &projection, &rendered.output] {
        check_escape(output);
        let head = match (field("head"), field("input_json")) {
            (Some(brief), None) => Some(EnvelopeHead::Prompt(brief)),
            (name, Some(input_json)) => Some(EnvelopeHead::Call {
                name: name.unwrap_or("tool"),
                input_json,
            }),
            (None, None) => None,
        };
        let envelope = task_result_envelope("s1-tool-1", "completed", head, output);
        assert_eq!(count(&envelope, "<task_result "), 1, "an output opened a second envelope");
        assert_eq!(count(&envelope, "</task_result"), 1, "an output closed the envelope early");
        let answer = answer_envelope("s1-ask-1", output);
        for seq in ESCAPED_SEQUENCES {
            assert!(!answer.contains(seq));
        }
    }
});
