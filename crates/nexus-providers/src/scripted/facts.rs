//! What `send` needs from a request, taken once.
//!
//! `send` receives only the sealed bytes. Decoding them again (the whole history) to read a
//! handful of facts was half of what `scripted` cost per round, and grew with the history. So
//! `encode`, which holds the structured request, derives those facts ([`Prepared`]) and keeps
//! them in [`Recent`] under the body's SHA-256; `send` looks them up and decodes the body only
//! when they are not there (another `Scripted`, such as after a restart, or an evicted entry).
//!
//! This is exact because the facts are a function of the body alone: decoding the canonical
//! bytes of a request gives back the same entries, strings, tool names and system parts, so
//! [`Prepared::of`] the request and [`Prepared::of`] the decoded body are equal. The one case
//! where decoding could fail on bytes this crate produced (JSON nested deeper than
//! `serde_json`'s recursion limit, in `tools` or a `native` value) is never cached, so `send`
//! decodes and fails as before. Like the attempt counter, the lookup trusts
//! `EncodedRequest::body_sha256` to be the SHA-256 of `body` (it also checks the length).

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};

use super::echo;
use crate::neutral::{Entry, ModelReply, ModelRequest, parts_text};

/// How many encoded requests' facts are kept (a `send` follows its `encode` closely).
const RECENT: usize = 64;

/// The facts `send` needs from one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Prepared {
    /// `scripted/echo`: its whole reply, which depends on nothing but the request.
    Echo(ModelReply),
    /// A script: what reply selection and the line's `expect` read.
    Script(Facts),
}

/// What reply selection and `expect` read from a request (providers.md §7).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Facts {
    /// The script name.
    pub model: String,
    /// The thread the request reads ([`super::thread_of`]).
    pub thread: String,
    /// The number of assistant entries (the line index within the thread).
    pub k: usize,
    /// The function names offered in `tools`.
    pub tool_names: Vec<String>,
    /// The system parts joined by `"\n"`.
    pub system: String,
    /// The last user entry's text (`""` when there is none).
    pub last_user: String,
    /// The total number of parts in attachment entries.
    pub attachments: usize,
    /// The last tool result entry.
    pub last_result: Option<LastResult>,
}

/// The last tool result entry of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LastResult {
    pub call_id: String,
    pub name: String,
    pub output: String,
    pub is_error: bool,
}

impl Prepared {
    /// The facts of `req`, whose encoded body is `body_len` bytes.
    pub(crate) fn of(req: &ModelRequest, body_len: usize) -> Self {
        if req.model == super::ECHO {
            return Self::Echo(echo::reply(req, body_len));
        }
        // One pass from the end: the last user entry and the last result are found early, the
        // counts need every entry.
        let mut facts = Facts {
            model: req.model.clone(),
            thread: super::thread_of(req),
            k: 0,
            tool_names: req.tool_names().into_iter().map(str::to_string).collect(),
            system: req.system.join("\n"),
            last_user: String::new(),
            attachments: 0,
            last_result: None,
        };
        let mut last_user = None;
        for entry in req.entries.iter().rev() {
            match entry {
                Entry::Assistant { .. } => facts.k += 1,
                Entry::Attachments { parts } => facts.attachments += parts.len(),
                Entry::User { parts } => {
                    last_user.get_or_insert(parts.as_slice());
                }
                Entry::ToolResult {
                    call_id,
                    name,
                    output,
                    is_error,
                } => {
                    facts.last_result.get_or_insert_with(|| LastResult {
                        call_id: call_id.clone(),
                        name: name.clone(),
                        output: output.clone(),
                        is_error: *is_error,
                    });
                }
            }
        }
        if let Some(parts) = last_user {
            facts.last_user = parts_text(parts);
        }
        Self::Script(facts)
    }
}

/// A body's SHA-256 and length, and its facts.
type Remembered = ([u8; 32], usize, Arc<Prepared>);

