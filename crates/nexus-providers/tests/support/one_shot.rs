//! A one-shot local HTTP server: it accepts one connection on `127.0.0.1:0`, reads one
//! request, writes a canned HTTP/1.1 response and closes. Enough to drive `send` through the
//! real transport; the full fake upstream lives elsewhere.

#![allow(dead_code)]

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// `POST /v1/chat/completions HTTP/1.1`.
    pub request_line: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Received {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Serves `response` (the whole HTTP response bytes) once; returns the base URL and the
/// request it received.
pub async fn serve(response: Vec<u8>) -> (String, JoinHandle<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let mut buf = Vec::new();
        let head_end = loop {
            let mut chunk = [0u8; 4096];
            let n = socket.read(&mut chunk).await.expect("read");
            assert!(n > 0, "the client closed before its request ended");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or_default().to_string();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            let mut chunk = [0u8; 65536];
            let n = socket.read(&mut chunk).await.expect("read body");
            assert!(n > 0, "the client closed before its body ended");
            buf.extend_from_slice(&chunk[..n]);
        }
        socket.write_all(&response).await.expect("write");
        socket.shutdown().await.ok();
        Received {
            request_line,
            headers,
            body: buf[head_end..head_end + length].to_vec(),
        }
    });
    (base, task)
}

/// A JSON response with `status`.
pub fn json(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A server-sent event stream: each item becomes `data: <item>\n\n`; the body ends when the
/// connection closes.
pub fn sse(data: &[&str]) -> Vec<u8> {
    let mut out =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
            .to_vec();
    for item in data {
        out.extend_from_slice(format!("data: {item}\n\n").as_bytes());
    }
    out
}
