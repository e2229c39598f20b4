//! rho, the reference runner (executor.md §14), as a library: [`serve`] runs it until a
//! shutdown future resolves. The `rho` binary reads `rho.toml` and calls it; `nexus demo` runs
//! it in-process on the sample folder it writes.

pub mod config;
mod local;
mod mcp;
mod service;

use std::future::Future;
use std::sync::Arc;

use nexus_sdk::Runner;

pub use crate::config::RhoConfig;

/// Serves `config`'s folder, skills and MCP servers to its kernel under the transport bearer
/// `bearer` until `shutdown` resolves (running calls commit first).
pub async fn serve(
    config: &RhoConfig,
    bearer: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let builder = Runner::builder(&config.kernel_url, bearer).concurrency(config.concurrency);
    let handle = builder.handle();
    let local = Arc::new(local::Local::new(config)?);
    let bridge = if config.mcp.is_empty() {
        None
    } else {
        let on_change = handle.clone();
        let bridge = mcp::Bridge::start(&config.mcp, Arc::new(move || on_change.reannounce())).await?;
        Some(Arc::new(bridge))
    };
    let environment = local.environment();
    let service = service::Rho::new(local, bridge, config.overrides.clone(), environment)?;
    tracing::info!(kernel = %config.kernel_url, root = %config.root.display(), "rho serving");
    builder.service(Arc::new(service)).build().run(shutdown).await?;
    Ok(())
}
