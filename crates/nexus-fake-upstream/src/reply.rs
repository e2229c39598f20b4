//! Canned replies: a body with a status and headers, a server-sent event stream (which may stop
//! early, break, or hang), or no answer at all; each optionally after a delay.
//!
//! The provider modules ([`crate::anthropic`], [`crate::openai`]) build the usual ones, so a test
//! rarely writes wire JSON itself.

use std::time::Duration;

use axum::body::Bytes;
use serde_json::Value;

/// One server-sent event: an optional `event:` name and its `data:` (a multi-line data is sent
/// as one `data:` line per line), or raw text sent as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseFrame {
    event: Option<String>,
    data: String,
    raw: bool,
    delay: Option<Duration>,
}

impl SseFrame {
    /// `event: {name}` then `data: {data}`.
    pub fn event(name: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            event: Some(name.into()),
            data: data.into(),
            raw: false,
            delay: None,
        }
    }

    /// `data: {data}` alone (the OpenAI shape, `[DONE]` included).
    pub fn data(data: impl Into<String>) -> Self {
        Self {
            event: None,
            data: data.into(),
            raw: false,
            delay: None,
        }
    }

    /// A JSON data frame with an optional event name; the JSON is compact, member order kept.
    pub fn json(event: Option<&str>, data: &Value) -> Self {
        let text = data.to_string();
        match event {
            Some(name) => Self::event(name, text),
            None => Self::data(text),
        }
    }

    /// Text sent exactly as given, framing included: a comment (`": ping\n\n"`) or a malformed
    /// frame.
    pub fn raw(text: impl Into<String>) -> Self {
        Self {
            event: None,
            data: text.into(),
            raw: true,
            delay: None,
        }
    }

    /// Wait `delay` before sending this frame (overrides [`Reply::frame_delay`]).
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// The `event:` name, if any.
    pub fn event_name(&self) -> Option<&str> {
        self.event.as_deref()
    }

    /// The data (or the raw text).
    pub fn data_text(&self) -> &str {
        &self.data
    }

    /// The data parsed as JSON; `None` for `[DONE]` and other non-JSON data.
    pub fn data_json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }

    pub(crate) fn delay(&self) -> Option<Duration> {
        self.delay
    }

    /// The bytes on the wire, blank-line terminator included.
    pub fn encode(&self) -> Bytes {
        if self.raw {
            return Bytes::from(self.data.clone());
        }
        let mut out = String::with_capacity(self.data.len() + 32);
        if let Some(name) = &self.event {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        for line in self.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        Bytes::from(out)
    }
}

/// How a stream ends once its frames are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The body ends normally. Whether the last frame was a terminal event is up to the
    /// frames: [`Reply::stop_after`] ends before it.
    Complete,
    /// The connection is broken without ending the body (the client sees an incomplete body).
    Abort,
    /// Nothing more is ever sent and the body never ends (until the client gives up or the
    /// server shuts down).
    Hang,
}

#[derive(Debug, Clone)]
pub(crate) enum Body {
    Bytes(Bytes),
    Sse {
        frames: Vec<SseFrame>,
        end: StreamEnd,
        frame_delay: Duration,
    },
    /// No status line, ever.
    Hang,
}

/// A canned reply.
///
/// ```
/// use std::time::Duration;
/// use nexus_fake_upstream::{Reply, SseFrame};
/// let limited = Reply::status(429, "slow down").retry_after(2).should_retry(true);
/// let slow = Reply::json(200, &serde_json::json!({"ok": true})).delay(Duration::from_millis(50));
/// let cut = Reply::sse(vec![SseFrame::data("a"), SseFrame::data("b")]).hang_after(1);
/// ```
#[derive(Debug, Clone)]
pub struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) delay: Duration,
    pub(crate) body: Body,
}

impl Reply {
    /// `status` with `content-type: application/json` and `value` as compact JSON (member
    /// order kept).
    pub fn json(status: u16, value: &Value) -> Self {
        Self::bytes(status, "application/json", value.to_string())
    }

