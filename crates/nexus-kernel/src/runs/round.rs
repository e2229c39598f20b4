//! Model rounds (providers.md §4, §8; runs.md §7): seal, call, apply, expand.
//!
//! 1. **Seal** (one transaction): the sealed record and the exact body bytes are stored and the
//!    round moves `waiting → running`.
//! 2. **Call**, outside any transaction: the same sealed bytes every attempt; retryable errors
//!    are retried with backoff and every attempt is appended to the record's `attempts`. The
//!    job lease is renewed while the call is in flight.
//! 3. **Apply** (one transaction, conditional on (task, generation, `running`)): the reply is
//!    stored, the round completes, and its calls expand into a fan plus a continuation.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use nexus_core::codes::task_error;
use nexus_core::declaration;
use nexus_core::rounds::{self, CallRecord, RoundRecord};
use nexus_core::{bounds, jcs};
use nexus_providers::{EncodedRequest, ModelReply, Provider, ProviderError, RawToolCall, StopReason};
use nexus_store::{Engine, JobRow, NewSealedRequest, NewTask, RunRow, TaskRow, run_status, task_status};
use serde_json::{Value, json};

use super::request::{Judge, Rows, render_row};
use super::schedule::Graph;
use super::{AfterCommit, FrozenContext, RequestSurface, StoredReply, graph_error, run_is_terminal, task_kind};
use crate::error::KernelResult;
use crate::{Kernel, time};

/// Call ids longer than this are replaced by `call_<uuidv7>` on both sides.
const CALL_ID_MAX: usize = 128;

/// One planned fan member.
struct PlannedCall {
    call_id: String,
    tool_name: String,
    tool_input: Value,
    tool_alias: Option<String>,
    target_executor_id: Option<i64>,
    birth: Option<(&'static str, Option<String>)>,
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

impl Kernel {
    /// Runs one `model_call` job: seal (or, for a recovered lease, reuse the seal), call,
    /// apply.
    pub(crate) async fn run_model_call(&self, job: &JobRow) -> KernelResult<()> {
        let Some(task_id) = job.task_id else {
            self.store.delete_job(job.id).await?;
            return Ok(());
        };
        let task = self.store.task_by_id(task_id).await?;
        let Some(task) = task.filter(|t| t.generation == job.generation && t.kind == task_kind::MODEL) else {
            self.store.delete_job(job.id).await?;
            return Ok(());
        };
        let surface = RequestSurface::of(&task);
        let (provider, model) = match self.providers.resolve(&surface.model) {
            Ok(p) => p,
            Err(e) => {
                let detail = format!("{} does not resolve: {}", surface.model, e.as_str());
                return self.fail_round(job, &task, task_error_provider(), Some(detail)).await;
            }
        };
        let (enc, attempts) = match task.status.as_str() {
            task_status::WAITING => match self.seal(job, &task, provider.as_ref(), &model).await? {
                Some(enc) => (enc, Vec::new()),
                None => return Ok(()),
            },
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
                (EncodedRequest::new(url, headers, sealed.body), attempts)
            }
            _ => {
                self.store.delete_job(job.id).await?;
                return Ok(());
            }
        };
        self.call_and_apply(job, &task, provider, enc, attempts).await
    }

    /// The seal transaction. `None` when the round is no longer sealable (the job is settled
    /// here).
    async fn seal(
        &self,
        job: &JobRow,
        task: &TaskRow,
        provider: &dyn Provider,
        model: &str,
    ) -> KernelResult<Option<EncodedRequest>> {
        let run = self
            .store
            .run_by_id(task.run_id)
            .await?
            .ok_or_else(|| crate::KernelError::of(nexus_core::codes::Code::NotFound))?;
        let capabilities = provider.capabilities(model);
        let request = self.build_request(&run, task, &capabilities).await?;
        let enc = match provider.encode(&request) {
            Ok(enc) => enc,
            Err(e) => {
                self.fail_round(job, task, e.key, e.detail).await?;
                return Ok(None);
            }
        };
        let surface = RequestSurface::of(task);
        let headers: Vec<Value> = enc.headers.iter().map(|(k, v)| json!([k, v])).collect();
        let record = json!({
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
            record: serde_json::to_string(&record).expect("a record serializes"),
            body_sha256: enc.body_sha256_hex(),
            request_bytes: enc.body.len() as i64,
            body: enc.body.clone(),
            attempts: "[]".into(),
            created_at: now,
        })
        .await?;
        self.transition(&mut tx, &mut run, &mut current, task_status::RUNNING, now)
            .await?;
        tx.commit().await?;
        self.publish(vec![AfterCommit::RunEvents(run.id)]).await;
        Ok(Some(enc))
    }

    /// Sends the sealed bytes (with retries) and applies the outcome.
    async fn call_and_apply(
        &self,
        job: &JobRow,
        task: &TaskRow,
        provider: Arc<dyn Provider>,
        enc: EncodedRequest,
        mut attempts: Vec<Value>,
    ) -> KernelResult<()> {
        let abort = Arc::new(tokio::sync::Notify::new());
        self.runtime
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(task.id, abort.clone());
        let outcome = self
            .send_with_retries(job, task, provider.as_ref(), &enc, &mut attempts, &abort)
            .await;
        self.runtime
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&task.id);
        match outcome? {
            None => {
                // Stopped: the stop already canceled the round.
                self.store.delete_job(job.id).await?;
                Ok(())
            }
            Some(Ok(reply)) => self.apply_reply(job, task, reply).await,
            Some(Err(e)) => self.fail_round(job, task, e.key, e.detail).await,
        }
    }

