//! Model rounds (providers.md §4, §8; runs.md §7): seal, call, apply, expand.
//!
//! 1. **Seal** (one transaction): the sealed record and the exact body bytes are stored and the
//!    round moves `waiting → running`.
//! 2. **Call**, outside any transaction: the same sealed bytes every attempt; retryable errors
//!    are retried with backoff and every attempt is appended to the record's `attempts` (a
//!    retried attempt in its own transaction before the backoff, the last one in the apply
//!    transaction). The job lease is renewed while the call is in flight.
//! 3. **Apply** (one transaction, conditional on (task, generation, `running`)): the reply is
//!    stored, the round completes, and its calls expand into a fan plus a continuation.
//!
//! Expansion reads the round's neighbourhood, not the run: the chain facts the round's
//! authoring transaction stored (`round_facts`: the chain's length and the repeat-call rule's
//! look-back, plus a floor under the free round numbers) and its predecessor's record, computed
//! by the seal from the rows the request was built from. A look-back holding a paired result
//! (which may still change), or a round without facts, is recomputed from the whole run.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use nexus_core::codes::task_error;
use nexus_core::declaration;
use nexus_core::rounds::{self, CallRecord, RoundRecord};
use nexus_core::{bounds, jcs};
use nexus_providers::{
    EncodedRequest, Entry, ModelReply, ModelRequest, Provider, ProviderError, RawToolCall, StopReason,
};
use nexus_store::{
    Engine, JobRow, NewSealedRequest, NewTask, RoundFactsRow, RoundForReply, RunRow, TaskRow, Tx, run_status,
    task_status,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::request::{Judge, Rows, render_row};
use super::schedule::Graph;
use super::{AfterCommit, FrozenContext, RequestSurface, StoredReply, graph_error, run_is_terminal, task_kind};
use crate::error::KernelResult;
use crate::{Kernel, time};

/// Call ids longer than this are replaced by `call_<uuidv7>` on both sides.
const CALL_ID_MAX: usize = 128;

/// How many round numbers one key probe tries.
const KEY_WINDOW: u64 = 4;

/// One planned fan member.
struct PlannedCall {
    call_id: String,
    tool_name: String,
    tool_input: Value,
    tool_alias: Option<String>,
    target_executor_id: Option<i64>,
    birth: Option<(&'static str, Option<String>)>,
}

/// One earlier round of a chain as the repeat-call rule reads it (runs.md §7), as stored in
/// `round_facts.history`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredRound {
    /// `[call signature, result digest]` per call, in call order.
    pub calls: Vec<(String, String)>,
    /// A call's result is a paired child's, which can still change: a look-back holding this
    /// round is recomputed from the rows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paired: bool,
}

/// The predecessor's record, computed by the seal from the rows its request was built from and
/// handed to the reply step of the same job.
#[derive(Debug, Clone)]
pub(crate) struct PrevRecord {
    pub round_id: i64,
    pub record: StoredRound,
}

/// A round's place in its chain.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ChainView {
    /// The rounds of the chain since its root, this one included.
    rounds: i64,
    /// The look-back: at most [`rounds::LOOK_BACK`] earlier rounds, oldest first.
    history: Vec<StoredRound>,
    /// Every `r{n}` below this is in use (`None`: not known).
    key_floor: Option<i64>,
}

impl ChainView {
    fn root() -> ChainView {
        ChainView {
            rounds: 1,
            history: Vec::new(),
            key_floor: None,
        }
    }
}

/// The record of `round` (its calls' signatures and result digests) from `rows`, which hold the
/// round and its fan (and, for a paired result, the rows it follows).
pub(crate) fn round_record(rows: &Rows, round: &TaskRow) -> StoredRound {
    let judge = Judge { capabilities: None };
    let fan = rows.fan_of(round);
    let mut paired = false;
    let calls = StoredReply::of(round)
        .map(|reply| {
            reply
                .tool_calls
                .iter()
                .map(|c| {
                    let row = fan.iter().copied().find(|t| t.tool_call_id.as_deref() == Some(&c.id));
                    paired |= row.is_some_and(|t| t.status == task_status::COMPLETED && t.pairs_with.is_some());
                    let rendered = render_row(rows, row, &judge);
                    let signature = row.map_or_else(String::new, |t| {
                        let input: Value = t
                            .tool_input
                            .as_deref()
                            .and_then(|s| serde_json::from_str(s).ok())
                            .unwrap_or(Value::Null);
                        let target = t.target_executor_id.map(|id| id.to_string());
                        rounds::call_signature(t.tool_name.as_deref().unwrap_or(""), &input, target.as_deref())
                    });
                    (signature, rounds::result_digest(&rendered.output, rendered.is_error))
                })
                .collect()
        })
        .unwrap_or_default();
    StoredRound { calls, paired }
}

