//! Every `Engine` method, on every available engine (SQLite always; PostgreSQL with
//! `NEXUS_TEST_DATABASE_URL`, required with `NEXUS_REQUIRE_POSTGRES=1`).

use nexus_store::testing::{self, TestStore};
use nexus_store::*;
use uuid::Uuid;

const NOW: i64 = 1_700_000_000_000;

fn id() -> Uuid {
    Uuid::now_v7()
}

async fn account(s: &Store, handle: &str) -> AccountRow {
    s.ensure_account(id(), handle, NOW).await.unwrap()
}

fn human(account_id: i64, handle: &str) -> NewMember {
    NewMember {
        public_id: id(),
        account_id,
        kind: MemberKind::Human,
        handle: handle.into(),
        display_name: format!("Human {handle}"),
        role: MemberRole::Admin,
        steward_id: None,
        agent_executor_public_id: None,
        now: NOW,
    }
}

fn agent(account_id: i64, handle: &str, steward_id: i64) -> NewMember {
    NewMember {
        public_id: id(),
        account_id,
        kind: MemberKind::Agent,
        handle: handle.into(),
        display_name: format!("Agent {handle}"),
        role: MemberRole::Member,
        steward_id: Some(steward_id),
        agent_executor_public_id: Some(id()),
        now: NOW + 1,
    }
}

fn runner(account_id: i64, manager_id: i64, name: &str) -> NewRunner {
    NewRunner {
        public_id: id(),
        account_id,
        display_name: name.into(),
        assignment_scope: AssignmentScope::UserPrivate,
        manager_id,
        now: NOW + 2,
    }
}

fn transport(executor_id: i64, epoch: i64, expires_at: Option<i64>) -> NewCredential {
    NewCredential {
        public_id: id(),
        plane: Plane::ExecutorTransport,
        member_id: None,
        executor_id: Some(executor_id),
        epoch,
        secret_sha256: "ab".repeat(32),
        expires_at,
        now: NOW,
    }
}

/// Runs `body` once per engine, naming the engine in any failure.
macro_rules! each_engine {
    (|$ts:ident| $body:block) => {{
        for $ts in testing::engines().await {
            let _dialect = $ts.dialect;
            $body
        }
    }};
}

#[tokio::test]
async fn accounts_and_workspaces() {
    each_engine!(|ts| {
        let s = &ts.store;
        let d = ts.dialect;
        let first_id = id();
        let a = s.ensure_account(first_id, "acme", NOW).await.unwrap();
        assert_eq!(
            (a.public_id, a.handle.as_str(), a.created_at),
            (first_id, "acme", NOW),
            "{d}"
        );
        // Get-or-create: a second call returns the stored row, not the new public id.
        let again = s.ensure_account(id(), "acme", NOW + 5).await.unwrap();
        assert_eq!(again, a, "{d}");
        assert_eq!(s.account_by_id(a.id).await.unwrap(), Some(a.clone()), "{d}");
        assert_eq!(s.account_by_id(a.id + 1000).await.unwrap(), None, "{d}");
        // A public id already taken by another handle is a conflict.
        let err = s.ensure_account(first_id, "other", NOW).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{d}: {err:?}");

        let ws_id = id();
        let w = s.ensure_workspace(ws_id, a.id, "default", NOW).await.unwrap();
        assert_eq!(
            (w.public_id, w.account_id, w.handle.as_str()),
            (ws_id, a.id, "default"),
            "{d}"
        );
        assert_eq!(
            s.ensure_workspace(id(), a.id, "default", NOW + 1).await.unwrap(),
            w,
            "{d}"
        );
        assert_eq!(s.workspace_by_public_id(ws_id).await.unwrap(), Some(w.clone()), "{d}");
        assert_eq!(s.workspace_by_public_id(id()).await.unwrap(), None, "{d}");
        // The same handle in another account is another workspace.
        let b = account(s, "beta").await;
        let w2 = s.ensure_workspace(id(), b.id, "default", NOW).await.unwrap();
        assert_ne!(w2.id, w.id, "{d}");
        // A missing account is refused by the foreign key.
        let err = s.ensure_workspace(id(), a.id + 1000, "x", NOW).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{d}: {err:?}");
    });
}

#[tokio::test]
async fn ensure_is_race_safe() {
    each_engine!(|ts| {
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let s = ts.store.clone();
            tasks.push(tokio::spawn(async move { s.ensure_account(id(), "racy", NOW).await }));
        }
        let mut ids = Vec::new();
        for t in tasks {
            ids.push(t.await.unwrap().unwrap().id);
        }
        ids.dedup();
        assert_eq!(ids.len(), 1, "{}: {ids:?}", ts.dialect);
        let account_id = ids[0];
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let s = ts.store.clone();
            tasks.push(tokio::spawn(async move {
                s.ensure_workspace(id(), account_id, "w", NOW).await
            }));
        }
        let mut ids = Vec::new();
        for t in tasks {
            ids.push(t.await.unwrap().unwrap().id);
        }
        ids.dedup();
        assert_eq!(ids.len(), 1, "{}: {ids:?}", ts.dialect);
    });
}

#[tokio::test]
async fn standing_upserts() {
    each_engine!(|ts| {
        let s = &ts.store;
        let d = ts.dialect;
        let a = account(s, "acme").await;
        let w = s.ensure_workspace(id(), a.id, "default", NOW).await.unwrap();
        let (m, _) = s.create_member(human(a.id, "ana")).await.unwrap();
        let (other, _) = s.create_member(human(a.id, "bo")).await.unwrap();
        assert_eq!(s.standing(w.id, m.id).await.unwrap(), None, "{d}");
        s.set_standing(w.id, m.id, Standing::Read).await.unwrap();
        assert_eq!(s.standing(w.id, m.id).await.unwrap(), Some(Standing::Read), "{d}");
        s.set_standing(w.id, m.id, Standing::Write).await.unwrap();
        assert_eq!(s.standing(w.id, m.id).await.unwrap(), Some(Standing::Write), "{d}");
        assert_eq!(s.standing(w.id, other.id).await.unwrap(), None, "{d}");
        let err = s.set_standing(w.id, m.id + 1000, Standing::Read).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{d}: {err:?}");
    });
}

