//! Playing an SSE reply: one chunk per frame, with delays, ending as the reply says; and the
//! splitting of text into delta pieces that the provider modules share.

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use axum::body::Bytes;
use futures_util::Stream;
use tokio::sync::watch;

use crate::Outcome;
use crate::reply::{SseFrame, StreamEnd};
use crate::server::{ReplyGuard, closed};

/// How long an aborting stream waits, after its last frame, before it breaks the connection.
const ABORT_GRACE: Duration = Duration::from_millis(25);

struct Playing {
    frames: VecDeque<SseFrame>,
    end: StreamEnd,
    frame_delay: Duration,
    guard: Option<ReplyGuard>,
    closing: watch::Receiver<bool>,
    over: bool,
}

impl Playing {
    fn finish(&mut self, outcome: Outcome) {
        if let Some(guard) = self.guard.take() {
            guard.finish(outcome);
        }
    }
}

fn broken(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, format!("nexus-fake-upstream: {why}"))
}

/// The body stream of an SSE reply. The guard travels with it: if the client goes away, the
/// HTTP stack drops the stream unfinished and the request is marked abandoned.
pub(crate) fn body_stream(
    frames: Vec<SseFrame>,
    end: StreamEnd,
    frame_delay: Duration,
    guard: ReplyGuard,
    closing: watch::Receiver<bool>,
) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static {
    let playing = Playing {
        frames: frames.into(),
        end,
        frame_delay,
        guard: Some(guard),
        closing,
        over: false,
    };
    futures_util::stream::unfold(playing, |mut p| async move {
        if p.over {
            return None;
        }
        if let Some(frame) = p.frames.pop_front() {
            let delay = frame.delay().unwrap_or(p.frame_delay);
            if !delay.is_zero() {
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = closed(&mut p.closing) => {
                        p.over = true;
                        return Some((Err(broken("shutting down")), p));
                    }
                }
            }
            return Some((Ok(frame.encode()), p));
        }
        p.over = true;
        match p.end {
            StreamEnd::Complete => {
                p.finish(Outcome::Completed);
                None
            }
            StreamEnd::Abort => {
                // Let the frames already given leave before the connection breaks: the HTTP
                // stack flushes only once the body has nothing ready.
                tokio::time::sleep(ABORT_GRACE).await;
                p.finish(Outcome::Cut);
                Some((Err(broken("stream aborted on purpose")), p))
            }
            StreamEnd::Hang => {
                closed(&mut p.closing).await;
                Some((Err(broken("shutting down")), p))
            }
        }
    })
}

/// Splits `text` into at most `n` non-empty pieces of about equal length, on character
/// boundaries (none for an empty text). Concatenated, the pieces give `text` back.
pub fn split_pieces(text: &str, n: usize) -> Vec<String> {
    let chars = text.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let per = chars.div_ceil(n.max(1));
    let mut pieces = Vec::new();
    let mut current = String::new();
    for (i, c) in text.chars().enumerate() {
        current.push(c);
        if (i + 1) % per == 0 {
            pieces.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_rejoin_and_respect_char_boundaries() {
        assert_eq!(split_pieces("Hello, world", 3), ["Hell", "o, w", "orld"]);
        assert_eq!(split_pieces("ab", 3), ["a", "b"]);
        assert!(split_pieces("", 3).is_empty());
        let text = "héllo wörld ☃";
        assert_eq!(split_pieces(text, 4).concat(), text);
        assert_eq!(split_pieces(text, 0), [text]);
    }
}
