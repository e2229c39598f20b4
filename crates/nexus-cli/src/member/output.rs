//! Output: JSON documents or readable lines, the exit statuses, and [`Failure`], which prints a
//! refusal as `error: <code>: <message>` (or, with `--json`, the server's envelope) and never a
//! stack.

use serde::Serialize;
use serde_json::{Value, json};

/// A refusal, a transport failure or bad local input.
pub const EXIT_ERROR: u8 = 1;
/// `nexus run`: the run ended `canceled`.
pub const EXIT_CANCELED: u8 = 3;
/// `nexus run`: the run stopped in `needs_attention` (a failure waits for adjudication).
pub const EXIT_NEEDS_ATTENTION: u8 = 4;

/// The next step after the server refused the bearer (any 401: the API's body is the same for
/// every cause, so the hint lives here).
pub const HINT_UNAUTHORIZED: &str = "the server did not accept this bearer: run `nexus login` \
     with a member bearer (from `nexus admin bootstrap` or `nexus admin member create`), or check \
     --token, NEXUS_TOKEN and --profile";
/// The next step when no server answered.
pub const HINT_UNREACHABLE: &str = "no Nexus server answered there: start one with `nexus serve`, \
     or point --url (or NEXUS_URL, or `nexus login --url`) at a running one";

/// Why a member verb failed.
#[derive(Debug)]
pub enum Failure {
    /// The server refused: its status and its envelope.
    Api(Box<nexus_sdk::ApiError>),
    /// Nothing the server said: a local code (`unreachable`, `not_logged_in`,
    /// `invalid_argument`, …) and a message.
    Local { code: &'static str, message: String },
}

impl Failure {
    pub fn local(code: &'static str, message: impl Into<String>) -> Failure {
        Failure::Local {
            code,
            message: message.into(),
        }
    }

    /// The code printed: the envelope's `error.code`, or the local word.
    pub fn code(&self) -> &str {
        match self {
            Failure::Api(api) => &api.code,
            Failure::Local { code, .. } => code,
        }
    }

    /// Prints to stderr `error: <code>: <message>`; with `json`, the envelope to stdout (a
    /// local failure in the same `{error: {code, message}}` shape).
    pub fn print(&self, json: bool) {
        if json {
            let envelope = match self {
                Failure::Api(api) if api.body.get("error").is_some() => api.body.clone(),
                other => json!({"error": {"code": other.code(), "message": other.message()}}),
            };
            println!("{envelope}");
            return;
        }
        eprintln!("error: {}: {}", self.code(), self.message());
        if let Failure::Api(api) = self {
            for (key, value) in api.body.get("error").and_then(Value::as_object).into_iter().flatten() {
                if !matches!(key.as_str(), "code" | "message") {
                    eprintln!("  {key}: {}", compact(value));
                }
            }
        }
        if let Some(hint) = self.hint() {
            eprintln!("hint: {hint}");
        }
    }

    /// What to do next, for the failures a newcomer meets first: a refused bearer, no server.
    /// Printed under the error line (never into `--json` output).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Failure::Api(api) if api.status == 401 => Some(HINT_UNAUTHORIZED),
            Failure::Local {
                code: "unreachable", ..
            } => Some(HINT_UNREACHABLE),
            _ => None,
        }
    }

    fn message(&self) -> String {
        match self {
            Failure::Api(api) if api.message.is_empty() => format!("HTTP {}", api.status),
            Failure::Api(api) => api.message.clone(),
            Failure::Local { message, .. } => message.clone(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for Failure {}

impl From<nexus_sdk::Error> for Failure {
    fn from(err: nexus_sdk::Error) -> Failure {
        match err {
            nexus_sdk::Error::Api(api) => Failure::Api(api),
            nexus_sdk::Error::Transport(e) => Failure::local("unreachable", e.to_string()),
            nexus_sdk::Error::Decode(e) => Failure::local("bad_response", e.to_string()),
            nexus_sdk::Error::InvalidBearer => {
                Failure::local("invalid_argument", "the bearer is not a valid header value")
            }
            nexus_sdk::Error::InvalidArgument(m) => Failure::local("invalid_argument", m),
            nexus_sdk::Error::Io(e) => Failure::local("io", e.to_string()),
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(err: std::io::Error) -> Failure {
        Failure::local("io", err.to_string())
    }
}

/// A value on one line: a string as itself, anything else as JSON.
pub fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Prints `value` as one JSON document.
pub fn print_json(value: &impl Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("a wire record serializes")
    );
}

/// A text cut to `max` characters on one line, for tables.
pub fn short(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// The effect profile as badges: `write · destructive · scope: closed`.
pub fn badges(profile: &Value) -> String {
    let mut out = Vec::new();
    if let Some(kind) = profile.get("kind").and_then(Value::as_str) {
        out.push(kind.to_string());
    }
    if profile.get("destructive").and_then(Value::as_bool) == Some(true) {
        out.push("destructive".into());
    }
    if let Some(scope) = profile.get("effect_scope").and_then(Value::as_str) {
        out.push(format!("scope: {scope}"));
    }
    if out.is_empty() {
        return compact(profile);
    }
    out.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_bearer_and_no_server_say_what_to_run() {
        let api = |status: u16, code: &str| {
            Failure::Api(Box::new(nexus_sdk::ApiError {
                status,
                code: code.into(),
                message: String::new(),
                body: Value::Null,
            }))
        };
        assert!(api(401, "unauthorized").hint().unwrap().contains("`nexus login`"));
        let gone = Failure::local("unreachable", "error sending request");
        assert!(gone.hint().unwrap().contains("`nexus serve`"));
        assert_eq!(api(404, "not_found").hint(), None);
        assert_eq!(Failure::local("io", "x").hint(), None);
    }

    #[test]
    fn short_cuts_on_characters_and_folds_lines() {
        assert_eq!(short("a\n b", 10), "a b");
        assert_eq!(short("héllo world", 5), "héll…");
    }

    #[test]
    fn badges_name_kind_destructive_and_scope() {
        let p = json!({"kind": "write", "destructive": true, "effect_scope": "closed"});
        assert_eq!(badges(&p), "write · destructive · scope: closed");
        assert_eq!(badges(&json!({"kind": "read_only", "destructive": false})), "read_only");
    }
}
