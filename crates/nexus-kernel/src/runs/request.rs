//! Building a round's neutral request (providers.md §3, runs.md §8).
//!
//! Entries, in order:
//! 1. replayed history: for a mainline root round, the latest earlier mainline round's sealed
//!    entries followed by its own reply and results (so the history is exactly what that round
//!    sent, then what it got);
//! 2. the round's prompt entry (the chain root's prompt, then one `<task_result>` per `results`
//!    key);
//! 3. for each earlier round of the chain: its assistant entry, then one `ToolResult` per call
//!    in call order (the pairing law), then its `Attachments` when media exist.
//!
//! A continuation starts from its predecessor's sealed entries, so every round's request is a
//! byte prefix of the next one's, and the tools block comes from the frozen declaration every
//! time.
//!
//! What a continuation's build reads: the rows of one `task_neighbourhood` read (itself, its
//! predecessor and the predecessor's fan), unless a fan row pairs with a child (then every row
//! of the run); the predecessor's entries from this process's sealed-entries cache
//! (`sealed.rs`; else its sealed record, parsed); the run's uploads only when a rendered row
//! holds a `resource_link`.

use std::borrow::Cow;
use std::collections::HashMap;

use nexus_core::declaration;
use nexus_core::pairing::{self, EnvelopeHead, MediaInfo, MediaJudge, SettledView};
use nexus_core::results;
use nexus_providers::{Entry, ModelCapabilities, ModelRequest, Part, RequestOptions};
use nexus_store::{Engine, TaskRow};
use serde_json::Value;

use super::round::{PrevRecord, round_record};
use super::{FrozenContext, RequestSurface, StoredReply, is_settled, task_kind};
use crate::Kernel;
use crate::error::{KernelError, KernelResult};
use crate::uploads::UploadJudge;

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

/// The run's rows by id, for one request build: owned, or borrowed from a loaded graph (the
/// expansion check reads the rows its transaction already holds, without copying them).
pub(crate) struct Rows<'a> {
    pub tasks: Cow<'a, [TaskRow]>,
    index: HashMap<i64, usize>,
}

