//! Model rounds (providers.md §4, §8; runs.md §7): seal, call, apply, expand.
//!
//! 1. **Seal** (one transaction): the sealed record and the exact body bytes are stored and the
//!    round moves `waiting → running`.
//! 2. **Call**, outside any transaction: the same sealed bytes every attempt; retryable errors
//!    are retried with backoff and every attempt is appended to the record's `attempts` (a
//!    retried attempt in its own transaction before the backoff, the last one in the apply
//!    transaction). The job lease is renewed while the call is in flight.
//! 3. **Apply** (one transaction, conditional on (task, generation, `running`)): the reply is
//!    stored, the round completes, and its calls expand into a fan plus a continuation.
//!
//! Expansion reads the round's neighbourhood, not the run: the chain facts the round's
//! authoring transaction stored (`round_facts`: the chain's length and the repeat-call rule's
//! look-back, plus a floor under the free round numbers) and its predecessor's record, computed
//! by the seal from the rows the request was built from. A look-back holding a paired result
//! (which may still change), or a round without facts, is recomputed from the whole run.

//!
//! Files: `seal.rs` (the job's entry and the seal), `call.rs` (the provider call with retries,
//! and failing a round), `apply.rs` (planning the reply's calls and the apply transaction),
//! `expand.rs` (authoring the fan and the continuation), `chain.rs` (a round's place in its
//! chain: its length, the repeat-call look-back and the stored facts), `history.rs` (a turn's
//! seed round past its history budget: whole oldest turns dropped).

pub(crate) mod apply;
pub(crate) mod call;
pub(crate) mod chain;
pub(crate) mod expand;
pub(crate) mod history;
pub(crate) mod seal;
