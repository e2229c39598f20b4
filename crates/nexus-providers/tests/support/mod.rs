//! Helpers shared by the integration tests.

pub mod one_shot;
pub mod openai_schema;