#[tokio::test]
async fn members_and_agent_applications() {
    each_engine!(|ts| {
        let s = &ts.store;
        let d = ts.dialect;
        let a = account(s, "acme").await;
        let new = human(a.id, "ana");
        let (h, none) = s.create_member(new.clone()).await.unwrap();
        assert!(none.is_none(), "{d}");
        assert_eq!(
            (
                h.public_id,
                h.account_id,
                h.kind,
                h.handle.as_str(),
                h.display_name.as_str()
            ),
            (new.public_id, a.id, MemberKind::Human, "ana", "Human ana"),
            "{d}"
        );
        assert_eq!(
            (h.role.as_str(), h.steward_id, h.configuration.as_deref()),
            ("admin", None, None),
            "{d}"
        );
        assert_eq!((h.created_at, h.updated_at), (NOW, NOW), "{d}");
        assert_eq!(s.member_by_id(h.id).await.unwrap(), Some(h.clone()), "{d}");
        assert_eq!(
            s.member_by_public_id(h.public_id).await.unwrap(),
            Some(h.clone()),
            "{d}"
        );
        assert_eq!(s.member_by_handle(a.id, "ana").await.unwrap(), Some(h.clone()), "{d}");
        assert_eq!(s.member_by_handle(a.id, "nobody").await.unwrap(), None, "{d}");
        assert_eq!(s.member_by_id(h.id + 1000).await.unwrap(), None, "{d}");
        assert_eq!(s.member_by_public_id(id()).await.unwrap(), None, "{d}");

        // A taken handle is a conflict; the same handle in another account is not.
        let err = s.create_member(human(a.id, "ana")).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{d}: {err:?}");
        let b = account(s, "beta").await;
        s.create_member(human(b.id, "ana")).await.unwrap();

        // An agent gets its agent_application executor in the same transaction.
        let new_agent = agent(a.id, "scout", h.id);
        let (ag, exec) = s.create_member(new_agent.clone()).await.unwrap();
        assert_eq!((ag.kind, ag.steward_id), (MemberKind::Agent, Some(h.id)), "{d}");
        let exec = exec.expect("agent_application executor");
        assert_eq!(exec.public_id, new_agent.agent_executor_public_id.unwrap(), "{d}");
        assert_eq!(exec.kind, ExecutorKind::AgentApplication, "{d}");
        assert_eq!(exec.status, ExecutorStatus::Active, "{d}");
        assert_eq!(exec.credential_epoch, 0, "{d}");
        assert_eq!(exec.assignment_scope, AssignmentScope::UserPrivate, "{d}");
        assert_eq!((exec.manager_id, exec.agent_id), (Some(h.id), Some(ag.id)), "{d}");
        assert_eq!(exec.display_name, "Agent scout", "{d}");
        assert_eq!(
            (exec.served_tools.as_str(), exec.environment.as_str()),
            ("[]", "{}"),
            "{d}"
        );
        assert_eq!((exec.served_documents.as_str(), exec.last_seen_at), ("[]", None), "{d}");
        assert_eq!((exec.account_id, exec.created_at), (a.id, NOW + 1), "{d}");
        assert_eq!(s.agent_application_of(ag.id).await.unwrap(), Some(exec.clone()), "{d}");
        assert_eq!(s.agent_application_of(h.id).await.unwrap(), None, "{d}");

        // A failed agent creation leaves neither row behind.
        let mut dup = agent(a.id, "scout", h.id);
        let exec_id = dup.agent_executor_public_id.unwrap();
        let err = s.create_member(dup.clone()).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{d}: {err:?}");
        assert_eq!(s.executor_by_public_id(exec_id).await.unwrap(), None, "{d}");
        // An executor public id collision rolls the member back.
        dup.handle = "scout2".into();
        dup.agent_executor_public_id = Some(exec.public_id);
        let err = s.create_member(dup.clone()).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{d}: {err:?}");
        assert_eq!(s.member_by_handle(a.id, "scout2").await.unwrap(), None, "{d}");
        // An agent without an executor id, or a human with one, is refused.
        let mut bad = agent(a.id, "bad", h.id);
        bad.agent_executor_public_id = None;
        assert!(
            matches!(s.create_member(bad).await.unwrap_err(), StoreError::Config(_)),
            "{d}"
        );
        let mut bad = human(a.id, "bad");
        bad.agent_executor_public_id = Some(id());
        assert!(
            matches!(s.create_member(bad).await.unwrap_err(), StoreError::Config(_)),
            "{d}"
        );

        // Configuration is replaced whole and stamps updated_at; the bytes are kept verbatim.
        let config = r#"{"z":1,"a":{"y":[2,1]}}"#;
        s.set_member_configuration(ag.id, Some(config), NOW + 10).await.unwrap();
        let got = s.member_by_id(ag.id).await.unwrap().unwrap();
        assert_eq!(
            (got.configuration.as_deref(), got.updated_at),
            (Some(config), NOW + 10),
            "{d}"
        );
        s.set_member_configuration(ag.id, None, NOW + 11).await.unwrap();
        assert_eq!(s.member_by_id(ag.id).await.unwrap().unwrap().configuration, None, "{d}");
        let err = s.set_member_configuration(ag.id + 1000, None, NOW).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{d}: {err:?}");
    });
}

#[tokio::test]
async fn runners_names_and_listing() {
    each_engine!(|ts| {
        let s = &ts.store;
        let d = ts.dialect;
        let a = account(s, "acme").await;
        let (h, _) = s.create_member(human(a.id, "ana")).await.unwrap();
        let (h2, _) = s.create_member(human(a.id, "bo")).await.unwrap();
        let (ag, app) = s.create_member(agent(a.id, "scout", h.id)).await.unwrap();
        let app = app.unwrap();

        let new = runner(a.id, h.id, "laptop");
        let r = s.create_runner(new.clone()).await.unwrap();
        assert_eq!(
            (r.public_id, r.kind, r.status.as_str()),
            (new.public_id, ExecutorKind::Runner, "active"),
            "{d}"
        );
        assert_eq!((r.display_name.as_str(), r.credential_epoch), ("laptop", 0), "{d}");
        assert_eq!(
            (r.manager_id, r.agent_id, r.created_at),
            (Some(h.id), None, NOW + 2),
            "{d}"
        );
        assert_eq!(s.executor_by_id(r.id).await.unwrap(), Some(r.clone()), "{d}");
        assert_eq!(
            s.executor_by_public_id(r.public_id).await.unwrap(),
            Some(r.clone()),
            "{d}"
        );
        assert_eq!(s.executor_by_id(r.id + 1000).await.unwrap(), None, "{d}");
        assert_eq!(s.executor_by_public_id(id()).await.unwrap(), None, "{d}");
        assert_eq!(
            s.active_runner_by_name(a.id, h.id, "laptop").await.unwrap(),
            Some(r.clone()),
            "{d}"
        );
        assert_eq!(
            s.active_runner_by_name(a.id, h2.id, "laptop").await.unwrap(),
            None,
            "{d}"
        );

        // One non-revoked runner per (account, manager, name).
        let err = s.create_runner(runner(a.id, h.id, "laptop")).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{d}: {err:?}");
        // Another manager may use the name.
        let other = s.create_runner(runner(a.id, h2.id, "laptop")).await.unwrap();
        // After revocation the name is free again.
        s.revoke_executor(r.id, NOW + 3).await.unwrap();
        assert_eq!(
            s.executor_by_id(r.id).await.unwrap().unwrap().status,
            ExecutorStatus::Revoked,
            "{d}"
        );
        assert_eq!(
            s.active_runner_by_name(a.id, h.id, "laptop").await.unwrap(),
            None,
            "{d}"
        );
        let r2 = s.create_runner(runner(a.id, h.id, "laptop")).await.unwrap();
        assert_eq!(
            s.active_runner_by_name(a.id, h.id, "laptop").await.unwrap(),
            Some(r2.clone()),
            "{d}"
        );
        let err = s.revoke_executor(r.id + 1000, NOW).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{d}: {err:?}");
        // A missing manager is refused by the foreign key.
        let err = s.create_runner(runner(a.id, h.id + 1000, "ghost")).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{d}: {err:?}");

        let all: Vec<i64> = s
            .list_executors(a.id, None)
            .await
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(all, vec![app.id, r.id, other.id, r2.id], "{d}");
        let runners: Vec<i64> = s
            .list_executors(a.id, Some(ExecutorKind::Runner))
            .await
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(runners, vec![r.id, other.id, r2.id], "{d}");
        let apps = s
            .list_executors(a.id, Some(ExecutorKind::AgentApplication))
            .await
            .unwrap();
        assert_eq!(apps, vec![app.clone()], "{d}");
        assert_eq!(apps[0].agent_id, Some(ag.id), "{d}");
        let b = account(s, "beta").await;
        assert!(s.list_executors(b.id, None).await.unwrap().is_empty(), "{d}");
    });
}