    /// `status` with a `text/plain` body, e.g. `Reply::status(404, "no such model")`.
    pub fn status(status: u16, body: impl Into<Bytes>) -> Self {
        Self::bytes(status, "text/plain; charset=utf-8", body)
    }

    /// `status` with any content type and body bytes.
    pub fn bytes(status: u16, content_type: &str, body: impl Into<Bytes>) -> Self {
        Self {
            status,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            delay: Duration::ZERO,
            body: Body::Bytes(body.into()),
        }
    }

    /// `200` with `content-type: text/event-stream`, sending `frames` in order, each as its own
    /// chunk, then ending the body.
    pub fn sse(frames: Vec<SseFrame>) -> Self {
        Self {
            status: 200,
            headers: vec![
                ("content-type".to_owned(), "text/event-stream".to_owned()),
                ("cache-control".to_owned(), "no-cache".to_owned()),
            ],
            delay: Duration::ZERO,
            body: Body::Sse {
                frames,
                end: StreamEnd::Complete,
                frame_delay: Duration::ZERO,
            },
        }
    }

    /// Never answers: no status line, no body. For client timeouts and stop/cancel tests; the
    /// client giving up is recorded as [`crate::Outcome::Abandoned`].
    pub fn hang() -> Self {
        Self {
            status: 200,
            headers: Vec::new(),
            delay: Duration::ZERO,
            body: Body::Hang,
        }
    }

    /// Adds a header (several with one name are all sent).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// `retry-after: {seconds}`.
    pub fn retry_after(self, seconds: u64) -> Self {
        self.header("retry-after", seconds.to_string())
    }

    /// `retry-after-ms: {ms}`.
    pub fn retry_after_ms(self, ms: u64) -> Self {
        self.header("retry-after-ms", ms.to_string())
    }

    /// `x-should-retry: true|false`.
    pub fn should_retry(self, retry: bool) -> Self {
        self.header("x-should-retry", retry.to_string())
    }

    /// Waits `delay` before sending the status line.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Replaces the status (e.g. an SSE body under a non-200 status).
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Waits `delay` before each frame that has no delay of its own. Panics on a non-stream.
    pub fn frame_delay(mut self, delay: Duration) -> Self {
        match &mut self.body {
            Body::Sse { frame_delay, .. } => *frame_delay = delay,
            _ => panic!("frame_delay applies to an SSE reply"),
        }
        self
    }

    /// Sends the first `n` frames and ends the body normally: a stream that stops early, with
    /// no terminal event. Panics on a non-stream.
    pub fn stop_after(self, n: usize) -> Self {
        self.cut(n, StreamEnd::Complete)
    }

    /// Sends the first `n` frames, then breaks the connection. Panics on a non-stream.
    pub fn abort_after(self, n: usize) -> Self {
        self.cut(n, StreamEnd::Abort)
    }

    /// Sends the first `n` frames, then nothing more, never ending. Use `usize::MAX` to hang
    /// after all frames. Panics on a non-stream.
    pub fn hang_after(self, n: usize) -> Self {
        self.cut(n, StreamEnd::Hang)
    }

    fn cut(mut self, n: usize, how: StreamEnd) -> Self {
        match &mut self.body {
            Body::Sse { frames, end, .. } => {
                frames.truncate(n);
                *end = how;
            }
            _ => panic!("stop_after / abort_after / hang_after apply to an SSE reply"),
        }
        self
    }

    /// The status code sent.
    pub fn status_code(&self) -> u16 {
        self.status
    }

    /// The headers sent, besides those the HTTP stack adds.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The body of a non-stream reply.
    pub fn body_bytes(&self) -> Option<&Bytes> {
        match &self.body {
            Body::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The frames of a stream reply.
    pub fn frames(&self) -> Option<&[SseFrame]> {
        match &self.body {
            Body::Sse { frames, .. } => Some(frames),
            _ => None,
        }
    }
}
