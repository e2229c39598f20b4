//! The pure core of Nexus.
//!
//! Architecture Invariant: this crate performs no I/O and has no async code. It never imports
//! the store, the kernel, the server or a provider. Everything here is a function of its inputs,
//! unit- and property-tested in isolation.

pub mod approval;
pub mod bounds;
pub mod codes;
pub mod contracts;
pub mod declaration;
#[doc(hidden)]
pub mod fixtures;
pub mod graph;
pub mod jcs;
pub mod nul;
pub mod pairing;
pub mod registry;
pub mod results;
pub mod rounds;
pub mod search;
pub mod steps;
