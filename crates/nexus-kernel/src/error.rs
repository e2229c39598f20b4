//! Kernel errors: a [`Code`] from the one code table plus the extra envelope fields some codes
//! carry (errors-and-auth.md §1). The server maps these to HTTP; the kernel knows no HTTP.

use nexus_core::codes::Code;
use nexus_store::StoreError;

/// A typed kernel refusal or failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelError {
    pub code: Code,
    pub message: String,
    /// `validation_failed` / `invalid_approval_rules`: the specific word.
    pub reason: Option<String>,
    /// A JSON pointer or a `tools[2].name` style path.
    pub path: Option<String>,
    /// `tool_not_declared`, `reserved_namespace`, `invalid_announcement`: the detail.
    pub detail: Option<String>,
    /// Further envelope members some codes carry (`invalid_steps` → `steps`,
    /// `stale_revision` → `current_revision`, `conversation_hosted` → ids). Merged into
    /// `error` as given.
    pub extra: Option<Box<serde_json::Map<String, serde_json::Value>>>,
}

impl KernelError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            reason: None,
            path: None,
            detail: None,
            extra: None,
        }
    }

    /// The code with its documented default message.
    pub fn of(code: Code) -> Self {
        Self::new(code, code.doc())
    }

    /// The one 401 every authentication failure gets, whatever the reason.
    pub fn unauthorized() -> Self {
        Self::of(Code::Unauthorized)
    }

    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Adds one extra envelope member.
    pub fn with_extra(mut self, key: &str, value: serde_json::Value) -> Self {
        self.extra
            .get_or_insert_with(Default::default)
            .insert(key.to_string(), value);
        self
    }

    /// `422 validation_failed` with its reason word and path.
    pub fn validation(reason: &str, path: &str, message: impl Into<String>) -> Self {
        Self::new(Code::ValidationFailed, message)
            .with_reason(reason)
            .with_path(path)
    }
}

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for KernelError {}

impl KernelError {
    /// A store read met a word no variant has, or a rule list that does not parse
    /// ([`StoreError::Corrupt`]): a run whose row it is stops in `needs_attention`.
    pub fn is_corrupt_row(&self) -> bool {
        self.code == Code::CorruptRow
    }
}

impl From<StoreError> for KernelError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Corrupt(what) => {
                tracing::error!(what, "corrupt stored row");
                Self::of(Code::CorruptRow)
            }
            StoreError::Conflict(what) => {
                Self::new(Code::ValidationFailed, format!("conflict: {what}")).with_reason("conflict")
            }
            StoreError::NotFound(what) => Self::new(Code::NotFound, what),
            StoreError::UnsupportedText => Self::new(
                Code::ValidationFailed,
                "unsupported_text: the value contains U+0000, which cannot be stored",
            )
            .with_reason("unsupported_text"),
            StoreError::Database(e) => {
                tracing::error!(error = %e, "store failure");
                Self::of(Code::Unavailable)
            }
            StoreError::Sqlite(e) => {
                tracing::error!(error = %e, "store failure");
                Self::of(Code::Unavailable)
            }
            StoreError::Busy => {
                tracing::warn!("store busy: no write slot within the busy timeout");
                Self::of(Code::Unavailable)
            }
            other => {
                tracing::error!(error = %other, "store failure");
                Self::of(Code::InternalError)
            }
        }
    }
}

pub type KernelResult<T> = Result<T, KernelError>;
