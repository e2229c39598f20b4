//! Memory documents through the member door (kernel-tools.md §8): [`MemoryDoor`], made by
//! [`Workspace::memory`](super::Workspace::memory) or, with the conversation's
//! `conversation/` scope, [`ConversationRef::memory`](super::ConversationRef::memory).

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::types::{Rest, Timestamp};
use super::wire::{self, Route, V1};
use crate::error::Result;
use crate::http::Http;

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
        let read: DocumentEnvelope<MemoryDocument> = wire::get(&self.http, &route).await?;
        Ok(read.document)
    }

    /// `PUT W/memory/doc`: creates or replaces a document; answers it as read back.
    /// Refusals: 409 `stale_object`; 422 `validation_failed` (`memory_path_invalid`, …).
    pub async fn put(&self, document: &PutDocument) -> Result<MemoryDocument> {
        let mut body = document.body();
        if let (Some(c), Some(map)) = (&self.conversation, body.as_object_mut()) {
            map.insert("conversation_public_id".into(), Value::String(c.clone()));
        }
        let route = self.route().lit("doc");
        let put: DocumentEnvelope<MemoryDocument> =
            wire::call(&self.http, Method::PUT, &route, Some(&body), None).await?;
        Ok(put.document)
    }

    /// `DELETE W/memory/doc?path=&expected_lock_version=`: deletes a document (404
    /// `not_found` when there is none; 409 `stale_object` on a version mismatch).
    pub async fn delete(&self, path: &str, expected_lock_version: Option<i64>) -> Result<MemoryDeleted> {
        let route = self
            .doc()
            .query("path", Some(path))
            .query("expected_lock_version", expected_lock_version);
        let deleted: DocumentEnvelope<MemoryDeleted> =
            wire::call(&self.http, Method::DELETE, &route, None, None).await?;
        Ok(deleted.document)
    }
}

/// One document of a listing (no content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// `<scope>/<segment>(/<segment>)*`.
    pub path: String,
    /// The content's length in bytes.
    pub byte_size: u64,
    /// A skill document's description.
    #[serde(default)]
    pub description: Option<String>,
    /// The version a conditional write or delete names.
    pub lock_version: i64,
    /// The time of the last write.
    #[serde(default)]
    pub updated_at: Option<Timestamp>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Rest,
}

/// A document read whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryDocument {
    /// The document's path.
    pub path: String,
    /// The UTF-8 text.
    pub content: String,
    /// A skill document's description.
    #[serde(default)]
    pub description: Option<String>,
    /// The version a conditional write or delete names.
    pub lock_version: i64,
    /// The time of the last write.
    #[serde(default)]
    pub updated_at: Option<Timestamp>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Rest,
}

/// What a delete removed: the path and the version it had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryDeleted {
    /// The deleted path.
    pub path: String,
    /// The version removed.
    pub lock_version: i64,
}

#[derive(Deserialize)]
pub(crate) struct DocumentEnvelope<T> {
    pub(crate) document: T,
}

#[derive(Deserialize)]
pub(crate) struct DocumentList {
    pub(crate) documents: Vec<MemoryEntry>,
}

/// The body of `PUT W/memory/doc`: create or replace a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutDocument {
    /// The document's path.
    pub path: String,
    /// The UTF-8 text (at most 65,536 bytes).
    pub content: String,
    /// Required for a `skills/<name>` document.
    pub description: Option<String>,
    /// Refuse with 409 `stale_object` unless the stored version is this (0: no document yet).
    pub expected_lock_version: Option<i64>,
}

impl PutDocument {
    /// A last-writer-wins write of `content` at `path`.
    pub fn new(path: impl Into<String>, content: impl Into<String>) -> PutDocument {
        PutDocument {
            path: path.into(),
            content: content.into(),
            description: None,
            expected_lock_version: None,
        }
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> PutDocument {
        self.description = Some(description.into());
        self
    }

    /// Writes only if the stored version is `version`.
    pub fn expected_lock_version(mut self, version: i64) -> PutDocument {
        self.expected_lock_version = Some(version);
        self
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut body = Map::new();
        body.insert("path".into(), Value::String(self.path.clone()));
        body.insert("content".into(), Value::String(self.content.clone()));
        if let Some(description) = &self.description {
            body.insert("description".into(), Value::String(description.clone()));
        }
        if let Some(version) = self.expected_lock_version {
            body.insert("expected_lock_version".into(), Value::from(version));
        }
        Value::Object(body)
    }
}
