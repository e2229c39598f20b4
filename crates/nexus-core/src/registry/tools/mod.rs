//! One file per kernel tool: its registry entry (and, where pure, its input validation).
//! The order of `ALL` is the registry order of registry.md §5.

use super::KernelTool;

mod ask;
mod cancel;
mod delegate_task;
mod memory_delete;
mod memory_edit;
mod memory_grep;
mod memory_ls;
mod memory_read;
mod memory_write;
mod runners_list;
mod send;
mod session_read;
mod session_search;
mod skill;
mod spawn;
mod status;
mod tool_call;
mod tool_search;
mod wait;

pub(super) static ALL: &[&KernelTool] = &[
    &wait::TOOL,
    &delegate_task::TOOL,
    &ask::TOOL,
    &spawn::TOOL,
    &send::TOOL,
    &status::TOOL,
    &cancel::TOOL,
    &memory_read::TOOL,
    &memory_write::TOOL,
    &memory_edit::TOOL,
    &memory_ls::TOOL,
    &memory_grep::TOOL,
    &memory_delete::TOOL,
    &skill::TOOL,
    &session_search::TOOL,
    &session_read::TOOL,
    &tool_search::TOOL,
    &tool_call::TOOL,
    &runners_list::TOOL,
];