#[tokio::test]
async fn announcements_replace_whole() {
    each_engine!(|ts| {
        let s = &ts.store;
        let d = ts.dialect;
        let a = account(s, "acme").await;
        let (h, _) = s.create_member(human(a.id, "ana")).await.unwrap();
        let r = s.create_runner(runner(a.id, h.id, "laptop")).await.unwrap();
        let ann = Announcement {
            served_tools: r#"[{"name":"read","z":1,"a":2}]"#.into(),
            environment: r#"{"os":"linux","arch":"x86_64"}"#.into(),
            served_documents: r#"[{"name":"skill"}]"#.into(),
        };
        s.put_announcement(r.id, &ann, NOW + 7).await.unwrap();
        let got = s.executor_by_id(r.id).await.unwrap().unwrap();
        assert_eq!(got.served_tools, ann.served_tools, "{d}");
        assert_eq!(got.environment, ann.environment, "{d}");
        assert_eq!(got.served_documents, ann.served_documents, "{d}");
        assert_eq!(got.last_seen_at, Some(NOW + 7), "{d}");
        let empty = Announcement {
            served_tools: "[]".into(),
            environment: "{}".into(),
            served_documents: "[]".into(),
        };
        s.put_announcement(r.id, &empty, NOW + 8).await.unwrap();
        let got = s.executor_by_id(r.id).await.unwrap().unwrap();
        assert_eq!(
            (got.served_tools.as_str(), got.last_seen_at),
            ("[]", Some(NOW + 8)),
            "{d}"
        );
        let err = s.put_announcement(r.id + 1000, &empty, NOW).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{d}: {err:?}");
    });
}

#[tokio::test]
async fn credentials_and_epochs() {
    each_engine!(|ts| {
        let s = &ts.store;
        let d = ts.dialect;
        let a = account(s, "acme").await;
        let (h, _) = s.create_member(human(a.id, "ana")).await.unwrap();
        let r = s.create_runner(runner(a.id, h.id, "laptop")).await.unwrap();

        // A member credential.
        let new = NewCredential {
            public_id: id(),
            plane: Plane::Member,
            member_id: Some(h.id),
            executor_id: None,
            epoch: 0,
            secret_sha256: "cd".repeat(32),
            expires_at: None,
            now: NOW,
        };
        let c = s.insert_credential(new.clone()).await.unwrap();
        assert_eq!(
            (c.public_id, c.plane, c.member_id, c.executor_id),
            (new.public_id, Plane::Member, Some(h.id), None),
            "{d}"
        );
        assert_eq!(
            (c.epoch, c.secret_sha256.as_str()),
            (0, new.secret_sha256.as_str()),
            "{d}"
        );
        assert_eq!((c.expires_at, c.revoked_at, c.created_at), (None, None, NOW), "{d}");
        assert_eq!(
            s.credential_by_public_id(c.public_id).await.unwrap(),
            Some(c.clone()),
            "{d}"
        );
        assert_eq!(s.credential_by_public_id(id()).await.unwrap(), None, "{d}");
        let err = s.insert_credential(new.clone()).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{d}: {err:?}");
        // Revocation: true once, then false; the row is still returned.
        assert!(s.revoke_credential(c.public_id, NOW + 1).await.unwrap(), "{d}");
        assert!(!s.revoke_credential(c.public_id, NOW + 2).await.unwrap(), "{d}");
        assert!(!s.revoke_credential(id(), NOW).await.unwrap(), "{d}");
        let revoked = s.credential_by_public_id(c.public_id).await.unwrap().unwrap();
        assert_eq!(revoked.revoked_at, Some(NOW + 1), "{d}");

        // A member credential does not count as transport.
        assert!(!s.has_transport_credential_at(r.id, 0, NOW).await.unwrap(), "{d}");
        let t0 = s.insert_credential(transport(r.id, 0, None)).await.unwrap();
        assert_eq!(
            (t0.plane, t0.executor_id, t0.member_id),
            (Plane::ExecutorTransport, Some(r.id), None),
            "{d}"
        );
        assert!(s.has_transport_credential_at(r.id, 0, NOW).await.unwrap(), "{d}");
        assert!(!s.has_transport_credential_at(r.id, 1, NOW).await.unwrap(), "{d}");
        // The joined read: the same credential row, with its executor's row (none for a
        // member credential, nothing for an unknown id).
        assert_eq!(
            s.credential_with_executor(t0.public_id).await.unwrap(),
            Some((t0.clone(), s.executor_by_id(r.id).await.unwrap())),
            "{d}"
        );
        assert_eq!(
            s.credential_with_executor(c.public_id).await.unwrap(),
            Some((revoked.clone(), None)),
            "{d}"
        );
        assert_eq!(s.credential_with_executor(id()).await.unwrap(), None, "{d}");

        // Re-pairing advances the epoch; the old credential is fenced at the new epoch.
        assert_eq!(s.advance_executor_epoch(r.id).await.unwrap(), 1, "{d}");
        assert_eq!(s.advance_executor_epoch(r.id).await.unwrap(), 2, "{d}");
        assert_eq!(
            s.executor_by_id(r.id).await.unwrap().unwrap().credential_epoch,
            2,
            "{d}"
        );
        assert!(!s.has_transport_credential_at(r.id, 2, NOW).await.unwrap(), "{d}");
        let err = s.advance_executor_epoch(r.id + 1000).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{d}: {err:?}");

        // Expiry: valid strictly before expires_at.
        let t2 = s.insert_credential(transport(r.id, 2, Some(NOW + 100))).await.unwrap();
        assert!(s.has_transport_credential_at(r.id, 2, NOW + 99).await.unwrap(), "{d}");
        assert!(!s.has_transport_credential_at(r.id, 2, NOW + 100).await.unwrap(), "{d}");
        // Revoked ones never count.
        assert!(s.revoke_credential(t2.public_id, NOW + 1).await.unwrap(), "{d}");
        assert!(!s.has_transport_credential_at(r.id, 2, NOW + 1).await.unwrap(), "{d}");
        assert!(s.revoke_credential(t0.public_id, NOW + 1).await.unwrap(), "{d}");
        assert!(!s.has_transport_credential_at(r.id, 0, NOW).await.unwrap(), "{d}");
        // Another executor's credential does not count.
        let other = s.create_runner(runner(a.id, h.id, "desktop")).await.unwrap();
        s.insert_credential(transport(other.id, 0, None)).await.unwrap();
        assert!(!s.has_transport_credential_at(r.id, 0, NOW).await.unwrap(), "{d}");
        // A missing executor is refused by the foreign key.
        let err = s.insert_credential(transport(r.id + 1000, 0, None)).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{d}: {err:?}");
    });
}

