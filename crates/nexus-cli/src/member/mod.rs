//! The member verbs: `nexus login`, `nexus run`, `nexus runs …`, `nexus approvals …`,
//! `nexus conversations …`, `nexus runners …` and `nexus agent …`. Each speaks the public API through [`nexus_sdk::Client`] only,
//! with the server URL, bearer and workspace from flags, the environment or the profile file
//! `nexus login` writes ([`profile`]).

pub mod agent;
pub mod answerer;
pub mod approvals;
pub mod conversations;
pub mod follow;
pub mod login;
pub mod output;
pub mod profile;
pub mod reply;
pub mod run;
pub mod runners;
pub mod runs;

use std::process::ExitCode;

use nexus_sdk::{Client, Workspace};

pub use output::Failure;

/// The environment variable naming the server's base URL.
pub const ENV_URL: &str = "NEXUS_URL";
/// The environment variable holding the member bearer.
pub const ENV_TOKEN: &str = "NEXUS_TOKEN";
/// The environment variable naming the workspace.
pub const ENV_WORKSPACE: &str = "NEXUS_WORKSPACE";

/// Where a member verb connects, and how it prints. A flag wins over the environment, which
/// wins over the profile file.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConnFlags {
    /// The server's base URL [env: NEXUS_URL; else the profile; else http://127.0.0.1:7420].
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,
    /// A member bearer [env: NEXUS_TOKEN; else the profile]. Prefer the environment or
    /// `nexus login`: a flag is visible to other users of the machine.
    #[arg(long, global = true, value_name = "BEARER")]
    pub token: Option<String>,
    /// The workspace's id [env: NEXUS_WORKSPACE; else the profile].
    #[arg(long, global = true, value_name = "ID")]
    pub workspace: Option<String>,
    /// The profile to read [env: NEXUS_PROFILE; default `default`].
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// Print JSON (one document) instead of readable lines; a refusal prints its envelope.
    #[arg(long, global = true)]
    pub json: bool,
}

/// A resolved connection: the client, the workspace, and the output mode.
pub struct Ctx {
    pub client: Client,
    pub workspace: Option<String>,
    pub json: bool,
}

impl Ctx {
    /// Resolves flags, environment and profile into a client.
    pub fn resolve(flags: &ConnFlags) -> Result<Ctx, Failure> {
        let saved = profile::load(&profile::name(flags.profile.as_deref()))?;
        let pick = |flag: &Option<String>, env: &str, saved: Option<&String>| {
            flag.clone()
                .or_else(|| std::env::var(env).ok().filter(|v| !v.is_empty()))
                .or_else(|| saved.cloned())
        };
        let url = pick(&flags.url, ENV_URL, saved.as_ref().map(|p| &p.url))
            .unwrap_or_else(|| format!("http://{}", crate::config::DEFAULT_LISTEN));
        let token = pick(&flags.token, ENV_TOKEN, saved.as_ref().map(|p| &p.token)).ok_or_else(|| {
            Failure::local(
                "not_logged_in",
                format!("no bearer: pass --token, set {ENV_TOKEN}, or run `nexus login`"),
            )
        })?;
        let workspace = pick(
            &flags.workspace,
            ENV_WORKSPACE,
            saved.as_ref().and_then(|p| p.workspace.as_ref()),
        );
        Ok(Ctx {
            client: Client::new(&url, &token),
            workspace,
            json: flags.json,
        })
    }

    /// The workspace the verb works in (refused when none is named anywhere).
    pub fn workspace(&self) -> Result<Workspace, Failure> {
        let id = self.workspace.as_deref().ok_or_else(|| {
            Failure::local(
                "workspace_required",
                format!("no workspace: pass --workspace, set {ENV_WORKSPACE}, or run `nexus login --workspace`"),
            )
        })?;
        Ok(self.client.workspace(id))
    }
}

/// A member verb's outcome: its exit status, or the failure to print.
pub type Outcome = Result<ExitCode, Failure>;

/// Prints a failure the way the output mode asks and gives the exit status.
pub fn finish(outcome: Outcome, json: bool) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(failure) => {
            failure.print(json);
            ExitCode::from(output::EXIT_ERROR)
        }
    }
}
