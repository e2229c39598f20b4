//! Expectations: which request a canned reply answers, and how many times.
//!
//! A route keeps its expectations in the order they were added. A request is answered by the
//! **first** expectation, in that order, that still has answers left and whose [`Matcher`]
//! accepts it; that expectation's count goes down by one. So `529` ×2 followed by a success
//! answers two attempts with `529` and the third with the success. When none matches, the
//! server answers `500` with the reasons and records a [`crate::Mismatch`].

use std::cell::OnceCell;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use axum::body::Bytes;
use serde_json::Value;

use crate::{RecordedRequest, Reply};

type Predicate = Arc<dyn Fn(&RecordedRequest) -> bool + Send + Sync>;

/// One check of a [`Matcher`].
#[derive(Clone)]
enum Check {
    Golden(Bytes),
    IsJson,
    Equals(String, Value),
    Exists(String),
    Absent(String),
    Header(String, String),
    When(String, Predicate),
}

/// Which requests an expectation accepts: all of its checks must pass. An empty matcher
/// ([`Matcher::any`]) accepts every request on the route.
///
/// ```
/// use nexus_fake_upstream::Matcher;
/// use serde_json::json;
/// let m = Matcher::json()
///     .pointer_eq("/model", json!("claude-sonnet-4-5"))
///     .pointer_exists("/tools/0/cache_control")
///     .pointer_absent("/tools/0/strict")
///     .header("anthropic-version", "2023-06-01");
/// ```
#[derive(Clone, Default)]
pub struct Matcher {
    checks: Vec<Check>,
}

impl Matcher {
    /// Accepts every request.
    pub fn any() -> Self {
        Self::default()
    }

    /// Accepts only a body equal, byte for byte, to `golden`. A refusal names the first
    /// differing offset and shows both sides around it.
    pub fn golden(golden: impl Into<Bytes>) -> Self {
        Self::any().and(Check::Golden(golden.into()))
    }

    /// [`Matcher::golden`] with the bytes of a file; panics, naming the path, if it cannot be
    /// read (this is test code).
    pub fn golden_file(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("golden file {}: {e}", path.display()));
        Self::golden(bytes)
    }

    /// Accepts a body that parses as JSON; add pointer checks with the methods below.
    pub fn json() -> Self {
        Self::any().and(Check::IsJson)
    }

    /// The value at JSON pointer `pointer` (RFC 6901, e.g. `/messages/0/content/1/type`)
    /// equals `expected`. Objects compare as sets of members (order is ignored; use
    /// [`Matcher::golden`] for bytes).
    pub fn pointer_eq(self, pointer: impl Into<String>, expected: Value) -> Self {
        self.and(Check::Equals(pointer.into(), expected))
    }

    /// Something, `null` included, is at `pointer`.
    pub fn pointer_exists(self, pointer: impl Into<String>) -> Self {
        self.and(Check::Exists(pointer.into()))
    }

    /// Nothing is at `pointer` (the member is missing, or the index is past the end).
    pub fn pointer_absent(self, pointer: impl Into<String>) -> Self {
        self.and(Check::Absent(pointer.into()))
    }

    /// Header `name` (any case) is present with exactly `value`.
    pub fn header(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.and(Check::Header(name.into().to_ascii_lowercase(), value.into()))
    }

    /// Any other condition; `label` says what it checks in a mismatch report.
    pub fn when(self, label: impl Into<String>, f: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static) -> Self {
        self.and(Check::When(label.into(), Arc::new(f)))
    }

    fn and(mut self, check: Check) -> Self {
        self.checks.push(check);
        self
    }

    /// `Ok` when every check passes, else the first failure in words.
    pub fn check(&self, req: &RecordedRequest) -> Result<(), String> {
        // Parsed once, on the first check that needs it.
        let parsed = OnceCell::new();
        let json = || {
            parsed
                .get_or_init(|| req.try_json().map_err(|e| format!("body is not JSON: {e}")))
                .as_ref()
                .map_err(Clone::clone)
        };
        for check in &self.checks {
            match check {
                Check::Golden(golden) => golden_diff(golden, &req.body)?,
                Check::IsJson => {
                    json()?;
                }
                Check::Equals(pointer, expected) => match json()?.pointer(pointer) {
                    Some(actual) if actual == expected => {}
                    Some(actual) => return Err(format!("{pointer}: expected {expected}, got {actual}")),
                    None => return Err(format!("{pointer}: expected {expected}, got nothing")),
                },
                Check::Exists(pointer) => {
                    if json()?.pointer(pointer).is_none() {
                        return Err(format!("{pointer}: expected a value, got nothing"));
                    }
                }
                Check::Absent(pointer) => {
                    if let Some(actual) = json()?.pointer(pointer) {
                        return Err(format!("{pointer}: expected nothing, got {actual}"));
                    }
                }
                Check::Header(name, value) => match req.header(name) {
                    Some(actual) if actual == value => {}
                    Some(actual) => return Err(format!("header {name}: expected {value:?}, got {actual:?}")),
                    None => return Err(format!("header {name}: expected {value:?}, got nothing")),
                },
                Check::When(label, f) => {
                    if !f(req) {
                        return Err(format!("{label}: not satisfied"));
                    }
                }
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        for check in &self.checks {
            match check {
                Check::Golden(b) => list.entry(&format_args!("golden({} bytes)", b.len())),
                Check::IsJson => list.entry(&format_args!("json")),
                Check::Equals(p, v) => list.entry(&format_args!("{p} == {v}")),
                Check::Exists(p) => list.entry(&format_args!("{p} exists")),
                Check::Absent(p) => list.entry(&format_args!("{p} absent")),
                Check::Header(n, v) => list.entry(&format_args!("{n}: {v}")),
                Check::When(label, _) => list.entry(&format_args!("when({label})")),
            };
        }
        list.finish()
    }
}

/// How far around a difference a golden refusal shows.
const GOLDEN_CONTEXT: usize = 40;

fn golden_diff(golden: &[u8], actual: &[u8]) -> Result<(), String> {
    if golden == actual {
        return Ok(());
    }
    let at = golden.iter().zip(actual).take_while(|(a, b)| a == b).count();
    let window = |bytes: &[u8]| {
        let start = at.saturating_sub(GOLDEN_CONTEXT);
        let end = (at + GOLDEN_CONTEXT).min(bytes.len());
        String::from_utf8_lossy(&bytes[start.min(end)..end]).into_owned()
    };
    Err(format!(
        "body differs from golden at byte {at} (golden {} bytes, got {}): golden …{:?}…, got …{:?}…",
        golden.len(),
        actual.len(),
        window(golden),
        window(actual)
    ))
}

/// How many requests an expectation answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Times {
    /// This many, then requests fall through to the next expectation.
    Exactly(usize),
    /// Every matching request.
    Always,
}

