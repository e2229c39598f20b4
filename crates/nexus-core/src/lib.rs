//! The pure core of Nexus.
//!
//! Architecture Invariant: this crate performs no I/O and has no async code. It never imports
//! the store, the kernel, the server or a provider. Everything here is a function of its inputs,
//! unit- and property-tested in isolation.

pub mod bounds;
pub mod codes;
pub mod contracts;
pub mod jcs;
pub mod registry;
pub mod approval;
pub mod declaration;
pub mod steps;
pub mod results;
pub mod pairing;
pub mod graph;
pub mod rounds;
