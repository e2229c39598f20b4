//! What the model reads of a settled row (runs.md §7, §8; kernel-tools.md §1): a call's
//! result (its own outcome or its paired child's), a round's replay in call order, and the
//! unpaired `<task_result>` envelope of `results` keys and wait observations. The grammar is
//! `nexus_core::pairing`; this file reads the rows.

use nexus_core::pairing::{self, EnvelopeHead, MediaInfo, MediaJudge, SettledView};
use nexus_core::results;
use nexus_providers::{Entry, ModelCapabilities, Part};
use nexus_store::{TaskKind, TaskRow, TaskStatus};
use serde_json::Value;

use super::rows::Rows;
use super::{FrozenContext, StoredReply};

/// Media facts for pairing. No uploads exist yet, so no link is a media link.
pub(crate) struct Judge<'a> {
    pub capabilities: Option<&'a ModelCapabilities>,
}

impl MediaJudge for Judge<'_> {
    fn media_of(&self, _upload_public_id: &str) -> Option<MediaInfo> {
        None
    }

    fn accepts(&self, content_type: &str, _byte_size: u64) -> bool {
        self.capabilities.is_some_and(|c| c.accepts_media(content_type))
    }
}

/// The stored blocks of a row's `content`.
pub(crate) fn blocks_of(task: &TaskRow) -> Vec<results::Block> {
    task.content
        .as_deref()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|v| results::blocks_from_json(&v))
        .unwrap_or_default()
}

/// The result a call reads: the row's own outcome, or its paired child's.
pub(crate) fn render_row(rows: &Rows, row: Option<&TaskRow>, judge: &dyn MediaJudge) -> pairing::Rendered {
    let mut row = row;
    if let Some(r) = row
        && r.status == TaskStatus::Completed
        && let Some(child) = r.pairs_with.as_deref()
    {
        row = rows.follow(child);
    }
    match row {
        Some(r) if r.status.is_settled() => {
            let blocks = blocks_of(r);
            pairing::render_result(
                &SettledView {
                    status: r.status.as_str(),
                    is_error: r.is_error,
                    content: &blocks,
                    error_key: r.error_key.as_deref(),
                    error_detail: r.error_detail.as_deref(),
                },
                judge,
            )
        }
        _ => pairing::Rendered {
            output: pairing::no_row_output(),
            is_error: true,
            attachments: Vec::new(),
        },
    }
}

/// An unpaired `<task_result>` envelope of a settled row (step `results`, wait observations).
pub(crate) fn unpaired_envelope(target: &TaskRow) -> String {
    let judge = Judge { capabilities: None };
    let rows = Rows::new(std::slice::from_ref(target));
    let output = if target.status == TaskStatus::Completed && !target.is_error {
        pairing::render_content(&blocks_of(target), &judge).0
    } else {
        render_row(&rows, Some(target), &judge).output
    };
    let input_json;
    let prompt;
    let head = match target.kind {
        TaskKind::Tool => {
            input_json = target.tool_input.clone().unwrap_or_else(|| "{}".into());
            Some(EnvelopeHead::Call {
                name: target
                    .tool_alias
                    .as_deref()
                    .or(target.tool_name.as_deref())
                    .unwrap_or(""),
                input_json: &input_json,
            })
        }
        TaskKind::Model if target.branch_of.is_some() => {
            prompt = FrozenContext::of(target).prompt;
            Some(EnvelopeHead::Prompt(&prompt))
        }
        TaskKind::Model | TaskKind::Await => None,
    };
    pairing::task_result_envelope(&target.key, target.status.as_str(), head, &output)
}

/// A round's replay: its assistant entry, one result per call in call order, then the
/// attachment-only message when media exist.
pub(crate) fn replay_round(rows: &Rows, round: &TaskRow, judge: &dyn MediaJudge) -> Vec<Entry> {
    let Some(reply) = StoredReply::of(round) else {
        return Vec::new();
    };
    let mut out = vec![Entry::Assistant {
        text: reply.text.clone(),
        tool_calls: reply.tool_calls.clone(),
        native: reply.native.clone(),
    }];
    let fan = rows.fan_of(round);
    let mut media: Vec<String> = Vec::new();
    for call in &reply.tool_calls {
        let row = fan
            .iter()
            .copied()
            .find(|t| t.tool_call_id.as_deref() == Some(call.id.as_str()));
        let rendered = render_row(rows, row, judge);
        media.extend(rendered.attachments);
        out.push(Entry::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output: rendered.output,
            is_error: rendered.is_error,
        });
    }
    if !media.is_empty() {
        out.push(Entry::Attachments {
            parts: media
                .iter()
                .filter_map(|id| {
                    let upload = uuid::Uuid::parse_str(id).ok()?;
                    Some(match judge.media_of(id) {
                        Some(m) if m.content_type.starts_with("image/") => Part::Image {
                            upload,
                            media_type: m.content_type,
                        },
                        _ => Part::Document { upload },
                    })
                })
                .collect(),
        });
    }
    out
}
