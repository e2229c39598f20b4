//! Round expansion refusal (runs.md §7): the round limit and the repeat-call loop.
//!
//! A *chain* is a root round and its continuations (`r{n}` following the round whose calls it
//! reads). When a round completes with calls, the kernel asks [`expansion_refusal`] before
//! authoring the fan; `Some(detail)` fails the round with `round_expansion_refused`.
//!
//! The history the rule reads is the chain's earlier rounds, oldest first, each as a
//! [`RoundRecord`]: the calls it made, each with its [`call_signature`] and a digest of the
//! result it got ([`result_digest`] of the rendered output the continuation read). The round
//! being expanded is not in the history; its calls are `new_calls`.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::jcs;

/// A chain has at most this many rounds since its root.
pub const ROUND_LIMIT: usize = 256;
/// A loop needs this many stale rounds in a row.
pub const STALE_ROUNDS: usize = 8;
/// A round is stale when every call and result already appeared in this many previous rounds.
pub const STALE_WINDOW: usize = 16;
/// The rule reads at most this many rounds back.
pub const LOOK_BACK: usize = 24;

/// `error.detail` when the chain is at [`ROUND_LIMIT`].
pub const ROUND_LIMIT_DETAIL: &str = "round_limit";
/// `error.detail` when the round repeats a loop.
pub const REPEAT_CALL_LOOP_DETAIL: &str = "repeat_call_loop";

/// The signature of one call: SHA-256 (hex) of the canonical JSON of
/// `[wire name, mapped input, target runner or null]`. Equal calls — same wire name, same input
/// up to member order and number spelling, same target — have equal signatures.
pub fn call_signature(wire_name: &str, mapped_input: &Value, target: Option<&str>) -> String {
    let triple = Value::Array(vec![
        Value::String(wire_name.to_owned()),
        mapped_input.clone(),
        target.map_or(Value::Null, |t| Value::String(t.to_lowercase())),
    ]);
    hex::encode(Sha256::digest(jcs::to_string(&triple).as_bytes()))
}

/// The sorted set of a round's call signatures (the round's signature).
pub fn signature_set<S: AsRef<str>>(signatures: &[S]) -> Vec<String> {
    let mut set: Vec<String> = signatures.iter().map(|s| s.as_ref().to_owned()).collect();
    set.sort();
    set.dedup();
    set
}

/// A digest of the result a call got: SHA-256 (hex) of the error flag and the rendered output.
pub fn result_digest(output: &str, is_error: bool) -> String {
    let mut h = Sha256::new();
    h.update([u8::from(is_error)]);
    h.update(output.as_bytes());
    hex::encode(h.finalize())
}

/// One call of a past round: its signature and the digest of the result it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// [`call_signature`].
    pub signature: String,
    /// [`result_digest`].
    pub result: String,
}

/// One past round of the chain. A round with no calls ends the look-back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundRecord {
    /// The round's calls, in call order.
    pub calls: Vec<CallRecord>,
}

/// The repeat-call loop rule: true when each of the last 8 rounds of `history` was stale (every
/// (signature, result) pair of the round already appeared in the 16 rounds before it), and every
/// signature in `new_calls` appears among the last 16 rounds of `history`.
///
/// Only the rounds after the latest call-less round count, and at most the last 24 of them; a
/// window reaching past either limit is shorter (so at least 9 rounds with calls are needed).
/// No new calls is never a loop.
pub fn is_repeat_loop(history: &[RoundRecord], new_calls: &[String]) -> bool {
    if new_calls.is_empty() {
        return false;
    }
    let start = history.iter().rposition(|r| r.calls.is_empty()).map_or(0, |p| p + 1);
    let h = &history[start..];
    let h = &h[h.len().saturating_sub(LOOK_BACK)..];
    let n = h.len();
    if n < STALE_ROUNDS {
        return false;
    }
    let seen_in = |window: &[RoundRecord], call: &CallRecord| window.iter().any(|r| r.calls.contains(call));
    for j in n - STALE_ROUNDS..n {
        let window = &h[j.saturating_sub(STALE_WINDOW)..j];
        if !h[j].calls.iter().all(|c| seen_in(window, c)) {
            return false;
        }
    }
    let recent = &h[n.saturating_sub(STALE_WINDOW)..];
    new_calls
        .iter()
        .all(|s| recent.iter().any(|r| r.calls.iter().any(|c| &c.signature == s)))
}