/// The sealed record's text (`{entries, request_options}`), serialized without building a
/// `Value` tree. Member order is the record's: the same bytes as the `json!` form.
#[derive(Serialize)]
struct SealedRecord<'a> {
    entries: &'a [Entry],
    request_options: SealedOptions<'a>,
}

#[derive(Serialize)]
struct SealedOptions<'a> {
    provider: &'a str,
    model: &'a str,
    max_output_tokens: Option<u32>,
    reasoning_effort: &'a Option<String>,
    system: &'a [String],
    tools: &'a [Value],
    url: &'a str,
    headers: Vec<[&'a str; 2]>,
}

fn sealed_record_text(request: &ModelRequest, surface: &RequestSurface, enc: &EncodedRequest) -> String {
    let record = SealedRecord {
        entries: &request.entries,
        request_options: SealedOptions {
            provider: &request.provider,
            model: &request.model,
            max_output_tokens: surface.max_output_tokens,
            reasoning_effort: &surface.reasoning_effort,
            system: &request.system,
            tools: &request.tools,
            url: &enc.url,
            headers: enc.headers.iter().map(|(k, v)| [k.as_str(), v.as_str()]).collect(),
        },
    };
    let text = serde_json::to_string(&record).expect("a record serializes");
    #[cfg(debug_assertions)]
    {
        let headers: Vec<Value> = enc.headers.iter().map(|(k, v)| json!([k, v])).collect();
        let tree = json!({
            "entries": request.entries,
            "request_options": {
                "provider": request.provider,
                "model": request.model,
                "max_output_tokens": surface.max_output_tokens,
                "reasoning_effort": surface.reasoning_effort,
                "system": request.system,
                "tools": request.tools,
                "url": enc.url,
                "headers": headers,
            },
        });
        assert_eq!(text, tree.to_string(), "the sealed record's bytes changed");
    }
    text
}

/// Whether any string (or member name) in `v` holds U+0000.
fn contains_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(a) => a.iter().any(contains_nul),
        Value::Object(m) => m.iter().any(|(k, v)| k.contains('\0') || contains_nul(v)),
        _ => false,
    }
}

/// `r{n}` and its fan keys `r{n}t0 … r{n}t{fan-1}`.
fn round_keys(n: u64, fan: usize) -> impl Iterator<Item = String> {
    std::iter::once(format!("r{n}")).chain((0..fan).map(move |i| format!("r{n}t{i}")))
}

/// The smallest n ≥ 1 whose round and fan keys are all unused (runs.md §7 step 1), and a floor
/// for the next allocation (every `r{m}` below it is in use once `r{n}` is).
fn pick_round_number(used: &HashSet<&str>, fan: usize) -> (u64, i64) {
    let n = (1u64..)
        .find(|&n| round_keys(n, fan).all(|k| !used.contains(k.as_str())))
        .expect("some n is free");
    let floor = (1u64..)
        .find(|&m| m != n && !used.contains(format!("r{m}").as_str()))
        .expect("some m is free");
    (n, floor as i64)
}

impl Kernel {
    /// Runs one `model_call` job: seal (or, for a recovered lease, reuse the seal), call,
    /// apply.
    pub(crate) async fn run_model_call(&self, job: &JobRow) -> KernelResult<()> {
        let Some(task_id) = job.task_id else {
            self.store.delete_job(job.id).await?;
            return Ok(());
        };
        // The round with its predecessor and the predecessor's fan: what a seal reads.
        let neighbourhood = self.store.task_neighbourhood(job.run_id, task_id).await?;
        let task = neighbourhood.iter().find(|t| t.id == task_id).cloned();
        let Some(task) = task.filter(|t| t.generation == job.generation && t.kind == task_kind::MODEL) else {
            self.store.delete_job(job.id).await?;
            return Ok(());
        };
        let surface = RequestSurface::of(&task);
        let (provider, model) = match self.providers.resolve(&surface.model) {
            Ok(p) => p,
            Err(e) => {
                let detail = format!("{} does not resolve: {}", surface.model, e.as_str());
                return self
                    .fail_round(job, &task, task_error_provider(), Some(detail), None)
                    .await;
            }
        };
        let (enc, attempts, prev) = match task.status.as_str() {
            task_status::WAITING => {
                let sealed = self.seal(job, &task, neighbourhood, provider.as_ref(), &model).await?;
                match sealed {
                    Some((enc, prev)) => (enc, Vec::new(), prev),
                    None => return Ok(()),
                }
            }
            task_status::RUNNING if job.attempts > 1 => {
                // A lease recovered from a dead process: send the sealed bytes again.
                let Some(sealed) = self.store.sealed_request(task.id, task.generation).await? else {
                    self.store.delete_job(job.id).await?;
                    return Ok(());
                };
                let record: Value = serde_json::from_str(&sealed.record).unwrap_or(Value::Null);
                let url = record
                    .pointer("/request_options/url")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let headers = record
                    .pointer("/request_options/headers")
                    .and_then(Value::as_array)
                    .map(|hs| {
                        hs.iter()
                            .filter_map(|h| Some((h.get(0)?.as_str()?.to_string(), h.get(1)?.as_str()?.to_string())))
                            .collect()
                    })
                    .unwrap_or_default();
                let attempts: Vec<Value> = serde_json::from_str(&sealed.attempts).unwrap_or_default();
                (EncodedRequest::new(url, headers, sealed.body), attempts, None)
            }
            _ => {
                self.store.delete_job(job.id).await?;
                return Ok(());
            }
        };
        self.call_and_apply(job, &task, provider, enc, attempts, prev).await
    }

