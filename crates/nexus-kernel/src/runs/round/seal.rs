//! The seal (providers.md §4): the job's entry point, the request built and encoded, and one
//! transaction that stores the sealed record and body bytes and moves the round to `running`.

use nexus_providers::{EncodedRequest, Entry, ModelRequest, Provider};
use nexus_store::{Engine, JobRow, NewSealedRequest, TaskRow, run_status, task_status};
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::KernelResult;
use crate::runs::round::call::*;
use crate::runs::round::chain::PrevRecord;
use crate::runs::{AfterCommit, RequestSurface, graph_error, run_is_terminal, task_kind};
use crate::{Kernel, time};

/// The sealed record's text (`{entries, request_options}`), serialized without building a
/// `Value` tree. Member order is the record's: the same bytes as the `json!` form.
#[derive(Serialize)]
pub(crate) struct SealedRecord<'a> {
    entries: &'a [Entry],
    request_options: SealedOptions<'a>,
}

#[derive(Serialize)]
pub(crate) struct SealedOptions<'a> {
    provider: &'a str,
    model: &'a str,
    max_output_tokens: Option<u32>,
    reasoning_effort: &'a Option<String>,
    system: &'a [String],
    tools: &'a [Value],
    url: &'a str,
    headers: Vec<[&'a str; 2]>,
}

pub(crate) fn sealed_record_text(request: &ModelRequest, surface: &RequestSurface, enc: &EncodedRequest) -> String {
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
    pub(crate) async fn seal(
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
}
