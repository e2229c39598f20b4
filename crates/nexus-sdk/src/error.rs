//! Errors: the typed API refusal (errors-and-auth.md §1) and the SDK's error type.

use serde_json::Value;

/// The SDK's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Anything a client call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with a non-2xx status (boxed: it carries the whole body).
    #[error(transparent)]
    Api(Box<ApiError>),
    /// The request could not be sent or its response could not be read.
    #[error("transport: {0}")]
    Transport(#[from] reqwest::Error),
    /// A 2xx response whose body is not the expected JSON.
    #[error("decoding the response: {0}")]
    Decode(#[from] serde_json::Error),
    /// The bearer token holds bytes an `Authorization` header cannot carry.
    #[error("the bearer token is not a valid header value")]
    InvalidBearer,
    /// A value the caller passed cannot be sent (an id that is not a path segment, an
    /// `Idempotency-Key` that is not a header value); nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A local file could not be read (an upload from a path).
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl From<ApiError> for Error {
    fn from(api: ApiError) -> Self {
        Error::Api(Box::new(api))
    }
}

impl Error {
    /// The API refusal, when the server answered with one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(api) => Some(api),
            _ => None,
        }
    }

    /// The refusal's `error.code`, when the server answered with one.
    pub fn code(&self) -> Option<&str> {
        self.api().map(|api| api.code.as_str())
    }

    /// Whether sending the same request again may succeed: the server could not be reached or
    /// the connection broke (a restart), or it answered 5xx, 408 or 429. A typed 4xx refusal
    /// is final, and so is a 2xx body this SDK cannot read.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Api(api) => api.status >= 500 || api.status == 408 || api.status == 429,
            Error::Transport(e) => !e.is_builder(),
            Error::Decode(_) | Error::InvalidBearer | Error::InvalidArgument(_) | Error::Io(_) => false,
        }
    }
}

/// A non-2xx response, parsed from the envelope `{"error":{"code","message", …}}`.
///
/// `code` is kept verbatim even when this SDK does not know it: clients classify an unknown
/// code by its HTTP `status`. The `message` text is not a contract. Code-specific extra fields
/// (`reason`, `path`, `detail`, `steps`, …) stay in `body`; see the accessors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// `error.code`, or [`ApiError::UNPARSED`] when the body is not an error envelope.
    pub code: String,
    /// `error.message`, or the raw body text when the body is not an error envelope.
    pub message: String,
    /// The whole response body: the parsed JSON, a JSON string holding the raw text when the
    /// body is not JSON, or `null` when it is empty.
    pub body: Value,
}

impl ApiError {
    /// The code given to a non-2xx response whose body is not an error envelope (a proxy's
    /// HTML page, an empty body). Classify such a response by its status.
    pub const UNPARSED: &'static str = "unparsed_error";

    /// Parses a non-2xx response from its status and raw body bytes. Never fails: a body that
    /// is not an envelope yields code [`ApiError::UNPARSED`].
    pub fn from_response(status: u16, body: &[u8]) -> ApiError {
        let text = String::from_utf8_lossy(body);
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let envelope = parsed.as_ref().and_then(|v| v.get("error")).and_then(Value::as_object);
        let code = envelope.and_then(|e| e.get("code")).and_then(Value::as_str);
        match (code, parsed.clone()) {
            (Some(code), Some(value)) => ApiError {
                status,
                code: code.to_owned(),
                message: envelope
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                body: value,
            },
            _ => ApiError {
                status,
                code: Self::UNPARSED.to_owned(),
                message: text.trim().to_owned(),
                body: match parsed {
                    Some(value) => value,
                    None if text.is_empty() => Value::Null,
                    None => Value::String(text.into_owned()),
                },
            },
        }
    }

    /// An extra field of the envelope's `error` object, if present.
    pub fn field(&self, key: &str) -> Option<&Value> {
        self.body.get("error").and_then(|e| e.get(key))
    }

    /// `error.reason`: the specific word of a `validation_failed` or `invalid_approval_rules`.
    pub fn reason(&self) -> Option<&str> {
        self.field("reason").and_then(Value::as_str)
    }

    /// `error.path`: the JSON pointer or announcement path a refusal names.
    pub fn path(&self) -> Option<&str> {
        self.field("path").and_then(Value::as_str)
    }

    /// `error.detail`: for example the first undeclared name of `tool_not_declared`.
    pub fn detail(&self) -> Option<&str> {
        self.field("detail").and_then(Value::as_str)
    }

    /// Whether this is the uniform 401 (missing, wrong-plane, expired or revoked credential).
    pub fn is_unauthorized(&self) -> bool {
        self.status == 401
    }
}
