//! The runner framework: announce, listen, claim, run a handler, extend, commit.
//!
//! A [`Runner`] serves a [`Service`] (or closures added with [`RunnerBuilder::tool`]) over one
//! executor transport bearer. It keeps the push channel open and polls the inbox as the
//! level-triggered fallback (executor.md §6, §10), claims at most `concurrency` rows at once,
//! extends each claim before its deadline while the handler runs, and commits the handler's
//! [`ToolResult`].
//!
//! Transient failures (the kernel restarting, a 5xx) are retried with backoff; typed refusals
//! are final. A handler that panics fails its call with a message; the runner carries on. On
//! `work_canceled`, or when the claim is found gone, the call's [`ToolCall::cancel`] token
//! fires and its future is dropped, and nothing is committed.
//!
//! A runner with one tool:
//!
//! ```no_run
//! use nexus_sdk::runner::{EffectProfile, Runner, ToolResult, ToolSpec};
//! use serde_json::json;
//!
//! #[tokio::main]
//! async fn main() -> nexus_sdk::Result<()> {
//!     let bearer = std::env::var("NEXUS_RUNNER_TOKEN").expect("the runner's transport bearer");
//!     let shout = ToolSpec::new("shout", EffectProfile::READ)
//!         .description("Upper-cases `text`.")
//!         .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}));
//!     Runner::builder("http://127.0.0.1:7420", &bearer)
//!         .tool(shout, |call| async move {
//!             match call.input["text"].as_str() {
//!                 Some(text) => ToolResult::text(text.to_uppercase()).with_title("shout"),
//!                 None => ToolResult::error("`text` must be a string"),
//!             }
//!         })
//!         .build()
//!         .run(async {
//!             let _ = tokio::signal::ctrl_c().await;
//!         })
//!         .await
//! }
//! ```

mod backoff;
mod call;
mod channel;
mod engine;
mod lease;
mod tool;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

pub use tool::{
    Announcement, Block, Document, EffectKind, EffectProfile, EffectScope, HandlerFn, HandlerFuture, Idempotency,
    Outcome, Reconciliation, Service, ToolCall, ToolResult, ToolSpec,
};

use crate::error::Result;
use crate::executor_client::ExecutorClient;

/// The default number of claims run at once.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// Closures keyed by tool name: the [`Service`] behind [`RunnerBuilder::tool`].
#[derive(Default, Clone)]
pub struct Tools {
    announcement: Announcement,
    handlers: std::collections::HashMap<String, HandlerFn>,
}

impl Tools {
    /// Adds a tool served by `handler`.
    pub fn add<F, Fut>(&mut self, spec: ToolSpec, handler: F)
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        let name = spec.name.clone();
        self.announcement.tools.retain(|t| t.name != name);
        self.announcement.tools.push(spec);
        self.handlers
            .insert(name, Arc::new(move |call| Box::pin(handler(call))));
    }
}

impl Service for Tools {
    fn announcement(&self) -> Announcement {
        self.announcement.clone()
    }

    fn call(&self, call: ToolCall) -> HandlerFuture {
        match self.handlers.get(&call.tool_name) {
            Some(handler) => handler(call),
            None => {
                let name = call.tool_name.clone();
                Box::pin(async move { ToolResult::failed(format!("this runner does not serve `{name}`")) })
            }
        }
    }
}

/// Builds a [`Runner`].
pub struct RunnerBuilder {
    client: ExecutorClient,
    tools: Tools,
    service: Option<Arc<dyn Service>>,
    concurrency: usize,
    poll_interval: Duration,
    handle: RunnerHandle,
}

impl RunnerBuilder {
    /// The handle the built runner will obey (for a service that must re-announce, created
    /// before the runner).
    pub fn handle(&self) -> RunnerHandle {
        self.handle.clone()
    }

    /// Serves `spec` with `handler` (ignored once [`RunnerBuilder::service`] is set).
    pub fn tool<F, Fut>(mut self, spec: ToolSpec, handler: F) -> RunnerBuilder
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        self.tools.add(spec, handler);
        self
    }

    /// The announced `environment` (with closures; a [`Service`] announces its own).
    pub fn environment(mut self, environment: Map<String, Value>) -> RunnerBuilder {
        self.tools.announcement.environment = environment;
        self
    }

    /// Serves a whole [`Service`] instead of closures.
    pub fn service(mut self, service: Arc<dyn Service>) -> RunnerBuilder {
        self.service = Some(service);
        self
    }

    /// At most `n` claims at once (default [`DEFAULT_CONCURRENCY`]; at least 1).
    pub fn concurrency(mut self, n: usize) -> RunnerBuilder {
        self.concurrency = n.max(1);
        self
    }

    /// How often the inbox is polled (default 5 s; the push channel makes most polls idle).
    pub fn poll_interval(mut self, every: Duration) -> RunnerBuilder {
        self.poll_interval = every;
        self
    }

    /// The runner.
    pub fn build(self) -> Runner {
        let service = self.service.unwrap_or_else(|| Arc::new(self.tools));
        Runner {
            client: self.client,
            service,
            concurrency: self.concurrency,
            poll_interval: self.poll_interval,
            handle: self.handle,
        }
    }
}

/// Controls a running [`Runner`] from elsewhere (cheap to clone).
#[derive(Clone, Default)]
pub struct RunnerHandle {
    reannounce: Arc<tokio::sync::Notify>,
    shutdown: tokio_util::sync::CancellationToken,
}

impl RunnerHandle {
    /// Sends the service's current announcement again (its tool list changed).
    pub fn reannounce(&self) {
        self.reannounce.notify_one();
    }

    /// Stops claiming; running handlers finish and commit, then [`Runner::run`] returns.
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }
}

/// A runner: one executor address serving one [`Service`].
pub struct Runner {
    client: ExecutorClient,
    service: Arc<dyn Service>,
    concurrency: usize,
    poll_interval: Duration,
    handle: RunnerHandle,
}

impl Runner {
    /// A runner for the kernel at `base_url` with the executor's transport bearer.
    pub fn builder(base_url: &str, transport_bearer: &str) -> RunnerBuilder {
        RunnerBuilder {
            client: ExecutorClient::new(base_url, transport_bearer),
            tools: Tools::default(),
            service: None,
            concurrency: DEFAULT_CONCURRENCY,
            poll_interval: Duration::from_secs(5),
            handle: RunnerHandle::default(),
        }
    }

    /// A handle to re-announce or shut down while [`Runner::run`] is running.
    pub fn handle(&self) -> RunnerHandle {
        self.handle.clone()
    }

    /// Announces, then serves until `shutdown` resolves (or [`RunnerHandle::shutdown`]); then
    /// stops claiming, lets running handlers commit, and returns. Fails only when the first
    /// announcement is refused with a typed error.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<()> {
        engine::run(self, shutdown).await
    }
}
