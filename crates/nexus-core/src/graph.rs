//! The run graph's mermaid flowchart (runs.md §10).

/// One node of `GET R/graph`, as the flowchart needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphNode<'a> {
    /// `n0, n1, …` in creation order.
    pub id: &'a str,
    /// The task key.
    pub key: &'a str,
    /// `model_task`, `tool_task` or `await_task`.
    pub kind: &'a str,
    /// The public status.
    pub status: &'a str,
    /// The tool name of a tool row.
    pub tool_name: Option<&'a str>,
}

/// The fill of each status's `classDef`. A status not listed gets [`DEFAULT_FILL`].
pub const STATUS_FILLS: [(&str, &str); 11] = [
    ("waiting", "#eee"),
    ("needs_approval", "#ffd"),
    ("running", "#ddf"),
    ("dispatched", "#dff"),
    ("awaiting_input", "#fdf"),
    ("completed", "#dfd"),
    ("failed", "#fdd"),
    ("canceled", "#ccc"),
    ("timed_out", "#fed"),
    ("skipped", "#f8f8f8"),
    ("uncertain", "#fec"),
];

/// The fill of a status missing from [`STATUS_FILLS`].
pub const DEFAULT_FILL: &str = "#fff";

/// The fill for `status`.
pub fn fill_of(status: &str) -> &'static str {
    STATUS_FILLS
        .iter()
        .find(|(s, _)| *s == status)
        .map_or(DEFAULT_FILL, |(_, f)| f)
}

/// The flowchart of runs.md §10:
///
/// ```text
/// flowchart TD
///   n0["key · kind · status[ · tool]"]     one line per node, in the given order
///   n0 --> n1                              one line per edge, in the given order
///   classDef <status> fill:<fill>          one per status that appears, first appearance order
///   class n0 <status>                      one per node, in node order
/// ```
///
/// Labels escape `"` as `#quot;`. Lines are joined by `\n`, with no trailing newline. A status
/// word is used as a class name with every character outside `[A-Za-z0-9_]` replaced by `_`.
pub fn mermaid(nodes: &[GraphNode], edges: &[(&str, &str)]) -> String {
    let mut lines = vec!["flowchart TD".to_owned()];
    for n in nodes {
        let mut label = format!("{} · {} · {}", n.key, n.kind, n.status);
        if let Some(tool) = n.tool_name {
            label.push_str(" · ");
            label.push_str(tool);
        }
        lines.push(format!("  {}[\"{}\"]", n.id, label.replace('"', "#quot;")));
    }
    for (from, to) in edges {
        lines.push(format!("  {from} --> {to}"));
    }
    let mut statuses: Vec<&str> = Vec::new();
    for n in nodes {
        if !statuses.contains(&n.status) {
            statuses.push(n.status);
        }
    }
    for s in &statuses {
        lines.push(format!("  classDef {} fill:{}", class_name(s), fill_of(s)));
    }
    for n in nodes {
        lines.push(format!("  class {} {}", n.id, class_name(n.status)));
    }
    lines.join("\n")
}

fn class_name(status: &str) -> String {
    status
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node<'a>(id: &'a str, key: &'a str, kind: &'a str, status: &'a str, tool: Option<&'a str>) -> GraphNode<'a> {
        GraphNode {
            id,
            key,
            kind,
            status,
            tool_name: tool,
        }
    }

    /// The example of runs.md §10. The spec's block shows only the `failed` classDef; "every
    /// status that appears gets a classDef" adds `completed` and `running`, and every node gets
    /// its `class` line. Every line of the spec's block appears, in the spec's order.
    #[test]
    fn the_spec_example() {
        let nodes = [
            node("n0", "s1-model-1", "model_task", "completed", None),
            node("n1", "r1t0", "tool_task", "completed", Some("read")),
            node("n2", "r1t1", "tool_task", "failed", Some("grep")),
            node("n3", "r1", "model_task", "running", None),
        ];
        let edges = [("n0", "n1"), ("n0", "n2"), ("n1", "n3"), ("n2", "n3")];
        let got = mermaid(&nodes, &edges);
        let want = "flowchart TD
  n0[\"s1-model-1 · model_task · completed\"]
  n1[\"r1t0 · tool_task · completed · read\"]
  n2[\"r1t1 · tool_task · failed · grep\"]
  n3[\"r1 · model_task · running\"]
  n0 --> n1
  n0 --> n2
  n1 --> n3
  n2 --> n3
  classDef completed fill:#dfd
  classDef failed fill:#fdd
  classDef running fill:#ddf
  class n0 completed
  class n1 completed
  class n2 failed
  class n3 running";
        assert_eq!(got, want);

        let spec = "flowchart TD
  n0[\"s1-model-1 · model_task · completed\"]
  n1[\"r1t0 · tool_task · completed · read\"]
  n2[\"r1t1 · tool_task · failed · grep\"]
  n3[\"r1 · model_task · running\"]
  n0 --> n1
  n0 --> n2
  n1 --> n3
  n2 --> n3
  classDef failed fill:#fdd
  class n2 failed";
        let got_lines: Vec<&str> = got.lines().collect();
        let mut at = 0;
        for line in spec.lines() {
            let pos = got_lines[at..].iter().position(|l| *l == line);
            assert!(pos.is_some(), "spec line {line:?} missing or out of order");
            at += pos.unwrap() + 1;
        }
    }

    #[test]
    fn labels_escape_quotes() {
        let nodes = [node("n0", "k", "tool_task", "waiting", Some("say \"hi\""))];
        let got = mermaid(&nodes, &[]);
        assert!(
            got.contains("  n0[\"k · tool_task · waiting · say #quot;hi#quot;\"]"),
            "{got}"
        );
        assert!(!got.contains("\"hi\""));
    }

    #[test]
    fn every_status_gets_one_classdef_with_its_fill() {
        let statuses: Vec<&str> = STATUS_FILLS.iter().map(|(s, _)| *s).collect();
        let ids: Vec<String> = (0..statuses.len() * 2).map(|i| format!("n{i}")).collect();
        let nodes: Vec<GraphNode> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| node(id, "k", "tool_task", statuses[i % statuses.len()], None))
            .collect();
        let got = mermaid(&nodes, &[]);
        for (s, fill) in STATUS_FILLS {
            assert_eq!(got.matches(&format!("  classDef {s} fill:{fill}\n")).count(), 1, "{s}");
        }
        for (i, id) in ids.iter().enumerate() {
            assert!(got.contains(&format!("  class {id} {}", statuses[i % statuses.len()])));
        }
        let fills: std::collections::HashSet<&str> = STATUS_FILLS.iter().map(|(_, f)| *f).collect();
        assert_eq!(fills.len(), STATUS_FILLS.len(), "fills are distinct");
    }

    #[test]
    fn unknown_status_gets_the_default_fill_and_a_safe_class_name() {
        let nodes = [node("n0", "k", "await_task", "odd-status", None)];
        let got = mermaid(&nodes, &[]);
        assert!(got.contains("  classDef odd_status fill:#fff"), "{got}");
        assert!(got.ends_with("  class n0 odd_status"), "{got}");
    }

    #[test]
    fn empty_graph_is_just_the_header() {
        assert_eq!(mermaid(&[], &[]), "flowchart TD");
    }
}
