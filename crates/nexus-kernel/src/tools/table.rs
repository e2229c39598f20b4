//! The dispatch table: one [`KernelTool`] per registered kernel tool, by its wire name. The
//! evaluation (`tools/mod.rs`) matches on this enum, never on a wire-name string, so adding a
//! tool is a variant here, its row in [`KernelTool::ALL`] and [`KernelTool::wire`], and its
//! file; the registry's list (`nexus_core::registry`) and this table are checked equal by the
//! test below.

/// A kernel tool the kernel evaluates, by its stored wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelTool {
    Ask,
    Cancel,
    DelegateTask,
    MemoryDelete,
    MemoryEdit,
    MemoryGrep,
    MemoryLs,
    MemoryRead,
    MemoryWrite,
    RunnersList,
    Send,
    SessionRead,
    SessionSearch,
    Skill,
    Spawn,
    Status,
    ToolCall,
    ToolSearch,
    Wait,
}

impl KernelTool {
    /// Every tool, sorted by wire name.
    pub const ALL: [KernelTool; 19] = {
        use KernelTool::*;
        [
            Ask,
            Cancel,
            DelegateTask,
            MemoryDelete,
            MemoryEdit,
            MemoryGrep,
            MemoryLs,
            MemoryRead,
            MemoryWrite,
            RunnersList,
            Send,
            SessionRead,
            SessionSearch,
            Skill,
            Spawn,
            Status,
            ToolCall,
            ToolSearch,
            Wait,
        ]
    };

    /// The stored wire name (registry.md: the `wire` of the registry entry).
    pub const fn wire(self) -> &'static str {
        use KernelTool::*;
        match self {
            Ask => "ask",
            Cancel => "cancel",
            DelegateTask => "delegate_task",
            MemoryDelete => "memory_delete",
            MemoryEdit => "memory_edit",
            MemoryGrep => "memory_grep",
            MemoryLs => "memory_ls",
            MemoryRead => "memory_read",
            MemoryWrite => "memory_write",
            RunnersList => "runners_list",
            Send => "send",
            SessionRead => "session_read",
            SessionSearch => "session_search",
            Skill => "skill",
            Spawn => "spawn",
            Status => "status",
            ToolCall => "tool_call",
            ToolSearch => "tool_search",
            Wait => "wait",
        }
    }

    /// The tool of a stored wire name; `None` for any other string.
    pub fn from_wire(wire: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.wire() == wire)
    }

    /// The memory family (`nexus.memory`), run over the round's frozen memory bindings.
    pub const fn is_memory(self) -> bool {
        use KernelTool::*;
        matches!(
            self,
            MemoryDelete | MemoryEdit | MemoryGrep | MemoryLs | MemoryRead | MemoryWrite
        )
    }
}

/// The wire names this version evaluates in-kernel: every registered kernel tool
/// (registry.md §3: every registered name is live), read from [`KernelTool::ALL`].
pub const IMPLEMENTED: [&str; KernelTool::ALL.len()] = {
    let mut out = [""; KernelTool::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = KernelTool::ALL[i].wire();
        i += 1;
    }
    out
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_and_the_registry_name_the_same_tools() {
        let mut registered: Vec<&str> = nexus_core::registry::entries().iter().map(|t| t.wire).collect();
        registered.sort_unstable();
        assert_eq!(registered, IMPLEMENTED, "registry and dispatch table disagree");
        for entry in nexus_core::registry::entries() {
            let tool = KernelTool::from_wire(entry.wire).expect("every registered tool has a row");
            assert_eq!(tool.wire(), entry.wire);
            assert_eq!(tool.is_memory(), entry.family() == "nexus.memory", "{}", entry.wire);
        }
        assert_eq!(
            KernelTool::from_wire("nexus.tasks.wait"),
            None,
            "canonical names are not wire names"
        );
        assert_eq!(KernelTool::from_wire("Wait"), None);
    }

    #[test]
    fn all_is_sorted_and_whole() {
        assert!(IMPLEMENTED.windows(2).all(|w| w[0] < w[1]));
    }
}
