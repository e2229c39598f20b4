//! Type detection and filename sanitizing (uploads.md §2).
//!
//! The type comes from the bytes only: magic numbers (`infer`), else `text/plain` for valid
//! UTF-8 without NUL, else `application/octet-stream`. Never the part's `Content-Type`, never
//! the filename.

/// How many leading bytes detection looks at (the longest `infer` offsets fit).
pub const HEAD_BYTES: usize = 64 * 1024;

/// The longest stored filename, in bytes.
pub const FILENAME_MAX_BYTES: usize = 255;

/// The detected type of bytes seen through [`Sniffer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub content_type: String,
    /// The canonical extension of a magic-number match (`png`, `jpg`, `pdf`, …).
    pub extension: Option<String>,
}

/// Watches the bytes as they stream: keeps the head for magic numbers and checks UTF-8
/// (across chunk boundaries) and NUL over all of them.
#[derive(Debug, Default)]
pub struct Sniffer {
    head: Vec<u8>,
    /// An incomplete UTF-8 sequence at the end of the last chunk.
    carry: Vec<u8>,
    not_text: bool,
}

impl Sniffer {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        if self.head.len() < HEAD_BYTES {
            let take = (HEAD_BYTES - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        if self.not_text {
            return;
        }
        if chunk.contains(&0) {
            self.not_text = true;
            return;
        }
        let mut buf;
        let bytes: &[u8] = if self.carry.is_empty() {
            chunk
        } else {
            buf = std::mem::take(&mut self.carry);
            buf.extend_from_slice(chunk);
            &buf
        };
        match std::str::from_utf8(bytes) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() => {
                // Cut inside a sequence: keep the tail for the next chunk.
                self.carry = bytes[e.valid_up_to()..].to_vec();
            }
            Err(_) => self.not_text = true,
        }
    }

    /// The detected type of everything fed.
    pub fn finish(self) -> Detected {
        detect(&self.head, !self.not_text && self.carry.is_empty())
    }
}

/// The type of bytes whose head is `head`; `text` says the whole is UTF-8 without NUL.
pub fn detect(head: &[u8], text: bool) -> Detected {
    if let Some(kind) = infer::get(head) {
        return Detected {
            content_type: kind.mime_type().to_string(),
            extension: Some(kind.extension().to_string()),
        };
    }
    Detected {
        content_type: if text { "text/plain" } else { "application/octet-stream" }.to_string(),
        extension: None,
    }
}

/// The type of a whole buffer.
pub fn detect_bytes(bytes: &[u8]) -> Detected {
    let mut s = Sniffer::new();
    s.feed(bytes);
    s.finish()
}

/// Whether the type keeps its extension only when it matches (image, audio, video, PDF).
fn typed_media(content_type: &str) -> bool {
    content_type.starts_with("image/")
        || content_type.starts_with("audio/")
        || content_type.starts_with("video/")
        || content_type == "application/pdf"
}

/// Other spellings of a canonical extension.
fn same_extension(canonical: &str, ext: &str) -> bool {
    const ALIASES: &[(&str, &[&str])] = &[
        ("jpg", &["jpeg", "jpe", "jfif"]),
        ("tif", &["tiff"]),
        ("mpg", &["mpeg"]),
        ("m4a", &["mp4a"]),
        ("mp4", &["m4v"]),
        ("heif", &["heic"]),
        ("ogg", &["oga", "ogv"]),
    ];
    ext == canonical
        || ALIASES
            .iter()
            .any(|(c, others)| *c == canonical && others.contains(&ext))
}

/// Sanitizes a client filename for `detected` (uploads.md §2): path components stripped,
/// control characters removed, media extensions corrected, cut to 255 bytes. An empty result
/// becomes `upload` (with the canonical extension for media).
pub fn sanitize_filename(raw: &str, detected: &Detected) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let mut name: String = base.chars().filter(|c| !c.is_control()).collect();
    if is_blank_name(&name) {
        name = "upload".to_string();
    }
    if typed_media(&detected.content_type)
        && let Some(canonical) = detected.extension.as_deref()
    {
        let (stem, ext) = match name.rfind('.') {
            Some(i) if i > 0 => (&name[..i], Some(&name[i + 1..])),
            _ => (name.as_str(), None),
        };
        // A kept extension survives the length cut too: the stem is cut, never the extension.
        let suffix = match ext {
            Some(e) if same_extension(canonical, &e.to_ascii_lowercase()) => format!(".{e}"),
            _ => format!(".{canonical}"),
        };
        let stem = cut_to(stem, FILENAME_MAX_BYTES.saturating_sub(suffix.len()));
        return format!("{stem}{suffix}");
    }
    // The cut can leave a blank name (a long run of spaces before the first other character).
    match cut_to(&name, FILENAME_MAX_BYTES) {
        cut if is_blank_name(cut) => "upload".to_string(),
        cut => cut.to_string(),
    }
}

