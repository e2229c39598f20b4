//! `nexus.skill.load` (kernel-tools.md §9).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.skill.load",
    wire: "skill",
    effect: EffectProfile::READ,
    template: "Load a skill: a document of instructions for a particular kind of task. Pass the skill's `name` exactly as it appears for this tool in the skills block at the end of your instructions, or in the `skills` of a {{tool_search}} result, and follow the document that comes back. Load a skill before starting the task it covers.\n\nEach skill listed under another tool's name is loaded with that tool instead. The document is read from the source fixed when this work was accepted. A name that is not in your skill catalog, or whose document has since been removed, gives skill_unknown; a malformed name gives skill_name_invalid.",
    parameters: r#"{"type":"object","properties":{
  "name":{"type":"string","description":"The skill's name exactly as listed, such as style-guide: lowercase letters and digits with single hyphens, at most 64 characters."}},
  "required":["name"]}"#,
};
