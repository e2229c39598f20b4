//! The edges of HTTP (issue 28, deliverable 6), over a real loopback server on both engines:
//! what the framework answers before a handler runs is the envelope (malformed path parameters,
//! bad query strings, unknown methods and routes); a client that sends its head or body slowly,
//! or never finishes, is cut off after the read timeout; a declared `Content-Length` over a
//! route's bound is refused before the body is sent; and the push channel closes on a frame
//! over its inbound bound.

mod common;

use std::time::{Duration, Instant};

use common::{Harness, harnesses};
use futures_util::{SinkExt, StreamExt};
use nexus_server::edges::Timeouts;
use nexus_server::{AppState, router};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};

/// Short timeouts, so the tests can watch them fire.
const TEST_TIMEOUTS: Timeouts = Timeouts {
    head: Duration::from_millis(400),
    body: Duration::from_millis(400),
    upload: Duration::from_millis(600),
};

/// How long the tests wait for the server to act on a timeout (generous for a loaded machine).
const PATIENCE: Duration = Duration::from_secs(10);

/// Serves the harness's kernel on a loopback port through `nexus_server::edges::serve_with`.
async fn serve(h: &Harness) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(AppState::with_timeouts(h.kernel.clone(), TEST_TIMEOUTS));
    tokio::spawn(nexus_server::edges::serve_with(
        listener,
        app,
        TEST_TIMEOUTS,
        std::future::pending(),
    ));
    addr
}

/// A raw answer: status, headers (lower-cased names) and body.
struct Raw {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Raw {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}\n{:?}",
                self.head,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Asserts the envelope with `code` and the status.
    fn envelope(&self, status: u16, code: &str, what: &str) {
        assert_eq!(
            self.status,
            status,
            "{what}: {}\n{:?}",
            self.head,
            String::from_utf8_lossy(&self.body)
        );
        assert!(
            self.head
                .to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{what}: {}",
            self.head
        );
        let body = self.json();
        assert_eq!(body["error"]["code"], json!(code), "{what}: {body}");
        assert!(
            body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}: {body}"
        );
    }
}

/// Reads one answer from `stream`: the head, then `Content-Length` bytes of body.
async fn read_answer(stream: &mut TcpStream) -> Raw {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut chunk))
            .await
            .expect("an answer in time")
            .expect("read");
        assert!(
            n > 0,
            "the server closed without an answer: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut chunk))
            .await
            .expect("the body in time")
            .expect("read");
        assert!(n > 0, "the server closed inside the body");
        body.extend_from_slice(&chunk[..n]);
    }
    Raw { status, head, body }
}

/// Sends `request` on a fresh connection and reads the answer.
async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> Raw {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    read_answer(&mut stream).await
}

fn get(path: &str, token: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n").into_bytes()
}

/// Waits for the server to close `stream` (EOF or reset); returns how long that took. Any
/// bytes it sends first are returned too.
async fn closed_within(stream: &mut TcpStream) -> (Duration, Vec<u8>) {
    let start = Instant::now();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match tokio::time::timeout(PATIENCE, stream.read(&mut chunk)).await {
            Err(_) => panic!("the server kept the connection open past {PATIENCE:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => return (start.elapsed(), seen),
            Ok(Ok(n)) => seen.extend_from_slice(&chunk[..n]),
        }
    }
}

