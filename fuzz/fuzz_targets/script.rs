//! The scripted model's grammars (providers.md §7): a script file (JSON Lines) and the echo
//! mode's `[[call:<name> <json object>]]` directives. Input: the bytes as text.
//!
//! Properties: a parsed script's line numbers rise and name non-blank lines; every reply has
//! a non-empty id and name per call; each found directive has a name without whitespace and
//! canonical object arguments, and written back alone it is found again unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nexus_providers::scripted::call_directives;
use nexus_providers::scripted::script::parse_script;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(lines) = parse_script("fuzz.jsonl", &text) {
        let all: Vec<&str> = text.lines().collect();
        let mut last = 0;
        for (k, line) in lines.iter().enumerate() {
            assert!(line.line_no > last, "line numbers do not rise");
            last = line.line_no;
            assert!(!all[line.line_no - 1].trim().is_empty());
            assert!(!line.thread.is_empty());
            let reply = line.reply(k);
            for call in &reply.tool_calls {
                assert!(!call.id.is_empty() && !call.name.is_empty());
            }
        }
    }
    for (name, arguments) in call_directives(&text) {
        assert!(!name.is_empty() && !name.contains(char::is_whitespace), "{name:?}");
        let value: serde_json::Value = serde_json::from_str(&arguments).expect("arguments are JSON");
        assert!(value.is_object());
        let again = call_directives(&format!("[[call:{name} {arguments}]]"));
        assert_eq!(again, vec![(name, arguments)], "a directive does not round-trip");
    }
});
