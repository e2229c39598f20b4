//! The transport plane's principal cache: a credential with its executor's row, as a
//! transport request's authentication reads them ([`crate::ExecutorStore::credential_with_executor`]),
//! kept per credential with the `principal_version` it was read at (migration 0013).
//!
//! The version moves, by trigger, in the same transaction as every change to `credentials` or
//! `executors`, whoever makes it (this process, an admin command beside it, another node). A
//! kept pair is served again only after a read of the version finds it unchanged, so a served
//! pair is always the one a fresh read would return: a revoked credential, a revoked executor, a
//! moved epoch or a new announcement is seen at the next request. What the cache saves is the
//! join and the decoding of some twenty columns; the version read remains, one tiny row.
//!
//! Unknown credential ids are not kept (a stranger's guesses cannot grow the map), and the map
//! holds at most [`CAPACITY`] pairs: a full map is emptied and refills with the credentials in
//! use.

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

use crate::model::{CredentialRow, ExecutorRow};

/// The most pairs kept (a deployment's live transport credentials fit many times over).
pub(crate) const CAPACITY: usize = 4096;

/// A credential and its executor's row (`None` beside a member credential).
pub(crate) type Principal = (CredentialRow, Option<ExecutorRow>);

/// The kept pairs, by credential public id, each with the version it was read at.
#[derive(Default)]
pub(crate) struct Principals {
    kept: Mutex<HashMap<Uuid, (i64, Principal)>>,
}

impl std::fmt::Debug for Principals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principals").finish_non_exhaustive()
    }
}

impl Principals {
    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, (i64, Principal)>> {
        // A panic while the lock was held left at worst a stale map; the version check still
        // decides what is served.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a pair of `id` is kept (then the version is worth reading).
    pub(crate) fn keeps(&self, id: Uuid) -> bool {
        self.kept().contains_key(&id)
    }

    /// The pair of `id` when it was kept at `version` (the version just read).
    pub(crate) fn get(&self, id: Uuid, version: i64) -> Option<Principal> {
        self.kept()
            .get(&id)
            .filter(|(at, _)| *at == version)
            .map(|(_, pair)| pair.clone())
    }

    /// Keeps the pair of `id`, read in one statement with `version`.
    pub(crate) fn keep(&self, id: Uuid, version: i64, pair: &Principal) {
        let mut kept = self.kept();
        if kept.len() >= CAPACITY && !kept.contains_key(&id) {
            kept.clear();
        }
        kept.insert(id, (version, pair.clone()));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.kept().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Plane;

    fn pair(n: i64) -> Principal {
        let credential = CredentialRow {
            id: n,
            public_id: Uuid::now_v7(),
            plane: Plane::ExecutorTransport,
            member_id: None,
            executor_id: Some(1),
            epoch: 0,
            secret_sha256: "00".into(),
            expires_at: None,
            revoked_at: None,
            created_at: 0,
        };
        (credential, None)
    }

    #[test]
    fn a_pair_is_served_only_at_the_version_it_was_kept_at() {
        let p = Principals::default();
        let id = Uuid::now_v7();
        assert!(!p.keeps(id));
        p.keep(id, 7, &pair(1));
        assert!(p.keeps(id));
        assert_eq!(p.get(id, 7).map(|(c, _)| c.id), Some(1));
        assert!(p.get(id, 8).is_none(), "a moved version is a miss");
        p.keep(id, 8, &pair(2));
        assert_eq!(p.get(id, 8).map(|(c, _)| c.id), Some(2));
        assert!(p.get(id, 7).is_none());
        assert!(p.get(Uuid::now_v7(), 8).is_none(), "another credential");
    }

    #[test]
    fn a_full_map_empties_before_it_grows() {
        let p = Principals::default();
        let first = Uuid::now_v7();
        p.keep(first, 1, &pair(0));
        for n in 1..CAPACITY {
            p.keep(Uuid::now_v7(), 1, &pair(n as i64));
        }
        assert_eq!(p.len(), CAPACITY);
        // Keeping a kept id again replaces it in place.
        p.keep(first, 2, &pair(0));
        assert_eq!(p.len(), CAPACITY);
        let newcomer = Uuid::now_v7();
        p.keep(newcomer, 2, &pair(1));
        assert_eq!(p.len(), 1, "emptied, then the newcomer");
        assert!(p.get(newcomer, 2).is_some());
        assert!(p.get(first, 2).is_none());
    }
}
