//! The [`MediaJudge`] of a round (runs.md §8, uploads.md §7): upload descriptors bound in the
//! run, judged against the round model's capabilities.

use std::collections::HashMap;

use nexus_core::bounds;
use nexus_core::pairing::{MediaInfo, MediaJudge};
use nexus_providers::{Entry, ModelCapabilities, Part};
use nexus_store::UploadRow;
use nexus_store::prelude::*;
use tokio::io::AsyncReadExt;
use uuid::Uuid;

use crate::Uploads;
use crate::error::KernelResult;
use crate::uploads::io_error;

/// Media facts for one request build: the run's bound uploads by public id, and the model's
/// accepted media types. Without capabilities nothing is accepted (media become index lines).
#[derive(Debug, Clone, Default)]
pub struct UploadJudge {
    media: HashMap<String, MediaInfo>,
    capabilities: Option<ModelCapabilities>,
}

impl UploadJudge {
    pub fn new(uploads: &[UploadRow], capabilities: Option<&ModelCapabilities>) -> Self {
        let media = uploads
            .iter()
            .map(|u| {
                (
                    u.public_id.to_string(),
                    MediaInfo {
                        content_type: u.content_type.clone(),
                        byte_size: u.byte_size.max(0) as u64,
                        name: u.filename.clone(),
                    },
                )
            })
            .collect();
        Self {
            media,
            capabilities: capabilities.cloned(),
        }
    }

    /// The neutral part of an attached upload: `Image {upload, media_type}` for images,
    /// `Document {upload}` for PDFs (and anything else attached).
    pub fn part_of(&self, upload_public_id: &str) -> Option<Part> {
        let upload = Uuid::parse_str(upload_public_id).ok()?;
        let info = self.media.get(&upload.to_string());
        Some(match info {
            Some(i) if i.content_type.starts_with("image/") => Part::Image {
                upload,
                media_type: i.content_type.clone(),
            },
            _ => Part::Document { upload },
        })
    }
}

impl MediaJudge for UploadJudge {
    fn media_of(&self, upload_public_id: &str) -> Option<MediaInfo> {
        self.media.get(upload_public_id).cloned()
    }

    fn accepts(&self, content_type: &str, byte_size: u64) -> bool {
        byte_size <= bounds::INLINE_BINARY as u64
            && self
                .capabilities
                .as_ref()
                .is_some_and(|c| c.accepts_media(content_type))
    }
}

impl Uploads<'_> {
    /// The judge of a request build for a round of `run_id`: every upload bound in the run.
    pub async fn media_judge(
        &self,
        run_id: i64,
        capabilities: Option<&ModelCapabilities>,
    ) -> KernelResult<UploadJudge> {
        let uploads = self.store.bound_uploads_of_run(run_id).await?;
        Ok(UploadJudge::new(&uploads, capabilities))
    }

    /// The bytes of every upload the request's media parts name, for the adapter to inline
    /// (providers.md §5.1, §6). The judge let a part through only below
    /// [`bounds::INLINE_BINARY`], so what is read here is bounded; an upload whose descriptor
    /// or blob is gone is left out, and the adapter refuses the request naming it.
    pub(crate) async fn media_bytes(&self, entries: &[Entry]) -> KernelResult<HashMap<Uuid, Vec<u8>>> {
        let mut out = HashMap::new();
        let parts = entries.iter().flat_map(|e| match e {
            Entry::User { parts } | Entry::Attachments { parts } => parts.as_slice(),
            _ => &[],
        });
        for part in parts {
            let (Part::Image { upload, .. } | Part::Document { upload }) = part else {
                continue;
            };
            if out.contains_key(upload) {
                continue;
            }
            let Some(row) = self.store.upload_by_public_id(*upload).await? else {
                continue;
            };
            let len = (row.byte_size.max(0) as u64).min(bounds::INLINE_BINARY as u64);
            let Ok(mut reader) = self.open_upload(&row, 0, len).await else {
                continue;
            };
            let mut bytes = Vec::with_capacity(len as usize);
            reader.read_to_end(&mut bytes).await.map_err(io_error)?;
            out.insert(*upload, bytes);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use nexus_core::pairing::render_content;
    use nexus_core::results::normalize_content;
    use serde_json::json;

    use super::*;

    fn row(id: Uuid, ct: &str, size: i64, name: &str) -> UploadRow {
        UploadRow {
            id: 1,
            public_id: id,
            account_id: 1,
            creator_member_id: None,
            creator_executor_id: Some(1),
            filename: name.into(),
            content_type: ct.into(),
            byte_size: size,
            sha256: "0".repeat(64),
            created_at: 0,
            bound_at: Some(0),
        }
    }

    fn caps(media: &[&str]) -> ModelCapabilities {
        ModelCapabilities {
            context_window: 1000,
            max_output_tokens: 100,
            media: media.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(),
            tools: true,
            native_tool_search: false,
        }
    }

    #[test]
    fn accepted_oversized_refused_and_non_media() {
        let (png, big, pdf, txt) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let rows = [
            row(png, "image/png", 10, "a.png"),
            row(big, "image/png", 8_388_609, "big.png"),
            row(pdf, "application/pdf", 10, "d.pdf"),
            row(txt, "text/plain", 3, "t.txt"),
        ];
        let c = caps(&["image/png"]);
        let judge = UploadJudge::new(&rows, Some(&c));
        let link = |id: Uuid, name: &str| json!({"type": "resource_link", "uri": format!("nexus://uploads/{id}"), "name": name});
        let blocks = normalize_content(&json!([
            {"type": "text", "text": "shots"},
            link(png, "shot"),
            link(big, "big"),
            link(pdf, "doc"),
            link(txt, "notes"),
        ]))
        .unwrap();
        let (text, attached) = render_content(&blocks, &judge);
        assert_eq!(attached, vec![png.to_string()]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "shots");
        assert_eq!(
            lines[1],
            format!("[attachment: big (image/png, 8388609 bytes) nexus://uploads/{big}]")
        );
        assert_eq!(
            lines[2],
            format!("[attachment: doc (application/pdf, 10 bytes) nexus://uploads/{pdf}]")
        );
        assert_eq!(
            lines[3],
            format!(r#"{{"type":"resource_link","uri":"nexus://uploads/{txt}","name":"notes"}}"#)
        );
        assert_eq!(
            judge.part_of(&png.to_string()),
            Some(Part::Image {
                upload: png,
                media_type: "image/png".into()
            })
        );
        assert_eq!(judge.part_of(&pdf.to_string()), Some(Part::Document { upload: pdf }));
        // No capabilities: nothing is inline.
        assert!(!UploadJudge::new(&rows, None).accepts("image/png", 1));
    }
}
