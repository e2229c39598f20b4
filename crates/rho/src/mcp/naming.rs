//! Served names: `<server>_<tool>`, sanitized to `[a-zA-Z0-9_-]` and cut to 64 characters
//! (executor.md §14), and the refusal of two tools that would share one.

use std::collections::BTreeMap;

/// The longest served name the kernel accepts (executor.md §4).
pub const MAX_NAME: usize = 64;

/// The name a server's tool is served as: every character outside `[a-zA-Z0-9_-]` becomes `_`,
/// and the result is cut to [`MAX_NAME`] characters.
pub fn served_name(server: &str, tool: &str) -> String {
    format!("{server}_{tool}").chars().map(allowed).take(MAX_NAME).collect()
}

/// `c` if the kernel's name grammar allows it, else `_`.
fn allowed(c: char) -> char {
    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
        c
    } else {
        '_'
    }
}

/// One MCP tool by its origin: the `[[mcp]]` name and the tool's own name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The `[[mcp]]` entry's name.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
}

/// Two tools that would be served under one name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the MCP tools `{}` of server `{}` and `{}` of server `{}` would both be served as `{served}`; \
     rename one of the [[mcp]] servers",
    first.tool, first.server, second.tool, second.server
)]
pub struct Collision {
    /// The shared served name.
    pub served: String,
    /// The tool listed first.
    pub first: Origin,
    /// The tool that collided with it.
    pub second: Origin,
}

/// Checks that no two origins share a served name; the first clash is the error.
pub fn check_unique<'a>(origins: impl IntoIterator<Item = &'a Origin>) -> Result<(), Collision> {
    let mut seen: BTreeMap<String, &Origin> = BTreeMap::new();
    for origin in origins {
        let served = served_name(&origin.server, &origin.tool);
        if let Some(first) = seen.get(&served) {
            return Err(Collision {
                served,
                first: (*first).clone(),
                second: origin.clone(),
            });
        }
        seen.insert(served, origin);
    }
    Ok(())
}

/// A capture's file name: the tool name made file-safe, an index when a result holds several
/// captures, and the MIME type's usual extension.
pub fn capture_filename(tool: &str, index: usize, mime_type: &str) -> String {
    let stem: String = tool.chars().map(allowed).take(MAX_NAME).collect();
    let stem = if stem.is_empty() { "capture".to_owned() } else { stem };
    let numbered = if index == 0 {
        stem
    } else {
        format!("{stem}-{}", index + 1)
    };
    match extension(mime_type) {
        Some(ext) => format!("{numbered}.{ext}"),
        None => numbered,
    }
}

/// The usual extension of a MIME type, for the types MCP servers send most.
fn extension(mime_type: &str) -> Option<&'static str> {
    let essence = mime_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    Some(match essence.as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/webm" => "webm",
        "audio/flac" => "flac",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "application/gzip" | "application/x-gzip" => "gz",
        "application/zip" => "zip",
        "text/plain" => "txt",
        "text/markdown" => "md",
        "text/html" => "html",
        "text/csv" => "csv",
        "application/octet-stream" => "bin",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(server: &str, tool: &str) -> Origin {
        Origin {
            server: server.into(),
            tool: tool.into(),
        }
    }

    #[test]
    fn names_join_server_and_tool_and_keep_the_allowed_characters() {
        assert_eq!(served_name("everything", "get-sum"), "everything_get-sum");
        assert_eq!(served_name("fs", "read_file"), "fs_read_file");
        assert_eq!(served_name("Ab9", "Z-_z"), "Ab9_Z-_z");
    }

    #[test]
    fn every_other_character_becomes_an_underscore_one_per_character() {
        assert_eq!(served_name("my.server", "tools/list all"), "my_server_tools_list_all");
        // A multi-byte character is one underscore, not one per byte.
        assert_eq!(served_name("s", "café:x"), "s_caf__x");
        assert_eq!(served_name("s", "日本"), "s___");
        assert!(
            served_name("a b", "ü.€")
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }

    #[test]
    fn names_are_cut_to_64_characters() {
        let long = "t".repeat(100);
        let name = served_name("server", &long);
        assert_eq!(name.len(), MAX_NAME);
        assert_eq!(name, format!("server_{}", "t".repeat(57)));
        assert_eq!(served_name("s", &"é".repeat(100)).len(), MAX_NAME);
        assert_eq!(served_name("s", "x").len(), 3);
    }

    #[test]
    fn distinct_names_pass() {
        let all = [origin("a", "x"), origin("a", "y"), origin("b", "x")];
        assert_eq!(check_unique(&all), Ok(()));
    }

    #[test]
    fn a_clash_within_one_server_names_both_tools() {
        let all = [origin("srv", "a.b"), origin("srv", "ok"), origin("srv", "a_b")];
        let err = check_unique(&all).unwrap_err();
        assert_eq!(err.served, "srv_a_b");
        assert_eq!(err.first, origin("srv", "a.b"));
        assert_eq!(err.second, origin("srv", "a_b"));
        let text = err.to_string();
        assert!(
            text.contains("`a.b` of server `srv`") && text.contains("`a_b` of server `srv`"),
            "{text}"
        );
        assert!(text.contains("`srv_a_b`"), "{text}");
    }

    #[test]
    fn a_clash_across_servers_names_both_servers() {
        // `a` + `b_c` and `a_b` + `c` both give `a_b_c`.
        let all = [origin("a", "b_c"), origin("a_b", "c")];
        let err = check_unique(&all).unwrap_err();
        assert_eq!(err.served, "a_b_c");
        let text = err.to_string();
        assert!(text.contains("server `a`") && text.contains("server `a_b`"), "{text}");
    }

    #[test]
    fn names_equal_only_after_the_cut_clash() {
        let stem = "x".repeat(70);
        let all = [origin("s", &format!("{stem}1")), origin("s", &format!("{stem}2"))];
        assert!(check_unique(&all).is_err());
    }

    #[test]
    fn the_same_tool_listed_twice_clashes() {
        assert!(check_unique(&[origin("s", "t"), origin("s", "t")]).is_err());
    }

    #[test]
    fn capture_filenames_carry_the_tool_an_index_and_the_extension() {
        assert_eq!(capture_filename("get-tiny-image", 0, "image/png"), "get-tiny-image.png");
        assert_eq!(
            capture_filename("get-tiny-image", 1, "image/png"),
            "get-tiny-image-2.png"
        );
        assert_eq!(capture_filename("say", 0, "audio/wav"), "say.wav");
        assert_eq!(capture_filename("zip it", 0, "application/gzip"), "zip_it.gz");
        assert_eq!(capture_filename("t", 0, "IMAGE/JPEG; q=1"), "t.jpg");
        assert_eq!(capture_filename("t", 0, "application/x-unknown"), "t");
        assert_eq!(capture_filename("", 0, "image/png"), "capture.png");
    }
}