/// A name that names nothing: blank, `.` or `..` (around blanks).
fn is_blank_name(name: &str) -> bool {
    matches!(name.trim(), "" | "." | "..")
}

/// The longest prefix of `s` of at most `max` bytes on a character boundary.
fn cut_to(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = &[
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R',
    ];

    #[test]
    fn types_come_from_bytes() {
        assert_eq!(detect_bytes(PNG).content_type, "image/png");
        assert_eq!(detect_bytes(b"%PDF-1.7\n%...").content_type, "application/pdf");
        assert_eq!(detect_bytes(b"\xFF\xD8\xFF\xE0\0\x10JFIF").content_type, "image/jpeg");
        assert_eq!(detect_bytes("héllo wörld\n".as_bytes()).content_type, "text/plain");
        assert_eq!(detect_bytes(b"").content_type, "text/plain");
        assert_eq!(detect_bytes(b"abc\0def").content_type, "application/octet-stream");
        assert_eq!(detect_bytes(b"\xC3\x28 bad").content_type, "application/octet-stream");
    }

    #[test]
    fn utf8_split_across_chunks_is_text() {
        let bytes = "añb€c".as_bytes();
        for cut in 0..bytes.len() {
            let mut s = Sniffer::new();
            s.feed(&bytes[..cut]);
            s.feed(&bytes[cut..]);
            assert_eq!(s.finish().content_type, "text/plain", "cut at {cut}");
        }
        let mut s = Sniffer::new();
        s.feed(b"abc\xE2\x82");
        assert_eq!(
            s.finish().content_type,
            "application/octet-stream",
            "truncated sequence"
        );
    }

    /// Found by the `upload_detect` fuzz target: a JPEG named `<255+ bytes>.JFIF` kept its
    /// extension by the media check and then lost it to the 255-byte cut, so the stored name
    /// had no extension (and sanitizing it again gave another name).
    #[test]
    fn a_long_media_name_keeps_its_extension() {
        let jpeg = detect_bytes(b"\xFF\xD8\xFF\xE0\0\x10JFIF");
        let raw = format!("{}.JFIF", "\u{FFFD}".repeat(90));
        let name = sanitize_filename(&raw, &jpeg);
        assert!(name.len() <= FILENAME_MAX_BYTES && name.ends_with(".JFIF"), "{name:?}");
        assert_eq!(sanitize_filename(&name, &jpeg), name);
        let name = sanitize_filename(&format!("{}.png", "a".repeat(300)), &jpeg);
        assert_eq!((name.len(), name.ends_with("a.jpg")), (FILENAME_MAX_BYTES, true));
    }

    /// Found by the `upload_detect` fuzz target: 300 spaces and a word were cut to 255 spaces,
    /// a blank stored name (which sanitized again became `upload`).
    #[test]
    fn a_name_cut_to_blanks_is_upload() {
        let text = detect_bytes(b"hello");
        let raw = format!("{}notes.txt", " ".repeat(300));
        assert_eq!(sanitize_filename(&raw, &text), "upload");
        assert_eq!(sanitize_filename(&" ".repeat(10), &text), "upload");
        let raw = format!("{} . {}notes.txt", " ".repeat(20), " ".repeat(300));
        assert_eq!(sanitize_filename(&raw, &text), "upload");
    }

    #[test]
    fn filenames() {
        let png = detect_bytes(PNG);
        let text = detect_bytes(b"hi");
        assert_eq!(sanitize_filename("../../etc/shot.png", &png), "shot.png");
        assert_eq!(sanitize_filename("C:\\Users\\a\\shot.PNG", &png), "shot.PNG");
        assert_eq!(sanitize_filename("notes.txt", &png), "notes.png");
        assert_eq!(sanitize_filename("noext", &png), "noext.png");
        assert_eq!(sanitize_filename("a\u{7}b\n.txt", &text), "ab.txt");
        assert_eq!(
            sanitize_filename("x.png", &text),
            "x.png",
            "other files keep their name"
        );
        assert_eq!(sanitize_filename("", &text), "upload");
        assert_eq!(sanitize_filename("dir/", &png), "upload.png");
        let jpg = detect_bytes(b"\xFF\xD8\xFF\xE0\0\x10JFIF");
        assert_eq!(sanitize_filename("p.jpeg", &jpg), "p.jpeg");
        let long = "é".repeat(300);
        let cut = sanitize_filename(&long, &text);
        assert!(cut.len() <= 255 && cut.len() >= 254);
        let cut = sanitize_filename(&format!("{}.txt", "a".repeat(300)), &png);
        assert_eq!(cut.len(), 255);
        assert!(cut.ends_with(".png"));
    }
}
