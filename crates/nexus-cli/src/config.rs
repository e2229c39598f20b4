//! Settings: defaults, then `nexus.toml` (in the data dir, or `--config FILE`), then flags,
//! then `NEXUS_*` environment variables (storage-and-scale.md §1: flags override the file and
//! the environment overrides both).

use std::path::{Path, PathBuf};

use anyhow::Context;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

pub const DEFAULT_DATA_DIR: &str = "./nexus-data";
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7420";

/// The data dir; overrides `--data-dir`.
pub const ENV_DATA_DIR: &str = "NEXUS_DATA_DIR";
/// `storage.url`; overrides `--database-url` and the file.
pub const ENV_DATABASE_URL: &str = "NEXUS_DATABASE_URL";
/// `server.listen`; overrides `--listen` and the file.
pub const ENV_LISTEN: &str = "NEXUS_LISTEN";
/// `kernel.node_id`; overrides the file.
pub const ENV_NODE_ID: &str = "NEXUS_NODE_ID";

/// The flags every store-opening command shares. An environment variable named beside a flag
/// overrides it when set (see [`settings_help`]); clap reads it too, so `--help` shows it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StoreFlags {
    /// Where everything lives (the SQLite file, blobs, scripts, nexus.toml).
    #[arg(long, value_name = "DIR", env = ENV_DATA_DIR, hide_env_values = true, default_value = DEFAULT_DATA_DIR)]
    pub data_dir: Option<PathBuf>,
    /// `postgres://…` selects PostgreSQL instead of the SQLite file in the data dir [default:
    /// `[storage] url` in nexus.toml, else sqlite://<data dir>/nexus.db].
    #[arg(long, value_name = "URL", env = ENV_DATABASE_URL, hide_env_values = true)]
    pub database_url: Option<String>,
    /// A configuration file to read instead of `<data dir>/nexus.toml`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Where settings come from and which variables override them: the text `nexus serve --help`
