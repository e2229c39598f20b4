//! The push channel (executor.md §10): a WebSocket client that turns the kernel's frames into
//! engine events and reconnects with backoff. Push is best effort; the inbox poll is the truth.

use std::time::Duration;

use futures_util::StreamExt;
use serde::Deserialize;
use tokio::sync::mpsc::UnboundedSender;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, header};

use super::backoff::Backoff;
use crate::executor_client::ExecutorClient;

/// The channel's route under the base URL.
const ROUTE: &str = "/agent_api/v1/executor/channel";

/// With nothing read for this long (the server pings every 30 s), the connection is presumed
/// dead and replaced.
const IDLE: Duration = Duration::from_secs(75);

/// What the channel tells the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A connection said hello: poll the inbox and re-check the running claims, since frames
    /// sent while disconnected are lost.
    Connected,
    /// A row was parked for this executor.
    WorkAvailable,
    /// A claimed row was canceled.
    WorkCanceled {
        /// The row's run.
        run_public_id: String,
        /// The row's key.
        task_key: String,
    },
}

/// The frames the kernel sends; unknown types are ignored.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Frame {
    Hello,
    WorkAvailable,
    WorkCanceled {
        run_public_id: String,
        task_key: String,
    },
    #[serde(other)]
    Other,
}

/// `http(s)://host` → `ws(s)://host/agent_api/v1/executor/channel`.
pub(crate) fn channel_url(base_url: &str) -> Option<String> {
    let rest = base_url
        .strip_prefix("https://")
        .map(|r| ("wss://", r))
        .or_else(|| base_url.strip_prefix("http://").map(|r| ("ws://", r)))?;
    Some(format!("{}{}{ROUTE}", rest.0, rest.1))
}

/// Keeps a channel open until the engine drops its receiver.
pub(crate) async fn run(client: ExecutorClient, events: UnboundedSender<Event>) {
    let Some(url) = channel_url(client.base_url()) else {
        tracing::warn!(
            base_url = client.base_url(),
            "no push channel for this URL scheme; polling only"
        );
        return;
    };
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(30));
    while !events.is_closed() {
        match connect(&client, &url).await {
            Ok(stream) => read(stream, &events, &mut backoff).await,
            Err(e) => tracing::debug!(error = %e, "the push channel could not connect"),
        }
        if events.is_closed() {
            return;
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

type Stream = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(client: &ExecutorClient, url: &str) -> Result<Stream, tokio_tungstenite::tungstenite::Error> {
    let mut request = url.into_client_request()?;
    if let Some(bearer) = client.http().bearer()
        && let Ok(value) = HeaderValue::from_bytes(bearer.as_bytes())
    {
        request.headers_mut().insert(header::AUTHORIZATION, value);
    }
    let (stream, _) = tokio_tungstenite::connect_async_with_config(request, None, true).await?;
    Ok(stream)
}

/// Reads until the connection ends; pongs are answered by the library as it reads.
async fn read(mut stream: Stream, events: &UnboundedSender<Event>, backoff: &mut Backoff) {
    loop {
        let message = match tokio::time::timeout(IDLE, stream.next()).await {
            Err(_) => {
                tracing::debug!("the push channel went quiet; reconnecting");
                return;
            }
            Ok(None) => return,
            Ok(Some(Err(e))) => {
                tracing::debug!(error = %e, "the push channel broke");
                return;
            }
            Ok(Some(Ok(message))) => message,
        };
        let text = match message {
            Message::Text(text) => text,
            Message::Close(_) => return,
            _ => continue,
        };
        let event = match serde_json::from_str::<Frame>(text.as_str()) {
            Ok(Frame::Hello) => {
                backoff.reset();
                Event::Connected
            }
            Ok(Frame::WorkAvailable) => Event::WorkAvailable,
            Ok(Frame::WorkCanceled {
                run_public_id,
                task_key,
            }) => Event::WorkCanceled {
                run_public_id,
                task_key,
            },
            Ok(Frame::Other) => continue,
            Err(e) => {
                tracing::debug!(error = %e, "an unreadable push frame was ignored");
                continue;
            }
        };
        if events.send(event).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_url_follows_the_base_urls_scheme() {
        assert_eq!(
            channel_url("http://127.0.0.1:7420").as_deref(),
            Some("ws://127.0.0.1:7420/agent_api/v1/executor/channel")
        );
        assert_eq!(
            channel_url("https://nexus.example/base").as_deref(),
            Some("wss://nexus.example/base/agent_api/v1/executor/channel")
        );
        assert_eq!(channel_url("ftp://x"), None);
    }

    #[test]
    fn frames_parse_by_type_and_unknown_types_are_other() {
        let f: Frame =
            serde_json::from_str(r#"{"type":"hello","executor_public_id":"x","credential_epoch":1}"#).unwrap();
        assert!(matches!(f, Frame::Hello));
        let f: Frame = serde_json::from_str(r#"{"type":"work_canceled","run_public_id":"r","task_key":"t"}"#).unwrap();
        assert!(matches!(f, Frame::WorkCanceled { ref task_key, .. } if task_key == "t"));
        let f: Frame = serde_json::from_str(r#"{"type":"later"}"#).unwrap();
        assert!(matches!(f, Frame::Other));
    }
}
