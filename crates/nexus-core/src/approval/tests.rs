use serde_json::{Value, json};

use super::*;

fn word(rules: Value) -> (&'static str, String) {
    let e = parse_rules(&rules).unwrap_err();
    (e.reason, e.path)
}

#[test]
fn the_spec_example_parses() {
    let rules = parse_rules(&json!([
        {"tool": "read|glob|grep|memory_*|tool_search|runners_list", "verdict": "allow"},
        {"tool": "start_process", "path": "command", "match": "rm *", "verdict": "deny", "reason": "no deletions"},
        {"tool": "*", "verdict": "ask"}
    ]))
    .unwrap();
    assert_eq!(rules.len(), 3);
    assert_eq!(rules[1].path, Some(vec!["command".to_string()]));
    assert_eq!(rules[0].origin, Origin::Model);
}

#[test]
fn every_rule_word() {
    assert_eq!(word(json!({})), ("not_a_list", String::new()));
    assert_eq!(word(json!([1])), ("not_an_object", "/0".into()));
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "allow", "when": 1}])),
        ("unknown_key", "/0/when".into())
    );
    assert_eq!(word(json!([{"verdict": "allow"}])), ("tool_required", "/0/tool".into()));
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "maybe"}])),
        ("verdict_invalid", "/0/verdict".into())
    );
    assert_eq!(word(json!([{"tool": "*"}])), ("verdict_invalid", "/0/verdict".into()));
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "deny", "origin": "human"}])),
        ("origin_invalid", "/0/origin".into())
    );
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "deny", "match": "x"}])),
        ("match_without_path", "/0/match".into())
    );
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "deny", "path": "a..b"}])),
        ("path_invalid", "/0/path".into())
    );
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "deny", "path": ""}])),
        ("path_invalid", "/0/path".into())
    );
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "deny", "path": 3}])),
        ("path_invalid", "/0/path".into())
    );
    assert_eq!(
        word(json!([{"tool": "a||b", "verdict": "deny"}])),
        ("glob_invalid", "/0/tool".into())
    );
    assert_eq!(
        word(json!([{"tool": 7, "verdict": "deny"}])),
        ("glob_invalid", "/0/tool".into())
    );
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "deny", "path": "a", "match": 1}])),
        ("glob_invalid", "/0/match".into())
    );
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "deny", "reason": 1}])),
        ("reason_invalid", "/0/reason".into())
    );
    assert_eq!(
        word(json!([{"tool": "*", "verdict": "allow"}, 2])),
        ("not_an_object", "/1".into())
    );
}

#[test]
fn text_at_paths() {
    let input = json!({"command": "rm -rf /", "args": ["a", 1, true], "nested": [{"k": "v"}], "obj": {}});
    let p = |s: &str| s.split('.').map(str::to_string).collect::<Vec<_>>();
    assert_eq!(text_at(&input, &p("command")).as_deref(), Some("rm -rf /"));
    assert_eq!(text_at(&input, &p("args")).as_deref(), Some("a 1 true"));
    assert_eq!(text_at(&input, &p("nested.0.k")).as_deref(), Some("v"));
    assert_eq!(text_at(&input, &p("obj")), None);
    assert_eq!(text_at(&input, &p("nested")), None);
    assert_eq!(text_at(&input, &p("missing")), None);
}

#[test]
fn the_verdict_table() {
    let rules = parse_rules(&json!([
        {"tool": "read|memory_*", "verdict": "allow"},
        {"tool": "start_process", "path": "command", "match": "rm *", "verdict": "deny", "reason": "no deletions"},
        {"tool": "start_process", "path": "command", "verdict": "ask"},
        {"tool": "deploy", "verdict": "ask", "origin": "author"}
    ]))
    .unwrap();
    let rm = json!({"command": "rm -rf x"});
    let ls = json!({"command": "ls"});
    let none = json!({});
    let m = Origin::Model;
    // deny wins everywhere, with its reason.
    for mode in [Mode::Bypass, Mode::Ask, Mode::Rules] {
        assert_eq!(
            evaluate(&rules, mode, m, "start_process", &rm),
            Decision::Deny {
                detail: "no deletions".into()
            }
        );
    }
    // bypass grants asks; ask and rules hold them.
    assert_eq!(
        evaluate(&rules, Mode::Bypass, m, "start_process", &ls),
        Decision::Grant(GrantOrigin::Mode)
    );
    assert_eq!(evaluate(&rules, Mode::Ask, m, "start_process", &ls), Decision::Hold);
    assert_eq!(evaluate(&rules, Mode::Rules, m, "start_process", &ls), Decision::Hold);
    // allow only.
    assert_eq!(
        evaluate(&rules, Mode::Bypass, m, "read", &none),
        Decision::Grant(GrantOrigin::Mode)
    );
    assert_eq!(
        evaluate(&rules, Mode::Ask, m, "memory_ls", &none),
        Decision::Grant(GrantOrigin::Rule)
    );
    assert_eq!(
        evaluate(&rules, Mode::Rules, m, "read", &none),
        Decision::Grant(GrantOrigin::Rule)
    );
    // nothing matched.
    assert_eq!(
        evaluate(&rules, Mode::Bypass, m, "grep", &none),
        Decision::Grant(GrantOrigin::Mode)
    );
    assert_eq!(evaluate(&rules, Mode::Ask, m, "grep", &none), Decision::Hold);
    assert_eq!(
        evaluate(&rules, Mode::Rules, m, "grep", &none),
        Decision::Deny {
            detail: "no approval rule allows `grep`".into()
        }
    );
    // author rows only see author rules.
    assert_eq!(
        evaluate(&rules, Mode::Rules, Origin::Author, "grep", &none),
        Decision::Grant(GrantOrigin::Author)
    );
    assert_eq!(
        evaluate(&rules, Mode::Bypass, Origin::Author, "deploy", &none),
        Decision::Hold
    );
    assert_eq!(
        evaluate(&rules, Mode::Rules, Origin::Kernel, "deploy", &none),
        Decision::Grant(GrantOrigin::Kernel)
    );
    // A deny without a reason, and a long reason cut at 256 bytes on a character boundary.
    let plain = parse_rules(&json!([{"tool": "*", "verdict": "deny"}])).unwrap();
    assert_eq!(
        evaluate(&plain, Mode::Bypass, m, "x", &none),
        Decision::Deny {
            detail: "denied by an approval rule".into()
        }
    );
    let long = parse_rules(&json!([{"tool": "*", "verdict": "deny", "reason": "é".repeat(200)}])).unwrap();
    let Decision::Deny { detail } = evaluate(&long, Mode::Bypass, m, "x", &none) else {
        panic!()
    };
    assert_eq!(detail.len(), 256);
}