    async fn send_with_retries(
        &self,
        job: &JobRow,
        task: &TaskRow,
        provider: &dyn Provider,
        enc: &EncodedRequest,
        attempts: &mut Vec<Value>,
        abort: &tokio::sync::Notify,
    ) -> KernelResult<Option<Result<ModelReply, ProviderError>>> {
        let max = self.runtime.provider_max_attempts.max(1) as usize;
        loop {
            let renew = async {
                loop {
                    tokio::time::sleep(Duration::from_millis(self.runtime.lease_renew_ms)).await;
                    let _ = self
                        .store
                        .renew_job_lease(
                            job.id,
                            &self.runtime.node_id,
                            time::now_ms(),
                            self.runtime.model_lease_ms,
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
            let mut tx = self.store.begin().await?;
            tx.set_sealed_attempts(
                task.id,
                task.generation,
                &serde_json::to_string(&attempts).expect("attempts serialize"),
            )
            .await?;
            tx.commit().await?;
            match result {
                Err(e) if e.is_retryable() && attempts.len() < max => {
                    let k = attempts.len() - 1;
                    let backoff = self
                        .runtime
                        .provider_backoff_ms
                        .get(k)
                        .or(self.runtime.provider_backoff_ms.last())
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

    /// Fails a round (`waiting` or `running`) with a model error key.
    async fn fail_round(&self, job: &JobRow, task: &TaskRow, key: &str, detail: Option<String>) -> KernelResult<()> {
        let now = time::now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(task.run_id).await?;
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

    /// The apply transaction: conditional on (task, generation, `running`).
    async fn apply_reply(&self, job: &JobRow, task: &TaskRow, reply: ModelReply) -> KernelResult<()> {
        let frozen = FrozenContext::of(task);
        let planned = self.plan_calls(&frozen.tool_definitions, &reply).await?;
        let now = time::now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(task.run_id).await?;
        let mut effects = Vec::new();
        let current = tx.task_by_id(task.id).await?;
        let Some(mut round) = current.filter(|t| t.generation == task.generation && t.status == task_status::RUNNING)
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

        let mut g = Graph::load(&mut tx, run.id).await?;
        let mut settled = vec![round.id];
        if planned.is_empty() {
            self.transition(&mut tx, &mut run, &mut round, task_status::COMPLETED, now)
                .await?;
            g.put(&round);
        } else if let Some(detail) = self.expansion_refusal(&g, &round, &planned) {
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
            g.put(&round);
        } else {
            self.transition(&mut tx, &mut run, &mut round, task_status::COMPLETED, now)
                .await?;
            g.put(&round);
            let births = self
                .expand(&mut tx, &mut run, &mut g, &round, &planned, now, &mut effects)
                .await?;
            settled.extend(births);
        }
        effects.push(AfterCommit::RunEvents(run.id));
        self.cascade(&mut tx, &mut run, &mut g, settled, now, &mut effects)
            .await?;
        self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
        tx.delete_job(job.id).await?;
        tx.commit().await?;
        self.publish(effects).await;
        Ok(())
    }

    /// `Some(detail)` when the round may not expand (round limit, repeat-call loop).
    fn expansion_refusal(&self, g: &Graph, round: &TaskRow, planned: &[PlannedCall]) -> Option<&'static str> {
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
        let judge = Judge { capabilities: None };
        let history: Vec<RoundRecord> = chain
            .iter()
            .rev()
            .take(rounds::LOOK_BACK)
            .rev()
            .map(|r| {
                let fan = rows.fan_of(r);
                let calls = StoredReply::of(r)
                    .map(|reply| {
                        reply
                            .tool_calls
                            .iter()
                            .map(|c| {
                                let row = fan.iter().copied().find(|t| t.tool_call_id.as_deref() == Some(&c.id));
                                let rendered = render_row(&rows, row, &judge);
                                let signature = row.map_or_else(String::new, |t| {
                                    let input: Value = t
                                        .tool_input
                                        .as_deref()
                                        .and_then(|s| serde_json::from_str(s).ok())
                                        .unwrap_or(Value::Null);
                                    let target = t.target_executor_id.map(|id| id.to_string());
                                    rounds::call_signature(
                                        t.tool_name.as_deref().unwrap_or(""),
                                        &input,
                                        target.as_deref(),
                                    )
                                });
                                CallRecord {
                                    signature,
                                    result: rounds::result_digest(&rendered.output, rendered.is_error),
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                RoundRecord { calls }
            })
            .collect();
        let new_calls: Vec<String> = planned
            .iter()
            .map(|p| {
                let target = p.target_executor_id.map(|id| id.to_string());
                rounds::call_signature(&p.tool_name, &p.tool_input, target.as_deref())
            })
            .collect();
        rounds::expansion_refusal(chain.len() + 1, &history, &new_calls)
    }

    /// Authors the fan `r{n}t{i}` and the continuation `r{n}` (runs.md §7). Returns the ids of
    /// the rows failed at birth.
    #[allow(clippy::too_many_arguments)]
    async fn expand(
        &self,
        tx: &mut nexus_store::Tx,
        run: &mut RunRow,
        g: &mut Graph,
        round: &TaskRow,
        planned: &[PlannedCall],
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<Vec<i64>> {
        let used: HashSet<&str> = g.tasks.iter().map(|t| t.key.as_str()).collect();
        let n = (1u64..)
            .find(|n| {
                !used.contains(format!("r{n}").as_str())
                    && (0..planned.len()).all(|i| !used.contains(format!("r{n}t{i}").as_str()))
            })
            .expect("some n is free");
        let fan_on_failure = FrozenContext::of(round).fan_on_failure;
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
                    on_failure: fan_on_failure.clone(),
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
        // Waiters on the round follow the continuation.
        let edges = tx.edges_into(round.id).await?;
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

fn task_error_provider() -> &'static str {
    nexus_providers::provider::keys::PROVIDER_ERROR
}