    /// The seal transaction. `None` when the round is no longer sealable (the job is settled
    /// here). With the encoded request comes the predecessor's record, when the request was
    /// built from the predecessor and its fan alone.
    async fn seal(
        &self,
        job: &JobRow,
        task: &TaskRow,
        neighbourhood: Vec<TaskRow>,
        provider: &dyn Provider,
        model: &str,
    ) -> KernelResult<Option<(EncodedRequest, Option<PrevRecord>)>> {
        let capabilities = provider.capabilities(model);
        let (request, prev) = self.build_request(task, neighbourhood, &capabilities).await?;
        let encoded = provider.encode(&request);
        let enc = match encoded {
            Ok(enc) => enc,
            Err(e) => {
                self.fail_round(job, task, e.key, e.detail, None).await?;
                return Ok(None);
            }
        };
        let surface = RequestSurface::of(task);
        let record = sealed_record_text(&request, &surface, &enc);
        let body_sha256 = enc.body_sha256_hex();
        let now = time::now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(task.run_id).await?;
        let Some(mut current) = tx.task_by_id(task.id).await? else {
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            return Ok(None);
        };
        if current.generation != task.generation || current.status != task_status::WAITING {
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            return Ok(None);
        }
        if run.status != run_status::RUNNING {
            let mut effects = Vec::new();
            if (run.status == run_status::CANCELING || run_is_terminal(&run.status))
                && self
                    .settle_with_error(
                        &mut tx,
                        &mut run,
                        &mut current,
                        task_status::CANCELED,
                        graph_error::RUN_CANCELED,
                        None,
                        now,
                    )
                    .await?
            {
                effects = self.after_settle(&mut tx, &mut run, &current, now).await?;
            }
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            self.publish(effects).await;
            return Ok(None);
        }
        tx.insert_sealed_request(NewSealedRequest {
            task_id: task.id,
            generation: task.generation,
            record,
            body_sha256,
            request_bytes: enc.body.len() as i64,
            body: enc.body.clone(),
            attempts: "[]".into(),
            created_at: now,
        })
        .await?;
        self.transition(&mut tx, &mut run, &mut current, task_status::RUNNING, now)
            .await?;
        tx.commit().await?;
        // The continuation's request starts from these entries.
        self.remember_sealed(task, request.entries);
        self.publish(vec![AfterCommit::RunEvents(run.id)]).await;
        Ok(Some((enc, prev)))
    }

    /// Sends the sealed bytes (with retries) and applies the outcome.
    async fn call_and_apply(
        &self,
        job: &JobRow,
        task: &TaskRow,
        provider: Arc<dyn Provider>,
        enc: EncodedRequest,
        mut attempts: Vec<Value>,
        prev: Option<PrevRecord>,
    ) -> KernelResult<()> {
        let abort = self.state.signals.model_call_started(task.id);
        let outcome = self
            .send_with_retries(job, task, provider.as_ref(), &enc, &mut attempts, &abort)
            .await;
        self.state.signals.model_call_ended(task.id);
        // The last attempt is recorded by the transaction that applies its outcome.
        let pending = serde_json::to_string(&attempts).expect("attempts serialize");
        match outcome? {
            None => {
                // Stopped: the stop already canceled the round.
                self.store.delete_job(job.id).await?;
                Ok(())
            }
            Some(Ok(reply)) => self.apply_reply(job, task, reply, prev, &pending).await,
            Some(Err(e)) => self.fail_round(job, task, e.key, e.detail, Some(&pending)).await,
        }
    }

