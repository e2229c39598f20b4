//! `nexus serve` and `nexus migrate`.

use std::process::ExitCode;

use anyhow::Context;
use nexus_store::Store;
use nexus_store::prelude::*;

use crate::config::{self, StoreFlags};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreFlags,
    #[arg(long, value_name = "ADDR", env = config::ENV_LISTEN, hide_env_values = true, help = listen_help())]
    pub listen: Option<String>,
    /// Refuse to start while a migration is pending instead of applying it.
    #[arg(long)]
    pub no_migrate: bool,
    /// Log as JSON lines instead of text.
    #[arg(long)]
    pub log_json: bool,
}

/// `--listen`'s help: its default is not a clap default, which would override nexus.toml.
fn listen_help() -> String {
    format!(
        "The address to listen on [default: `[server] listen` in nexus.toml, else {}]",
        config::DEFAULT_LISTEN
    )
}

/// Opens the store a command's flags name, preparing the data dir for SQLite.
pub async fn open_store(resolved: &config::Resolved, single_node: bool) -> anyhow::Result<Store> {
    let mut options = resolved.store_options();
    if options.url.starts_with("sqlite:") {
        config::prepare_data_dir(&resolved.data_dir)?;
    }
    options.single_node_lock = single_node;
    Store::open(&options)
        .await
        .with_context(|| format!("opening the store at {}", nexus_store::redact_url(&options.url)))
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    crate::logs::init(args.log_json);
    let resolved = config::resolve(&args.store, args.listen.as_deref())?;
    let store = open_store(&resolved, true).await?;
    if args.no_migrate {
        let pending = store.pending_migrations().await?;
        anyhow::ensure!(
            pending == 0,
            "{pending} migration(s) pending; run `nexus migrate` first"
        );
    } else {
        store.migrate().await.context("applying migrations")?;
    }
    let listen = resolved
        .settings
        .server
        .listen
        .clone()
        .unwrap_or_else(|| config::DEFAULT_LISTEN.into());
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    let local = listener.local_addr()?;
    tracing::info!(address = %local, store = store.dialect(), data_dir = %resolved.data_dir.display(), "nexus serving");
    let kernel = build_kernel(&resolved, store)?;
    serve_kernel(kernel, listener, shutdown_signal()).await?;
    tracing::info!("nexus stopped");
    Ok(ExitCode::SUCCESS)
}

/// The kernel over `store` with the settings' providers, blobs dir, node id and sweep.
pub fn build_kernel(resolved: &config::Resolved, store: Store) -> anyhow::Result<nexus_kernel::Kernel> {
    let providers = resolved.providers()?;
    for (name, instance) in providers.catalog().instances() {
        tracing::info!(instance = name, kind = %instance.kind, enabled = instance.enabled, "model provider");
    }
    Ok(nexus_kernel::Kernel::builder(store)
        .providers(providers)
        .blobs_dir(resolved.blobs_dir())
        .blobs_in_database(resolved.blobs_in_database()?)
        .node_id(node_id(resolved))
        .sweep_interval_ms(resolved.settings.kernel.sweep_interval_ms)
        .model_lease_ms(resolved.settings.kernel.model_lease_ms)
        .build())
}

/// Recovers this node's leases, then serves the HTTP API and the job worker on `listener`
/// until `shutdown` resolves, and drains.
pub async fn serve_kernel(
    kernel: nexus_kernel::Kernel,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    kernel.read_clock().await.context("reading the database clock")?;
    kernel
        .runs()
        .recover_leases()
        .await
        .context("recovering this node's job leases")?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let worker = kernel.runs().spawn_worker(wait_for_stop(stop_rx.clone()));
    let state = nexus_server::AppState::new(kernel);
    nexus_server::serve(listener, state, async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    })
    .await?;
    let _ = worker.await;
    Ok(())
}

async fn wait_for_stop(mut rx: tokio::sync::watch::Receiver<bool>) {
    while !*rx.borrow() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// The stable name this node leases jobs under (storage-and-scale.md §1): `kernel.node_id`, or
/// for `auto` the hostname plus the data dir, and on PostgreSQL the database URL too, so a
/// restarted node recognizes and releases the leases its crashed predecessor held, and two
/// nodes on one host and database (each with its own data dir) never take each other's.
fn node_id(resolved: &config::Resolved) -> String {
    let configured = resolved.settings.kernel.node_id.trim();
    if !configured.is_empty() && configured != "auto" {
        return configured.to_string();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let dir = std::fs::canonicalize(&resolved.data_dir)
        .unwrap_or_else(|_| resolved.data_dir.clone())
        .display()
        .to_string();
    match &resolved.settings.storage.url {
        Some(url) => format!("{host}:{dir}@{}", nexus_store::redact_url(url)),
        None => format!("{host}:{dir}"),
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown requested; draining");
}

pub async fn migrate(flags: StoreFlags) -> anyhow::Result<ExitCode> {
    let resolved = config::resolve(&flags, None)?;
    let store = open_store(&resolved, false).await?;
    let pending = store.pending_migrations().await?;
    store.migrate().await?;
    println!("applied {pending} migration(s)");
    Ok(ExitCode::SUCCESS)
}
