//! Authentication on the two planes. Every failure — missing, malformed, unknown, expired,
//! revoked, wrong plane, fenced by a newer epoch — is the same [`KernelError::unauthorized`],
//! and every path hashes a secret once so failing paths take comparable time.

use nexus_store::prelude::*;
use nexus_store::{CredentialRow, ExecutorRow, ExecutorStatus, MemberRow, Plane};

use crate::Admin;
use crate::credentials::{parse_bearer, secret_matches, token_from_header};
use crate::error::{KernelError, KernelResult};

/// A member authenticated on the member plane.
#[derive(Debug, Clone)]
pub struct MemberPrincipal {
    pub member: MemberRow,
    pub credential: CredentialRow,
}

/// An executor address authenticated on the transport plane at its current epoch.
#[derive(Debug, Clone)]
pub struct ExecutorPrincipal {
    pub executor: ExecutorRow,
    pub credential: CredentialRow,
}

/// A hash that never matches, used so unknown ids cost the same hashing work as known ones.
const NEVER: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Checks a presented secret against the credential row found for its id (`None`: unknown),
/// hashing once either way; the row when it is valid and current for `plane`.
fn verified(row: Option<CredentialRow>, secret: &str, plane: Plane, now: i64) -> KernelResult<CredentialRow> {
    let stored = row.as_ref().map_or(NEVER, |r| r.secret_sha256.as_str());
    let matches = secret_matches(secret, stored);
    match row {
        Some(row)
            if matches
                && row.plane == plane
                && row.revoked_at.is_none()
                && row.expires_at.is_none_or(|at| at > now) =>
        {
            Ok(row)
        }
        _ => Err(KernelError::unauthorized()),
    }
}

/// The bearer's credential id and secret, or (after hashing once) the plain 401.
fn presented(header: Option<&str>) -> KernelResult<(uuid::Uuid, &str)> {
    match header.and_then(token_from_header).and_then(parse_bearer) {
        Some(parsed) => Ok(parsed),
        None => {
            secret_matches("", NEVER);
            Err(KernelError::unauthorized())
        }
    }
}

impl Admin<'_> {
    /// Verifies a bearer for `plane`; returns the credential row when it is valid and current.
    async fn credential(&self, header: Option<&str>, plane: Plane) -> KernelResult<CredentialRow> {
        let (id, secret) = presented(header)?;
        verified(
            self.store.credential_by_public_id(id).await?,
            secret,
            plane,
            self.now_ms(),
        )
    }

    /// Authenticates a member-plane bearer.
    pub async fn authenticate_member(&self, header: Option<&str>) -> KernelResult<MemberPrincipal> {
        let credential = self.credential(header, Plane::Member).await?;
        let member_id = credential.member_id.ok_or_else(KernelError::unauthorized)?;
        let member = self
            .store
            .member_by_id(member_id)
            .await?
            .ok_or_else(KernelError::unauthorized)?;
        Ok(MemberPrincipal { member, credential })
    }

    /// Authenticates a transport-plane bearer: the executor must be active and the credential
    /// minted at the executor's current epoch.
    /// The credential and its executor come from one read.
    pub async fn authenticate_executor(&self, header: Option<&str>) -> KernelResult<ExecutorPrincipal> {
        let (id, secret) = presented(header)?;
        let (row, executor) = match self.store.credential_with_executor(id).await? {
            Some((credential, executor)) => (Some(credential), executor),
            None => (None, None),
        };
        let credential = verified(row, secret, Plane::ExecutorTransport, self.now_ms())?;
        let executor = executor
            .filter(|e| Some(e.id) == credential.executor_id)
            .ok_or_else(KernelError::unauthorized)?;
        if executor.status != ExecutorStatus::Active || executor.credential_epoch != credential.epoch {
            return Err(KernelError::unauthorized());
        }
        Ok(ExecutorPrincipal { executor, credential })
    }
}