    /// Sends until an attempt succeeds, fails for good, or the round is stopped (`None`). Each
    /// attempt is pushed onto `attempts`; an attempt that is retried is stored before its
    /// backoff, and the last one is left for the caller's transaction.
    async fn send_with_retries(
        &self,
        job: &JobRow,
        task: &TaskRow,
        provider: &dyn Provider,
        enc: &EncodedRequest,
        attempts: &mut Vec<Value>,
        abort: &crate::signals::Abort,
    ) -> KernelResult<Option<Result<ModelReply, ProviderError>>> {
        let max = self.settings.provider_max_attempts.max(1) as usize;
        loop {
            let renew = async {
                loop {
                    tokio::time::sleep(Duration::from_millis(self.settings.lease_renew_ms)).await;
                    let _ = self
                        .store
                        .renew_job_lease(
                            job.id,
                            &self.settings.node_id,
                            time::now_ms(),
                            self.settings.model_lease_ms,
                        )
                        .await;
                }
            };
            let result = tokio::select! {
                r = provider.send(enc) => r,
                _ = abort.notified() => return Ok(None),
                _ = renew => unreachable!("the renewal loop never ends"),
            };
            let mut attempt = json!({"at": time::iso(time::now_ms())});
            match &result {
                Ok(_) => {}
                Err(e) => {
                    if let Some(s) = e.http_status {
                        attempt["http_status"] = json!(s);
                    }
                    attempt["error_key"] = json!(e.key);
                }
            }
            attempts.push(attempt);
            match result {
                Err(e) if e.is_retryable() && attempts.len() < max => {
                    let mut tx = self.store.begin().await?;
                    tx.set_sealed_attempts(
                        task.id,
                        task.generation,
                        &serde_json::to_string(&attempts).expect("attempts serialize"),
                    )
                    .await?;
                    tx.commit().await?;
                    let k = attempts.len() - 1;
                    let backoff = self
                        .settings
                        .provider_backoff_ms
                        .get(k)
                        .or(self.settings.provider_backoff_ms.last())
                        .copied()
                        .unwrap_or(0);
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(backoff)) => {}
                        _ = abort.notified() => return Ok(None),
                    }
                }
                other => return Ok(Some(other)),
            }
        }
    }

    /// Fails a round (`waiting` or `running`) with a model error key. `attempts`: the sealed
    /// record's attempts to store in the same transaction.
    async fn fail_round(
        &self,
        job: &JobRow,
        task: &TaskRow,
        key: &str,
        detail: Option<String>,
        attempts: Option<&str>,
    ) -> KernelResult<()> {
        let now = time::now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(task.run_id).await?;
        if let Some(attempts) = attempts {
            tx.set_sealed_attempts(task.id, task.generation, attempts).await?;
        }
        let mut effects = Vec::new();
        if let Some(mut current) = tx.task_by_id(task.id).await?
            && current.generation == task.generation
            && matches!(current.status.as_str(), task_status::WAITING | task_status::RUNNING)
            && self
                .settle_with_error(&mut tx, &mut run, &mut current, task_status::FAILED, key, detail, now)
                .await?
        {
            effects = self.after_settle(&mut tx, &mut run, &current, now).await?;
        }
        tx.delete_job(job.id).await?;
        tx.commit().await?;
        self.publish(effects).await;
        Ok(())
    }

    /// Plans the fan of a reply's calls against the round's frozen declaration (runs.md §7
    /// birth failures, in order). Reads executor ids outside the transaction.
    async fn plan_calls(&self, declaration: &[Value], reply: &ModelReply) -> KernelResult<Vec<PlannedCall>> {
        let resolver = declaration::Resolver::new(declaration);
        let mut out = Vec::with_capacity(reply.tool_calls.len());
        let mut used_ids: HashSet<String> = HashSet::new();
        for call in &reply.tool_calls {
            let mut call_id = call.id.clone();
            if call_id.is_empty()
                || call_id.chars().count() > CALL_ID_MAX
                || call_id.contains('\0')
                || !used_ids.insert(call_id.clone())
            {
                call_id = format!("call_{}", time::new_id());
                used_ids.insert(call_id.clone());
            }
            let name = &call.name;
            let mut p = PlannedCall {
                call_id,
                tool_name: name.clone(),
                tool_input: json!({}),
                tool_alias: None,
                target_executor_id: None,
                birth: None,
            };
            if name.is_empty() || name.chars().count() > bounds::NAME_CHARS || name.contains('\0') {
                p.tool_name = task_error::UNKNOWN_TOOL.into();
                p.birth = Some((task_error::UNKNOWN_TOOL, None));
                out.push(p);
                continue;
            }
            let args: Option<Value> = serde_json::from_str::<Value>(&call.arguments)
                .ok()
                .filter(Value::is_object);
            let Some(args) = args else {
                p.birth = Some(if reply.stop == StopReason::OutputBudgetExhausted {
                    (
                        task_error::TRUNCATED_TOOL_ARGUMENTS,
                        Some("the output budget ran out mid-call: re-issue the call with complete arguments".into()),
                    )
                } else {
                    (
                        task_error::INVALID_TOOL_ARGUMENTS,
                        Some("the arguments are not a JSON object".into()),
                    )
                });
                out.push(p);
                continue;
            };
            let resolved = resolver.resolve(name, &args);
            if resolved.entry.is_none() {
                p.tool_input = if contains_nul(&args) { json!({}) } else { args };
                p.birth = Some((task_error::UNKNOWN_TOOL, None));
                out.push(p);
                continue;
            }
            p.tool_name = resolved.tool_name;
            p.tool_alias = resolved.tool_alias;
            if let Some(route) = &resolved.route {
                p.target_executor_id = self
                    .store
                    .executor_by_public_id(route.runner_executor_public_id)
                    .await?
                    .map(|e| e.id);
            }
            if contains_nul(&resolved.tool_input) {
                p.birth = Some((task_error::INVALID_TOOL_INPUT, None));
                out.push(p);
                continue;
            }
            let size = jcs::to_string(&resolved.tool_input).len();
            if size > bounds::TOOL_INPUT {
                p.birth = Some((
                    task_error::TOOL_INPUT_TOO_LARGE,
                    Some(format!(
                        "the input is {size} bytes of canonical JSON; the bound is {} bytes",
                        bounds::TOOL_INPUT
                    )),
                ));
                out.push(p);
                continue;
            }
            p.tool_input = resolved.tool_input;
            out.push(p);
        }
        Ok(out)
    }

    /// The apply transaction: conditional on (task, generation, `running`). `attempts`: the
    /// sealed record's attempts, stored in the same transaction.
    async fn apply_reply(
        &self,
        job: &JobRow,
        task: &TaskRow,
        reply: ModelReply,
        prev: Option<PrevRecord>,
        attempts: &str,
    ) -> KernelResult<()> {
        let frozen = FrozenContext::of(task);
        let planned = self.plan_calls(&frozen.tool_definitions, &reply).await?;
        let now = time::now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(task.run_id).await?;
        tx.set_sealed_attempts(task.id, task.generation, attempts).await?;
        let mut effects = Vec::new();
        let current = tx.round_for_reply(task.id).await?;
        let Some(RoundForReply {
            task: mut round,
            facts,
            has_dependents,
            running_awaits,
        }) = current.filter(|r| r.task.generation == task.generation && r.task.status == task_status::RUNNING)
        else {
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            return Ok(());
        };
        // A stop without force lets a call-less reply finish; a reply with calls expands
        // nothing in a stopping run (runs.md §7): the round settles canceled.
        let finishes = run.status == run_status::CANCELING && planned.is_empty();
        if (run.status == run_status::CANCELING || run_is_terminal(&run.status)) && !finishes {
            if self
                .settle_with_error(
                    &mut tx,
                    &mut run,
                    &mut round,
                    task_status::CANCELED,
                    graph_error::RUN_CANCELED,
                    None,
                    now,
                )
                .await?
            {
                effects = self.after_settle(&mut tx, &mut run, &round, now).await?;
            }
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            self.publish(effects).await;
            return Ok(());
        }

        let calls: Vec<RawToolCall> = reply
            .tool_calls
            .iter()
            .zip(&planned)
            .map(|(c, p)| RawToolCall {
                id: p.call_id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        let stored = StoredReply {
            text: reply.text.clone(),
            tool_calls: calls,
            native: reply.native.clone(),
            stop: reply.stop.as_str().to_string(),
        };
        round.reply = Some(serde_json::to_string(&stored).expect("a reply serializes"));
        round.usage = Some(
            json!({"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens}).to_string(),
        );
        let text = reply.text.clone().unwrap_or_default();
        round.content = Some(if text.trim().is_empty() {
            "[]".into()
        } else {
            json!([{"type": "text", "text": text}]).to_string()
        });

        effects.push(AfterCommit::RunEvents(run.id));
        if planned.is_empty() {
            // The chain's last round: its settle is an ordinary one.
            self.transition(&mut tx, &mut run, &mut round, task_status::COMPLETED, now)
                .await?;
            effects.extend(self.after_settle(&mut tx, &mut run, &round, now).await?);
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            self.publish(effects).await;
            return Ok(());
        }

        let (view, full) = self.chain_view(&mut tx, &round, facts, prev).await?;
        let new_calls: Vec<String> = planned
            .iter()
            .map(|p| {
                let target = p.target_executor_id.map(|id| id.to_string());
                rounds::call_signature(&p.tool_name, &p.tool_input, target.as_deref())
            })
            .collect();
        let history: Vec<RoundRecord> = view
            .history
            .iter()
            .map(|r| RoundRecord {
                calls: r
                    .calls
                    .iter()
                    .map(|(signature, result)| CallRecord {
                        signature: signature.clone(),
                        result: result.clone(),
                    })
                    .collect(),
            })
            .collect();
        if let Some(detail) = rounds::expansion_refusal(view.rounds as usize, &history, &new_calls) {
            self.settle_with_error(
                &mut tx,
                &mut run,
                &mut round,
                task_status::FAILED,
                graph_error::ROUND_EXPANSION_REFUSED,
                Some(detail.into()),
                now,
            )
            .await?;
            effects.extend(self.after_settle(&mut tx, &mut run, &round, now).await?);
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            self.publish(effects).await;
            return Ok(());
        }

        self.transition(&mut tx, &mut run, &mut round, task_status::COMPLETED, now)
            .await?;
        let (n, key_floor) = self
            .round_number(&mut tx, run.id, planned.len(), view.key_floor, full.as_ref())
            .await?;
        let mut g = match full {
            Some(mut g) => {
                g.put(&round);
                g
            }
            None => Graph::new(vec![round.clone()], &[]),
        };
        let plan = Expansion {
            planned: &planned,
            n,
            // `frozen_context` is written once, at insert: the job's copy is the row's.
            fan_on_failure: &frozen.fan_on_failure,
            has_dependents,
            facts: ChainFacts {
                rounds: view.rounds,
                key_floor,
                history: &view.history,
            },
        };
        let births = self
            .expand(&mut tx, &mut run, &mut g, &round, &plan, now, &mut effects)
            .await?;
        let mut settled = vec![round.id];
        settled.extend(births);
        if !g.is_whole() {
            // The expansion's rows and edges are all in `g`; the cascade stays inside them
            // unless a pre-existing waiter, a kernel-held wait or a skip could reach further.
            if has_dependents || running_awaits || !g.contains_cascade(&settled) {
                g = Graph::load(&mut tx, run.id).await?;
            }
        }
        self.cascade(&mut tx, &mut run, &mut g, settled, now, &mut effects)
            .await?;
        if g.is_whole() {
            self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
        } else {
            self.end_if_quiescent(&mut tx, &mut run, &g, now, &mut effects).await?;
        }
        tx.delete_job(job.id).await?;
        tx.commit().await?;
        self.publish(effects).await;
        Ok(())
    }

    /// The round's chain length and look-back: from its stored facts and its predecessor's
    /// record (handed over by the seal, else read: the predecessor and its fan), or, for a
    /// round without facts or a look-back holding a paired result, from the whole run (which
    /// is returned for the rest of the expansion).
    async fn chain_view(
        &self,
        tx: &mut Tx,
        round: &TaskRow,
        facts: Option<RoundFactsRow>,
        prev: Option<PrevRecord>,
    ) -> KernelResult<(ChainView, Option<Graph>)> {
        let Some(prev_id) = round.declaring_task_id else {
            return Ok((ChainView::root(), None));
        };
        let stored = facts
            .as_ref()
            .and_then(|f| serde_json::from_str::<Vec<StoredRound>>(&f.history).ok());
        match (facts.as_ref(), stored) {
            (Some(f), Some(mut history)) => {
                let record = match prev.filter(|p| p.round_id == prev_id) {
                    Some(p) => Some(p.record),
                    None => match tx.task_by_id(prev_id).await? {
                        Some(p) if p.kind == task_kind::MODEL && p.run_id == round.run_id => {
                            let mut tasks = vec![p.clone()];
                            tasks.extend(tx.tasks_declared_by(round.run_id, prev_id).await?);
                            let rows = Rows::new(tasks);
                            Some(round_record(&rows, &p))
                        }
                        _ => None,
                    },
                };
                if let Some(record) = record {
                    history.push(record);
                    let cut = history.len().saturating_sub(rounds::LOOK_BACK);
                    history.drain(..cut);
                    if !history.iter().any(|r| r.paired) {
                        let view = ChainView {
                            rounds: f.chain_rounds + 1,
                            history,
                            key_floor: Some(f.key_floor),
                        };
                        #[cfg(debug_assertions)]
                        {
                            let g = Graph::load(tx, round.run_id).await?;
                            let exact = chain_view_of(&g, round);
                            assert_eq!(
                                (view.rounds.min(exact.rounds), &view.history),
                                (exact.rounds, &exact.history),
                                "the stored chain facts of {} differ from its chain",
                                round.key
                            );
                        }
                        return Ok((view, None));
                    }
                }
            }
            (None, _) => {
                // A chain root (declared by a tool row, or by nothing) has no earlier rounds.
                match tx.task_by_id(prev_id).await? {
                    Some(p) if p.kind == task_kind::MODEL && p.run_id == round.run_id => {}
                    _ => return Ok((ChainView::root(), None)),
                }
            }
            (Some(_), None) => {}
        }
        let g = Graph::load(tx, round.run_id).await?;
        let view = chain_view_of(&g, round);
        Ok((view, Some(g)))
    }

    /// The round number of an expansion with `fan` calls, and the floor to store for the
    /// next one: probed upwards from `floor` (every `r{m}` below it is in use), else read from
    /// the run's keys (`g`, or every key of the run).
    async fn round_number(
        &self,
        tx: &mut Tx,
        run_id: i64,
        fan: usize,
        floor: Option<i64>,
        g: Option<&Graph>,
    ) -> KernelResult<(u64, i64)> {
        let Some(floor) = floor.filter(|_| g.is_none()) else {
            let keys: Vec<String> = match g {
                Some(g) => g.tasks.iter().map(|t| t.key.clone()).collect(),
                None => tx.task_keys_of_run(run_id).await?,
            };
            let used: HashSet<&str> = keys.iter().map(String::as_str).collect();
            return Ok(pick_round_number(&used, fan));
        };
        let base = floor.max(1) as u64;
        // r_used[j]: `r{base + j}` is in use.
        let mut r_used: Vec<bool> = Vec::new();
        let picked = loop {
            let start = base + r_used.len() as u64;
            let window: Vec<String> = (start..start + KEY_WINDOW).flat_map(|n| round_keys(n, fan)).collect();
            let used: HashSet<String> = tx.used_task_keys(run_id, &window).await?.into_iter().collect();
            let mut found = None;
            for n in start..start + KEY_WINDOW {
                r_used.push(used.contains(&format!("r{n}")));
                if found.is_none() && round_keys(n, fan).all(|k| !used.contains(&k)) {
                    found = Some(n);
                }
            }
            if let Some(n) = found {
                break n;
            }
        };
        let next_floor = (0..r_used.len() as u64)
            .map(|j| base + j)
            .find(|&m| m != picked && !r_used[(m - base) as usize])
            .unwrap_or(base + r_used.len() as u64);
        #[cfg(debug_assertions)]
        {
            let keys = tx.task_keys_of_run(run_id).await?;
            let used: HashSet<&str> = keys.iter().map(String::as_str).collect();
            let (n, _) = pick_round_number(&used, fan);
            assert_eq!(n, picked, "the probed round number differs from the smallest free one");
            assert!(
                (1..next_floor).all(|m| m == picked || used.contains(format!("r{m}").as_str())),
                "the key floor {next_floor} is above a free round number"
            );
        }
        Ok((picked, next_floor as i64))
    }

    /// Authors the fan `r{n}t{i}` and the continuation `r{n}` (runs.md §7) with the
    /// continuation's chain facts, into `g` as well. Returns the ids of the rows failed at
    /// birth.
    #[allow(clippy::too_many_arguments)]
    async fn expand(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        round: &TaskRow,
        plan: &Expansion<'_>,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<Vec<i64>> {
        let Expansion {
            planned,
            n,
            fan_on_failure,
            has_dependents,
            ref facts,
        } = *plan;
        let mut keys: Vec<String> = Vec::with_capacity(planned.len() + 1);
        let mut members: Vec<i64> = Vec::with_capacity(planned.len());
        let mut rows: Vec<TaskRow> = Vec::with_capacity(planned.len());
        for (i, p) in planned.iter().enumerate() {
            let key = format!("r{n}t{i}");
            let row = tx
                .insert_task(NewTask {
                    run_id: run.id,
                    key: key.clone(),
                    kind: task_kind::TOOL.into(),
                    status: task_status::WAITING.into(),
                    generation: 1,
                    origin: "model".into(),
                    on_failure: fan_on_failure.to_string(),
                    visibility: "collapsed".into(),
                    mainline: round.mainline,
                    branch_of: round.branch_of.clone(),
                    declaring_task_id: Some(round.id),
                    tool_name: Some(p.tool_name.clone()),
                    tool_alias: p.tool_alias.clone(),
                    tool_input: Some(serde_json::to_string(&p.tool_input).expect("input serializes")),
                    tool_call_id: Some(p.call_id.clone()),
                    target_executor_id: p.target_executor_id,
                    created_at: now,
                    ..Default::default()
                })
                .await?;
            tx.insert_edge(row.id, round.id, "after").await?;
            g.put(&row);
            g.add_edge(row.id, round.id);
            members.push(row.id);
            keys.push(key);
            rows.push(row);
        }
        let key = format!("r{n}");
        let continuation = tx
            .insert_task(NewTask {
                run_id: run.id,
                key: key.clone(),
                kind: task_kind::MODEL.into(),
                status: task_status::WAITING.into(),
                generation: 1,
                origin: "model".into(),
                on_failure: round.on_failure.clone(),
                visibility: round.visibility.clone(),
                mainline: round.mainline,
                branch_of: round.branch_of.clone(),
                declaring_task_id: Some(round.id),
                frozen_context: round.frozen_context.clone(),
                request_surface: round.request_surface.clone(),
                created_at: now,
                ..Default::default()
            })
            .await?;
        g.put(&continuation);
        for &m in &members {
            tx.insert_edge(continuation.id, m, "after").await?;
            g.add_edge(continuation.id, m);
        }
        tx.put_round_facts(&RoundFactsRow {
            task_id: continuation.id,
            chain_rounds: facts.rounds,
            key_floor: facts.key_floor,
            history: serde_json::to_string(facts.history).expect("a history serializes"),
        })
        .await?;
        // Waiters on the round follow the continuation.
        let edges = if has_dependents {
            tx.edges_into(round.id).await?
        } else {
            Vec::new()
        };
        for e in edges
            .iter()
            .filter(|e| e.depends_on_id == round.id && !members.contains(&e.task_id))
        {
            if e.task_id != continuation.id && tx.insert_edge(e.task_id, continuation.id, &e.kind).await? {
                g.add_edge(e.task_id, continuation.id);
            }
        }
        keys.push(key);
        if run.deliverable_task_id == Some(round.id) {
            run.deliverable_task_id = Some(continuation.id);
            tx.update_run(run).await?;
        }
        self.emit(
            tx,
            run,
            "tasks_appended",
            None,
            json!({"keys": keys, "origin": "model"}),
            now,
            effects,
        )
        .await?;
        // Birth failures: authored, then failed in the same transaction.
        let mut births = Vec::new();
        for (mut row, p) in rows.into_iter().zip(planned) {
            if let Some((error, detail)) = &p.birth
                && self
                    .settle_with_error(tx, run, &mut row, task_status::FAILED, error, detail.clone(), now)
                    .await?
            {
                g.put(&row);
                births.push(row.id);
            }
        }
        Ok(births)
    }
}

/// One expansion, as the reply step planned it.
struct Expansion<'a> {
    planned: &'a [PlannedCall],
    /// The round number (`r{n}`, `r{n}t{i}`).
    n: u64,
    /// The chain's fan policy.
    fan_on_failure: &'a str,
    /// Some row depends on the round (its waiters follow the continuation).
    has_dependents: bool,
    facts: ChainFacts<'a>,
}

/// What an expansion stores for its continuation.
struct ChainFacts<'a> {
    /// The expanding round's chain length.
    rounds: i64,
    key_floor: i64,
    /// The expanding round's look-back.
    history: &'a [StoredRound],
}

/// The round's chain and look-back from the whole run (runs.md §7): the predecessors along
/// `declaring_task_id` while they are model rounds.
fn chain_view_of(g: &Graph, round: &TaskRow) -> ChainView {
    let mut chain: Vec<&TaskRow> = Vec::new();
    let mut at = round.declaring_task_id.and_then(|id| g.get(id));
    while let Some(t) = at.filter(|t| t.kind == task_kind::MODEL) {
        chain.push(t);
        if chain.len() > rounds::LOOK_BACK.max(rounds::ROUND_LIMIT) {
            break;
        }
        at = t.declaring_task_id.and_then(|id| g.get(id));
    }
    chain.reverse();
    let rows = Rows::new(g.tasks.as_slice());
    let history = chain
        .iter()
        .rev()
        .take(rounds::LOOK_BACK)
        .rev()
        .map(|r| round_record(&rows, r))
        .collect();
    ChainView {
        rounds: chain.len() as i64 + 1,
        history,
        key_floor: None,
    }
}

fn task_error_provider() -> &'static str {
    nexus_providers::provider::keys::PROVIDER_ERROR
}
