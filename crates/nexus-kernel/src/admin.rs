//! Operator verbs behind `nexus admin` (executor.md §1): bootstrap, members, runners,
//! credentials and epochs. Tokens are returned once and only their hashes are stored.

use nexus_core::codes::Code;
use nexus_store::prelude::*;
use nexus_store::{
    AccountRow, AssignmentScope, CredentialRow, ExecutorKind, ExecutorRow, ExecutorStatus, MemberKind, MemberRole,
    MemberRow, NewCredential, NewMember, NewRunner, Plane, Standing, WorkspaceRow,
};
use uuid::Uuid;

use crate::credentials;
use crate::error::{KernelError, KernelResult};
use crate::{Admin, Kernel, time};

/// Handles bootstrap ensures. Stable, so a second bootstrap finds the same rows.
pub const DEFAULT_ACCOUNT: &str = "default";
pub const DEFAULT_WORKSPACE: &str = "default";
pub const BOOTSTRAP_HUMAN: &str = "admin";
pub const BOOTSTRAP_AGENT: &str = "agent";
pub const BOOTSTRAP_RUNNER: &str = "default-runner";

/// What [`Kernel::bootstrap`] made ready, with fresh tokens (`nexus admin bootstrap --json`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Bootstrap {
    pub account_public_id: Uuid,
    pub workspace_public_id: Uuid,
    pub agent: BootAgent,
    pub human: BootHuman,
    pub runner: BootRunner,
}

/// The bootstrap agent: its member token and its agent_application address's transport token.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BootAgent {
    pub public_id: Uuid,
    pub member_token: String,
    pub executor_public_id: Uuid,
    pub transport_token: String,
}

/// The bootstrap human and its member token.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BootHuman {
    pub public_id: Uuid,
    pub member_token: String,
}

/// The bootstrap runner and its transport token.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BootRunner {
    pub executor_public_id: Uuid,
    pub transport_token: String,
}

/// What `member create` returns.
#[derive(Debug, Clone)]
pub struct CreatedMember {
    pub member: MemberRow,
    pub member_token: String,
    /// An agent's agent_application address and its transport token.
    pub executor: Option<(ExecutorRow, String)>,
}

/// Options for `member create`.
#[derive(Debug, Clone)]
pub struct MemberSpec {
    pub kind: MemberKind,
    pub handle: String,
    pub display_name: Option<String>,
    /// Required for an agent: the steward's handle or public id.
    pub steward: Option<String>,
    /// Standing granted in the default workspace (None: none).
    pub standing: Option<Standing>,
}

