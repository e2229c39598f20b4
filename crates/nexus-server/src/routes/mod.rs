//! One file per route family. Each handler parses, calls the kernel, and returns JSON.

pub mod assembly;
pub mod channel;
pub mod conversations;
pub mod executor;
pub mod health;
pub mod inbox;
pub mod memory;
pub mod profile;
pub mod runs;
pub mod stream;
pub mod tools;
pub mod uploads;
