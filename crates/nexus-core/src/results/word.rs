//! The words of kernel tool error results (kernel-tools.md §0): an error result's content is
//! one line `<word>: <sentence>`, and the model (and the tests) branch on the word. These are
//! tool-result data, not HTTP codes; where a word is also an HTTP code or a task error key,
//! its spelling is read from that table so the two cannot drift.

use crate::codes::{Code, task_error};

/// One error-result word. [`ToolWord::as_str`] is its wire spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolWord {
    /// A missing, blank, mistyped or out-of-range parameter, or an unknown key (§0).
    ParameterInvalid,
    /// An import field on `delegate_task` (§0, §2).
    ContextNotAuthorable,
    PromptRequired,
    InvalidWait,
    InvalidLifetime,
    InvalidWake,
    ToolNotDeclared,
    ModelNotAuthorized,
    DelegationTooDeep,
    ToolCallRefused,
    RecursiveToolCall,
    /// `tool_call` naming no callable of the declaration (the task error key of the same name).
    UnknownTool,
    InvalidAskOptions,
    InvalidAskMulti,
    WaitTargetNotFound,
    WaitCycle,
    SpawnNeedsConversation,
    PrincipalUnknown,
    AnswererNotEligible,
    LabelInvalid,
    LabelTaken,
    RunnerNotEligible,
    UnknownConversation,
    AncestorConversation,
    ConversationArchived,
    InputQueueFull,
    DeliverAtAmbiguous,
    DeliverAtInPast,
    DeliverAtTooFar,
    DeliverAtNotSteerable,
    MemoryPathInvalid,
    MemoryReservedPrefix,
    MemoryDocumentTooLarge,
    MemoryNotFound,
    MemoryFull,
    MemoryEditNoMatch,
    MemoryEditAmbiguous,
    MemoryPatternInvalid,
    SkillNameInvalid,
    SkillUnknown,
    SkillDescriptionRequired,
    /// A state the tool's own locks make unreachable, or content that failed to normalize.
    InternalError,
}

impl ToolWord {
    /// Every word, in declaration order.
    pub const ALL: [ToolWord; 42] = {
        use ToolWord::*;
        [
            ParameterInvalid,
            ContextNotAuthorable,
            PromptRequired,
            InvalidWait,
            InvalidLifetime,
            InvalidWake,
            ToolNotDeclared,
            ModelNotAuthorized,
            DelegationTooDeep,
            ToolCallRefused,
            RecursiveToolCall,
            UnknownTool,
            InvalidAskOptions,
            InvalidAskMulti,
            WaitTargetNotFound,
            WaitCycle,
            SpawnNeedsConversation,
            PrincipalUnknown,
            AnswererNotEligible,
            LabelInvalid,
            LabelTaken,
            RunnerNotEligible,
            UnknownConversation,
            AncestorConversation,
            ConversationArchived,
            InputQueueFull,
            DeliverAtAmbiguous,
            DeliverAtInPast,
            DeliverAtTooFar,
            DeliverAtNotSteerable,
            MemoryPathInvalid,
            MemoryReservedPrefix,
            MemoryDocumentTooLarge,
            MemoryNotFound,
            MemoryFull,
            MemoryEditNoMatch,
            MemoryEditAmbiguous,
            MemoryPatternInvalid,
            SkillNameInvalid,
            SkillUnknown,
            SkillDescriptionRequired,
            InternalError,
        ]
    };

    /// The word as the result line spells it.
    pub const fn as_str(self) -> &'static str {
        use ToolWord::*;
        match self {
            ParameterInvalid => Code::ParameterInvalid.as_str(),
            ContextNotAuthorable => "context_not_authorable",
            PromptRequired => "prompt_required",
            InvalidWait => "invalid_wait",
            InvalidLifetime => "invalid_lifetime",
            InvalidWake => "invalid_wake",
            ToolNotDeclared => "tool_not_declared",
            ModelNotAuthorized => "model_not_authorized",
            DelegationTooDeep => "delegation_too_deep",
            ToolCallRefused => "tool_call_refused",
            RecursiveToolCall => "recursive_tool_call",
            UnknownTool => task_error::UNKNOWN_TOOL,
            InvalidAskOptions => "invalid_ask_options",
            InvalidAskMulti => "invalid_ask_multi",
            WaitTargetNotFound => "wait_target_not_found",
            WaitCycle => "wait_cycle",
            SpawnNeedsConversation => "spawn_needs_conversation",
            PrincipalUnknown => "principal_unknown",
            AnswererNotEligible => "answerer_not_eligible",
            LabelInvalid => "label_invalid",
            LabelTaken => "label_taken",
            RunnerNotEligible => Code::RunnerNotEligible.as_str(),
            UnknownConversation => "unknown_conversation",
            AncestorConversation => "ancestor_conversation",
            ConversationArchived => "conversation_archived",
            InputQueueFull => "input_queue_full",
            DeliverAtAmbiguous => Code::DeliverAtAmbiguous.as_str(),
            DeliverAtInPast => Code::DeliverAtInPast.as_str(),
            DeliverAtTooFar => Code::DeliverAtTooFar.as_str(),
            DeliverAtNotSteerable => Code::DeliverAtNotSteerable.as_str(),
            MemoryPathInvalid => "memory_path_invalid",
            MemoryReservedPrefix => "memory_reserved_prefix",
            MemoryDocumentTooLarge => "memory_document_too_large",
            MemoryNotFound => "memory_not_found",
            MemoryFull => "memory_full",
            MemoryEditNoMatch => "memory_edit_no_match",
            MemoryEditAmbiguous => "memory_edit_ambiguous",
            MemoryPatternInvalid => "memory_pattern_invalid",
            SkillNameInvalid => "skill_name_invalid",
            SkillUnknown => "skill_unknown",
            SkillDescriptionRequired => "skill_description_required",
            InternalError => Code::InternalError.as_str(),
        }
    }
}

impl std::fmt::Display for ToolWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_distinct_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for w in ToolWord::ALL {
            let s = w.as_str();
            assert!(seen.insert(s), "{s} twice");
            assert!(s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{s}");
        }
        assert_eq!(ToolWord::ParameterInvalid.to_string(), "parameter_invalid");
        assert_eq!(ToolWord::UnknownTool.as_str(), "unknown_tool");
    }
}
