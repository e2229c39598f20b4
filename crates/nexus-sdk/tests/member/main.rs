//! The SDK's member client against a real server on both engines (a loopback port, the
//! `scripted` provider, the kernel's own worker): every call is made and checked by status,
//! fields and typed refusal codes.

mod approvals;
mod conversations;
mod feed;
mod files;
mod harness;
mod history;
mod recover;
mod runs;
