//! Canonical kernel tool names (registry.md §5), one constant per live tool.
//!
//! Use them in `kernel_tools` to import a tool's plain definition, or with
//! [`Catalog::definition_for`](crate::Catalog::definition_for) to splice it into an explicit
//! tools array.

/// `nexus.graph.wait` (wire `wait`).
pub const WAIT: &str = "nexus.graph.wait";
/// `nexus.graph.delegate_task` (wire `delegate_task`).
pub const DELEGATE_TASK: &str = "nexus.graph.delegate_task";
/// `nexus.human.ask` (wire `ask`).
pub const ASK: &str = "nexus.human.ask";
/// `nexus.conversation.spawn` (wire `spawn`).
pub const SPAWN: &str = "nexus.conversation.spawn";
/// `nexus.conversation.send` (wire `send`).
pub const SEND: &str = "nexus.conversation.send";
/// `nexus.conversation.status` (wire `status`).
pub const STATUS: &str = "nexus.conversation.status";
/// `nexus.conversation.cancel` (wire `cancel`).
pub const CANCEL: &str = "nexus.conversation.cancel";
/// `nexus.memory.read` (wire `memory_read`).
pub const MEMORY_READ: &str = "nexus.memory.read";
/// `nexus.memory.write` (wire `memory_write`).
pub const MEMORY_WRITE: &str = "nexus.memory.write";
/// `nexus.memory.edit` (wire `memory_edit`).
pub const MEMORY_EDIT: &str = "nexus.memory.edit";
/// `nexus.memory.ls` (wire `memory_ls`).
pub const MEMORY_LS: &str = "nexus.memory.ls";
/// `nexus.memory.grep` (wire `memory_grep`).
pub const MEMORY_GREP: &str = "nexus.memory.grep";
/// `nexus.memory.delete` (wire `memory_delete`).
pub const MEMORY_DELETE: &str = "nexus.memory.delete";
/// `nexus.skill.load` (wire `skill`).
pub const SKILL: &str = "nexus.skill.load";
/// `nexus.conversation.search` (wire `session_search`).
pub const SESSION_SEARCH: &str = "nexus.conversation.search";
/// `nexus.conversation.read` (wire `session_read`).
pub const SESSION_READ: &str = "nexus.conversation.read";
/// `nexus.tools.search` (wire `tool_search`).
pub const TOOL_SEARCH: &str = "nexus.tools.search";
/// `nexus.tools.call` (wire `tool_call`).
pub const TOOL_CALL: &str = "nexus.tools.call";
/// `nexus.runners.list` (wire `runners_list`).
pub const RUNNERS_LIST: &str = "nexus.runners.list";

/// Every canonical kernel tool name, in registry order.
pub const ALL: [&str; 19] = [
    WAIT,
    DELEGATE_TASK,
    ASK,
    SPAWN,
    SEND,
    STATUS,
    CANCEL,
    MEMORY_READ,
    MEMORY_WRITE,
    MEMORY_EDIT,
    MEMORY_LS,
    MEMORY_GREP,
    MEMORY_DELETE,
    SKILL,
    SESSION_SEARCH,
    SESSION_READ,
    TOOL_SEARCH,
    TOOL_CALL,
    RUNNERS_LIST,
];

/// The kernel-reserved namespace (`nexus.graph`, …) a served name belongs to, in either
/// spelling, if any: an announcement serving such a name is refused whole with
/// `reserved_namespace` (executor.md §4), so a runner checks its names before announcing.
pub fn reserved_namespace_of(name: &str) -> Option<&'static str> {
    nexus_core::registry::reserved_family_of(name)
}
