//! MCP results to Nexus results (executor.md §14): text stays text; images, audio and embedded
//! blobs become staged captures linked by `resource_link`; an embedded text resource is its
//! text; a foreign `resource_link` becomes a text block holding its JSON; `structuredContent`
//! and `isError` carry over; a JSON-RPC error is a failed outcome.

use std::future::Future;
use std::pin::Pin;

use base64::Engine;
use nexus_sdk::runner::{Block, ToolResult};
use rmcp::ServiceError;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use super::naming::capture_filename;

/// Bytes a result carries that the kernel only takes as an upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// The decoded bytes.
    pub bytes: Vec<u8>,
    /// A file name (the tool's name and the MIME type's extension).
    pub filename: String,
    /// The MIME type the server declared.
    pub mime_type: String,
}

/// The future [`Stage::stage`] returns.
pub type StageFuture<'a> = Pin<Box<dyn Future<Output = Result<Block, String>> + Send + 'a>>;

/// Where captures go: the claim's capture staging in rho, a recorder in tests. The block it
/// answers is the `resource_link` that takes the bytes' place in the result.
pub trait Stage: Send + Sync {
    /// Stages one capture; the error is a sentence for the result's note.
    fn stage(&self, capture: Capture) -> StageFuture<'_>;
}

/// The one-line header of every bridged result: `<server> <tool>`.
pub fn title(server: &str, tool: &str) -> String {
    format!("{server} {tool}")
}

/// Maps a completed `tools/call`.
pub async fn map_result(server: &str, tool: &str, result: CallToolResult, stage: &dyn Stage) -> ToolResult {
    let mut out = ToolResult {
        structured_content: result.structured_content,
        is_error: result.is_error == Some(true),
        title: Some(title(server, tool)),
        ..ToolResult::default()
    };
    let mut captures = 0usize;
    for block in result.content {
        let mapped = match block {
            ContentBlock::Text(text) => Block::Text { text: text.text },
            ContentBlock::Image(image) => {
                let name = capture_filename(tool, captures, &image.mime_type);
                captures += 1;
                staged(stage, "image", &image.data, image.mime_type, name).await
            }
            ContentBlock::Audio(audio) => {
                let name = capture_filename(tool, captures, &audio.mime_type);
                captures += 1;
                staged(stage, "audio", &audio.data, audio.mime_type, name).await
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => Block::Text { text },
                ResourceContents::BlobResourceContents {
                    uri, mime_type, blob, ..
                } => {
                    let mime_type = mime_type.unwrap_or_else(|| "application/octet-stream".to_owned());
                    let name = uri_filename(&uri).unwrap_or_else(|| capture_filename(tool, captures, &mime_type));
                    captures += 1;
                    staged(stage, "resource", &blob, mime_type, name).await
                }
                other => Block::Text {
                    text: serde_json::to_string(&other)
                        .unwrap_or_else(|e| format!("[an unreadable MCP resource: {e}]")),
                },
            },
            // A link the kernel cannot resolve (only `nexus://uploads/` resolves): the model
            // reads it as data.
            other => Block::Text {
                text: serde_json::to_string(&other).unwrap_or_else(|e| format!("[an unreadable MCP block: {e}]")),
            },
        };
        out.content.push(mapped);
    }
    out
}

/// Decodes and stages one capture; a failure leaves a note in its place, so the rest of the
/// result still reaches the model.
async fn staged(stage: &dyn Stage, kind: &str, data: &str, mime_type: String, filename: String) -> Block {
    let bytes = match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
        Ok(bytes) => bytes,
        Err(e) => {
            return Block::Text {
                text: format!("[{kind} {mime_type}: not attached: the server sent invalid base64 ({e})]"),
            };
        }
    };
    let size = bytes.len();
    match stage
        .stage(Capture {
            bytes,
            filename,
            mime_type: mime_type.clone(),
        })
        .await
    {
        Ok(link) => link,
        Err(reason) => Block::Text {
            text: format!("[{kind} {mime_type}, {size} bytes: not attached: {reason}]"),
        },
    }
}

/// The last path segment of `uri` when it looks like a file name (it has an extension).
fn uri_filename(uri: &str) -> Option<String> {
    let path = uri.split(['?', '#']).next().unwrap_or("");
    let last = path.rsplit('/').next()?;
    let clean: String = last
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(128)
        .collect();
    let has_stem_and_ext = clean.rfind('.').is_some_and(|dot| dot > 0 && dot + 1 < clean.len());
    has_stem_and_ext.then_some(clean)
}