/// The joined authentication read is served from the store's kept pairs only while
/// `principal_version` holds: every change to a credential or an executor — made by another
/// store on the same database (an admin command beside a server, another node), through each
/// write the store has, or by hand in SQL — is seen at the next read.
#[tokio::test]
async fn a_kept_principal_never_outlives_a_change_made_anywhere() {
    each_engine!(|ts| {
        let s = &ts.store;
        let d = ts.dialect;
        let other = Store::open(&StoreOptions {
            single_node_lock: false,
            ..ts.options()
        })
        .await
        .unwrap();
        let a = account(s, "acme").await;
        let (h, _) = s.create_member(human(a.id, "ana")).await.unwrap();
        let r = s.create_runner(runner(a.id, h.id, "laptop")).await.unwrap();
        let t = s.insert_credential(transport(r.id, 0, None)).await.unwrap();
        let read = || async { s.credential_with_executor(t.public_id).await.unwrap().unwrap() };
        let (c, e) = read().await;
        assert_eq!((c.revoked_at, e.as_ref().map(|e| e.id)), (None, Some(r.id)), "{d}");
        assert_eq!(read().await, (c.clone(), e.clone()), "{d}: served again, unchanged");

        // Each write, made by the other store.
        let tools = Announcement {
            served_tools: r#"[{"name":"echo"}]"#.into(),
            environment: "{}".into(),
            served_documents: "[]".into(),
        };
        other.put_announcement(r.id, &tools, NOW + 3).await.unwrap();
        assert_eq!(read().await.1.unwrap().served_tools, tools.served_tools, "{d}");
        other.advance_executor_epoch(r.id).await.unwrap();
        assert_eq!(read().await.1.unwrap().credential_epoch, 1, "{d}");
        // A credential minted for another executor moves the version too: a miss, then the
        // same pair again.
        let laptop = other.create_runner(runner(a.id, h.id, "desktop")).await.unwrap();
        other.insert_credential(transport(laptop.id, 0, None)).await.unwrap();
        assert_eq!(read().await.1.unwrap().credential_epoch, 1, "{d}");
        other.revoke_executor(r.id, NOW + 4).await.unwrap();
        assert_eq!(read().await.1.unwrap().status, ExecutorStatus::Revoked, "{d}");
        assert!(other.revoke_credential(t.public_id, NOW + 5).await.unwrap(), "{d}");
        assert_eq!(read().await.0.revoked_at, Some(NOW + 5), "{d}");
        drop(other);
    });
}

/// SQLite, by hand: a change to `credentials` outside the store is seen at the next read (the
/// triggers move the version), and a kept pair is served while the version holds — put back by
/// hand, the version hides a change, which shows that the version alone decides.
#[tokio::test]
async fn the_version_alone_decides_what_is_served_again() {
    let ts = testing::sqlite().await;
    let s = &ts.store;
    let a = account(s, "acme").await;
    let (h, _) = s.create_member(human(a.id, "ana")).await.unwrap();
    let r = s.create_runner(runner(a.id, h.id, "laptop")).await.unwrap();
    let t = s.insert_credential(transport(r.id, 0, None)).await.unwrap();
    let read = || async { s.credential_with_executor(t.public_id).await.unwrap().unwrap().0 };
    assert_eq!(read().await.expires_at, None);
    let c = rusqlite::Connection::open(ts.sqlite_path().unwrap()).unwrap();
    let public_id = t.public_id.to_string();
    c.execute(
        "UPDATE credentials SET expires_at = 5 WHERE public_id = ?1",
        [&public_id],
    )
    .unwrap();
    assert_eq!(read().await.expires_at, Some(5), "the triggers moved the version");
    let version: i64 = c
        .query_row("SELECT version FROM principal_version", [], |r| r.get(0))
        .unwrap();
    c.execute_batch(&format!(
        "BEGIN; UPDATE credentials SET expires_at = 6 WHERE public_id = '{public_id}'; \
         UPDATE principal_version SET version = {version}; COMMIT;"
    ))
    .unwrap();
    assert_eq!(
        read().await.expires_at,
        Some(5),
        "the kept pair, at the version put back"
    );
    c.execute_batch("UPDATE principal_version SET version = version + 1")
        .unwrap();
    assert_eq!(read().await.expires_at, Some(6));
}

#[tokio::test]
async fn nul_text_is_refused_everywhere() {
    each_engine!(|ts| {
        let s = &ts.store;
        let d = ts.dialect;
        let nul = |e: StoreError| assert!(matches!(e, StoreError::UnsupportedText), "{d}: {e:?}");
        nul(s.ensure_account(id(), "a\0b", NOW).await.unwrap_err());
        let a = account(s, "acme").await;
        nul(s.ensure_workspace(id(), a.id, "w\0", NOW).await.unwrap_err());
        nul(s.create_member(human(a.id, "ana\0")).await.unwrap_err());
        let mut m = human(a.id, "ana");
        m.display_name = "A\0".into();
        nul(s.create_member(m).await.unwrap_err());
        let (h, _) = s.create_member(human(a.id, "ana")).await.unwrap();
        nul(s
            .set_member_configuration(h.id, Some("{\"a\":\"\0\"}"), NOW)
            .await
            .unwrap_err());
        nul(s.create_runner(runner(a.id, h.id, "lap\0top")).await.unwrap_err());
        let r = s.create_runner(runner(a.id, h.id, "laptop")).await.unwrap();
        for which in 0..3 {
            let mut ann = Announcement {
                served_tools: "[]".into(),
                environment: "{}".into(),
                served_documents: "[]".into(),
            };
            match which {
                0 => ann.served_tools = "[\"\0\"]".into(),
                1 => ann.environment = "{\"\0\":1}".into(),
                _ => ann.served_documents = "[\0]".into(),
            }
            nul(s.put_announcement(r.id, &ann, NOW).await.unwrap_err());
        }
        let mut c = transport(r.id, 0, None);
        c.secret_sha256 = "\0".into();
        nul(s.insert_credential(c).await.unwrap_err());
        // Lookups with U+0000 find nothing (nothing stored holds it) on both engines.
        assert_eq!(s.member_by_handle(a.id, "ana\0").await.unwrap(), None, "{d}");
        assert_eq!(
            s.active_runner_by_name(a.id, h.id, "laptop\0").await.unwrap(),
            None,
            "{d}"
        );
        // Nothing was written by the refused calls.
        assert_eq!(s.list_executors(a.id, None).await.unwrap().len(), 1, "{d}");
        assert_eq!(s.member_by_id(h.id).await.unwrap().unwrap().configuration, None, "{d}");
    });
}

