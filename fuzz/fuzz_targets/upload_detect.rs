//! Upload type detection and filename sanitizing (uploads.md §2). Input: the first byte picks
//! how the rest is cut into chunks; the rest is the upload's bytes.
//!
//! Properties: the streaming sniffer gives the same type however the bytes are chunked (UTF-8
//! sequences and NULs across chunk boundaries) as the whole buffer does; without a magic
//! number, `text/plain` exactly for UTF-8 without NUL; a sanitized filename is
//! non-empty, at most 255 bytes, has no path separator or control character, and sanitizing
//! it again changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nexus_kernel::uploads::detect::{FILENAME_MAX_BYTES, Sniffer, detect_bytes, sanitize_filename};

fuzz_target!(|data: &[u8]| {
    let Some((&seed, bytes)) = data.split_first() else {
        return;
    };
    let whole = detect_bytes(bytes);
    let mut sniffer = Sniffer::new();
    let mut rest = bytes;
    let mut step = seed as usize;
    while !rest.is_empty() {
        let take = (step % 7 + 1).min(rest.len());
        sniffer.feed(&rest[..take]);
        sniffer.feed(&[]);
        rest = &rest[take..];
        step = step.wrapping_mul(31).wrapping_add(seed as usize + 1);
    }
    assert_eq!(sniffer.finish(), whole, "chunking changed the detected type");

    let text = std::str::from_utf8(bytes).is_ok_and(|s| !s.contains('\0'));
    // Without a magic-number match (no extension), the type says whether the bytes are text.
    // (Some magic numbers are themselves `application/octet-stream`, with an extension.)
    if whole.extension.is_none() {
        match whole.content_type.as_str() {
            "text/plain" => assert!(text),
            "application/octet-stream" => assert!(!text),
            other => panic!("{other} without a magic-number match"),
        }
    }

    let raw = String::from_utf8_lossy(bytes);
    let name = sanitize_filename(&raw, &whole);
    assert!(!name.is_empty() && name.len() <= FILENAME_MAX_BYTES, "bad length {}", name.len());
    assert!(!name.contains(['/', '\\']) && !name.chars().any(char::is_control), "{name:?}");
    assert_eq!(sanitize_filename(&name, &whole), name, "sanitizing is not idempotent");
});
