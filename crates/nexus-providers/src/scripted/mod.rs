//! `scripted` (providers.md §7): deterministic, offline replies from JSON Lines scripts.
//!
//! - A ref `scripted/<name>` reads `<scripts_dir>/<name>.jsonl`; `scripted/echo` is built in.
//!   The script is checked when a request is encoded (so a file written after start is used,
//!   and a bad script fails before sealing) and again by `send`, which needs nothing but the
//!   sealed body: a resend after a restart works the same.
//! - `encode` gives [`ModelRequest::canonical_bytes`] (RFC 8785 JSON of the neutral request,
//!   whose `model` is the script name): the same request always gives the same bytes.
//! - `send` picks the reply statelessly from the body: the thread is `<name>` when the first
//!   user entry holds `[[thread:<name>]]`, else `main`; the reply is the thread's k-th line
//!   (0-based), k = the number of assistant entries already in the request.
//! - Order inside `send`: `delay_ms`, then `expect`, then `error`, then the reply.
//!
//! **What is cached, and why the results are the same as without.** A round must cost the
//! kernel little, and re-reading the script, re-serializing the whole history and decoding it
//! again all grew with the script or the history. Each cache below gives exactly what the
//! uncached computation gives; each module says why:
//! - parsed scripts, per file, revalidated by a `stat` on every use (`scripts.rs`);
//! - the previous rounds' canonical bytes and SHA-256 state, extended when a request's entries
//!   extend them (`encoder.rs`);
//! - the facts `send` reads (thread, k, what `expect` checks, echo's reply), derived by
//!   `encode` and looked up by body digest, so `send` does not decode the body (`facts.rs`).
//!
//! **Attempt counting.** `error.times` fails the first `times` attempts. Attempts are counted in
//! memory, per body SHA-256, inside this `Scripted` value: a process restart (or a new
//! `Scripted`) resets the count. That is fine for tests, which run in one process.

mod echo;
mod encoder;
mod facts;
pub mod script;
mod scripts;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::neutral::{ModelReply, ModelRequest, parts_text};
use crate::provider::{BlobReader, DeltaSink, EncodedRequest, ModelCapabilities, Provider, ProviderError, SendFuture};
use encoder::Encoder;
use facts::{Facts, Prepared, Recent};
use script::Expect;
use scripts::{Probe, Scripts};

pub use echo::call_directives;

/// The built-in model name of the echo script.
pub const ECHO: &str = "echo";

/// The `scripted` provider over one scripts directory.
#[derive(Debug)]
pub struct Scripted {
    scripts_dir: PathBuf,
    capabilities: ModelCapabilities,
    attempts: Mutex<HashMap<[u8; 32], u32>>,
    scripts: Scripts,
    encoder: Encoder,
    recent: Recent,
}

impl Scripted {
    /// A provider reading `<scripts_dir>/<name>.jsonl`. The directory need not exist yet.
    pub fn new(scripts_dir: impl Into<PathBuf>) -> Self {
        Self {
            scripts_dir: scripts_dir.into(),
            capabilities: Self::default_capabilities(),
            attempts: Mutex::new(HashMap::new()),
            scripts: Scripts::default(),
            encoder: Encoder::default(),
            recent: Recent::default(),
        }
    }

