use serde_json::{Value, json};

use super::{func, plain};
use crate::bounds;
use crate::declaration::{SKILLS_BLOCK_HEADER, skills_block};

const UUID: &str = "0190a000-0000-7000-8000-000000000001";

fn mac() -> Value {
    let mut e = func("mac_skill");
    e["route"] = json!({"kind": "runner", "runner_executor_public_id": UUID, "tool_name": "skill"});
    e
}

fn skill(callable: &str, name: &str, source: &str) -> Value {
    let mut s = json!({"callable": callable, "name": name, "description": format!("About {name}."), "source": source});
    if source == "runner" || source == "agent_application" {
        s["executor_public_id"] = json!(UUID);
    }
    s
}

#[test]
fn lines_are_sorted_and_workspace_and_user_carry_no_uuid() {
    let set = vec![plain("skill"), mac()];
    let skills = vec![
        skill("skill", "style-guide", "workspace"),
        skill("mac_skill", "release-notes", "runner"),
        skill("skill", "alpha", "agent_application"),
        skill("skill", "mine", "user"),
    ];
    assert_eq!(
        skills_block(&set, &skills).unwrap(),
        format!(
            "{SKILLS_BLOCK_HEADER}\n- mac_skill / release-notes [{UUID}]: About release-notes.\n- skill / alpha [{UUID}]: About alpha.\n- skill / mine: About mine.\n- skill / style-guide: About style-guide."
        )
    );
}

#[test]
fn deferred_and_undeclared_callables_are_left_out() {
    let mut deferred = mac();
    deferred["defer_loading"] = json!(true);
    let set = vec![plain("skill"), deferred];
    let skills = vec![
        skill("mac_skill", "a", "runner"),
        skill("skill", "b", "user"),
        skill("other", "c", "user"),
    ];
    assert_eq!(
        skills_block(&set, &skills).unwrap(),
        format!("{SKILLS_BLOCK_HEADER}\n- skill / b: About b.")
    );
    assert_eq!(skills_block(&set, &skills[..1]), None);
    assert_eq!(skills_block(&[func("x")], &skills), None);
}

#[test]
fn the_block_is_bounded() {
    let set = vec![plain("skill")];
    let skills: Vec<Value> = (0..1000)
        .map(|i| json!({"callable": "skill", "name": format!("s{i:04}"), "description": "x".repeat(40), "source": "user"}))
        .collect();
    let block = skills_block(&set, &skills).unwrap();
    assert!(block.len() <= bounds::SKILL_CATALOG, "{}", block.len());
    let last = block.lines().last().unwrap();
    let shown = block.lines().count() - 2;
    assert_eq!(last, format!("(+{} more skills not shown)", 1000 - shown));
    assert!(block.contains("- skill / s0000:"));
}
