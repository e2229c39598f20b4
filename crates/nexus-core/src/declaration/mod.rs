//! Declarations (declarations.md): the tool entries a round offers its model.
//!
//! Everything here is pure: the kernel gathers facts from the store (runner announcements,
//! eligibility, skill documents) and hands them in; these functions validate, render, sort,
//! bound, resolve and project.
//!
//! Entry points by caller:
//! - profile `PUT`: [`validate_configuration`] → [`Configuration::to_stored_json`];
//! - model steps and the assembly route: [`assemble`] with an [`AssemblyInput`];
//! - a bare `tools` array without import fields: [`validate_declaration`];
//! - model calls: [`resolve_call`] (or a prepared [`Resolver`]);
//! - provider requests: [`project`] and [`skills_block`];
//! - narrowing (`tool_names`, `delegate_task.tools`): [`narrow`].

mod alias;
mod assembly;
mod configuration;
mod entry;
mod error;
mod imports;
mod order;
mod pointer;
mod projection;
mod render;
mod resolve;
mod set;
mod skills;

pub use alias::{AliasFacts, AliasParam};
pub use assembly::{Assembly, AssemblyInput, AssemblyPaths, RunnerFacts, assemble, assemble_owned};
pub use configuration::{ApprovalMode, Configuration, validate_configuration};
pub use entry::{Route, callable_of, duplicate_name_of};
pub use error::{DeclError, DeclErrorKind};
pub use imports::{import_callable, parse_kernel_tools, parse_runner_executor_public_ids, parse_runner_tool_names};
pub use order::{canonical_len, check_bound, sort};
pub(crate) use projection::project_one;
pub use projection::{project, project_deferred};
pub use render::spelling_map_of;
pub use resolve::{ResolvedCall, Resolver, express_through_alias, resolve_call};
pub use set::{
    narrow, validate_and_render, validate_and_render_owned, validate_declaration, validate_declaration_owned,
};
pub use skills::{SKILLS_BLOCK_HEADER, skills_block};

#[cfg(test)]
mod tests;
