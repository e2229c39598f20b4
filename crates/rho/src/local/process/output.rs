//! A process's unread output: whole lines in a bounded ring, plus the line being written.

use std::collections::VecDeque;

use crate::local::text::MAX_TEXT;

/// A line longer than this is cut.
const MAX_LINE: usize = 8 * 1024;
/// Unread whole lines are kept up to this many bytes, so that they, the line being written
/// and the notes fit in one result.
const MAX_BUFFER: usize = MAX_TEXT - MAX_LINE - 1024;

/// The output not yet returned by a read.
#[derive(Debug, Default)]
pub struct Output {
    lines: VecDeque<String>,
    bytes: usize,
    dropped: u64,
    /// The line being written (no newline yet).
    partial: Vec<u8>,
    /// How much of `partial` an earlier read already returned.
    partial_sent: usize,
    /// `partial` grew past [`MAX_LINE`] and the rest of the line is discarded.
    partial_cut: bool,
    /// Every writer has closed the pipe.
    pub eof: bool,
}

/// What one read takes.
#[derive(Debug, PartialEq, Eq)]
pub struct Taken {
    /// The unread lines, each ending in `\n`, then the unread part of the line being written.
    pub text: String,
    /// Unread lines dropped since the last read.
    pub dropped: u64,
}

impl Output {
    /// Appends bytes from the pipe.
    pub fn push(&mut self, mut data: &[u8]) {
        while let Some(i) = data.iter().position(|&b| b == b'\n') {
            self.extend(&data[..i]);
            self.finish_line();
            data = &data[i + 1..];
        }
        self.extend(data);
    }

    fn extend(&mut self, data: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        if data.len() > room {
            self.partial.extend_from_slice(&data[..room]);
            self.partial_cut = true;
        } else {
            self.partial.extend_from_slice(data);
        }
    }

    fn finish_line(&mut self) {
        let bytes = std::mem::take(&mut self.partial);
        let sent = std::mem::take(&mut self.partial_sent).min(bytes.len());
        let mut line = String::from_utf8_lossy(&bytes[sent..]).into_owned();
        if std::mem::take(&mut self.partial_cut) {
            line.push_str(" …[line cut at 8 KiB]");
        }
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.bytes > MAX_BUFFER {
            let Some(old) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= old.len() + 1;
            self.dropped += 1;
        }
    }

    /// Takes everything unread. Of the line being written, only whole characters are taken.
    pub fn take(&mut self) -> Taken {
        let mut text = String::with_capacity(self.bytes);
        for line in self.lines.drain(..) {
            text.push_str(&line);
            text.push('\n');
        }
        self.bytes = 0;
        let pending = &self.partial[self.partial_sent.min(self.partial.len())..];
        let whole = match std::str::from_utf8(pending) {
            Ok(s) => s.len(),
            // An incomplete character at the end waits for its last bytes.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => pending.len(),
        };
        text.push_str(&String::from_utf8_lossy(&pending[..whole]));
        self.partial_sent += whole;
        Taken {
            text,
            dropped: std::mem::take(&mut self.dropped),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_the_partial_line_are_taken_once() {
        let mut o = Output::default();
        o.push(b"one\ntwo\npass");
        assert_eq!(o.take().text, "one\ntwo\npass");
        o.push(b"word: \nthree\n");
        assert_eq!(o.take().text, "word: \nthree\n");
        assert_eq!(o.take().text, "");
    }

    #[test]
    fn a_split_character_waits_for_its_end() {
        let mut o = Output::default();
        o.push(&"é".as_bytes()[..1]);
        assert_eq!(o.take().text, "");
        o.push(&"é".as_bytes()[1..]);
        assert_eq!(o.take().text, "é");
    }

    #[test]
    fn unread_output_is_bounded_and_drops_are_counted() {
        let mut o = Output::default();
        let line = "x".repeat(99);
        for _ in 0..2000 {
            o.push(format!("{line}\n").as_bytes());
        }
        let taken = o.take();
        assert!(taken.text.len() <= MAX_BUFFER);
        let kept = taken.text.lines().count() as u64;
        assert_eq!(kept + taken.dropped, 2000);
        assert!(taken.dropped > 0);
        assert_eq!(o.take().dropped, 0);
    }

    #[test]
    fn a_very_long_line_is_cut() {
        let mut o = Output::default();
        o.push(&vec![b'y'; 20_000]);
        o.push(b"\n");
        let text = o.take().text;
        assert!(text.ends_with(" …[line cut at 8 KiB]\n"));
        assert_eq!(text.len(), MAX_LINE + " …[line cut at 8 KiB]\n".len());
    }
}