#[tokio::test]
async fn migrations_are_idempotent() {
    each_engine!(|ts| {
        let s = &ts.store;
        assert_eq!(s.pending_migrations().await.unwrap(), 0, "{}", ts.dialect);
        s.migrate().await.unwrap();
        s.migrate().await.unwrap();
        assert_eq!(s.pending_migrations().await.unwrap(), 0, "{}", ts.dialect);
        // Data survives a repeated migration.
        account(s, "acme").await;
        s.migrate().await.unwrap();
        assert!(s.account_by_id(1).await.unwrap().is_some(), "{}", ts.dialect);
    });
}

#[tokio::test]
async fn fresh_sqlite_file_has_pending_migrations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("dir").join("nexus.db");
    let url = format!("sqlite://{}", path.display());
    let s = Store::open(&StoreOptions::new(url)).await.unwrap();
    assert!(path.exists(), "the file and its parents are created");
    assert!(
        dir.path().join("sub/dir/nexus.db.lock").exists(),
        "the lock file sits beside it"
    );
    assert_eq!(s.pending_migrations().await.unwrap(), migration_files("sqlite"));
    s.migrate().await.unwrap();
    assert_eq!(s.pending_migrations().await.unwrap(), 0);
}

/// The SQLite migrator keeps sqlx's ledger and refuses what sqlx's migrator refuses: a
/// migration recorded as failed, an applied migration whose text changed, and an applied
/// version this build does not know. Each case edits the ledger of a migrated file directly.
#[tokio::test]
async fn sqlite_migration_ledger_is_checked() {
    let ts = testing::sqlite().await;
    let path = ts.sqlite_path().unwrap();
    let url = ts.url.clone();
    let TestStore { store, .. } = ts;
    drop(store);
    let edit = |sql: &str| {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(sql).unwrap();
    };
    let migrate = || async {
        let s = Store::open(&StoreOptions::new(url.clone())).await.unwrap();
        s.migrate().await
    };
    let recorded: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM _sqlx_migrations WHERE success", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        recorded as usize,
        migration_files("sqlite"),
        "one ledger row per migration"
    );
    migrate().await.expect("a clean ledger migrates (nothing to do)");

    edit("UPDATE _sqlx_migrations SET success = FALSE WHERE version = 1");
    let e = migrate().await.unwrap_err();
    assert!(
        matches!(e, StoreError::Migration(sqlx::migrate::MigrateError::Dirty(1))),
        "{e:?}"
    );
    edit("UPDATE _sqlx_migrations SET success = TRUE WHERE version = 1");

    let original: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT hex(checksum) FROM _sqlx_migrations WHERE version = 2",
            [],
            |r| r.get(0),
        )
        .unwrap();
    edit("UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 2");
    let e = migrate().await.unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::Migration(sqlx::migrate::MigrateError::VersionMismatch(2))
        ),
        "{e:?}"
    );
    edit(&format!(
        "UPDATE _sqlx_migrations SET checksum = x'{original}' WHERE version = 2"
    ));
    migrate().await.expect("the restored ledger migrates again");

    edit(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
          VALUES (99999999, 'from the future', TRUE, x'00', 0)",
    );
    let e = migrate().await.unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::Migration(sqlx::migrate::MigrateError::VersionMissing(99999999))
        ),
        "{e:?}"
    );
}

