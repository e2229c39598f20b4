//! Memory documents through the member door (kernel-tools.md §8): [`MemoryDoor`], made by
//! [`Workspace::memory`](super::Workspace::memory) or, with the conversation's
//! `conversation/` scope, [`ConversationRef::memory`](super::ConversationRef::memory).

use reqwest::Method;

use super::wire::{self, Route, V1};
use crate::error::Result;
use crate::http::Http;
use nexus_api::memory::{
    DeletedEnvelope, DocumentEnvelope, DocumentList, MemoryDeleted, MemoryDocument, MemoryEntry, PutDocument,
};

/// The member memory door of one workspace: `W/memory` and `W/memory/doc`. Made for a
/// conversation, every call names it (`conversation_public_id`), so `conversation/` paths reach
/// that conversation's documents and a listing without a prefix includes them.
#[derive(Debug, Clone)]
pub struct MemoryDoor {
    http: Http,
    workspace: String,
    conversation: Option<String>,
}

impl MemoryDoor {
    pub(crate) fn new(http: Http, workspace: &str, conversation: Option<&str>) -> MemoryDoor {
        MemoryDoor {
            http,
            workspace: workspace.to_owned(),
            conversation: conversation.map(str::to_owned),
        }
    }

    fn route(&self) -> Route {
        Route::new(V1).lit("workspaces").seg(&self.workspace).lit("memory")
    }

    fn doc(&self) -> Route {
        self.route()
            .lit("doc")
            .query("conversation_public_id", self.conversation.as_deref())
    }

    /// `GET W/memory?prefix=`: the documents under `prefix` (every available scope when
    /// `None`), sorted by path.
    pub async fn list(&self, prefix: Option<&str>) -> Result<Vec<MemoryEntry>> {
        let route = self
            .route()
            .query("prefix", prefix)
            .query("conversation_public_id", self.conversation.as_deref());
        let list: DocumentList = wire::get(&self.http, &route).await?;
        Ok(list.documents)
    }

    /// `GET W/memory/doc?path=`: one document (404 `not_found` when there is none).
    pub async fn read(&self, path: &str) -> Result<MemoryDocument> {
        let route = self.doc().query("path", Some(path));
        let read: DocumentEnvelope = wire::get(&self.http, &route).await?;
        Ok(read.document)
    }

    /// `PUT W/memory/doc`: creates or replaces a document; answers it as read back.
    /// Refusals: 409 `stale_object`; 422 `validation_failed` (`memory_path_invalid`, …).
    pub async fn put(&self, document: &PutDocument) -> Result<MemoryDocument> {
        let document = PutDocument {
            conversation_public_id: self
                .conversation
                .clone()
                .or_else(|| document.conversation_public_id.clone()),
            ..document.clone()
        };
        let body = document.body();
        let route = self.route().lit("doc");
        let put: DocumentEnvelope = wire::call(&self.http, Method::PUT, &route, Some(&body), None).await?;
        Ok(put.document)
    }

    /// `DELETE W/memory/doc?path=&expected_lock_version=`: deletes a document (404
    /// `not_found` when there is none; 409 `stale_object` on a version mismatch).
    pub async fn delete(&self, path: &str, expected_lock_version: Option<i64>) -> Result<MemoryDeleted> {
        let route = self
            .doc()
            .query("path", Some(path))
            .query("expected_lock_version", expected_lock_version);
        let deleted: DeletedEnvelope = wire::call(&self.http, Method::DELETE, &route, None, None).await?;
        Ok(deleted.document)
    }
}