impl<'a> Rows<'a> {
    pub fn new(tasks: impl Into<Cow<'a, [TaskRow]>>) -> Rows<'a> {
        let tasks = tasks.into();
        let index = tasks.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
        Rows { tasks, index }
    }

    pub fn get(&self, id: i64) -> Option<&TaskRow> {
        self.index.get(&id).map(|&i| &self.tasks[i])
    }

    pub fn by_key(&self, key: &str) -> Option<&TaskRow> {
        self.tasks.iter().find(|t| t.key == key)
    }

    /// The fan of `round`: its tool rows, in creation order.
    pub fn fan_of(&self, round: &TaskRow) -> Vec<&TaskRow> {
        self.tasks
            .iter()
            .filter(|t| t.kind == task_kind::TOOL && t.declaring_task_id == Some(round.id))
            .collect()
    }

    /// The final logical work `key` names: a round followed along its continuations, a
    /// paired call to its child, a `delegate_task` call to its branch
    /// ([`super::schedule::next_logical`]).
    pub fn follow(&self, key: &str) -> Option<&TaskRow> {
        let mut t = self.by_key(key)?;
        for _ in 0..4096 {
            match super::schedule::next_logical(&self.tasks, t, |k| self.by_key(k)) {
                Some(c) => t = c,
                None => break,
            }
        }
        Some(t)
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
        && r.status == "completed"
        && let Some(child) = r.pairs_with.as_deref()
    {
        row = rows.follow(child);
    }
    match row {
        Some(r) if is_settled(&r.status) => {
            let blocks = blocks_of(r);
            pairing::render_result(
                &SettledView {
                    status: &r.status,
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
    let output = if target.status == "completed" && !target.is_error {
        pairing::render_content(&blocks_of(target), &judge).0
    } else {
        render_row(&rows, Some(target), &judge).output
    };
    let input_json;
    let prompt;
    let head = match target.kind.as_str() {
        task_kind::TOOL => {
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
        task_kind::MODEL if target.branch_of.is_some() => {
            prompt = FrozenContext::of(target).prompt;
            Some(EnvelopeHead::Prompt(&prompt))
        }
        _ => None,
    };
    pairing::task_result_envelope(&target.key, &target.status, head, &output)
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

/// The neutral entries stored in a sealed record.
pub(crate) fn sealed_entries(record: &str) -> Option<Vec<Entry>> {
    let v: Value = serde_json::from_str(record).ok()?;
    serde_json::from_value(v.get("entries")?.clone()).ok()
}

/// `provider/model` → (provider, model).
pub(crate) fn split_ref(model_ref: &str) -> (String, String) {
    match model_ref.split_once('/') {
        Some((p, m)) => (p.to_string(), m.to_string()),
        None => (model_ref.to_string(), String::new()),
    }
}

impl Kernel {
    /// Every row of the run (creation order).
    pub(crate) async fn all_tasks(&self, run_id: i64) -> KernelResult<Vec<TaskRow>> {
        let mut out: Vec<TaskRow> = Vec::new();
        loop {
            let after = out.last().map_or(0, |t| t.id);
            let page = self.store.tasks_of_run(run_id, after, 1000).await?;
            let n = page.len();
            out.extend(page);
            if n < 1000 {
                return Ok(out);
            }
        }
    }

    /// For a continuation whose predecessor's fan pairs with no child: just the predecessor
    /// and its fan (all its replay reads), picked from `neighbourhood` (the round's
    /// [`nexus_store::Engine::task_neighbourhood`]). `None` to read every row of the run.
    fn continuation_rows(round: &TaskRow, mut neighbourhood: Vec<TaskRow>) -> Option<Rows<'static>> {
        let prev_id = round.declaring_task_id?;
        let at = neighbourhood.iter().position(|t| t.id == prev_id)?;
        let prev = neighbourhood.remove(at);
        if prev.kind != task_kind::MODEL || prev.run_id != round.run_id {
            return None;
        }
        let declared: Vec<TaskRow> = neighbourhood
            .into_iter()
            .filter(|t| t.run_id == round.run_id && t.declaring_task_id == Some(prev_id))
            .collect();
        if declared
            .iter()
            .any(|t| t.kind == task_kind::TOOL && t.status == "completed" && t.pairs_with.is_some())
        {
            return None;
        }
        let mut tasks = Vec::with_capacity(declared.len() + 1);
        tasks.push(prev);
        tasks.extend(declared);
        Some(Rows::new(tasks))
    }

    /// Keeps the entries of a round whose seal just committed, for its continuation.
    pub(crate) fn remember_sealed(&self, round: &TaskRow, entries: Vec<Entry>) {
        self.state
            .sealed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .put((round.id, round.generation), entries);
    }

    /// The sealed entries of a round's current generation, if sealed: this process's copy of
    /// what it sealed, else the stored record parsed.
    async fn entries_of(&self, round: &TaskRow) -> KernelResult<Option<Vec<Entry>>> {
        let kept = self
            .state
            .sealed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take((round.id, round.generation));
        if let Some(entries) = kept {
            #[cfg(debug_assertions)]
            {
                let stored = self
                    .store
                    .sealed_request(round.id, round.generation)
                    .await?
                    .and_then(|s| sealed_entries(&s.record));
                assert_eq!(
                    stored.as_ref(),
                    Some(&entries),
                    "the kept entries of {} differ from its stored record",
                    round.key
                );
            }
            return Ok(Some(entries));
        }
        Ok(self
            .store
            .sealed_request(round.id, round.generation)
            .await?
            .and_then(|s| sealed_entries(&s.record)))
    }

    /// Builds the neutral request of `round` (its current generation; `neighbourhood` is its
    /// [`nexus_store::Engine::task_neighbourhood`]), and, when the rows it read were only the
    /// predecessor and its fan, the predecessor's record for the
    /// repeat-call rule (computed from the same rows, handed to the reply step in memory).
    pub(crate) async fn build_request(
        &self,
        round: &TaskRow,
        neighbourhood: Vec<TaskRow>,
        capabilities: &ModelCapabilities,
    ) -> KernelResult<(ModelRequest, Option<PrevRecord>)> {
        let (rows, fan_only) = match Self::continuation_rows(round, neighbourhood) {
            Some(rows) => (rows, true),
            None => (Rows::new(self.all_tasks(round.run_id).await?), false),
        };
        let frozen = FrozenContext::of(round);
        let surface = RequestSurface::of(round);
        let (provider, model) = split_ref(&surface.model);
        // The run's bound uploads against this round's model (uploads helper, §F). The judge
        // is consulted for `resource_link` blocks only: without one among the rows rendered,
        // the run's uploads are not read.
        let links = rows
            .tasks
            .iter()
            .any(|t| t.content.as_deref().is_some_and(|c| c.contains("resource_link")));
        let judge = if links {
            self.media_judge(round.run_id, Some(capabilities)).await?
        } else {
            UploadJudge::new(&[], Some(capabilities))
        };

        let mut system: Vec<String> = Vec::new();
        if let Some(i) = surface.instructions.as_deref().filter(|s| !s.is_empty()) {
            system.push(i.to_string());
        }
        if let Some(block) = declaration::skills_block(&frozen.tool_definitions, &frozen.skills) {
            system.push(block);
        }
        let tools = declaration::project(&frozen.tool_definitions, &frozen.skills);

        let previous = round
            .declaring_task_id
            .and_then(|id| rows.get(id))
            .filter(|t| t.kind == task_kind::MODEL);
        let prev_record = previous.filter(|_| fan_only).map(|prev| PrevRecord {
            round_id: prev.id,
            record: round_record(&rows, prev),
        });
        let entries = match previous {
            Some(prev) => {
                let mut entries = self.entries_of(prev).await?.ok_or_else(|| {
                    KernelError::new(
                        nexus_core::codes::Code::InternalError,
                        format!(
                            "round {} continues {}, which has no sealed request",
                            round.key, prev.key
                        ),
                    )
                })?;
                entries.extend(replay_round(&rows, prev, &judge));
                entries
            }
            None => {
                let mut entries = Vec::new();
                if round.mainline {
                    let predecessor = rows
                        .tasks
                        .iter()
                        .filter(|t| {
                            t.kind == task_kind::MODEL
                                && t.mainline
                                && t.id != round.id
                                && matches!(t.status.as_str(), "completed" | "failed")
                        })
                        .max_by_key(|t| t.id);
                    if let Some(pred) = predecessor
                        && let Some(prior) = self.entries_of(pred).await?
                    {
                        entries = prior;
                        entries.extend(replay_round(&rows, pred, &judge));
                    }
                }
                entries.push(prompt_entry(&rows, &frozen));
                entries
            }
        };

        let request = ModelRequest {
            provider,
            model,
            system,
            entries,
            tools,
            options: RequestOptions {
                max_output_tokens: surface.max_output_tokens,
                reasoning_effort: surface.reasoning_effort.clone(),
            },
        };
        Ok((request, prev_record))
    }
}

/// The round's prompt entry: the prompt, then each `results` key as a `<task_result>`.
fn prompt_entry(rows: &Rows, frozen: &FrozenContext) -> Entry {
    let mut parts = vec![Part::text(frozen.prompt.clone())];
    for key in &frozen.results {
        if let Some(t) = rows.follow(key) {
            parts.push(Part::text(unpaired_envelope(t)));
        }
    }
    for id in &frozen.attachments {
        if let Ok(upload) = uuid::Uuid::parse_str(id) {
            parts.push(Part::Document { upload });
        }
    }
    Entry::User { parts }
}
