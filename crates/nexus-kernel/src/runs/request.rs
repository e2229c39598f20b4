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
//!
//! When the predecessor's entries come from that cache, they come with the mark the provider
//! gave their encode, and the request goes to the provider with the word that it starts with
//! them ([`Continues`]): the provider then resumes from what it kept for that encode without
//! comparing the history again (the bytes are the same either way).

use nexus_core::declaration;
use nexus_providers::{ChainMark, Continues, Entry, ModelCapabilities, ModelRequest, Part, RequestOptions};
use nexus_store::prelude::*;
use nexus_store::{TaskKind, TaskRow, TaskStatus};

use super::columns::SealedRecord;
use super::render::{replay_round, unpaired_envelope};
use super::round::chain::{PrevRecord, round_record};
use super::rows::Rows;
use super::sealed::{SealedAnchor, SealedEntries};
use super::{FrozenContext, RequestSurface, StoredReply};
use crate::Kernel;
use crate::error::{KernelError, KernelResult};
use crate::uploads::UploadJudge;

/// The neutral entries stored in a sealed record.
pub(crate) fn sealed_entries(record: &str) -> Option<Vec<Entry>> {
    SealedRecord::read(record).map(|r| r.entries)
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
    /// [`nexus_store::TaskStore::task_neighbourhood`]). `None` to read every row of the run.
    fn continuation_rows(round: &TaskRow, mut neighbourhood: Vec<TaskRow>) -> Option<Rows<'static>> {
        let prev_id = round.declaring_task_id?;
        let at = neighbourhood.iter().position(|t| t.id == prev_id)?;
        let prev = neighbourhood.remove(at);
        if prev.kind != TaskKind::Model || prev.run_id != round.run_id {
            return None;
        }
        let declared: Vec<TaskRow> = neighbourhood
            .into_iter()
            .filter(|t| t.run_id == round.run_id && t.declaring_task_id == Some(prev_id))
            .collect();
        if declared
            .iter()
            .any(|t| t.kind == TaskKind::Tool && t.status == TaskStatus::Completed && t.pairs_with.is_some())
        {
            return None;
        }
        let mut tasks = Vec::with_capacity(declared.len() + 1);
        tasks.push(prev);
        tasks.extend(declared);
        Some(Rows::new(tasks))
    }

    /// Keeps the entries of a round whose seal just committed, for its continuation, with the
    /// mark the provider gave their encode.
    pub(crate) fn remember_sealed(
        &self,
        round: &TaskRow,
        entries: Vec<Entry>,
        mark: Option<ChainMark>,
        anchor: SealedAnchor,
    ) {
        self.state.sealed.lock().unwrap_or_else(|p| p.into_inner()).put(
            (round.id, round.generation),
            SealedEntries {
                entries,
                mark,
                anchor: Some(anchor),
            },
        );
    }

    /// The sealed entries of a round's current generation, if sealed: this process's copy of
    /// what it sealed (with its encode's mark), else the stored record parsed (no mark).
    async fn entries_of(&self, round: &TaskRow) -> KernelResult<Option<SealedEntries>> {
        let kept = self
            .state
            .sealed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take((round.id, round.generation));
        if let Some(kept) = kept {
            #[cfg(debug_assertions)]
            {
                let stored = self
                    .store
                    .sealed_request(round.id, round.generation)
                    .await?
                    .and_then(|s| sealed_entries(&s.record));
                assert_eq!(
                    stored.as_ref(),
                    Some(&kept.entries),
                    "the kept entries of {} differ from its stored record",
                    round.key
                );
            }
            return Ok(Some(kept));
        }
        let Some(sealed) = self.store.sealed_request(round.id, round.generation).await? else {
            return Ok(None);
        };
        let Some(entries) = sealed_entries(&sealed.record) else {
            return Ok(None);
        };
        // The record's entries end where its options begin: a bare `"` never occurs inside a
        // JSON string, so the first `],"request_options":` is the structural one.
        let anchor = sealed
            .record
            .find("],\"request_options\":")
            .map(|record_prefix| SealedAnchor {
                sealed_id: sealed.id,
                record_prefix,
                body_sha256: sealed.body_sha256.clone(),
                body: std::sync::Arc::new(sealed.body),
                record_depth: None,
                body_depth: None,
            });
        Ok(Some(SealedEntries {
            entries,
            mark: None,
            anchor,
        }))
    }

    /// The previous turn's final round's entries (with their mark, when this process sealed
    /// them) and what replays its reply: the history of a turn's seed round.
    async fn turn_history(
        &self,
        round_id: i64,
        judge: &UploadJudge,
    ) -> KernelResult<Option<(SealedEntries, Vec<Entry>)>> {
        let Some(pred) = self.store.task_by_id(round_id).await? else {
            return Ok(None);
        };
        let Some(sealed) = self.entries_of(&pred).await? else {
            return Ok(None);
        };
        let rows = match StoredReply::of(&pred).is_some_and(|r| r.tool_calls.is_empty()) {
            // A final round without calls replays from itself alone.
            true => Rows::new(vec![pred.clone()]),
            false => Rows::new(self.all_tasks(pred.run_id).await?),
        };
        let replay = replay_round(&rows, &pred, judge);
        Ok(Some((sealed, replay)))
    }

    /// A continuation's seed: its predecessor's sealed entries, the predecessor's round
    /// replayed, then the steers bound to a hosted turn (after the paired results, runs.md §12).
    async fn continued_seed(
        &self,
        round: &TaskRow,
        prev: &TaskRow,
        rows: &Rows<'_>,
        judge: &UploadJudge,
        steers: &[String],
    ) -> KernelResult<Seed> {
        let sealed = self.entries_of(prev).await?.ok_or_else(|| {
            KernelError::new(
                nexus_core::codes::Code::InternalError,
                format!(
                    "round {} continues {}, which has no sealed request",
                    round.key, prev.key
                ),
            )
        })?;
        let mut more = replay_round(rows, prev, judge);
        more.extend(steers.iter().map(|text| Entry::User {
            parts: vec![Part::text(text.clone())],
        }));
        Ok(Seed::of(sealed, more))
    }

    /// A round that continues no round: a mainline round starts from the latest settled
    /// mainline round before it (or, for a conversation turn's seed round, the previous turn's
    /// final round and its reply, runs.md §12); then its prompt entry.
    async fn first_seed(
        &self,
        round: &TaskRow,
        rows: &Rows<'_>,
        frozen: &FrozenContext,
        judge: &UploadJudge,
    ) -> KernelResult<Seed> {
        let mut seed = Seed::default();
        if round.mainline {
            let predecessor = rows
                .tasks
                .iter()
                .filter(|t| {
                    t.kind == TaskKind::Model
                        && t.mainline
                        && t.id != round.id
                        && matches!(t.status, TaskStatus::Completed | TaskStatus::Failed)
                })
                .max_by_key(|t| t.id);
            if let Some(pred) = predecessor
                && let Some(sealed) = self.entries_of(pred).await?
            {
                seed = Seed::of(sealed, replay_round(rows, pred, judge));
            } else if let Some(history) = frozen.history
                && let Some((sealed, replay)) = self.turn_history(history, judge).await?
            {
                seed = Seed::of(sealed, replay);
            }
        }
        seed.entries.push(prompt_entry(rows, frozen));
        Ok(seed)
    }

    /// Builds the neutral request of `round` (its current generation; `neighbourhood` is its
    /// [`nexus_store::TaskStore::task_neighbourhood`]).
    pub(crate) async fn build_request(
        &self,
        round: &TaskRow,
        neighbourhood: Vec<TaskRow>,
        capabilities: &ModelCapabilities,
        steers: &[String],
    ) -> KernelResult<BuiltRequest> {
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
            self.uploads().media_judge(round.run_id, Some(capabilities)).await?
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
            .filter(|t| t.kind == TaskKind::Model);
        let prev_record = previous.filter(|_| fan_only).map(|prev| PrevRecord {
            round_id: prev.id,
            record: round_record(&rows, prev),
        });
        let seed = match previous {
            Some(prev) => self.continued_seed(round, prev, &rows, &judge, steers).await?,
            None => self.first_seed(round, &rows, &frozen, &judge).await?,
        };
        let Seed { entries, prior, anchor } = seed;

        let request = ModelRequest {
            provider,
            model,
            system,
            entries,
            tools,
            // Deferred entries for provider-side tool search (providers.md §5.3), for models
            // that support it; the adapter sends them only when its instance enables it.
            tools_deferred: if capabilities.native_tool_search {
                declaration::project_deferred(&frozen.tool_definitions, &frozen.skills)
            } else {
                Vec::new()
            },
            options: RequestOptions {
                max_output_tokens: surface.max_output_tokens,
                reasoning_effort: surface.reasoning_effort.clone(),
            },
        };
        Ok(BuiltRequest {
            request,
            prev: prev_record,
            prior,
            anchor,
        })
    }
}

/// The entries a round's request starts from, and the sealed round they continue.
#[derive(Default)]
struct Seed {
    entries: Vec<Entry>,
    prior: Option<Continues>,
    anchor: Option<(SealedAnchor, usize)>,
}

impl Seed {
    /// A sealed round's entries, then `more`.
    fn of(sealed: SealedEntries, more: impl IntoIterator<Item = Entry>) -> Seed {
        let prior = sealed.continued();
        let anchor = sealed.anchor.map(|a| (a, sealed.entries.len()));
        let mut entries = sealed.entries;
        entries.extend(more);
        Seed { entries, prior, anchor }
    }
}

/// A round's request as [`Kernel::build_request`] built it.
pub(crate) struct BuiltRequest {
    pub request: ModelRequest,
    /// When the rows read were only the predecessor and its fan, the predecessor's record for
    /// the repeat-call rule (computed from the same rows, handed to the reply step in memory).
    pub prev: Option<PrevRecord>,
    /// The word for the provider that the request starts with the entries of an encode it
    /// marked (the predecessor's, kept by this process).
    pub prior: Option<Continues>,
    /// The sealed round whose entries the request starts with, and how many: its record and
    /// body are what this round's are stored against.
    pub anchor: Option<(SealedAnchor, usize)>,
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