/// Whether the expanding round is refused, and why (`error.detail`).
///
/// `chain_rounds` counts the rounds of the chain since its root, the expanding round included:
/// at [`ROUND_LIMIT`] the chain already has 256 rounds and expands no further. The limit is
/// checked first.
pub fn expansion_refusal(chain_rounds: usize, history: &[RoundRecord], new_calls: &[String]) -> Option<&'static str> {
    if chain_rounds >= ROUND_LIMIT {
        Some(ROUND_LIMIT_DETAIL)
    } else if is_repeat_loop(history, new_calls) {
        Some(REPEAT_CALL_LOOP_DETAIL)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(sig: &str, result: &str) -> CallRecord {
        CallRecord {
            signature: sig.into(),
            result: result.into(),
        }
    }

    fn round(calls: &[(&str, &str)]) -> RoundRecord {
        RoundRecord {
            calls: calls.iter().map(|(s, r)| call(s, r)).collect(),
        }
    }

    fn sigs(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn signature_ignores_member_order_and_tracks_every_part() {
        let a = call_signature("read", &json!({"path": "a", "n": 1}), None);
        assert_eq!(a, call_signature("read", &json!({"n": 1, "path": "a"}), None));
        assert_eq!(a.len(), 64);
        assert_ne!(a, call_signature("grep", &json!({"path": "a", "n": 1}), None));
        assert_ne!(a, call_signature("read", &json!({"path": "b", "n": 1}), None));
        let t = "0190a8f2-0000-7000-8000-000000000001";
        assert_ne!(a, call_signature("read", &json!({"path": "a", "n": 1}), Some(t)));
        assert_eq!(
            call_signature("read", &json!({}), Some(t)),
            call_signature("read", &json!({}), Some(&t.to_uppercase()))
        );
        // A wire name that looks like JSON cannot collide with another split.
        assert_ne!(
            call_signature("a", &json!("b"), None),
            call_signature("a\",\"b", &Value::Null, None)
        );
    }

    #[test]
    fn signature_set_sorts_and_dedups() {
        assert_eq!(signature_set(&["b", "a", "b"]), sigs(&["a", "b"]));
    }

    #[test]
    fn result_digest_tracks_the_error_flag() {
        assert_ne!(result_digest("x", true), result_digest("x", false));
        assert_ne!(result_digest("x", false), result_digest("y", false));
    }

    #[test]
    fn the_same_call_and_result_over_and_over_is_a_loop() {
        // Round 0 is new; rounds 1..=8 repeat it with the same result: 8 stale rounds.
        let h: Vec<RoundRecord> = (0..9).map(|_| round(&[("s", "r")])).collect();
        assert!(is_repeat_loop(&h, &sigs(&["s"])));
        assert_eq!(expansion_refusal(10, &h, &sigs(&["s"])), Some(REPEAT_CALL_LOOP_DETAIL));
    }

    #[test]
    fn eight_rounds_are_not_enough_for_eight_stale_ones() {
        let h: Vec<RoundRecord> = (0..8).map(|_| round(&[("s", "r")])).collect();
        assert!(!is_repeat_loop(&h, &sigs(&["s"])));
    }

    #[test]
    fn a_new_call_breaks_the_loop() {
        let h: Vec<RoundRecord> = (0..12).map(|_| round(&[("s", "r")])).collect();
        assert!(!is_repeat_loop(&h, &sigs(&["s", "t"])));
        assert!(!is_repeat_loop(&h, &[]), "no new calls is never a loop");
    }

    #[test]
    fn a_changing_result_is_progress() {
        let mut h: Vec<RoundRecord> = (0..12).map(|_| round(&[("s", "r")])).collect();
        h[8] = round(&[("s", "different")]);
        assert!(!is_repeat_loop(&h, &sigs(&["s"])));
    }

    #[test]
    fn a_call_less_round_ends_the_look_back() {
        let mut h: Vec<RoundRecord> = (0..20).map(|_| round(&[("s", "r")])).collect();
        assert!(is_repeat_loop(&h, &sigs(&["s"])));
        h[12] = RoundRecord::default(); // leaves 7 rounds after it
        assert!(!is_repeat_loop(&h, &sigs(&["s"])));
        h[10] = RoundRecord::default();
        h[12] = round(&[("s", "r")]); // leaves 9 rounds after the call-less one
        assert!(is_repeat_loop(&h, &sigs(&["s"])));
    }

    #[test]
    fn alternating_calls_are_a_loop() {
        let h: Vec<RoundRecord> = (0..10)
            .map(|i| {
                if i % 2 == 0 {
                    round(&[("a", "1")])
                } else {
                    round(&[("b", "2")])
                }
            })
            .collect();
        assert!(is_repeat_loop(&h, &sigs(&["a"])));
        assert!(is_repeat_loop(&h, &sigs(&["b", "a"])));
    }

    #[test]
    fn the_stale_window_is_sixteen_rounds() {
        // "a" appears only at round 0; rounds 1..=16 are 16 distinct fresh calls; rounds 17..=24
        // repeat "a" 8 times. Round 17's window (rounds 1..=16) has no "a", so it is not stale.
        let fresh: Vec<String> = (0..16).map(|i| format!("f{i}")).collect();
        let mut h = vec![round(&[("a", "1")])];
        for f in &fresh {
            h.push(round(&[(f.as_str(), "x")]));
        }
        for _ in 0..8 {
            h.push(round(&[("a", "1")]));
        }
        assert!(!is_repeat_loop(&h, &sigs(&["a"])));
        // With round 0 within the window (15 fresh rounds), round 16 finds "a" and so on.
        h.remove(1);
        assert!(is_repeat_loop(&h, &sigs(&["a"])));
    }

    #[test]
    fn new_calls_must_appear_in_the_last_sixteen_rounds() {
        // "old" appears 17+ rounds back only; the last 16 rounds are stale repeats of "s".
        let mut h = vec![round(&[("old", "x")])];
        h.extend((0..17).map(|_| round(&[("s", "r")])));
        assert!(is_repeat_loop(&h, &sigs(&["s"])));
        assert!(!is_repeat_loop(&h, &sigs(&["old"])));
    }

    #[test]
    fn the_round_limit_comes_first() {
        assert_eq!(ROUND_LIMIT, 256);
        assert_eq!(expansion_refusal(255, &[], &sigs(&["s"])), None);
        assert_eq!(expansion_refusal(256, &[], &sigs(&["s"])), Some(ROUND_LIMIT_DETAIL));
        let h: Vec<RoundRecord> = (0..9).map(|_| round(&[("s", "r")])).collect();
        assert_eq!(expansion_refusal(300, &h, &sigs(&["s"])), Some(ROUND_LIMIT_DETAIL));
    }
}