/// A matcher paired with a canned reply, answering [`Times::Exactly`]`(1)` request unless told
/// otherwise.
///
/// ```
/// use nexus_fake_upstream::{anthropic, Expectation, Matcher};
/// let overloaded = Expectation::any(anthropic::overloaded()).times(2);
/// let ok = Expectation::new(Matcher::json(), anthropic::Message::new("m").text("hi").reply()).named("r1");
/// ```
#[derive(Debug, Clone)]
pub struct Expectation {
    pub(crate) matcher: Matcher,
    pub(crate) reply: Reply,
    pub(crate) times: Times,
    pub(crate) label: Option<String>,
}

impl Expectation {
    /// Answers requests accepted by `matcher` with `reply`, once.
    pub fn new(matcher: Matcher, reply: Reply) -> Self {
        Self {
            matcher,
            reply,
            times: Times::Exactly(1),
            label: None,
        }
    }

    /// Answers any request on the route with `reply`, once.
    pub fn any(reply: Reply) -> Self {
        Self::new(Matcher::any(), reply)
    }

    /// Answers `n` requests, then lets later ones fall through.
    pub fn times(mut self, n: usize) -> Self {
        self.times = Times::Exactly(n);
        self
    }

    /// Answers every matching request; never exhausted.
    pub fn always(mut self) -> Self {
        self.times = Times::Always;
        self
    }

    /// A name for mismatch reports and [`crate::FakeUpstream::unused`].
    pub fn named(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// `#index "label"` or `#index`, for reports.
    pub(crate) fn describe(&self, index: usize) -> String {
        match &self.label {
            Some(label) => format!("#{index} {label:?}"),
            None => format!("#{index}"),
        }
    }
}

/// An expectation with its use count, as a route holds it.
#[derive(Debug)]
pub(crate) struct Slot {
    pub expectation: Expectation,
    pub used: usize,
}

impl Slot {
    pub fn has_answers_left(&self) -> bool {
        match self.expectation.times {
            Times::Exactly(n) => self.used < n,
            Times::Always => true,
        }
    }
}

/// Picks the answering expectation of one route, or says why there is none.
pub(crate) fn choose(slots: &mut [Slot], req: &RecordedRequest) -> Result<(usize, Reply), Vec<String>> {
    let mut reasons = Vec::new();
    for (index, slot) in slots.iter_mut().enumerate() {
        let name = slot.expectation.describe(index);
        if !slot.has_answers_left() {
            reasons.push(format!("{name}: exhausted (answered {})", slot.used));
            continue;
        }
        match slot.expectation.matcher.check(req) {
            Ok(()) => {
                slot.used += 1;
                return Ok((index, slot.expectation.reply.clone()));
            }
            Err(why) => reasons.push(format!("{name}: {why}")),
        }
    }
    if reasons.is_empty() {
        reasons.push("the route has no expectations".to_owned());
    }
    Err(reasons)
}