/// (and `migrate`, `admin`) ends with.
pub fn settings_help() -> String {
    format!(
        "Settings come from defaults, then nexus.toml (in the data dir, or --config FILE), then \
         flags, then environment variables, which override the flag beside them when set: \
         {ENV_DATA_DIR}, {ENV_DATABASE_URL}, {ENV_LISTEN}, and {ENV_NODE_ID} (kernel.node_id, no \
         flag). {log} sets the log filter (default {filter}); the log is coloured only when \
         stderr is a terminal and NO_COLOR is unset. nexus.toml refuses keys it does not know.",
        log = crate::logs::ENV_LOG,
        filter = crate::logs::DEFAULT_FILTER,
    )
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub storage: Storage,
    pub kernel: KernelSettings,
    pub server: ServerSettings,
    /// `[providers.<instance>]` (providers.md §1). Read from the file only.
    #[serde(skip_serializing)]
    pub providers: std::collections::BTreeMap<String, nexus_providers::InstanceConfig>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Storage {
    pub url: Option<String>,
    pub sqlite: SqliteSettings,
    pub postgres: PostgresSettings,
    pub blobs: BlobsSettings,
}

/// `[storage.blobs]`: where uploads and captures are kept (storage-and-scale.md §1): `kind =
/// "database"` (the default on PostgreSQL: every node reads every blob) or `"fs"` (the default
/// on SQLite) under `path`, which with several nodes must be a volume every node shares
/// (docs/nodes.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BlobsSettings {
    /// `fs` or `database`; default by engine.
    pub kind: Option<String>,
    /// The fs store's root, or where the database store stages ingest. Default:
    /// `<data dir>/blobs`.
    pub path: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SqliteSettings {
    pub busy_timeout_ms: u64,
    /// `full` (the default: an acknowledged commit survives power loss) or `normal` (faster
    /// commits, durable against power loss only from the next checkpoint).
    pub synchronous: nexus_store::SqliteSynchronous,
}

impl Default for SqliteSettings {
    fn default() -> Self {
        Self {
            busy_timeout_ms: 5000,
            synchronous: nexus_store::SqliteSynchronous::default(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PostgresSettings {
    pub max_connections: u32,
}

impl Default for PostgresSettings {
    fn default() -> Self {
        Self { max_connections: 20 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KernelSettings {
    pub sweep_interval_ms: u64,
    pub node_id: String,
    /// How long a model call's job lease lasts unrenewed: after a node dies mid-call, another
    /// node takes the round over once it lapses (storage-and-scale.md §5).
    pub model_lease_ms: i64,
}

impl Default for KernelSettings {
    fn default() -> Self {
        Self {
            sweep_interval_ms: 5000,
            node_id: "auto".into(),
            model_lease_ms: 15 * 60 * 1000,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    pub listen: Option<String>,
}

/// Resolved settings plus the data dir they were read for.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub data_dir: PathBuf,
    pub settings: Settings,
}

impl Resolved {
    /// The store URL: the configured one, or the SQLite file in the data dir.
    pub fn store_url(&self) -> String {
        self.settings
            .storage
            .url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("nexus.db").display()))
    }

    /// The provider instances: the built-in `scripted` plus every `[providers.*]` table. An
    /// instance name outside `[a-z0-9][a-z0-9_-]*` is refused, as no model ref could name it.
    pub fn providers(&self) -> anyhow::Result<nexus_providers::Providers> {
        for (name, config) in &self.settings.providers {
            anyhow::ensure!(
                nexus_providers::ModelRef::parse(&format!("{name}/m")).is_some_and(|r| r.provider == name),
                "[providers.{name}]: an instance name must match [a-z0-9][a-z0-9_-]*"
            );
            config.check().map_err(|e| anyhow::anyhow!("[providers.{name}]: {e}"))?;
        }
        Ok(nexus_providers::Providers::from_config(
            self.data_dir.join("scripts"),
            &self.settings.providers,
        ))
    }

    /// The blob directory: `storage.blobs.path`, or `<data dir>/blobs`.
    pub fn blobs_dir(&self) -> PathBuf {
        self.settings
            .storage
            .blobs
            .path
            .clone()
            .unwrap_or_else(|| self.data_dir.join("blobs"))
    }

    /// Whether blobs are kept in the database: `storage.blobs.kind`, by default on PostgreSQL.
    pub fn blobs_in_database(&self) -> anyhow::Result<bool> {
        match self.settings.storage.blobs.kind.as_deref() {
            None => Ok(self.store_url().starts_with("postgres")),
            Some("database") => Ok(true),
            Some("fs") => Ok(false),
            Some(other) => anyhow::bail!("[storage.blobs] kind must be \"fs\" or \"database\", not {other:?}"),
        }
    }

    pub fn store_options(&self) -> nexus_store::StoreOptions {
        let mut options = nexus_store::StoreOptions::new(self.store_url());
        options.sqlite_busy_timeout_ms = self.settings.storage.sqlite.busy_timeout_ms;
        options.sqlite_synchronous = self.settings.storage.sqlite.synchronous;
        options.postgres_max_connections = self.settings.storage.postgres.max_connections;
        options
    }
}

/// Reads the settings for a command.
pub fn resolve(flags: &StoreFlags, listen: Option<&str>) -> anyhow::Result<Resolved> {
    let data_dir = std::env::var_os(ENV_DATA_DIR)
        .map(PathBuf::from)
        .or_else(|| flags.data_dir.clone())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
    let mut figment = Figment::from(Serialized::defaults(Settings::default()));
    let file = match &flags.config {
        Some(file) => {
            anyhow::ensure!(
                file.exists(),
                "the configuration file {} does not exist",
                file.display()
            );
            file.clone()
        }
        None => data_dir.join("nexus.toml"),
    };
    figment = figment.merge(Toml::file(&file));
    if let Some(url) = &flags.database_url {
        figment = figment.merge(Serialized::default("storage.url", url));
    }
    if let Some(listen) = listen {
        figment = figment.merge(Serialized::default("server.listen", listen));
    }
    figment = figment
        .merge(Env::raw().only(&[ENV_DATABASE_URL]).map(|_| "storage.url".into()))
        .merge(Env::raw().only(&[ENV_LISTEN]).map(|_| "server.listen".into()))
        .merge(Env::raw().only(&[ENV_NODE_ID]).map(|_| "kernel.node_id".into()));
    let settings: Settings = figment.extract().map_err(|e| refusal(e, &file))?;
    Ok(Resolved { data_dir, settings })
}

/// A key the file has and no setting reads is named with its table and the file; every other
/// refusal keeps figment's words.
fn refusal(err: figment::Error, file: &Path) -> anyhow::Error {
    for e in err.clone() {
        if let figment::error::Kind::UnknownField(key, known) = &e.kind {
            let known = known.join(", ");
            // figment's path ends with the key itself.
            let table = match e.path.split_last() {
                Some((last, table)) if last == key => table,
                _ => &e.path[..],
            };
            let at = match table.join(".") {
                table if table.is_empty() => "at the top level".to_string(),
                table => format!("in [{table}]"),
            };
            return anyhow::anyhow!(
                "{}: unknown key `{key}` {at} (known there: {known}); remove it or fix its spelling",
                file.display()
            );
        }
    }
    anyhow::Error::new(err).context(format!("reading the configuration ({})", file.display()))
}

/// Creates the data dir layout the embedded default needs.
pub fn prepare_data_dir(dir: &Path) -> anyhow::Result<()> {
    for sub in ["", "blobs", "scripts"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve_with(toml: &str) -> anyhow::Result<Resolved> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("nexus.toml"), toml).unwrap();
        let flags = StoreFlags {
            data_dir: Some(dir.path().to_path_buf()),
            ..StoreFlags::default()
        };
        resolve(&flags, None)
    }

    /// A section or key nexus.toml does not know stops the start, naming the key and the file.
    #[test]
    fn unknown_sections_and_keys_are_refused_by_name() {
        for (toml, key) in [
            ("[telemetri]\nendpoint = \"http://x\"\n", "`telemetri` at the top level"),
            ("[kernel]\nsweep_interval = 100\n", "`sweep_interval` in [kernel] "),
            (
                "[storage.blobs]\nkind = \"fs\"\npaths = \"/x\"\n",
                "`paths` in [storage.blobs] ",
            ),
            ("listen = \"0.0.0.0:1\"\n", "`listen` at the top level"),
        ] {
            let err = format!("{:#}", resolve_with(toml).unwrap_err());
            assert!(err.contains(key), "{toml}: {err}");
            assert!(err.contains("nexus.toml"), "{toml}: {err}");
        }
    }

    /// Every nexus.toml the documentation shows is accepted, provider tables included.
    #[test]
    fn the_documented_files_are_accepted() {
        let docs = [
            ("README.md", include_str!("../../../README.md")),
            ("docs/nodes.md", include_str!("../../../docs/nodes.md")),
            (
                "storage-and-scale.md",
                include_str!("../../../docs/spec/storage-and-scale.md"),
            ),
            ("providers.md", include_str!("../../../docs/spec/providers.md")),
        ];
        let mut seen = 0;
        for (name, text) in docs {
            // Fenced toml blocks, and the files a shell block writes with `cat > …nexus.toml`.
            let fenced = text.split("```toml\n").skip(1).map(|b| (b, "```"));
            let written = text.split("nexus.toml <<'TOML'\n").skip(1).map(|b| (b, "\nTOML\n"));
            for (block, end) in fenced.chain(written) {
                let toml = &block[..block.find(end).expect("the block ends")];
                if toml.starts_with("# appended to rho.toml") {
                    continue; // rho's file, checked by rho's own test
                }
                let resolved = resolve_with(toml).unwrap_or_else(|e| panic!("{name}: {e:#}\n{toml}"));
                resolved.providers().unwrap_or_else(|e| panic!("{name}: {e:#}\n{toml}"));
                resolved.blobs_in_database().unwrap();
                seen += 1;
            }
        }
        assert!(seen >= 5, "only {seen} toml blocks found");
    }

    /// `[storage.sqlite] synchronous`: `full` unless the file says `normal`; anything else is
    /// refused rather than silently weakening durability.
    #[test]
    fn sqlite_synchronous_defaults_to_full_and_reads_normal() {
        use nexus_store::SqliteSynchronous;
        let default = resolve_with("").unwrap();
        assert_eq!(default.store_options().sqlite_synchronous, SqliteSynchronous::Full);
        let normal = resolve_with("[storage.sqlite]\nsynchronous = \"normal\"\n").unwrap();
        assert_eq!(normal.store_options().sqlite_synchronous, SqliteSynchronous::Normal);
        let full = resolve_with("[storage.sqlite]\nsynchronous = \"full\"\n").unwrap();
        assert_eq!(full.store_options().sqlite_synchronous, SqliteSynchronous::Full);
        let bad = resolve_with("[storage.sqlite]\nsynchronous = \"off\"\n").unwrap_err();
        assert!(format!("{bad:#}").contains("synchronous"), "{bad:#}");
    }
}
