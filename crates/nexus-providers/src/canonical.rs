//! RFC 8785 canonical JSON of the neutral request, written directly (providers.md §7).
//!
//! The bytes are exactly those of `serde_jcs::to_vec(&request)`, which is what this crate sealed
//! before this writer existed (the guard in `tests/encoded_bytes.rs` pins them), but without
//! `serde_jcs`'s per-member buffers, copies and key re-parsing:
//!
//! - the members of every neutral struct are written in their sorted order, fixed here (all
//!   names are ASCII, so UTF-16 order is byte order): a request is `entries`, `model`,
//!   `options`, `provider`, `system`, `tools`, then `tools_deferred` when it is not empty;
//! - strings are escaped as `serde_json` escapes them (`"`, `\`, `\b \t \n \f \r`, other
//!   controls as `\u00xx`, nothing else);
//! - the one number, `max_output_tokens`, is a `u32`, whose JCS form (ECMAScript `Number`
//!   formatting of an integer below 2^53) is its decimal digits;
//! - free-form values (`tools[]`, an assistant's `native`) still go through `serde_jcs`, which
//!   owns number formatting and UTF-16 key order.
//!
//! The entries come first in the body, so the bytes of a request whose entries extend an
//! earlier request's start with the earlier request's entries: [`open_entries`],
//! [`push_entry`] and [`close`] let the `scripted` encoder reuse them.

use serde_json::Value;
use uuid::Uuid;

use crate::neutral::{Entry, ModelRequest, Part, RawToolCall};

/// The whole canonical body of `req`.
pub(crate) fn request(req: &ModelRequest) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = open_entries(Vec::with_capacity(1024));
    for (i, entry) in req.entries.iter().enumerate() {
        push_entry(&mut out, i == 0, entry)?;
    }
    let tools = tools_member(req)?;
    close(&mut out, req, &tools);
    Ok(out)
}