#[tokio::test]
async fn framework_answers_are_the_envelope() {
    for h in harnesses().await {
        let addr = serve(&h).await;
        let member = h.agent_token();
        let w = h.w();
        // Path parameters in any encoding: invalid percent-encoded UTF-8, a stray `%`, overlong
        // and encoded separators. None names anything: 404 `not_found`, as an unknown id.
        for path in [
            "/agent_api/v1/workspaces/%FF%FE/runs".to_string(),
            "/agent_api/v1/workspaces/%C0%AF/runs".to_string(),
            "/agent_api/v1/workspaces/%zz/runs".to_string(),
            format!("{w}/runs/%FF"),
            format!("{w}/runs/a%2Fb/tasks"),
            format!("{w}/conversations/%E0%80%80"),
            "/agent_api/v1/executors/%FF".to_string(),
            "/agent_api/v1/uploads/%80".to_string(),
            "/console/%FF".to_string(),
        ] {
            exchange(addr, &get(&path, &member))
                .await
                .envelope(404, "not_found", &path);
        }
        // Query strings the route's parameters cannot take: 400 `parameter_invalid`.
        for path in [
            format!("{w}/runs?limit=1&limit=2"),
            format!("{w}/conversation_search?query=a&query=b"),
            format!("{w}/runs?limit=%FF"),
        ] {
            let r = exchange(addr, &get(&path, &member)).await;
            r.envelope(400, "parameter_invalid", &path);
        }
        // Unknown routes and methods, including methods HTTP does not define.
        exchange(addr, &get("/no/such/route", &member))
            .await
            .envelope(404, "not_found", "route");
        for method in ["DELETE", "PATCH", "BREW", "OPTIONS"] {
            let req = format!(
                "{method} /agent_api/v1/profile HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {member}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            exchange(addr, req.as_bytes())
                .await
                .envelope(405, "method_not_allowed", method);
        }
        // A JSON route given another content type, and broken JSON.
        let put = |ct: &str, body: &str| {
            format!(
                "PUT /agent_api/v1/profile/configuration HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {member}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        };
        exchange(addr, put("text/plain", "{}").as_bytes()).await.envelope(
            415,
            "unsupported_media_type",
            "content type",
        );
        exchange(addr, put("application/json", "{\"configuration\":").as_bytes())
            .await
            .envelope(400, "bad_request", "json syntax");
    }
}

#[tokio::test]
async fn a_slow_or_idle_client_is_cut_off() {
    for h in harnesses().await {
        let addr = serve(&h).await;
        // A connection that never sends anything is closed after the head timeout.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        let (took, _) = closed_within(&mut idle).await;
        assert!(took >= TEST_TIMEOUTS.head / 2, "{took:?}");
        // A head that never finishes.
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ")
            .await
            .unwrap();
        let (took, _) = closed_within(&mut slow).await;
        assert!(took >= TEST_TIMEOUTS.head / 2, "{took:?}");
        // A head sent a byte at a time, slower than the timeout allows in all.
        let mut dribble = TcpStream::connect(addr).await.unwrap();
        let start = Instant::now();
        let mut cut = false;
        for b in b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n" {
            if dribble.write_all(&[*b]).await.is_err() {
                cut = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if !cut {
            let (_, seen) = closed_within(&mut dribble).await;
            assert!(
                !String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"),
                "a head dribbled over {:?} was served",
                start.elapsed()
            );
        }
        // A body that never finishes: the route answers when the body timeout passes, and the
        // connection closes.
        let member = h.agent_token();
        let mut stalled = TcpStream::connect(addr).await.unwrap();
        let req = format!(
            "PUT /agent_api/v1/profile/configuration HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {member}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"configuration\":"
        );
        stalled.write_all(req.as_bytes()).await.unwrap();
        let start = Instant::now();
        let r = read_answer(&mut stalled).await;
        assert!(start.elapsed() >= TEST_TIMEOUTS.body / 2, "{:?}", start.elapsed());
        r.envelope(400, "bad_request", "stalled body");
        closed_within(&mut stalled).await;
        // An upload that stalls is cut off after the upload timeout.
        let mut upload = TcpStream::connect(addr).await.unwrap();
        let req = format!(
            "POST /agent_api/v1/uploads HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {member}\r\nContent-Type: multipart/form-data; boundary=XX\r\nContent-Length: 100000\r\n\r\n--XX\r\nContent-Disposition: form-data; name=\"upload[file]\"; filename=\"a.txt\"\r\n\r\nsome"
        );
        upload.write_all(req.as_bytes()).await.unwrap();
        let r = read_answer(&mut upload).await;
        assert_eq!(r.status / 100, 4, "{}", r.head);
        closed_within(&mut upload).await;
        // The server still serves.
        let r = exchange(addr, b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").await;
        assert_eq!(r.status, 200);
    }
}

/// A declared `Content-Length` one byte over a route's bound is refused before the client sends
/// a byte of the body (the answer comes though none was sent); at the bound, the server waits
/// for the body.
#[tokio::test]
async fn a_declared_length_over_the_bound_is_refused_before_the_body() {
    use nexus_core::bounds;
    for h in harnesses().await {
        let addr = serve(&h).await;
        let member = h.agent_token();
        let w = h.w();
        let transport = h.runner_token();
        for (method, path, token, ct, bound) in [
            (
                "PUT",
                "/agent_api/v1/profile/configuration".to_string(),
                &member,
                "application/json",
                bounds::REQUEST_BODY,
            ),
            (
                "POST",
                format!("{w}/runs"),
                &member,
                "application/json",
                bounds::REQUEST_BODY_CREATE_APPEND,
            ),
            (
                "POST",
                "/agent_api/v1/uploads".to_string(),
                &member,
                "multipart/form-data; boundary=XX",
                nexus_server::routes::uploads::INGEST_BODY_LIMIT,
            ),
            (
                "POST",
                "/agent_api/v1/executor/uploads".to_string(),
                &transport,
                "multipart/form-data; boundary=XX",
                nexus_server::routes::uploads::INGEST_BODY_LIMIT,
            ),
            (
                "PUT",
                "/agent_api/v1/executor/announcement".to_string(),
                &transport,
                "application/json",
                bounds::REQUEST_BODY,
            ),
        ] {
            let head = |len: usize| {
                format!(
                    "{method} {path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\nContent-Type: {ct}\r\nContent-Length: {len}\r\n\r\n"
                )
            };
            let what = format!("{method} {path}");
            let mut over = TcpStream::connect(addr).await.unwrap();
            over.write_all(head(bound + 1).as_bytes()).await.unwrap();
            read_answer(&mut over).await.envelope(413, "content_too_large", &what);
            // At the bound the server reads (and so waits for) the body: no answer before the
            // body timeout.
            let mut at = TcpStream::connect(addr).await.unwrap();
            at.write_all(head(bound).as_bytes()).await.unwrap();
            let mut one = [0u8; 1];
            let early = tokio::time::timeout(TEST_TIMEOUTS.body / 4, at.read(&mut one)).await;
            assert!(early.is_err(), "{what}: answered at the bound before the body came");
        }
    }
}

/// The push channel reads nothing but control frames: a frame over the inbound bound closes it.
#[tokio::test]
async fn the_channel_closes_on_a_frame_over_its_bound() {
    use nexus_core::bounds::CHANNEL_INBOUND;
    for h in harnesses().await {
        let addr = serve(&h).await;
        let connect = || async {
            let mut req = format!("ws://{addr}/agent_api/v1/executor/channel")
                .into_client_request()
                .unwrap();
            req.headers_mut()
                .insert("authorization", format!("Bearer {}", h.runner_token()).parse().unwrap());
            let tcp = TcpStream::connect(addr).await.unwrap();
            tokio_tungstenite::client_async(req, tcp).await.expect("upgrade").0
        };
        // At the bound: ignored, the channel stays open (a ping still answers).
        let mut ws = connect().await;
        let hello = ws.next().await.unwrap().unwrap();
        assert!(matches!(hello, Message::Text(_)), "{hello:?}");
        ws.send(Message::Text("x".repeat(CHANNEL_INBOUND).into()))
            .await
            .unwrap();
        ws.send(Message::Ping(b"still?".to_vec().into())).await.unwrap();
        let answer = tokio::time::timeout(PATIENCE, ws.next()).await.expect("an answer");
        assert!(
            matches!(answer, Some(Ok(Message::Pong(ref p))) if p.as_ref() == b"still?"),
            "{answer:?}"
        );
        // One byte over: the server closes the channel.
        let mut ws = connect().await;
        let _hello = ws.next().await.unwrap().unwrap();
        ws.send(Message::Text("x".repeat(CHANNEL_INBOUND + 1).into()))
            .await
            .unwrap();
        let closed = tokio::time::timeout(PATIENCE, async {
            loop {
                match ws.next().await {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                    Some(Ok(_)) => continue,
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "the channel stayed open after an oversized frame");
    }
}

/// Every `*_at` member in `v` (at any depth) is null or the spec's ISO 8601 form, whole-second
/// UTC (`2026-01-05T10:00:00Z`); returns how many it checked.
fn check_times(v: &Value, at: &str) -> usize {
    let iso = |s: &str| {
        let b = s.as_bytes();
        b.len() == 20
            && b.iter().enumerate().all(|(i, c)| match i {
                4 | 7 => *c == b'-',
                10 => *c == b'T',
                13 | 16 => *c == b':',
                19 => *c == b'Z',
                _ => c.is_ascii_digit(),
            })
    };
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| {
                let here = format!("{at}/{k}");
                let own = if k.ends_with("_at") {
                    assert!(
                        x.is_null() || x.as_str().is_some_and(iso),
                        "{here} is not whole-second UTC ISO 8601: {x}"
                    );
                    usize::from(!x.is_null())
                } else {
                    0
                };
                own + check_times(x, &here)
            })
            .sum(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| check_times(x, &format!("{at}/{i}")))
            .sum(),
        _ => 0,
    }
}

#[tokio::test]
async fn every_time_on_the_read_routes_is_whole_second_utc() {
    for h in harnesses().await {
        let member = h.human_token();
        h.announce_runner(
            json!([{"name": "read", "description": "Read.", "input_schema": {"type": "object"},
                                  "effect_profile": nexus_core::registry::EffectProfile::READ.to_json()}]),
        )
        .await;
        let step = json!({"key": "a", "tool": {"name": "read", "input": {},
                          "route": {"kind": "runner", "runner_executor_public_id": h.runner_id()}}});
        let run = h.start_run(&member, "bypass", Value::Null, json!([step])).await;
        let c = h
            .json(
                axum::http::Method::POST,
                &format!("{}/conversations", h.w()),
                Some(&h.agent_token()),
                &json!({}),
            )
            .await;
        let mut paths = vec![
            h.r(&run),
            format!("{}/tasks", h.r(&run)),
            format!("{}/tasks/a", h.r(&run)),
            format!("{}/transcript", h.r(&run)),
            format!("{}/events", h.r(&run)),
            format!("{}/runs", h.w()),
            "/agent_api/v1/executors".to_string(),
            "/agent_api/v1/profile".to_string(),
            format!("{}/conversations", h.w()),
        ];
        if let Some(id) = c.json()["conversation"]["public_id"].as_str() {
            paths.push(format!("{}/conversations/{id}", h.w()));
        }
        let mut seen = 0;
        for path in &paths {
            for token in [&member, &h.agent_token()] {
                let r = h.get(path, Some(token)).await;
                if r.status.is_success() {
                    seen += check_times(&r.json(), path);
                }
            }
        }
        let r = h.get("/agent_api/v1/executor", Some(&h.runner_token())).await;
        seen += check_times(&r.json(), "X");
        assert!(seen >= 10, "only {seen} times were read");
    }
}