/// Migration 0008 rebuilds `runs`, `tasks` and `task_edges` (new CHECK texts) on a database
/// that holds rows: a file migrated through 0007 by hand (ledger rows as sqlx writes them) with
/// a run, two tasks, an edge and an event, then opened and migrated by the store. The rows keep
/// their ids and values, the children still reach them, the constraints still refuse a word
/// outside their lists, and foreign keys are enforced again afterwards. Migration 0011 rebuilds
/// `events` on the same file: keyed by `(run_id, sequence)` WITHOUT ROWID, the event kept, a
/// repeated sequence refused. Migration 0012 drops the event trigger (the unit of work writes the
/// run's sequence).
#[tokio::test]
async fn sqlite_migration_0008_rebuilds_the_run_tables_with_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nexus.db");
    let migrator = sqlx::migrate!("./migrations/sqlite");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "PRAGMA foreign_keys = ON; CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, \
             description TEXT NOT NULL, installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
             success BOOLEAN NOT NULL, checksum BLOB NOT NULL, execution_time BIGINT NOT NULL)",
        )
        .unwrap();
        for m in migrator.iter().filter(|m| m.version < 8) {
            c.execute_batch(m.sql.as_str()).unwrap();
            c.execute(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                 VALUES (?1, ?2, TRUE, ?3, 0)",
                rusqlite::params![m.version, &*m.description, &*m.checksum],
            )
            .unwrap();
        }
        c.execute_batch(
            "INSERT INTO accounts (id, public_id, handle, created_at) VALUES (1, '0190a000-0000-7000-8000-000000000001', 'acme', 0);
             INSERT INTO workspaces (id, public_id, account_id, handle, created_at) VALUES (1, '0190a000-0000-7000-8000-000000000002', 1, 'w', 0);
             INSERT INTO members (id, public_id, account_id, kind, handle, display_name, role, created_at, updated_at)
                 VALUES (1, '0190a000-0000-7000-8000-000000000003', 1, 'human', 'h', 'H', 'admin', 0, 0);
             INSERT INTO runs (id, public_id, workspace_id, created_by_id, answering_member_id, status, hosting,
                 approval_mode, revision, last_event_sequence, created_at)
                 VALUES (7, '0190a000-0000-7000-8000-000000000004', 1, 1, 1, 'running', '{\"kind\":\"standalone\"}', 'bypass', 1, 0, 0);
             INSERT INTO tasks (id, run_id, key, kind, status, generation, origin, on_failure, visibility,
                 mainline, structured_present, is_error, created_at, content, frozen_digest)
                 VALUES (40, 7, 'a', 'tool_task', 'completed', 1, 'author', 'propagate', 'visible', 1, 0, 0, 0, 'ok', 'd');
             INSERT INTO tasks (id, run_id, key, kind, status, generation, origin, on_failure, visibility,
                 mainline, structured_present, is_error, created_at, addressed_executor_id)
                 VALUES (41, 7, 'b', 'tool_task', 'waiting', 1, 'author', 'propagate', 'visible', 1, 0, 0, 0, NULL);
             INSERT INTO task_edges (task_id, depends_on_id, kind) VALUES (41, 40, 'after');
             UPDATE runs SET deliverable_task_id = 41 WHERE id = 7;
             INSERT INTO events (run_id, sequence, type, at, data) VALUES (7, 1, 'run_started', 0, '{}');",
        )
        .unwrap();
    }
    let s = Store::open(&StoreOptions::new(format!("sqlite://{}", path.display())))
        .await
        .unwrap();
    let later = migrator.iter().filter(|m| m.version >= 8).count();
    assert_eq!(s.pending_migrations().await.unwrap(), later);
    s.migrate().await.unwrap();
    assert_eq!(s.pending_migrations().await.unwrap(), 0);
    let run = s.run_by_id(7).await.unwrap().expect("the run kept its id");
    assert_eq!(
        (run.status.as_str(), run.deliverable_task_id, run.last_event_sequence),
        ("running", Some(41), 1)
    );
    let done = s.task_by_key(7, "a").await.unwrap().expect("the task kept its key");
    assert_eq!(
        (done.id, done.status.as_str(), done.content.as_deref()),
        (40, "completed", Some("ok"))
    );
    drop(s);

    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch("PRAGMA foreign_keys = ON").unwrap();
    let one = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        one("SELECT count(*) FROM task_edges WHERE task_id = 41 AND depends_on_id = 40"),
        1
    );
    assert_eq!(one("SELECT count(*) FROM pragma_foreign_key_check"), 0);
    assert_eq!(one("SELECT frozen_digest = 'd' FROM tasks WHERE id = 40"), 1);
    // 0012: the event trigger is gone; an event inserted outside the store's unit of work
    // leaves the run's sequence where it was.
    assert_eq!(
        one("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"),
        0
    );
    c.execute_batch("INSERT INTO events (run_id, sequence, type, at, data) VALUES (7, 2, 'x', 0, '{}')")
        .unwrap();
    assert_eq!(one("SELECT last_event_sequence FROM runs WHERE id = 7"), 1);
    // 0011: the events are keyed by run and sequence, with no rowid, and the first one is kept.
    assert_eq!(
        one("SELECT count(*) FROM pragma_table_list WHERE name = 'events' AND wr = 1"),
        1
    );
    assert_eq!(
        one("SELECT count(*) FROM events WHERE run_id = 7 AND sequence = 1 AND type = 'run_started'"),
        1
    );
    assert!(
        c.execute_batch("INSERT INTO events (run_id, sequence, type, at, data) VALUES (7, 2, 'y', 0, '{}')")
            .is_err(),
        "a run's sequence is taken once"
    );
    // Every index of the three tables is there again (but `tasks_inbox` and `tasks_deadline`,
    // which 0009 and 0010 drop).
    for index in [
        "runs_workspace",
        "tasks_held_approvals",
        "tasks_declaring",
        "tasks_run_status",
        "tasks_frozen_head",
        "tasks_parked",
        "tasks_inbox_open",
        "task_edges_depends_on",
    ] {
        assert_eq!(
            one(&format!(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = '{index}'"
            )),
            1,
            "{index}"
        );
    }
    // The constraints still hold their word lists, and references are checked.
    for bad in [
        "UPDATE tasks SET status = 'done' WHERE id = 40",
        "UPDATE runs SET status = 'finished' WHERE id = 7",
        "UPDATE task_edges SET kind = 'before' WHERE task_id = 41",
        "UPDATE tasks SET run_id = 8 WHERE id = 41",
    ] {
        assert!(c.execute_batch(bad).is_err(), "{bad}");
    }
}

/// Rows for migration 0014's test, before migration 0006: an account, workspace, member and
/// run, and a round `a` holding the frozen context `abc` without a digest. Portable SQL (both
/// dialects; ids are the identity columns' own).
const ROWS_BEFORE_0006: &str = "
    INSERT INTO accounts (public_id, handle, created_at)
        VALUES ('0190a000-0000-7000-8000-000000000001', 'acme', 0);
    INSERT INTO workspaces (public_id, account_id, handle, created_at)
        VALUES ('0190a000-0000-7000-8000-000000000002', (SELECT id FROM accounts), 'w', 0);
    INSERT INTO members (public_id, account_id, kind, handle, display_name, role, created_at, updated_at)
        VALUES ('0190a000-0000-7000-8000-000000000003', (SELECT id FROM accounts), 'human', 'h', 'H',
            'admin', 0, 0);
    INSERT INTO runs (public_id, workspace_id, created_by_id, answering_member_id, status, hosting,
            approval_mode, revision, last_event_sequence, created_at)
        VALUES ('0190a000-0000-7000-8000-000000000004', (SELECT id FROM workspaces),
            (SELECT id FROM members), (SELECT id FROM members), 'running', '{\"kind\":\"standalone\"}', 'bypass', 1, 0, 0);
    INSERT INTO tasks (run_id, key, kind, status, generation, origin, on_failure, visibility,
            mainline, structured_present, is_error, created_at, frozen_context)
        VALUES ((SELECT id FROM runs), 'a', 'model_task', 'completed', 1, 'kernel', 'propagate',
            'visible', TRUE, FALSE, FALSE, 0, 'abc');
    INSERT INTO tasks (run_id, key, kind, status, generation, origin, on_failure, visibility,
            mainline, structured_present, is_error, created_at, frozen_context)
        VALUES ((SELECT id FROM runs), 'c', 'model_task', 'completed', 1, 'kernel', 'propagate',
            'visible', TRUE, FALSE, FALSE, 0, '{\"y\":1}');";

/// Rows for migration 0014's test, after migration 0006: a round `b` with the same bytes as `a`
/// and their digest, as the task insert wrote them, and a tool row `d` without a frozen context.
const ROWS_BEFORE_0014: &str = "
    INSERT INTO tasks (run_id, key, kind, status, generation, origin, on_failure, visibility,
            mainline, structured_present, is_error, created_at, frozen_context, frozen_digest)
        VALUES ((SELECT id FROM runs), 'b', 'model_task', 'completed', 1, 'kernel', 'propagate',
            'visible', TRUE, FALSE, FALSE, 0, 'abc',
            'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    INSERT INTO tasks (run_id, key, kind, status, generation, origin, on_failure, visibility,
            mainline, structured_present, is_error, created_at)
        VALUES ((SELECT id FROM runs), 'd', 'tool_task', 'completed', 1, 'author', 'propagate',
            'visible', TRUE, FALSE, FALSE, 0);";