/// Starts a body: `out` (expected empty) gets `{"entries":[`.
pub(crate) fn open_entries(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(br#"{"entries":["#);
    out
}

/// Appends one entry (after a comma unless it is the `first`).
pub(crate) fn push_entry(out: &mut Vec<u8>, first: bool, entry: &Entry) -> Result<(), serde_json::Error> {
    if !first {
        out.push(b',');
    }
    match entry {
        Entry::User { parts } => {
            write_parts(out, parts);
            out.extend_from_slice(br#","type":"user"}"#);
        }
        Entry::Assistant {
            text,
            tool_calls,
            native,
        } => {
            out.push(b'{');
            if let Some(native) = native {
                out.extend_from_slice(br#""native":"#);
                serde_jcs::to_writer(&mut *out, native)?;
                out.push(b',');
            }
            out.extend_from_slice(br#""text":"#);
            write_opt_str(out, text.as_deref());
            out.extend_from_slice(br#","tool_calls":["#);
            for (i, call) in tool_calls.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_call(out, call);
            }
            out.extend_from_slice(br#"],"type":"assistant"}"#);
        }
        Entry::ToolResult {
            call_id,
            name,
            output,
            is_error,
        } => {
            out.extend_from_slice(br#"{"call_id":"#);
            write_str(out, call_id);
            out.extend_from_slice(br#","is_error":"#);
            out.extend_from_slice(if *is_error { b"true" } else { b"false" });
            out.extend_from_slice(br#","name":"#);
            write_str(out, name);
            out.extend_from_slice(br#","output":"#);
            write_str(out, output);
            out.extend_from_slice(br#","type":"tool_result"}"#);
        }
        Entry::Attachments { parts } => {
            write_parts(out, parts);
            out.extend_from_slice(br#","type":"attachments"}"#);
        }
    }
    Ok(())
}

/// The canonical JSON of a request's `tools` array.
pub(crate) fn tools(tools: &[Value]) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(64 * tools.len() + 2);
    out.push(b'[');
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_jcs::to_writer(&mut out, tool)?;
    }
    out.push(b']');
    Ok(out)
}

/// What follows `"tools":` in a request's canonical body: the array of `req.tools`, then,
/// when `req.tools_deferred` is not empty, the `tools_deferred` member (the last in JCS order:
/// `tools` sorts before `tools_deferred`).
pub(crate) fn tools_member(req: &ModelRequest) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = tools(&req.tools)?;
    if !req.tools_deferred.is_empty() {
        out.extend_from_slice(br#","tools_deferred":"#);
        out.extend_from_slice(&tools(&req.tools_deferred)?);
    }
    Ok(out)
}

/// Ends a body whose entries are written: the members after `entries`, with `tools` the
/// output of [`tools_member`] for `req`.
pub(crate) fn close(out: &mut Vec<u8>, req: &ModelRequest, tools: &[u8]) {
    out.extend_from_slice(br#"],"model":"#);
    write_str(out, &req.model);
    out.extend_from_slice(br#","options":{"max_output_tokens":"#);
    match req.options.max_output_tokens {
        Some(n) => write_u32(out, n),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","reasoning_effort":"#);
    write_opt_str(out, req.options.reasoning_effort.as_deref());
    out.extend_from_slice(br#"},"provider":"#);
    write_str(out, &req.provider);
    out.extend_from_slice(br#","system":["#);
    for (i, part) in req.system.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, part);
    }
    out.extend_from_slice(br#"],"tools":"#);
    out.extend_from_slice(tools);
    out.push(b'}');
}

/// `{"parts":[…]` (the caller writes the rest of the entry).
fn write_parts(out: &mut Vec<u8>, parts: &[Part]) {
    out.extend_from_slice(br#"{"parts":["#);
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match part {
            Part::Text { text } => {
                out.extend_from_slice(br#"{"text":"#);
                write_str(out, text);
                out.extend_from_slice(br#","type":"text"}"#);
            }
            Part::Image { upload, media_type } => {
                out.extend_from_slice(br#"{"media_type":"#);
                write_str(out, media_type);
                out.extend_from_slice(br#","type":"image","upload":"#);
                write_uuid(out, upload);
                out.push(b'}');
            }
            Part::Document { upload } => {
                out.extend_from_slice(br#"{"type":"document","upload":"#);
                write_uuid(out, upload);
                out.push(b'}');
            }
        }
    }
    out.push(b']');
}

fn write_call(out: &mut Vec<u8>, call: &RawToolCall) {
    out.extend_from_slice(br#"{"arguments":"#);
    write_str(out, &call.arguments);
    out.extend_from_slice(br#","id":"#);
    write_str(out, &call.id);
    out.extend_from_slice(br#","name":"#);
    write_str(out, &call.name);
    out.push(b'}');
}

/// A UUID as `serde` writes it to a human-readable format: lowercase, hyphenated, quoted.
fn write_uuid(out: &mut Vec<u8>, id: &Uuid) {
    out.push(b'"');
    out.extend_from_slice(id.hyphenated().encode_lower(&mut Uuid::encode_buffer()).as_bytes());
    out.push(b'"');
}

/// Decimal digits: the JCS form of an integer below 2^53 (ECMAScript `Number` formatting).
fn write_u32(out: &mut Vec<u8>, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn write_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => write_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// What a byte becomes inside a string: 0 for itself, `u` for `\u00xx`, else the letter after
/// the backslash (`serde_json`'s table, which `serde_jcs` uses).
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// A quoted, escaped JSON string.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = ESCAPE[b as usize];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if escape == b'u' {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]]);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::neutral::RequestOptions;

    #[test]
    fn strings_escape_like_serde_jcs() {
        for b in 0u8..=0x7f {
            let s = char::from(b).to_string();
            let mut out = Vec::new();
            write_str(&mut out, &s);
            assert_eq!(out, serde_jcs::to_vec(&s).unwrap(), "byte {b:#04x}");
        }
        for s in [
            "",
            "plain",
            "a\"b\\c/d",
            "é日本😀\u{2028}\u{fffd}",
            "\u{0}x\u{1f}\n\r\t",
        ] {
            let mut out = Vec::new();
            write_str(&mut out, s);
            assert_eq!(out, serde_jcs::to_vec(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn numbers_format_like_serde_jcs() {
        for n in [0, 1, 9, 10, 1024, 8_192, 99_999, 2_147_483_647, u32::MAX - 1, u32::MAX] {
            let req = ModelRequest {
                provider: "p".into(),
                model: "m".into(),
                system: vec![],
                entries: vec![],
                tools_deferred: vec![],
                tools: vec![],
                options: RequestOptions {
                    max_output_tokens: Some(n),
                    reasoning_effort: None,
                },
            };
            assert_eq!(request(&req).unwrap(), serde_jcs::to_vec(&req).unwrap(), "{n}");
        }
    }

    /// A small deterministic generator (no dependency): every field shape, random strings.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn pick(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn string(&mut self) -> String {
            const ALPHABET: [char; 16] = [
                'a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\u{1}', '\u{1f}', '\u{7f}', 'é', '日', '😀', '\u{2028}', '{',
            ];
            (0..self.pick(12)).map(|_| ALPHABET[self.pick(16) as usize]).collect()
        }
        fn value(&mut self, depth: u32) -> Value {
            match self.pick(if depth > 2 { 5 } else { 7 }) {
                0 => Value::Null,
                1 => json!(self.pick(2) == 1),
                2 => json!(self.next() as i64 - (1 << 30)),
                3 => json!((self.next() as f64) / 7.0),
                4 => json!(self.string()),
                5 => Value::Array((0..self.pick(4)).map(|_| self.value(depth + 1)).collect()),
                _ => Value::Object(
                    (0..self.pick(4))
                        .map(|_| (self.string(), self.value(depth + 1)))
                        .collect(),
                ),
            }
        }
        fn uuid(&mut self) -> Uuid {
            Uuid::from_u128(u128::from(self.next()) << 64 | u128::from(self.next()))
        }
        fn part(&mut self) -> Part {
            match self.pick(3) {
                0 => Part::text(self.string()),
                1 => Part::Image {
                    upload: self.uuid(),
                    media_type: self.string(),
                },
                _ => Part::Document { upload: self.uuid() },
            }
        }
        fn opt_string(&mut self) -> Option<String> {
            (self.pick(2) == 1).then(|| self.string())
        }
        fn entry(&mut self) -> Entry {
            match self.pick(4) {
                0 => Entry::User {
                    parts: (0..self.pick(3)).map(|_| self.part()).collect(),
                },
                1 => Entry::Assistant {
                    text: self.opt_string(),
                    tool_calls: (0..self.pick(3))
                        .map(|_| RawToolCall {
                            id: self.string(),
                            name: self.string(),
                            arguments: self.string(),
                        })
                        .collect(),
                    native: (self.pick(2) == 1).then(|| self.value(0)),
                },
                2 => Entry::ToolResult {
                    call_id: self.string(),
                    name: self.string(),
                    output: self.string(),
                    is_error: self.pick(2) == 1,
                },
                _ => Entry::Attachments {
                    parts: (0..self.pick(3)).map(|_| self.part()).collect(),
                },
            }
        }
        fn request(&mut self) -> ModelRequest {
            ModelRequest {
                provider: self.string(),
                model: self.string(),
                system: (0..self.pick(3)).map(|_| self.string()).collect(),
                entries: (0..self.pick(8)).map(|_| self.entry()).collect(),
                tools: (0..self.pick(3)).map(|_| self.value(0)).collect(),
                tools_deferred: (0..self.pick(3)).map(|_| self.value(0)).collect(),
                options: RequestOptions {
                    max_output_tokens: (self.pick(2) == 1).then(|| self.next() as u32),
                    reasoning_effort: self.opt_string(),
                },
            }
        }
    }

    #[test]
    fn random_requests_match_serde_jcs() {
        let mut g = Gen(7);
        for i in 0..3_000 {
            let req = g.request();
            assert_eq!(
                String::from_utf8(request(&req).unwrap()).unwrap(),
                serde_jcs::to_string(&req).unwrap(),
                "case {i}"
            );
        }
    }
}
