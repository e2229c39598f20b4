//! The `anthropic` adapter (providers.md §5): the exact bytes `encode` seals (`encode.rs`), and
//! `send` against a one-shot local HTTP server (`send.rs`). No test reaches the network.

mod encode;
mod send;
mod support;