impl Admin<'_> {
    /// The default account and workspace, created when absent.
    pub async fn default_account(&self) -> KernelResult<(AccountRow, WorkspaceRow)> {
        let now = self.now_ms();
        let account = self.store.ensure_account(time::new_id(), DEFAULT_ACCOUNT, now).await?;
        let workspace = self
            .store
            .ensure_workspace(time::new_id(), account.id, DEFAULT_WORKSPACE, now)
            .await?;
        Ok((account, workspace))
    }

    /// Mints a member-plane bearer for a member.
    pub async fn mint_member_token(&self, member: &MemberRow) -> KernelResult<String> {
        let minted = credentials::mint();
        self.store
            .insert_credential(NewCredential {
                public_id: minted.public_id,
                plane: Plane::Member,
                member_id: Some(member.id),
                executor_id: None,
                epoch: 0,
                secret_sha256: minted.secret_sha256,
                expires_at: None,
                now: self.now_ms(),
            })
            .await?;
        Ok(minted.token)
    }

    /// Mints a transport bearer for an executor at its current epoch.
    pub async fn mint_transport_token(&self, executor: &ExecutorRow) -> KernelResult<String> {
        let minted = credentials::mint();
        self.store
            .insert_credential(NewCredential {
                public_id: minted.public_id,
                plane: Plane::ExecutorTransport,
                member_id: None,
                executor_id: Some(executor.id),
                epoch: executor.credential_epoch,
                secret_sha256: minted.secret_sha256,
                expires_at: None,
                now: self.now_ms(),
            })
            .await?;
        Ok(minted.token)
    }

    /// Finds a member of the account by public id or handle.
    pub async fn find_member(&self, account: &AccountRow, key: &str) -> KernelResult<MemberRow> {
        let found = match Uuid::parse_str(key) {
            Ok(id) => self
                .store
                .member_by_public_id(id)
                .await?
                .filter(|m| m.account_id == account.id),
            Err(_) => self.store.member_by_handle(account.id, key).await?,
        };
        found.ok_or_else(|| KernelError::new(Code::NotFound, format!("no member {key:?} in this account")))
    }

    /// Finds an executor of the account by public id.
    pub async fn find_executor(&self, account: &AccountRow, key: &str) -> KernelResult<ExecutorRow> {
        let id = Uuid::parse_str(key)
            .map_err(|_| KernelError::new(Code::ParameterInvalid, format!("{key:?} is not an executor id")))?;
        self.store
            .executor_by_public_id(id)
            .await?
            .filter(|e| e.account_id == account.id)
            .ok_or_else(|| KernelError::new(Code::NotFound, format!("no executor {key} in this account")))
    }

    /// Creates a member (an agent also gets its agent_application address) and mints its
    /// bearers.
    pub async fn create_member(&self, spec: MemberSpec) -> KernelResult<CreatedMember> {
        let (account, workspace) = self.default_account().await?;
        validate_handle(&spec.handle)?;
        let steward = match (spec.kind, &spec.steward) {
            (MemberKind::Agent, Some(key)) => {
                let steward = self.find_member(&account, key).await?;
                if steward.kind != MemberKind::Human {
                    return Err(KernelError::new(
                        Code::ParameterInvalid,
                        "an agent's steward must be a human member",
                    ));
                }
                Some(steward)
            }
            (MemberKind::Agent, None) => {
                return Err(KernelError::new(
                    Code::ParameterMissing,
                    "an agent needs --steward (a human member)",
                ));
            }
            (MemberKind::Human, Some(_)) => {
                return Err(KernelError::new(Code::ParameterInvalid, "only an agent has a steward"));
            }
            (MemberKind::Human, None) => None,
        };
        let (member, executor) = self
            .store
            .create_member(NewMember {
                public_id: time::new_id(),
                account_id: account.id,
                kind: spec.kind,
                handle: spec.handle.clone(),
                display_name: spec.display_name.unwrap_or_else(|| spec.handle.clone()),
                role: MemberRole::Member,
                steward_id: steward.map(|s| s.id),
                agent_executor_public_id: (spec.kind == MemberKind::Agent).then(time::new_id),
                now: self.now_ms(),
            })
            .await
            .map_err(|e| match e {
                nexus_store::StoreError::Conflict(_) => {
                    KernelError::new(Code::ParameterInvalid, format!("the handle {:?} is taken", spec.handle))
                }
                other => other.into(),
            })?;
        if let Some(standing) = spec.standing {
            self.store.set_standing(workspace.id, member.id, standing).await?;
        }
        let member_token = self.mint_member_token(&member).await?;
        let executor = match executor {
            Some(executor) => {
                let token = self.mint_transport_token(&executor).await?;
                Some((executor, token))
            }
            None => None,
        };
        Ok(CreatedMember {
            member,
            member_token,
            executor,
        })
    }

    /// Registers a runner managed by `manager` and mints its transport bearer.
    pub async fn create_runner(
        &self,
        name: &str,
        scope: AssignmentScope,
        manager: &str,
    ) -> KernelResult<(ExecutorRow, String)> {
        let (account, _) = self.default_account().await?;
        validate_handle(name)?;
        let manager = self.find_member(&account, manager).await?;
        if manager.kind != MemberKind::Human {
            return Err(KernelError::new(
                Code::ParameterInvalid,
                "a runner's manager must be a human member",
            ));
        }
        let runner = self
            .store
            .create_runner(NewRunner {
                public_id: time::new_id(),
                account_id: account.id,
                display_name: name.to_string(),
                assignment_scope: scope,
                manager_id: manager.id,
                now: self.now_ms(),
            })
            .await
            .map_err(|e| match e {
                nexus_store::StoreError::Conflict(_) => KernelError::new(
                    Code::ParameterInvalid,
                    format!("{} already manages an active runner named {name:?}", manager.handle),
                ),
                other => other.into(),
            })?;
        let token = self.mint_transport_token(&runner).await?;
        Ok((runner, token))
    }

    /// Re-pairs an executor: increments its epoch (fencing every older transport bearer) and
    /// mints a new bearer at the new epoch.
    pub async fn repair_executor(&self, key: &str) -> KernelResult<(ExecutorRow, String)> {
        let (account, _) = self.default_account().await?;
        let executor = self.find_executor(&account, key).await?;
        if executor.status != ExecutorStatus::Active {
            return Err(KernelError::new(
                Code::AlreadyTerminal,
                "a revoked executor cannot be re-paired",
            ));
        }
        self.store.advance_executor_epoch(executor.id).await?;
        let executor = self.find_executor(&account, key).await?;
        let token = self.mint_transport_token(&executor).await?;
        Ok((executor, token))
    }

    /// Revokes an executor: its bearers stop authenticating at once.
    pub async fn revoke_executor(&self, key: &str) -> KernelResult<ExecutorRow> {
        let (account, _) = self.default_account().await?;
        let executor = self.find_executor(&account, key).await?;
        self.store.revoke_executor(executor.id, self.now_ms()).await?;
        self.find_executor(&account, key).await
    }

    /// Mints a new bearer for a member (`member`) or an executor (`executor`).
    pub async fn create_token(&self, member: Option<&str>, executor: Option<&str>) -> KernelResult<String> {
        let (account, _) = self.default_account().await?;
        match (member, executor) {
            (Some(m), None) => {
                let member = self.find_member(&account, m).await?;
                self.mint_member_token(&member).await
            }
            (None, Some(e)) => {
                let executor = self.find_executor(&account, e).await?;
                if executor.status != ExecutorStatus::Active {
                    return Err(KernelError::new(Code::AlreadyTerminal, "the executor is revoked"));
                }
                self.mint_transport_token(&executor).await
            }
            _ => Err(KernelError::new(
                Code::ParameterMissing,
                "name exactly one of --member or --executor",
            )),
        }
    }

    /// Revokes one credential, named by its public id or by the whole bearer.
    pub async fn revoke_token(&self, key: &str) -> KernelResult<Uuid> {
        let id = credentials::parse_bearer(key)
            .map(|(id, _)| id)
            .or_else(|| Uuid::parse_str(key).ok())
            .ok_or_else(|| KernelError::new(Code::ParameterInvalid, "give a credential id or a bearer"))?;
        if self.store.revoke_credential(id, self.now_ms()).await? {
            Ok(id)
        } else {
            Err(KernelError::new(Code::NotFound, format!("no live credential {id}")))
        }
    }

    /// Readies a store for first use (idempotent): the default account and workspace, a human,
    /// an agent stewarded by it (with its agent_application address), and a runner managed by
    /// the human; both members hold write standing. Fresh tokens every run.
    pub async fn bootstrap(&self) -> KernelResult<Bootstrap> {
        let (account, workspace) = self.default_account().await?;
        let human = self
            .bootstrap_member(NewMember {
                public_id: time::new_id(),
                account_id: account.id,
                kind: MemberKind::Human,
                handle: BOOTSTRAP_HUMAN.into(),
                display_name: "Admin".into(),
                role: MemberRole::Admin,
                steward_id: None,
                agent_executor_public_id: None,
                now: self.now_ms(),
            })
            .await?;
        let agent = self
            .bootstrap_member(NewMember {
                public_id: time::new_id(),
                account_id: account.id,
                kind: MemberKind::Agent,
                handle: BOOTSTRAP_AGENT.into(),
                display_name: "Agent".into(),
                role: MemberRole::Member,
                steward_id: Some(human.id),
                agent_executor_public_id: Some(time::new_id()),
                now: self.now_ms(),
            })
            .await?;
        let app = self.store.agent_application_of(agent.id).await?.ok_or_else(|| {
            KernelError::new(
                Code::InternalError,
                "the bootstrap agent has no agent_application address",
            )
        })?;
        let runner = match self
            .store
            .active_runner_by_name(account.id, human.id, BOOTSTRAP_RUNNER)
            .await?
        {
            Some(r) => r,
            None => {
                let new = NewRunner {
                    public_id: time::new_id(),
                    account_id: account.id,
                    display_name: BOOTSTRAP_RUNNER.into(),
                    assignment_scope: AssignmentScope::UserPrivate,
                    manager_id: human.id,
                    now: self.now_ms(),
                };
                self.store.create_runner(new).await?
            }
        };
        self.store.set_standing(workspace.id, human.id, Standing::Write).await?;
        self.store.set_standing(workspace.id, agent.id, Standing::Write).await?;
        Ok(Bootstrap {
            account_public_id: account.public_id,
            workspace_public_id: workspace.public_id,
            agent: BootAgent {
                public_id: agent.public_id,
                member_token: self.mint_member_token(&agent).await?,
                executor_public_id: app.public_id,
                transport_token: self.mint_transport_token(&app).await?,
            },
            human: BootHuman {
                public_id: human.public_id,
                member_token: self.mint_member_token(&human).await?,
            },
            runner: BootRunner {
                executor_public_id: runner.public_id,
                transport_token: self.mint_transport_token(&runner).await?,
            },
        })
    }

    /// The bootstrap member with `new`'s handle in its account, made from `new` the first time.
    async fn bootstrap_member(&self, new: NewMember) -> KernelResult<MemberRow> {
        match self.store.member_by_handle(new.account_id, &new.handle).await? {
            Some(member) => Ok(member),
            None => Ok(self.store.create_member(new).await?.0),
        }
    }
}

