//! The wire types of the Nexus HTTP API, defined once: the request and reply bodies of every
//! route, as the server documents them (`GET /agent_api/v1/openapi.json`, built from these types
//! and the server's route table) and as the SDK sends and decodes them.
//!
//! Every type derives [`utoipa::ToSchema`], so its JSON Schema is generated from the same
//! definition serde reads and writes. Records keep the members they do not name in a `rest`
//! map and every status is an open word set with an `Other` variant, so a client built on an
//! older copy of this crate still decodes a newer server's replies; the document lists the
//! words this version knows.
//!
//! Architecture Invariant: this crate holds data and its serde/schema derivations only: no
//! I/O, no HTTP client, no server code. The server and the SDK both depend on it; it depends
//! on neither.

#![warn(missing_docs)]

pub mod approvals;
pub mod assembly;
pub mod catalog;
pub mod common;
pub mod conversations;
pub mod events;
pub mod executors;
pub mod history;
pub mod ids;
pub mod inbox;
pub mod inputs;
pub mod memory;
pub mod profile;
pub mod runs;
pub mod steps;
pub mod tasks;
pub mod turns;
pub mod uploads;
pub mod verbs;
pub mod views;
