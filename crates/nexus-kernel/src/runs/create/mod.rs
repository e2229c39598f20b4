//! Making and growing runs (runs.md §2–§4): `doors.rs` (create, start, stop, append),
//! `accept.rs` (step acceptance, one function per verb), `idempotency.rs` (keys and receipts).

mod accept;
mod doors;

pub use doors::Stop;
pub(crate) mod idempotency;
