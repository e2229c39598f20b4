//! Helpers shared by the integration tests.

pub mod one_shot;
pub use nexus_fake_upstream::schema as openai_schema;