    /// Replaces the capabilities every model reports (configured instances).
    pub fn with_capabilities(mut self, capabilities: ModelCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Window 200,000, output 8,192, media image/png, jpeg, gif, webp and application/pdf, tools.
    pub fn default_capabilities() -> ModelCapabilities {
        ModelCapabilities {
            context_window: 200_000,
            max_output_tokens: 8_192,
            media: BTreeSet::from(
                ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"].map(String::from),
            ),
            tools: true,
            native_tool_search: false,
        }
    }

    /// The directory scripts are read from.
    pub fn scripts_dir(&self) -> &Path {
        &self.scripts_dir
    }

    /// The file of script `name`; `provider_error` `invalid_script_name` for a name that could
    /// leave the directory (empty, `.` or `..` segments, backslashes).
    fn script_path(&self, name: &str) -> Result<(PathBuf, String), ProviderError> {
        let bad = name.is_empty()
            || name.contains('\\')
            || name.split('/').any(|seg| seg.is_empty() || seg == "." || seg == "..");
        if bad {
            return Err(ProviderError::error(format!("invalid_script_name: {name}")));
        }
        let file = format!("{name}.jsonl");
        Ok((self.scripts_dir.join(&file), file))
    }

    async fn reply(&self, enc: &EncodedRequest) -> Result<ModelReply, ProviderError> {
        let prepared = match self.recent.get(&enc.body_sha256, enc.body.len()) {
            Some(prepared) => prepared,
            None => {
                let req = ModelRequest::from_json_bytes(&enc.body)
                    .map_err(|e| ProviderError::error(format!("undecodable_body: {e}")))?;
                Arc::new(Prepared::of(&req, enc.body.len()))
            }
        };
        let facts = match &*prepared {
            Prepared::Echo(reply) => return Ok(reply.clone()),
            Prepared::Script(facts) => facts,
        };
        let (path, file) = self.script_path(&facts.model)?;
        // The `stat` is a blocking call (as `encode`'s is); a read, when needed, is not.
        let script = match self.scripts.probe(&path) {
            Probe::Fresh(script) => script,
            Probe::Stale(stale) => {
                let read = tokio::fs::read_to_string(&path).await;
                self.scripts.load(&path, &file, stale, read)?
            }
        };
        let k = facts.k;
        let line = script
            .line(&facts.thread, k)
            .ok_or_else(|| ProviderError::error("script_exhausted"))?;
        if line.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(line.delay_ms)).await;
        }
        if let Some(expect) = &line.expect {
            check_expect(expect, facts).map_err(|a| ProviderError::error(format!("script_expectation_failed: {a}")))?;
        }
        if let Some(injected) = &line.error {
            let fails = match injected.times {
                None => true,
                Some(times) => {
                    let mut attempts = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
                    let n = attempts.entry(enc.body_sha256).or_insert(0);
                    *n = n.saturating_add(1);
                    *n <= times
                }
            };
            if fails {
                let detail = format!("scripted error ({file} line {})", line.line_no);
                return Err(ProviderError::from_key(injected.key, Some(detail), injected.status)
                    .expect("script keys are validated at parse"));
            }
        }
        Ok(line.reply(k))
    }
}

impl Provider for Scripted {
    fn kind(&self) -> &'static str {
        "scripted"
    }

    fn capabilities(&self, _model: &str) -> ModelCapabilities {
        self.capabilities.clone()
    }

    /// Checks the script exists and parses (so a bad script fails before sealing), then
    /// returns the canonical JSON of `req`.
    fn encode(&self, req: &ModelRequest, _blobs: &dyn BlobReader) -> Result<EncodedRequest, ProviderError> {
        if req.model != ECHO {
            let (path, file) = self.script_path(&req.model)?;
            self.scripts.get(&path, &file)?;
        }
        let encoded = self
            .encoder
            .encode(req)
            .map_err(|e| ProviderError::error(format!("unencodable_request: {e}")))?;
        if encoded.decodable {
            self.recent.insert(
                encoded.sha256,
                encoded.body.len(),
                Prepared::of(req, encoded.body.len()),
            );
        }
        let tools = (!req.tools.is_empty()).then_some(encoded.tools);
        Ok(EncodedRequest {
            url: format!("scripted:{}", req.model),
            headers: vec![("content-type".to_string(), "application/json".to_string())],
            body: encoded.body,
            body_sha256: encoded.sha256,
            tools,
            chain: None,
        })
    }

    fn send<'a>(&'a self, enc: &'a EncodedRequest, _deltas: &'a dyn DeltaSink) -> SendFuture<'a> {
        Box::pin(self.reply(enc))
    }
}