/// Maps a `tools/call` that did not complete. A JSON-RPC error is the server refusing the
/// call: a failed outcome with its message. A closed transport means the server exited while
/// the call ran: the model reads an error naming the server.
pub fn map_error(server: &str, tool: &str, error: ServiceError) -> ToolResult {
    let result = match error {
        ServiceError::McpError(e) => {
            ToolResult::failed(format!("{} (MCP error {} from server `{server}`)", e.message, e.code.0))
        }
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => ToolResult::error(exited(server, tool)),
        ServiceError::Timeout { timeout } => ToolResult::error(format!(
            "the MCP server `{server}` did not answer `{tool}` within {} ms",
            timeout.as_millis()
        )),
        ServiceError::Cancelled { reason } => ToolResult::error(format!(
            "the MCP server `{server}` canceled `{tool}`{}",
            reason.map(|r| format!(": {r}")).unwrap_or_default()
        )),
        ServiceError::UnexpectedResponse => ToolResult::failed(format!(
            "the MCP server `{server}` answered `{tool}` with something other than a tool result \
             (a task or an input request, which rho does not drive)"
        )),
        other => ToolResult::failed(format!("the MCP call `{tool}` to server `{server}` failed: {other}")),
    };
    result.with_title(title(server, tool))
}

/// The message of a call whose server went away under it.
pub fn exited(server: &str, tool: &str) -> String {
    format!(
        "the MCP server `{server}` exited during the call to `{tool}`; rho restarts it, and the call may be tried again"
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Mutex;

    use rmcp::model::{ErrorCode, ErrorData};
    use serde_json::json;

    use super::*;

    /// Records captures and links each as `nexus://uploads/<n>`; refuses names in `refuse`.
    #[derive(Default)]
    pub(crate) struct FakeStage {
        pub(crate) staged: Mutex<Vec<Capture>>,
        pub(crate) refuse: Vec<String>,
    }

    impl Stage for FakeStage {
        fn stage(&self, capture: Capture) -> StageFuture<'_> {
            Box::pin(async move {
                if self.refuse.contains(&capture.filename) {
                    return Err("the kernel refused the upload".to_owned());
                }
                let mut staged = self.staged.lock().unwrap();
                let block = Block::ResourceLink {
                    uri: format!("nexus://uploads/00000000-0000-0000-0000-{:012}", staged.len()),
                    name: capture.filename.clone(),
                    mime_type: Some(capture.mime_type.clone()),
                    size: Some(capture.bytes.len() as u64),
                    title: None,
                    description: None,
                };
                staged.push(capture);
                Ok(block)
            })
        }
    }

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn text(s: &str) -> Block {
        Block::Text { text: s.into() }
    }

    #[tokio::test]
    async fn text_structured_content_and_is_error_carry_over() {
        let stage = FakeStage::default();
        let r = result(json!({
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
            "structuredContent": {"temperature": 33},
            "isError": true
        }));
        let out = map_result("srv", "weather", r, &stage).await;
        assert_eq!(out.content, vec![text("one"), text("two")]);
        assert_eq!(out.structured_content, Some(json!({"temperature": 33})));
        assert!(out.is_error);
        assert_eq!(out.outcome, nexus_sdk::runner::Outcome::Completed);
        assert_eq!(out.title.as_deref(), Some("srv weather"));
        assert!(stage.staged.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn absent_and_null_structured_content_stay_distinct() {
        let stage = FakeStage::default();
        let absent = map_result("s", "t", result(json!({"content": []})), &stage).await;
        assert_eq!(absent.structured_content, None);
        assert!(!absent.is_error);
        let null = map_result(
            "s",
            "t",
            result(json!({"content": [], "structuredContent": null})),
            &stage,
        )
        .await;
        assert_eq!(null.structured_content, Some(serde_json::Value::Null));
    }

    #[tokio::test]
    async fn images_audio_and_blobs_become_linked_captures_in_place() {
        let stage = FakeStage::default();
        let png = [0x89u8, b'P', b'N', b'G', 1, 2, 3];
        let wav = b"RIFF0000WAVE".to_vec();
        let gz = [0x1fu8, 0x8b, 8, 0];
        let r = result(json!({"content": [
            {"type": "text", "text": "before"},
            {"type": "image", "data": b64(&png), "mimeType": "image/png"},
            {"type": "audio", "data": b64(&wav), "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///tmp/README.md.gz", "mimeType": "application/gzip", "blob": b64(&gz)}},
            {"type": "resource", "resource": {"uri": "demo://blob/7", "blob": b64(b"xyz")}},
            {"type": "text", "text": "after"}
        ]}));
        let out = map_result("srv", "make-things", r, &stage).await;
        let staged = stage.staged.lock().unwrap();
        assert_eq!(staged.len(), 4);
        assert_eq!(
            staged[0],
            Capture {
                bytes: png.to_vec(),
                filename: "make-things.png".into(),
                mime_type: "image/png".into()
            }
        );
        assert_eq!(
            (staged[1].bytes.clone(), staged[1].filename.as_str()),
            (wav, "make-things-2.wav")
        );
        assert_eq!(
            (staged[2].bytes.as_slice(), staged[2].filename.as_str()),
            (&gz[..], "README.md.gz")
        );
        assert_eq!(staged[2].mime_type, "application/gzip");
        assert_eq!(staged[3].filename, "make-things-4.bin");
        assert_eq!(staged[3].mime_type, "application/octet-stream");
        assert_eq!(out.content.len(), 6);
        assert_eq!(out.content[0], text("before"));
        assert_eq!(out.content[5], text("after"));
        for (i, block) in out.content[1..5].iter().enumerate() {
            match block {
                Block::ResourceLink { uri, name, .. } => {
                    assert!(uri.ends_with(&format!("{i:012}")), "{uri}");
                    assert_eq!(name, &staged[i].filename);
                }
                other => panic!("block {} is not a link: {other:?}", i + 1),
            }
        }
    }

    #[tokio::test]
    async fn embedded_text_is_text_and_a_foreign_link_is_its_json() {
        let stage = FakeStage::default();
        let r = result(json!({"content": [
            {"type": "resource", "resource": {"uri": "demo://text/1", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource_link", "uri": "demo://resource/2", "name": "Resource 2", "mimeType": "text/plain", "description": "d"}
        ]}));
        let out = map_result("s", "t", r, &stage).await;
        assert_eq!(out.content[0], text("hello"));
        let Block::Text { text: link } = &out.content[1] else {
            panic!("{:?}", out.content[1])
        };
        let parsed: serde_json::Value = serde_json::from_str(link).unwrap();
        assert_eq!(
            parsed,
            json!({"type": "resource_link", "uri": "demo://resource/2", "name": "Resource 2",
                   "mimeType": "text/plain", "description": "d"})
        );
        assert!(stage.staged.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn bad_base64_and_a_refused_upload_leave_a_note_and_keep_the_rest() {
        let stage = FakeStage {
            refuse: vec!["t-2.png".into()],
            ..FakeStage::default()
        };
        let r = result(json!({"content": [
            {"type": "image", "data": "%%% not base64", "mimeType": "image/png"},
            {"type": "image", "data": b64(b"img"), "mimeType": "image/png"},
            {"type": "text", "text": "still here"}
        ]}));
        let out = map_result("s", "t", r, &stage).await;
        let Block::Text { text: bad } = &out.content[0] else {
            panic!()
        };
        assert!(bad.contains("invalid base64") && bad.contains("image/png"), "{bad}");
        let Block::Text { text: refused } = &out.content[1] else {
            panic!()
        };
        assert!(
            refused.contains("3 bytes") && refused.contains("the kernel refused the upload"),
            "{refused}"
        );
        assert_eq!(out.content[2], text("still here"));
        assert!(!out.is_error);
    }

    #[test]
    fn a_json_rpc_error_fails_with_its_message() {
        let err = ServiceError::McpError(ErrorData::new(ErrorCode(-32602), "Tool nope not found", None));
        let out = map_error("srv", "nope", err);
        assert_eq!(out.outcome, nexus_sdk::runner::Outcome::Failed);
        let Block::Text { text } = &out.content[0] else {
            panic!()
        };
        assert!(text.starts_with("Tool nope not found"), "{text}");
        assert!(text.contains("-32602") && text.contains("`srv`"), "{text}");
        assert_eq!(out.title.as_deref(), Some("srv nope"));
    }

    #[test]
    fn a_closed_transport_is_an_error_naming_the_server_and_its_exit() {
        let out = map_error("everything", "echo", ServiceError::TransportClosed);
        assert!(out.is_error);
        assert_eq!(out.outcome, nexus_sdk::runner::Outcome::Completed);
        let Block::Text { text } = &out.content[0] else {
            panic!()
        };
        assert!(text.contains("`everything`") && text.contains("exited"), "{text}");
    }

    #[test]
    fn uri_file_names_need_a_stem_and_an_extension() {
        assert_eq!(uri_filename("file:///a/b/report.pdf"), Some("report.pdf".into()));
        assert_eq!(uri_filename("demo://x/README.md.gz?v=1"), Some("README.md.gz".into()));
        assert_eq!(uri_filename("demo://resource/dynamic/blob/1"), None);
        assert_eq!(uri_filename("demo://x/.hidden"), None);
        assert_eq!(uri_filename("demo://x/trailing."), None);
        assert_eq!(uri_filename("demo://x/a b$.txt"), Some("ab.txt".into()));
    }
}