/// What migration 0014 leaves of [`ROWS_BEFORE_0006`] and [`ROWS_BEFORE_0014`]: one body per
/// content, no bytes in a task row, the rounds written before 0006 with the digest the task
/// insert computes, and every round read back with its bytes.
async fn assert_frozen_contexts_moved(s: &Store) {
    let count = |table: &'static str, condition: &'static str| testing::row_count(s, table, condition);
    assert_eq!(count("frozen_contexts", "1 = 1").await.unwrap(), 2, "{}", s.dialect());
    assert_eq!(count("tasks", "frozen_context IS NOT NULL").await.unwrap(), 0);
    let run = s
        .run_by_public_id("0190a000-0000-7000-8000-000000000004".parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let mut tx = s.begin().await.unwrap();
    for (key, frozen, digest) in [
        (
            "a",
            Some("abc"),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ),
        (
            "b",
            Some("abc"),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ),
        (
            "c",
            Some(r#"{"y":1}"#),
            Some("c7bd835adf20c1cc2a521683644cbc40c8c97e7b1925ed6309e0892c01fea42f"),
        ),
        ("d", None, None),
    ] {
        let task = tx.task_by_key(run.id, key).await.unwrap().unwrap();
        assert_eq!(task.frozen_context.as_deref(), frozen, "{key}");
        let head = tx.task_frozen_head(task.id).await.unwrap().unwrap();
        assert_eq!(head.frozen_digest.as_deref(), digest, "{key}");
        assert_eq!(
            tx.task_frozen_context(task.id).await.unwrap().as_deref(),
            frozen,
            "{key}"
        );
    }
    tx.rollback().await.unwrap();
}

/// Migration 0014 moves every stored frozen context into `frozen_contexts`, once per content,
/// and gives rounds written before migration 0006 their digest (SQLite computes it with the
/// migrator's `nexus_sha256_hex`, PostgreSQL with `sha256`): a database migrated by hand through
/// 0005 with two rounds without digests, then through 0013 with a round holding the first one's
/// bytes and their digest and a tool row, then opened and migrated by the store. Both engines.
#[tokio::test]
async fn migration_0014_stores_each_frozen_context_once() {
    // SQLite: the ledger written as sqlx writes it (as in the migration 0008 test), foreign keys
    // not enforced while the migrations run (as the store's migrator does, for 0008's rebuild).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nexus.db");
    let migrator = sqlx::migrate!("./migrations/sqlite");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "PRAGMA foreign_keys = OFF; CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, \
             description TEXT NOT NULL, installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
             success BOOLEAN NOT NULL, checksum BLOB NOT NULL, execution_time BIGINT NOT NULL)",
        )
        .unwrap();
        let apply = |below: i64, from: i64| {
            for m in migrator.iter().filter(|m| m.version >= from && m.version < below) {
                c.execute_batch(m.sql.as_str()).unwrap();
                c.execute(
                    "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                     VALUES (?1, ?2, TRUE, ?3, 0)",
                    rusqlite::params![m.version, &*m.description, &*m.checksum],
                )
                .unwrap();
            }
        };
        apply(6, 0);
        c.execute_batch(ROWS_BEFORE_0006).unwrap();
        apply(14, 6);
        c.execute_batch(ROWS_BEFORE_0014).unwrap();
    }
    let s = Store::open(&StoreOptions::new(format!("sqlite://{}", path.display())))
        .await
        .unwrap();
    // 0014 and every migration after it.
    let after_0013 = migrator.iter().filter(|m| m.version >= 14).count() as u64;
    assert_eq!(s.pending_migrations().await.unwrap() as u64, after_0013);
    s.migrate().await.unwrap();
    assert_frozen_contexts_moved(&s).await;
    drop(s);

    // PostgreSQL: a schema beside the test's own, migrated by sqlx's migrator over the same
    // files in two steps.
    let Some(ts) = testing::postgres().await else { return };
    let schema = format!("{}_f", ts.schema.as_deref().unwrap());
    let result = async {
        use std::str::FromStr;
        let base = ts.base_url.as_deref().unwrap();
        let connect = sqlx::postgres::PgConnectOptions::from_str(base)?;
        let admin = sqlx::PgPool::connect_with(connect.clone()).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
            .execute(&admin)
            .await?;
        admin.close().await;
        let pool = sqlx::PgPool::connect_with(connect.options([("search_path", schema.as_str())])).await?;
        let all = sqlx::migrate!("./migrations/postgres");
        let below =
            |v: i64| sqlx::migrate::Migrator::with_migrations(all.iter().filter(|m| m.version < v).cloned().collect());
        below(6).run(&pool).await?;
        sqlx::raw_sql(ROWS_BEFORE_0006).execute(&pool).await?;
        below(14).run(&pool).await?;
        sqlx::raw_sql(ROWS_BEFORE_0014).execute(&pool).await?;
        pool.close().await;
        let pg = Store::Postgres(PgStore::open_in_schema(&StoreOptions::new(base), &schema).await?);
        let after_0013 = all.iter().filter(|m| m.version >= 14).count() as u64;
        assert_eq!(pg.pending_migrations().await? as u64, after_0013);
        pg.migrate().await?;
        assert_frozen_contexts_moved(&pg).await;
        Ok::<_, Box<dyn std::error::Error>>(())
    }
    .await;
    drop_schema(&ts, &schema).await;
    result.unwrap();
}

/// A dropped unit of work rolls back on SQLite and leaves the write connection usable: the
/// next writer neither sees its rows nor finds a transaction still open.
#[tokio::test]
async fn sqlite_dropped_unit_of_work_rolls_back() {
    let receipt = || NewReceipt {
        scope_hash: "scope".into(),
        envelope_sha256: "e".into(),
        status: 200,
        body: "{}".into(),
        expires_at: NOW + 1,
        created_at: NOW,
    };
    let ts = testing::sqlite().await;
    let s = &ts.store;
    let a = account(s, "acme").await;
    {
        let mut tx = s.begin().await.unwrap();
        let ws = s.workspace_by_id(1).await.unwrap();
        assert!(ws.is_none());
        tx.idempotency_put(receipt()).await.unwrap();
        // dropped here: rolled back
    }
    assert!(
        s.idempotency_get("scope", NOW).await.unwrap().is_none(),
        "the dropped work is gone"
    );
    s.ensure_workspace(id(), a.id, "w", NOW)
        .await
        .expect("the gate opened again");
    let mut tx = s.begin().await.unwrap();
    tx.idempotency_put(receipt()).await.unwrap();
    tx.commit().await.unwrap();
    assert!(s.idempotency_get("scope", NOW).await.unwrap().is_some());
}

#[tokio::test]
async fn sqlite_memory_store_works() {
    let s = Store::open(&StoreOptions::new("sqlite::memory:")).await.unwrap();
    s.migrate().await.unwrap();
    let a = account(&s, "acme").await;
    assert_eq!(s.account_by_id(a.id).await.unwrap(), Some(a));
}

