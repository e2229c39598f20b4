//! The memory tools' `conversation/` scope (kernel-tools.md §8) on both engines, driven at the
//! kernel-function level: [`dispatch_stored`] with a round's frozen memory bindings, as the
//! evaluation of a `kernel_tool` job calls it. Only the turn engine freezes a non-null
//! `conversation_public_id` into a model round, so the bindings are built here directly. The
//! fixtures the memory parsers' unit tests share are here too.

use nexus_store::prelude::*;
use nexus_store::testing::engines;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{KernelTool, KernelToolOutcome, ToolContext, dispatch_stored};
use crate::conversations::CreateConversationRequest;
use crate::memory::door::MemoryQuery;
use crate::memory::{Owners, Refusal};
use crate::{Kernel, MemberPrincipal};

/// Owners with only a workspace scope, for the memory parsers' unit tests.
pub(super) const WORKSPACE_ONLY: Owners = Owners {
    user: None,
    workspace: Some(7),
    conversation: None,
};

/// The word of a memory parser's refusal.
pub(super) fn refusal_word(r: Result<impl std::fmt::Debug, Refusal>) -> String {
    let text = r.expect_err("refused").content.as_str().unwrap().to_string();
    text.split(':').next().unwrap().to_string()
}

struct Hosted {
    _ts: nexus_store::testing::TestStore,
    kernel: Kernel,
    agent: MemberPrincipal,
    ws: Uuid,
    user: Uuid,
    dialect: &'static str,
}

async fn hosted(ts: nexus_store::testing::TestStore) -> Hosted {
    let b = crate::booted::Booted::new(&ts.store).await;
    let user = Uuid::parse_str(b.boot["human"]["public_id"].as_str().unwrap()).unwrap();
    Hosted {
        dialect: ts.dialect,
        _ts: ts,
        kernel: b.kernel,
        agent: b.agent,
        ws: b.ws,
        user,
    }
}

impl Hosted {
    /// A new conversation of workspace `ws`, as its public id.
    async fn conversation(&self, ws: Uuid) -> Uuid {
        let request = CreateConversationRequest::parse(&json!({"conversation": {}})).unwrap();
        let made = self
            .kernel
            .conversations()
            .create_conversation(&self.agent, ws, Ok(request), None)
            .await
            .unwrap();
        let made = made.fresh().expect("a new conversation");
        Uuid::parse_str(&made.conversation.public_id).unwrap()
    }

    /// The frozen memory bindings of a round hosted by `conversation` (`None`: standalone).
    fn bindings(&self, conversation: Option<Uuid>) -> Value {
        json!({"workspace_public_id": self.ws, "conversation_public_id": conversation,
               "user_public_id": self.user})
    }

    /// Evaluates one memory tool call over `memory`, in its own transaction.
    async fn call(&self, memory: &Value, wire: &str, input: Value) -> KernelToolOutcome {
        let ctx = ToolContext {
            tool_definitions: &[],
            environment: &Value::Null,
            skills: &[],
            callable: wire,
        };
        let mut tx = self.kernel.store.begin().await.unwrap();
        let out = dispatch_stored(
            &mut tx,
            KernelTool::from_wire(wire).expect("a kernel tool"),
            &input,
            &ctx,
            memory,
            self.kernel.now_ms(),
        )
        .await
        .unwrap()
        .expect("a memory tool");
        tx.commit().await.unwrap();
        out
    }
}

fn text(o: &KernelToolOutcome) -> &str {
    o.content.as_str().unwrap_or_default()
}

fn ok<'a>(o: &'a KernelToolOutcome, dialect: &str) -> &'a str {
    assert!(!o.is_error, "{} on {dialect}", text(o));
    text(o)
}

fn word(o: &KernelToolOutcome, word: &str, dialect: &str) {
    assert!(o.is_error, "{} on {dialect}", text(o));
    assert!(
        text(o).starts_with(&format!("{word}: ")),
        "want {word}: {} on {dialect}",
        text(o)
    );
}

