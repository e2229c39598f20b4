//! `rho.toml` (executor.md §14): where the kernel is, which folder is served, which MCP
//! servers are bridged, and per-tool overrides.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nexus_sdk::runner::EffectProfile;
use serde::Deserialize;

/// The file as `rho --help` shows it: every key, with what it does and its default. The one
/// list of the keys a person reads; a test checks it names every key the parser accepts and
/// that it parses.
pub fn help() -> String {
    format!(
        r#"THE CONFIG FILE (rho.toml, or --config FILE). Unknown keys are refused. Relative paths
resolve against the file's folder. Every key, with an example value:

  kernel_url = "http://127.0.0.1:7420"   # required: the Nexus server's base URL
  bearer_env = "RHO_TOKEN"               # required: the environment variable holding this
                                         #   runner's transport bearer (never the bearer itself)
  root = "."                             # required: the folder served; every path resolves under it
  skills_dir = "skills"                  # optional: skill documents, <skills_dir>/<name>/SKILL.md
  concurrency = {concurrency}                        # optional: at most this many calls at once (default {concurrency})

  [[mcp]]                                # optional, repeatable: an MCP server bridged over stdio
  name = "everything"                    # required, unique: its tools are served as <name>_<tool>
  command = "npx"                        # required: the program to start
  args = ["-y", "@modelcontextprotocol/server-everything"]   # optional (default none)
  env = {{ DEBUG = "1" }}                  # optional: extra environment variables for it
  trusted = false                        # optional (default false): believe its tool annotations;
                                         #   untrusted tools get the fail-closed effect profile

  [overrides.everything_echo]            # optional, per served tool name; always wins
  timeout_ms = 5000                      # replaces the announced timeout
  effect_profile = {{ kind = "read_only", destructive = false, effect_scope = "closed", idempotency = "intrinsic", reconciliation = "none" }}
                                         # replaces the profile: kind pure|read_only|write,
                                         #   effect_scope closed|open, idempotency
                                         #   intrinsic|keyed|none, reconciliation none|lookup

The spec: docs/spec/executor.md §14."#,
        concurrency = nexus_sdk::runner::DEFAULT_CONCURRENCY,
    )
}

/// The whole file. Unknown keys are refused, so a typo never silently changes behaviour.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RhoConfig {
    /// The kernel's base URL, e.g. `http://127.0.0.1:7420`.
    pub kernel_url: String,
    /// The name of the environment variable holding the runner's transport bearer.
    pub bearer_env: String,
    /// The folder every path resolves under (relative to the config file's folder).
    pub root: PathBuf,
    /// Skill documents: `<skills_dir>/<name>/SKILL.md` (relative to the config file's folder).
    #[serde(default)]
    pub skills_dir: Option<PathBuf>,
    /// At most this many claims run at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// MCP servers bridged over stdio.
    #[serde(default)]
    pub mcp: Vec<McpServer>,
    /// Per served tool name: a replacement profile and/or timeout. Always wins.
    #[serde(default)]
    pub overrides: BTreeMap<String, Override>,
}

fn default_concurrency() -> usize {
    nexus_sdk::runner::DEFAULT_CONCURRENCY
}

/// One `[[mcp]]` entry.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// The prefix of its tools' served names (`<name>_<tool>`).
    pub name: String,
    /// The program to start.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables for the child.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Whether its tool annotations are believed. Untrusted (the default) means every tool
    /// gets the fail-closed profile.
    #[serde(default)]
    pub trusted: bool,
}

/// `[overrides.<tool>]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Override {
    /// Replaces the derived or built-in profile.
    #[serde(default)]
    pub effect_profile: Option<EffectProfile>,
    /// Replaces the announced timeout.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Why a config cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading {path}: {source} (`rho --help` describes the file)")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TOML is malformed or has an unknown key.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The TOML error.
        source: toml::de::Error,
    },
    /// A value is out of range.
    #[error("{0}")]
    Invalid(String),
}