#[tokio::test]
async fn sqlite_pragmas_are_set() {
    let ts = testing::sqlite().await;
    let Store::Sqlite(s) = &ts.store else { unreachable!() };
    assert!(s.path().is_some());
    // WAL leaves its side file once a write happened.
    account(&ts.store, "acme").await;
    let wal = format!("{}-wal", ts.sqlite_path().unwrap().display());
    assert!(std::path::Path::new(&wal).exists(), "journal_mode=WAL");
    // foreign_keys=ON: a dangling reference is refused (checked in other tests too).
    let err = ts.store.ensure_workspace(id(), 999, "w", NOW).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
}

#[tokio::test]
async fn sqlite_second_open_in_process_is_refused() {
    let ts = testing::sqlite().await;
    let err = Store::open(&ts.options())
        .await
        .err()
        .expect("a second open must be refused");
    match &err {
        StoreError::Config(msg) => assert!(msg.contains("already in use by another nexus process"), "{msg}"),
        other => panic!("expected Config, got {other:?}"),
    }
    // A clone shares the lock; once every handle is gone the file opens again.
    let clone = ts.store.clone();
    let TestStore { store, url, .. } = ts;
    drop(store);
    assert!(
        Store::open(&StoreOptions::new(url.clone())).await.is_err(),
        "the clone still holds it"
    );
    drop(clone);
    let reopened = Store::open(&StoreOptions::new(url))
        .await
        .expect("reopen after release");
    assert_eq!(reopened.pending_migrations().await.unwrap(), 0);
}

/// The child half of `sqlite_second_process_is_refused` (a no-op unless that test runs it).
#[tokio::test]
async fn child_open_probe() {
    let Ok(url) = std::env::var("NEXUS_STORE_CHILD_OPEN") else {
        return;
    };
    match Store::open(&StoreOptions::new(url)).await {
        Ok(_) => println!("PROBE: OPENED"),
        Err(e) => println!("PROBE: REFUSED: {e}"),
    }
}

fn probe(url: &str) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["child_open_probe", "--exact", "--nocapture", "--test-threads=1"])
        .env("NEXUS_STORE_CHILD_OPEN", url)
        .output()
        .expect("run the probe");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // libtest prints `test child_open_probe ... ` on the same line before the probe's output.
    let at = stdout
        .find("PROBE: ")
        .unwrap_or_else(|| panic!("no probe line in {stdout:?}"));
    stdout[at..].lines().next().unwrap_or_default().to_string()
}

#[tokio::test]
async fn sqlite_second_process_is_refused() {
    let ts = testing::sqlite().await;
    let line = probe(&ts.url);
    assert!(
        line.contains("REFUSED") && line.contains("already in use by another nexus process"),
        "{line}"
    );
    let TestStore { store, url, .. } = ts;
    drop(store);
    assert_eq!(probe(&url), "PROBE: OPENED");
}

#[tokio::test]
async fn postgres_url_selects_the_schema() {
    let Some(ts) = testing::postgres().await else { return };
    let schema = ts.schema.clone().unwrap();
    assert!(ts.url.contains(&format!("schema={schema}")), "{}", ts.url);
    let a = account(&ts.store, "acme").await;
    // `?schema=NAME` through plain Store::open sees the same rows.
    let other = Store::open(&ts.options()).await.unwrap();
    assert_eq!(other.dialect(), "postgres");
    assert_eq!(other.account_by_id(a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(other.pending_migrations().await.unwrap(), 0);
    let Store::Postgres(pg) = &other else { unreachable!() };
    assert_eq!(pg.schema(), Some(schema.as_str()));
    // sqlx's own libpq-style form works too.
    let base = ts.base_url.clone().unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    let native = Store::open(&StoreOptions::new(format!("{base}{sep}options[search_path]={schema}")))
        .await
        .unwrap();
    assert_eq!(native.account_by_id(a.id).await.unwrap(), Some(a));
    // A bad schema name is a configuration error.
    let err = Store::open(&StoreOptions::new(format!("{base}{sep}schema=no;pe")))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
}

#[tokio::test]
async fn postgres_fresh_schema_has_pending_migrations() {
    let Some(ts) = testing::postgres().await else { return };
    // A second, empty schema beside the test's own: open_in_schema, then migrate creates it.
    let schema = format!("{}_b", ts.schema.as_deref().unwrap());
    let options = StoreOptions::new(ts.base_url.clone().unwrap());
    let pg = PgStore::open_in_schema(&options, &schema).await.unwrap();
    let result = async {
        assert_eq!(pg.pending_migrations().await?, migration_files("postgres"));
        pg.migrate().await?;
        assert_eq!(pg.pending_migrations().await?, 0);
        // Isolation: the new schema does not see the test schema's rows.
        account(&ts.store, "acme").await;
        assert_eq!(Store::Postgres(pg.clone()).account_by_id(1).await?, None);
        Ok::<_, StoreError>(())
    }
    .await;
    // Clean up the extra schema through a store in the test schema (best effort).
    let Store::Postgres(_) = &ts.store else { unreachable!() };
    drop_schema(&ts, &schema).await;
    result.unwrap();
}

async fn drop_schema(ts: &TestStore, schema: &str) {
    use sqlx::Connection;
    if let Ok(mut conn) = sqlx::PgConnection::connect(ts.base_url.as_deref().unwrap()).await {
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
        )))
        .execute(&mut conn)
        .await;
    }
}

/// How many migrations the dialect embeds (the `.sql` files of `migrations/<dialect>`).
fn migration_files(dialect: &str) -> usize {
    std::fs::read_dir(format!("{}/migrations/{dialect}", env!("CARGO_MANIFEST_DIR")))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sql"))
        .count()
}

/// The benches' grown store (`testing::prefill_tasks`): settled tasks in the first run, each
/// after the one before, on both engines.
#[tokio::test]
async fn prefill_adds_settled_tasks_in_a_chain() {
    for ts in testing::engines().await {
        let s = &ts.store;
        let (_, ws, member) = testing::seed_member(s, 1_700_000_000_000).await;
        let mut tx = s.begin().await.unwrap();
        let run = tx
            .insert_run(testing::new_run(
                ws.id,
                member.id,
                RunStatus::Completed,
                1_700_000_000_000,
            ))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        testing::prefill_tasks(s, 50).await.unwrap();
        let of_run = format!("run_id = {} AND status = 'completed' AND key LIKE 'prefill-%'", run.id);
        assert_eq!(
            testing::row_count(s, "tasks", &of_run).await.unwrap(),
            50,
            "{}",
            s.dialect()
        );
        assert_eq!(testing::row_count(s, "task_edges", "kind = 'after'").await.unwrap(), 49);
        let last = s.task_by_key(run.id, "prefill-50").await.unwrap().unwrap();
        let before = s.task_by_key(run.id, "prefill-49").await.unwrap().unwrap();
        let edge = format!("task_id = {} AND depends_on_id = {}", last.id, before.id);
        assert_eq!(testing::row_count(s, "task_edges", &edge).await.unwrap(), 1);
    }
}
