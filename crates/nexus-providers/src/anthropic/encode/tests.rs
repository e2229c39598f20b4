//! The encoder's cache gives exactly the bytes (and digest) of a cold encode.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::*;
use crate::config::Kind;
use crate::neutral::{Part, RawToolCall, RequestOptions};

fn config(caching: bool) -> InstanceConfig {
    let mut c = InstanceConfig::of(Kind::Anthropic);
    c.prompt_caching = caching;
    c
}

fn request(entries: Vec<Entry>) -> ModelRequest {
    ModelRequest {
        provider: "anthropic".into(),
        model: "m".into(),
        system: vec!["sys".into()],
        entries,
        tools: vec![
            json!({"type":"function","function":{"name":"read","parameters":{"type":"object"},"strict":false}}),
        ],
        tools_deferred: vec![],
        options: RequestOptions::default(),
    }
}

fn upload(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn blobs() -> HashMap<Uuid, Vec<u8>> {
    (1..=3).map(|n| (upload(n), vec![n as u8; 10 * n as usize])).collect()
}

/// Encodes `req` warm (on `encoder`) and cold (on a fresh one): same bytes, right digest.
fn check(encoder: &Encoder, req: &ModelRequest, blobs: &dyn BlobReader, caching: bool) -> Vec<u8> {
    check_continuing(encoder, req, blobs, caching, None).0
}

/// [`check`] of an encode continuing `prior`; the body and the encode's mark.
fn check_continuing(
    encoder: &Encoder,
    req: &ModelRequest,
    blobs: &dyn BlobReader,
    caching: bool,
    prior: Option<Continues>,
) -> (Vec<u8>, ChainMark) {
    let (warm, warm_sha, _, mark) = encoder.body(req, blobs, &config(caching), prior).unwrap();
    let (cold, ..) = Encoder::default().body(req, blobs, &config(caching), None).unwrap();
    assert_eq!(String::from_utf8_lossy(&warm), String::from_utf8_lossy(&cold));
    assert_eq!(warm_sha, <[u8; 32]>::from(Sha256::digest(&warm)));
    serde_json::from_slice::<Value>(&warm).expect("the body is JSON");
    (warm, mark.expect("a mark"))
}

/// A small deterministic generator of entries of every shape.
struct Gen(u64);

impl Gen {
    fn pick(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    fn text(&mut self) -> String {
        ["", " ", "a", "b\"c", "é\n"][self.pick(5) as usize].to_string()
    }

    fn part(&mut self) -> Part {
        match self.pick(3) {
            0 => Part::text(self.text()),
            1 => Part::Image {
                upload: upload(1 + self.pick(3) as u128),
                media_type: "image/png".into(),
            },
            _ => Part::Document {
                upload: upload(1 + self.pick(3) as u128),
            },
        }
    }

    fn entry(&mut self) -> Entry {
        match self.pick(4) {
            0 => Entry::User {
                parts: (0..self.pick(3)).map(|_| self.part()).collect(),
            },
            1 => Entry::Assistant {
                text: (self.pick(2) == 1).then(|| self.text()),
                tool_calls: (0..self.pick(3))
                    .map(|i| RawToolCall {
                        id: format!("c{i}"),
                        name: "read".into(),
                        arguments: ["{}", r#"{"b":1,"a":2}"#, "nope", "[1]"][self.pick(4) as usize].into(),
                    })
                    .collect(),
                native: match self.pick(3) {
                    0 => None,
                    1 => Some(json!([{"type":"thinking","thinking":"t","signature":"s"}])),
                    _ => Some(json!({"type":"redacted_thinking","data":"d"})),
                },
            },
            2 => Entry::ToolResult {
                call_id: "c0".into(),
                name: "read".into(),
                output: self.text(),
                is_error: self.pick(2) == 1,
            },
            _ => Entry::Attachments {
                parts: (0..self.pick(3)).map(|_| self.part()).collect(),
            },
        }
    }
}

#[test]
fn growing_histories_encode_as_cold() {
    let blobs = blobs();
    for seed in 0..40 {
        let mut g = Gen(seed);
        let caching = seed % 2 == 0;
        let encoder = Encoder::default();
        let mut entries = vec![Entry::user_text("start")];
        for _ in 0..25 {
            check(&encoder, &request(entries.clone()), &blobs, caching);
            for _ in 0..=g.pick(3) {
                entries.push(g.entry());
            }
        }
        // A branch from the middle, then the main chain again; a shorter history.
        let mut branch = entries[..entries.len() / 2].to_vec();
        branch.push(Entry::user_text("branch"));
        check(&encoder, &request(branch), &blobs, caching);
        check(&encoder, &request(entries.clone()), &blobs, caching);
        check(&encoder, &request(entries[..3].to_vec()), &blobs, caching);
    }
}

#[test]
fn growing_histories_continued_by_mark_encode_as_cold() {
    let blobs = blobs();
    for seed in 0..40 {
        let mut g = Gen(seed);
        let caching = seed % 2 == 1;
        let encoder = Encoder::default();
        let mut entries = vec![Entry::user_text("start")];
        let mut prior = None;
        for _ in 0..25 {
            let (_, mark) = check_continuing(&encoder, &request(entries.clone()), &blobs, caching, prior);
            prior = Some(Continues {
                mark,
                entries: entries.len(),
            });
            for _ in 0..=g.pick(3) {
                entries.push(g.entry());
            }
        }
        assert_eq!(encoder.slot_count(), 1, "one chain, one slot");
        assert_eq!(by_mark(&encoder), 24, "every round after the first resumed by its mark");
        // A branch from the middle takes a slot of its own: the main chain's word still finds
        // its slot.
        let mut branch = entries[..entries.len() / 2].to_vec();
        branch.push(Entry::user_text("branch"));
        check(&encoder, &request(branch), &blobs, caching);
        let (_, mark) = check_continuing(&encoder, &request(entries.clone()), &blobs, caching, prior);
        assert_eq!(by_mark(&encoder), 25);
        // Another request that extends the slot (found by comparison) moves it on: the word
        // for the one before finds no slot by its mark, and comparison encodes it.
        let mut elsewhere = entries.clone();
        elsewhere.push(Entry::user_text("elsewhere"));
        check(&encoder, &request(elsewhere), &blobs, caching);
        let stale = Continues {
            mark,
            entries: entries.len(),
        };
        entries.push(Entry::user_text("next"));
        check_continuing(&encoder, &request(entries.clone()), &blobs, caching, Some(stale));
        // A word for a request with another head is ignored.
        let (_, mark) = check_continuing(&encoder, &request(entries.clone()), &blobs, caching, None);
        let mut other = request(entries.clone());
        other.system = vec!["other".into()];
        let prior = Continues {
            mark,
            entries: entries.len(),
        };
        check_continuing(&encoder, &other, &blobs, caching, Some(prior));
        assert_eq!(by_mark(&encoder), 25, "no other request resumed by a mark");
    }
}

fn by_mark(encoder: &Encoder) -> usize {
    encoder.slots.taken_by_mark.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn a_round_resumes_its_chain() {
    let encoder = Encoder::default();
    let mut entries = vec![Entry::user_text("go")];
    for i in 0..10 {
        check(&encoder, &request(entries.clone()), &NoBlobsHere, true);
        entries.push(Entry::Assistant {
            text: None,
            tool_calls: vec![RawToolCall {
                id: format!("c{i}"),
                name: "read".into(),
                arguments: "{}".into(),
            }],
            native: None,
        });
        entries.push(Entry::ToolResult {
            call_id: format!("c{i}"),
            name: "read".into(),
            output: "ok".into(),
            is_error: false,
        });
    }
    assert_eq!(encoder.slot_count(), 1);
    encoder.slots.inspect(|slots| {
        // Everything but the last user message (the results of round 9) is kept.
        assert_eq!(slots[0].entries.len(), entries.len() - 3);
        assert!(!String::from_utf8_lossy(&slots[0].messages).contains("cache_control"));
    });
}

/// No upload is known.
struct NoBlobsHere;

impl BlobReader for NoBlobsHere {
    fn bytes(&self, _upload: Uuid) -> Option<&[u8]> {
        None
    }
}

#[test]
fn a_final_assistant_message_keeps_the_breakpoint_on_the_last_user_message() {
    let encoder = Encoder::default();
    let mut entries = vec![Entry::user_text("a"), Entry::user_text("b")];
    check(&encoder, &request(entries.clone()), &NoBlobsHere, true);
    entries.push(Entry::Assistant {
        text: Some("prefill".into()),
        tool_calls: vec![],
        native: None,
    });
    let body = check(&encoder, &request(entries.clone()), &NoBlobsHere, true);
    let text = String::from_utf8(body).unwrap();
    assert!(
        text.contains(r#"{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]},{"role":"assistant""#),
        "{text}"
    );
    // And again, now that the user message is in the kept bytes.
    entries.push(Entry::Assistant {
        text: Some("more".into()),
        tool_calls: vec![],
        native: None,
    });
    check(&encoder, &request(entries), &NoBlobsHere, true);
}

#[test]
fn a_kept_upload_that_is_gone_is_an_error_again() {
    let encoder = Encoder::default();
    let blobs = blobs();
    let mut entries = vec![
        Entry::User {
            parts: vec![Part::Document { upload: upload(2) }],
        },
        Entry::Assistant {
            text: Some("seen".into()),
            tool_calls: vec![],
            native: None,
        },
    ];
    check(&encoder, &request(entries.clone()), &blobs, true);
    entries.push(Entry::user_text("next"));
    let err = encoder
        .body(&request(entries), &NoBlobsHere, &config(true), None)
        .unwrap_err();
    assert!(err.detail.unwrap().contains(&upload(2).to_string()));
}

#[test]
fn ordered_native_values_are_compared_in_order() {
    let encoder = Encoder::default();
    let native = |v: Value| Entry::Assistant {
        text: None,
        tool_calls: vec![],
        native: Some(v),
    };
    let a = vec![
        Entry::user_text("q"),
        native(json!([{"a":1,"b":2}])),
        Entry::user_text("r"),
    ];
    let b = vec![
        Entry::user_text("q"),
        native(json!([{"b":2,"a":1}])),
        Entry::user_text("r"),
    ];
    check(&encoder, &request(a), &NoBlobsHere, true);
    let body = check(&encoder, &request(b), &NoBlobsHere, true);
    assert!(String::from_utf8(body).unwrap().contains(r#"{"b":2,"a":1}"#));
}

#[test]
fn thinking_budgets() {
    assert_eq!(thinking_budget(None, 8_192), None);
    assert_eq!(thinking_budget(Some("low"), 8_192), Some(2_048));
    assert_eq!(thinking_budget(Some("medium"), 64_000), Some(8_192));
    assert_eq!(thinking_budget(Some("high"), 64_000), Some(32_768));
    assert_eq!(thinking_budget(Some("high"), 8_192), Some(8_191));
    assert_eq!(thinking_budget(Some("5000"), 64_000), Some(5_000));
    assert_eq!(thinking_budget(Some("low"), 1_024), None, "below the minimum");
    assert_eq!(thinking_budget(Some("none"), 64_000), None);
    assert_eq!(thinking_budget(Some("minimal"), 64_000), None);
}