/// The facts of recently encoded requests, by body SHA-256 and length (oldest first).
#[derive(Default)]
pub(crate) struct Recent {
    entries: Mutex<VecDeque<Remembered>>,
}

impl fmt::Debug for Recent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.entries.lock().map_or(0, |e| e.len());
        f.debug_struct("Recent").field("entries", &n).finish()
    }
}

impl Recent {
    /// Remembers the facts of the body with this digest and length.
    pub(crate) fn insert(&self, sha: [u8; 32], len: usize, prepared: Prepared) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.iter().any(|(s, l, _)| *s == sha && *l == len) {
            return;
        }
        if entries.len() >= RECENT {
            entries.pop_front();
        }
        entries.push_back((sha, len, Arc::new(prepared)));
    }

    /// The facts of the body with this digest and length, if remembered.
    pub(crate) fn get(&self, sha: &[u8; 32], len: usize) -> Option<Arc<Prepared>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .iter()
            .rev()
            .find(|(s, l, _)| s == sha && *l == len)
            .map(|(_, _, p)| Arc::clone(p))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use uuid::Uuid;

    use super::*;
    use crate::neutral::{Part, RawToolCall, RequestOptions};

    fn req(model: &str, entries: Vec<Entry>) -> ModelRequest {
        ModelRequest {
            provider: "scripted".into(),
            model: model.into(),
            system: vec!["a".into(), "b".into()],
            entries,
            tools_deferred: vec![],
            tools: vec![
                json!({"type":"function","function":{"name":"read"}}),
                json!({"name":"web_search"}),
                json!({"x":1}),
            ],
            options: RequestOptions::default(),
        }
    }

    /// The facts of a request equal the facts of its decoded canonical bytes.
    #[test]
    fn facts_survive_the_round_trip() {
        let entries = vec![
            Entry::User {
                parts: vec![Part::text("[[thread:side]]"), Part::text("x")],
            },
            Entry::Assistant {
                text: None,
                tool_calls: vec![RawToolCall {
                    id: "c".into(),
                    name: "read".into(),
                    arguments: "{}".into(),
                }],
                native: Some(json!({"n":1.5,"z":[null]})),
            },
            Entry::ToolResult {
                call_id: "c".into(),
                name: "read".into(),
                output: "out\n\"quoted\"".into(),
                is_error: true,
            },
            Entry::Attachments {
                parts: vec![Part::Document { upload: Uuid::nil() }, Part::text("t")],
            },
            Entry::user_text("[[call:read {\"b\":1,\"a\":2}]]"),
        ];
        for model in ["s", "echo"] {
            let r = req(model, entries.clone());
            let body = r.canonical_bytes();
            let back = ModelRequest::from_json_bytes(&body).unwrap();
            assert_eq!(Prepared::of(&r, body.len()), Prepared::of(&back, body.len()));
        }
        let Prepared::Script(f) = Prepared::of(&req("s", entries), 0) else {
            panic!("a script");
        };
        assert_eq!(f.thread, "side");
        assert_eq!(f.k, 1);
        assert_eq!(f.tool_names, ["read", "web_search"]);
        assert_eq!(f.system, "a\nb");
        assert_eq!(f.last_user, "[[call:read {\"b\":1,\"a\":2}]]");
        assert_eq!(f.attachments, 2);
        assert_eq!(f.last_result.unwrap().output, "out\n\"quoted\"");
    }

    #[test]
    fn recent_is_bounded_and_keyed_by_digest_and_length() {
        let recent = Recent::default();
        let facts = |n: usize| Prepared::of(&req("s", vec![]), n);
        for i in 0..=RECENT {
            recent.insert([i as u8; 32], i, facts(i));
        }
        assert!(recent.get(&[0; 32], 0).is_none(), "the oldest is evicted");
        assert!(recent.get(&[1; 32], 1).is_some());
        assert!(recent.get(&[1; 32], 2).is_none());
        assert_eq!(recent.entries.lock().unwrap().len(), RECENT);
    }
}
