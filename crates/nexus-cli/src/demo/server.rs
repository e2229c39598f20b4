//! The demo's server: a kernel on a temporary data dir (or a given PostgreSQL database),
//! bootstrapped, serving the HTTP API and the job worker in this process on a loopback port.

use std::path::{Path, PathBuf};

use anyhow::Context;
use nexus_store::prelude::*;
use serde::Deserialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::{self, Resolved, Settings};
use crate::serve;

/// The bootstrap's credentials the demo uses (`nexus admin bootstrap --json`).
#[derive(Debug, Deserialize)]
pub struct Boot {
    pub workspace_public_id: String,
    pub human: Member,
    pub runner: Runner,
}

#[derive(Debug, Deserialize)]
pub struct Member {
    pub member_token: String,
}

#[derive(Debug, Deserialize)]
pub struct Runner {
    pub executor_public_id: String,
    pub transport_token: String,
}

/// A serving kernel; [`Server::stop`] drains it.
pub struct Server {
    pub base: String,
    pub boot: Boot,
    stop: watch::Sender<bool>,
    task: JoinHandle<anyhow::Result<()>>,
}

/// `nexus.toml` for the demo: provider tables for the keys present in the environment.
pub fn settings_toml(providers: &[(&str, &str, &str, &str)]) -> String {
    let mut text = String::new();
    for (instance, kind, base_url, key_env) in providers {
        text.push_str(&format!(
            "[providers.{instance}]\nkind = \"{kind}\"\nbase_url = \"{base_url}\"\napi_key_env = \"{key_env}\"\n\n"
        ));
    }
    text
}

/// Starts the kernel on `data_dir` (`database_url`: PostgreSQL instead of the SQLite file),
/// bootstraps it, and serves on `listen`.
pub async fn start(data_dir: &Path, database_url: Option<&str>, listen: &str, toml: &str) -> anyhow::Result<Server> {
    config::prepare_data_dir(data_dir)?;
    std::fs::write(data_dir.join("nexus.toml"), toml).context("writing nexus.toml")?;
    let mut settings: Settings = toml::from_str(toml).context("the demo's nexus.toml")?;
    settings.storage.url = database_url.map(str::to_string);
    settings.kernel.node_id = format!("demo:{}", data_dir.display());
    let resolved = Resolved {
        data_dir: PathBuf::from(data_dir),
        settings,
    };
    let store = serve::open_store(&resolved, false).await?;
    store.migrate().await.context("applying migrations")?;
    let kernel = serve::build_kernel(&resolved, store)?;
    let made = kernel.admin().bootstrap().await.context("bootstrapping")?;
    let boot = Boot {
        workspace_public_id: made.workspace_public_id.to_string(),
        human: Member {
            member_token: made.human.member_token,
        },
        runner: Runner {
            executor_public_id: made.runner.executor_public_id.to_string(),
            transport_token: made.runner.transport_token,
        },
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, mut rx) = watch::channel(false);
    let shutdown = async move {
        while !*rx.borrow() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    };
    let task = tokio::spawn(serve::serve_kernel(kernel, listener, shutdown));
    Ok(Server { base, boot, stop, task })
}

impl Server {
    /// Stops serving and waits for the drain.
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        self.task.await.context("the server task")?
    }
}