#[tokio::test]
async fn a_hosted_round_reaches_its_conversation_scope() {
    for ts in engines().await {
        let h = hosted(ts).await;
        let (c1, c2) = (h.conversation(h.ws).await, h.conversation(h.ws).await);
        let (m1, m2) = (h.bindings(Some(c1)), h.bindings(Some(c2)));
        let d = h.dialect;

        let wrote = h
            .call(
                &m1,
                "memory_write",
                json!({"path": "conversation/notes/plan.md", "content": "one\ntwo\n"}),
            )
            .await;
        assert_eq!(ok(&wrote, d), "Created conversation/notes/plan.md (8 bytes).");
        let read = h
            .call(&m1, "memory_read", json!({"path": "conversation/notes/plan.md"}))
            .await;
        assert_eq!(ok(&read, d), "one\ntwo\n");
        let edited = h
            .call(
                &m1,
                "memory_edit",
                json!({"path": "conversation/notes/plan.md", "old_text": "two", "new_text": "TWO"}),
            )
            .await;
        ok(&edited, d);
        h.call(&m1, "memory_write", json!({"path": "workspace/shared", "content": "w"}))
            .await;
        // The listing of every available scope includes the conversation's.
        let all = h.call(&m1, "memory_ls", json!({})).await;
        assert_eq!(ok(&all, d), "conversation/notes/plan.md\t8\nworkspace/shared\t1", "{d}");
        let grep = h.call(&m1, "memory_grep", json!({"pattern": "TWO"})).await;
        assert_eq!(ok(&grep, d), "conversation/notes/plan.md:2: TWO");

        // Another conversation has its own scope.
        let other = h
            .call(&m2, "memory_read", json!({"path": "conversation/notes/plan.md"}))
            .await;
        word(&other, "memory_not_found", d);
        let listed = h.call(&m2, "memory_ls", json!({"path": "conversation/"})).await;
        assert_eq!(ok(&listed, d), "No documents under conversation/.");

        // The reserved prefix holds in the conversation scope too.
        for (wire, input) in [
            ("memory_write", json!({"path": "conversation/skills/x", "content": "y"})),
            (
                "memory_edit",
                json!({"path": "conversation/skills/x", "old_text": "a", "new_text": "b"}),
            ),
            ("memory_delete", json!({"path": "conversation/skills/x"})),
        ] {
            word(&h.call(&m1, wire, input).await, "memory_reserved_prefix", d);
        }

        // The member door sees the model's document under the same conversation.
        let c1s = c1.to_string();
        let doc = h
            .kernel
            .memory()
            .memory_read_document(
                &h.agent,
                h.ws,
                &MemoryQuery {
                    path: Some("conversation/notes/plan.md"),
                    conversation_public_id: Some(&c1s),
                    ..MemoryQuery::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(doc.document.content, "one\nTWO\n", "{d}");

        let gone = h
            .call(&m1, "memory_delete", json!({"path": "conversation/notes/plan.md"}))
            .await;
        ok(&gone, d);
        let again = h
            .call(&m1, "memory_read", json!({"path": "conversation/notes/plan.md"}))
            .await;
        word(&again, "memory_not_found", d);
    }
}

#[tokio::test]
async fn standalone_and_foreign_bindings_have_no_conversation_scope() {
    for ts in engines().await {
        let h = hosted(ts).await;
        let d = h.dialect;
        // A workspace the agent can reach, holding a conversation the round's workspace does not.
        let account = h.agent.member.account_id;
        let elsewhere = h
            .kernel
            .store
            .ensure_workspace(Uuid::now_v7(), account, "elsewhere", 1)
            .await
            .unwrap();
        h.kernel
            .store
            .set_standing(elsewhere.id, h.agent.member.id, nexus_store::Standing::Write)
            .await
            .unwrap();
        let foreign = h.conversation(elsewhere.public_id).await;
        for memory in [
            h.bindings(None),
            h.bindings(Some(foreign)),
            h.bindings(Some(Uuid::now_v7())),
        ] {
            for (wire, input) in [
                ("memory_write", json!({"path": "conversation/x", "content": "y"})),
                ("memory_read", json!({"path": "conversation/x"})),
                ("memory_ls", json!({"path": "conversation/"})),
            ] {
                let out = h.call(&memory, wire, input).await;
                word(&out, "memory_path_invalid", d);
                assert!(text(&out).contains("no conversation"), "{} on {d}", text(&out));
            }
            let all = h.call(&memory, "memory_ls", json!({})).await;
            assert_eq!(ok(&all, d), "No documents.", "{memory} on {d}");
        }
    }
}

#[tokio::test]
async fn the_conversation_scope_holds_256_documents() {
    for ts in engines().await {
        let h = hosted(ts).await;
        let d = h.dialect;
        let m = h.bindings(Some(h.conversation(h.ws).await));
        for i in 0..256 {
            let out = h
                .call(
                    &m,
                    "memory_write",
                    json!({"path": format!("conversation/n{i}"), "content": "x"}),
                )
                .await;
            ok(&out, d);
        }
        let full = h
            .call(&m, "memory_write", json!({"path": "conversation/n256", "content": "x"}))
            .await;
        word(&full, "memory_full", d);
        assert!(text(&full).contains("256"), "{}", text(&full));
        // Replacing one at the bound is not a new document.
        ok(
            &h.call(&m, "memory_write", json!({"path": "conversation/n0", "content": "y"}))
                .await,
            d,
        );
    }
}