impl RhoConfig {
    /// Reads and checks `path`; relative `root` and `skills_dir` resolve against its folder.
    pub fn load(path: &Path) -> Result<RhoConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        RhoConfig::parse(&text, base).map_err(|e| match e {
            ConfigError::Parse { source, .. } => ConfigError::Parse {
                path: path.to_owned(),
                source,
            },
            other => other,
        })
    }

    /// Parses `text`; relative paths resolve against `base`.
    pub fn parse(text: &str, base: &Path) -> Result<RhoConfig, ConfigError> {
        let mut config: RhoConfig = toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: PathBuf::new(),
            source,
        })?;
        if config.concurrency == 0 {
            return Err(ConfigError::Invalid("concurrency must be at least 1".into()));
        }
        if config.bearer_env.trim().is_empty() {
            return Err(ConfigError::Invalid(
                "bearer_env must name an environment variable".into(),
            ));
        }
        config.root = base.join(&config.root);
        config.skills_dir = config.skills_dir.map(|dir| base.join(dir));
        let mut names = std::collections::BTreeSet::new();
        for server in &config.mcp {
            if !names.insert(server.name.as_str()) {
                return Err(ConfigError::Invalid(format!(
                    "two [[mcp]] entries are named `{}`",
                    server.name
                )));
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses_and_paths_resolve_against_its_folder() {
        let text = r#"
kernel_url = "http://127.0.0.1:7420"
bearer_env = "RHO_TOKEN"
root = "work"
skills_dir = "skills"
concurrency = 2

[[mcp]]
name = "everything"
command = "node"
args = ["server.js"]
env = { DEBUG = "1" }
trusted = true

[overrides.everything_echo]
timeout_ms = 5000
effect_profile = { kind = "read_only", destructive = false, effect_scope = "closed", idempotency = "intrinsic", reconciliation = "none" }
"#;
        let c = RhoConfig::parse(text, Path::new("/etc/rho")).unwrap();
        assert_eq!(c.root, PathBuf::from("/etc/rho/work"));
        assert_eq!(c.skills_dir, Some(PathBuf::from("/etc/rho/skills")));
        assert_eq!(c.concurrency, 2);
        assert_eq!(c.mcp[0].env["DEBUG"], "1");
        assert!(c.mcp[0].trusted);
        let o = &c.overrides["everything_echo"];
        assert_eq!(o.timeout_ms, Some(5000));
        assert_eq!(o.effect_profile, Some(EffectProfile::READ));
    }

    #[test]
    fn unknown_keys_zero_concurrency_and_duplicate_servers_are_refused() {
        let base = "kernel_url = \"http://x\"\nbearer_env = \"T\"\nroot = \".\"\n";
        assert!(matches!(
            RhoConfig::parse(&format!("{base}kernal = 1\n"), Path::new(".")),
            Err(ConfigError::Parse { .. })
        ));
        assert!(matches!(
            RhoConfig::parse(&format!("{base}concurrency = 0\n"), Path::new(".")),
            Err(ConfigError::Invalid(_))
        ));
        let twice = format!("{base}[[mcp]]\nname = \"a\"\ncommand = \"x\"\n[[mcp]]\nname = \"a\"\ncommand = \"y\"\n");
        assert!(matches!(
            RhoConfig::parse(&twice, Path::new(".")),
            Err(ConfigError::Invalid(_))
        ));
        assert_eq!(RhoConfig::parse(base, Path::new(".")).unwrap().concurrency, 4);
    }

    /// The keys serde names when it refuses an unknown key in `text` (its "expected …" list).
    fn accepted_keys(text: &str) -> Vec<String> {
        let err = RhoConfig::parse(text, Path::new(".")).unwrap_err().to_string();
        let list = &err[err.find("expected ").unwrap_or_else(|| panic!("{err}"))..];
        list.split('`').skip(1).step_by(2).map(str::to_string).collect()
    }

    /// `rho --help` shows a file rho accepts, and names every key of every table.
    #[test]
    fn the_help_parses_and_names_every_key() {
        let help = help();
        let start = help.find("  kernel_url").unwrap();
        let end = help.find("\n\nThe spec").unwrap();
        let c = RhoConfig::parse(&help[start..end], Path::new("/etc/rho")).unwrap();
        assert_eq!(c.concurrency, nexus_sdk::runner::DEFAULT_CONCURRENCY);
        assert_eq!(c.mcp[0].env["DEBUG"], "1");
        assert_eq!(c.overrides["everything_echo"].timeout_ms, Some(5000));
        let base = "kernel_url = \"http://x\"\nbearer_env = \"T\"\nroot = \".\"\n";
        let mut keys = accepted_keys(&format!("{base}stray = 1\n"));
        keys.extend(accepted_keys(&format!(
            "{base}[[mcp]]\nname = \"a\"\ncommand = \"b\"\nstray = 1\n"
        )));
        keys.extend(accepted_keys(&format!("{base}[overrides.t]\nstray = 1\n")));
        assert!(keys.len() >= 14, "{keys:?}");
        for key in keys {
            let shown = format!("\n  {key} = ");
            let table = format!("[{key}");
            assert!(
                help.contains(&shown) || help.contains(&table),
                "the help does not show {key}"
            );
        }
    }

    /// The README's `rho.toml` (the file its shell block writes, with the MCP tables it then
    /// shows appended) is a file rho accepts.
    #[test]
    fn the_readme_example_parses() {
        let readme = include_str!("../../../README.md");
        let start = readme
            .find("cat > rho.toml <<TOML\n")
            .expect("the README writes a rho.toml");
        let body = &readme[start..];
        let body = &body[body.find('\n').unwrap() + 1..];
        let written = &body[..body.find("\nTOML\n").expect("the heredoc ends")];
        let appended = readme
            .split("```toml\n# appended to rho.toml\n")
            .nth(1)
            .expect("the README shows the MCP tables");
        let appended = &appended[..appended.find("```").expect("the block ends")];
        let text = format!("{}\n{appended}", written.replace("$PWD", "/home/me"));
        let c = RhoConfig::parse(&text, Path::new("/")).unwrap();
        assert_eq!(c.mcp[0].name, "everything");
        assert!(!c.mcp[0].trusted);
        assert_eq!(c.overrides["everything_echo"].effect_profile, Some(EffectProfile::READ));
    }
}