/// The thread a request reads: `<name>` from the first `[[thread:<name>]]` in the first user
/// entry, else `main`.
pub fn thread_of(req: &ModelRequest) -> String {
    const OPEN: &str = "[[thread:";
    req.first_user()
        .map(parts_text)
        .and_then(|text| {
            let start = text.find(OPEN)? + OPEN.len();
            let len = text[start..].find("]]")?;
            let name = text[start..start + len].trim();
            (!name.is_empty()).then(|| name.to_string())
        })
        .unwrap_or_else(|| "main".to_string())
}

/// Checks `expect` against the request's facts; `Err` is the failed assertion.
fn check_expect(expect: &Expect, req: &Facts) -> Result<(), String> {
    for want in &expect.tools_include {
        if !req.tool_names.contains(want) {
            return Err(format!("tools_include {want}"));
        }
    }
    for unwanted in &expect.tools_exclude {
        if req.tool_names.contains(unwanted) {
            return Err(format!("tools_exclude {unwanted}"));
        }
    }
    if let Some(needle) = &expect.system_contains
        && !req.system.contains(needle.as_str())
    {
        return Err(format!("system_contains {needle:?}"));
    }
    if let Some(needle) = &expect.last_user_contains
        && !req.last_user.contains(needle.as_str())
    {
        return Err(format!("last_user_contains {needle:?}"));
    }
    if let Some(want) = expect.attachments
        && req.attachments != want
    {
        return Err(format!("attachments {want} (found {})", req.attachments));
    }
    if let Some(lr) = &expect.last_result {
        let Some(last) = &req.last_result else {
            return Err("last_result (no tool result)".to_string());
        };
        if let Some(want) = &lr.call_id
            && *want != last.call_id
        {
            return Err(format!("last_result.call_id {want:?} (found {:?})", last.call_id));
        }
        if let Some(want) = &lr.name
            && *want != last.name
        {
            return Err(format!("last_result.name {want:?} (found {:?})", last.name));
        }
        if let Some(needle) = &lr.contains
            && !last.output.contains(needle.as_str())
        {
            return Err(format!("last_result.contains {needle:?}"));
        }
        if let Some(want) = lr.is_error
            && want != last.is_error
        {
            return Err(format!("last_result.is_error {want} (found {})", last.is_error));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neutral::{Entry, Part};

    fn req(entries: Vec<Entry>) -> ModelRequest {
        ModelRequest {
            provider: "scripted".into(),
            model: "x".into(),
            system: vec![],
            entries,
            tools_deferred: vec![],
            tools: vec![],
            options: Default::default(),
        }
    }

    #[test]
    fn thread_directive() {
        assert_eq!(thread_of(&req(vec![])), "main");
        assert_eq!(thread_of(&req(vec![Entry::user_text("plain")])), "main");
        assert_eq!(
            thread_of(&req(vec![Entry::User {
                parts: vec![Part::text("brief"), Part::text("[[thread: sub-1 ]] go")]
            }])),
            "sub-1"
        );
        // Only the first user entry counts.
        assert_eq!(
            thread_of(&req(vec![Entry::user_text("a"), Entry::user_text("[[thread:b]]")])),
            "main"
        );
        assert_eq!(thread_of(&req(vec![Entry::user_text("[[thread:]]")])), "main");
        assert_eq!(thread_of(&req(vec![Entry::user_text("[[thread:x")])), "main");
    }

    #[test]
    fn script_names_stay_inside_the_directory() {
        let s = Scripted::new("/tmp/scripts");
        assert!(s.script_path("a/b").is_ok());
        for bad in ["", "../x", "a/../b", "a//b", "a\\b", "./a", "a/"] {
            assert_eq!(
                s.script_path(bad).unwrap_err().detail.unwrap(),
                format!("invalid_script_name: {bad}")
            );
        }
    }
}