impl Kernel {
    /// Whether `runner` is eligible for the principal `principal` (executor.md §1).
    pub(crate) async fn runner_eligible_for(&self, runner: &ExecutorRow, principal: &MemberRow) -> KernelResult<bool> {
        self.runner_eligible_with(runner, principal, None, self.now_ms()).await
    }

    /// [`Self::runner_eligible_for`] at `now`, where `proof` may be a credential the caller
    /// has just verified: when it is the runner's unrevoked, unexpired transport credential at
    /// its current epoch, it answers the "holds a current transport credential" condition
    /// without a read.
    pub(crate) async fn runner_eligible_with(
        &self,
        runner: &ExecutorRow,
        principal: &MemberRow,
        proof: Option<&CredentialRow>,
        now: i64,
    ) -> KernelResult<bool> {
        if runner.kind != ExecutorKind::Runner
            || runner.status != ExecutorStatus::Active
            || runner.account_id != principal.account_id
        {
            return Ok(false);
        }
        let controlling_human = match principal.kind {
            MemberKind::Human => principal.id,
            MemberKind::Agent => match principal.steward_id {
                Some(s) => s,
                None => return Ok(false),
            },
        };
        let scope_ok =
            runner.assignment_scope == AssignmentScope::AccountWide || runner.manager_id == Some(controlling_human);
        if !scope_ok {
            return Ok(false);
        }
        let proven = proof.is_some_and(|c| {
            c.plane == Plane::ExecutorTransport
                && c.executor_id == Some(runner.id)
                && c.epoch == runner.credential_epoch
                && c.revoked_at.is_none()
                && c.expires_at.is_none_or(|at| at > now)
        });
        if proven {
            return Ok(true);
        }
        Ok(self
            .store
            .has_transport_credential_at(runner.id, runner.credential_epoch, now)
            .await?)
    }
}

/// Handles and runner names: 1–64 characters of `[A-Za-z0-9._-]`.
fn validate_handle(handle: &str) -> KernelResult<()> {
    let ok = !handle.is_empty()
        && handle.len() <= nexus_core::bounds::KEY_CHARS
        && handle
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(KernelError::new(
            Code::ParameterInvalid,
            format!("{handle:?} is not a valid name: use 1-64 characters of letters, digits, '.', '_' or '-'"),
        ))
    }
}
