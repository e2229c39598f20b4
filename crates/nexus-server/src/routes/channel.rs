//! `GET X/channel` (executor.md §10): the executor's push channel over WebSocket.
//!
//! Authenticated with the transport bearer in `Authorization` (the uniform 401 otherwise).
//! The server sends `hello`, then relays the kernel's `work_available` / `work_canceled`
//! frames as JSON text and pings every 30 s; at each ping it re-checks the credential and
//! closes a fenced channel. Push is best effort: polling the inbox is always sufficient.

use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::response::{IntoResponse, Response};
use nexus_core::codes::Code;
use nexus_kernel::signals::RecvError;
use nexus_kernel::{ExecutorPrincipal, Kernel};

use crate::AppState;
use crate::auth::Executor;
use crate::error::{ApiError, ApiResult};

/// How often the server pings an open channel.
pub const PING_INTERVAL: Duration = Duration::from_secs(30);

pub async fn channel(
    State(state): State<AppState>,
    Executor(principal): Executor,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let upgrade = upgrade.map_err(|r| {
        ApiError::new(
            Code::BadRequest,
            format!("this route is a WebSocket: send an upgrade request ({r})"),
        )
    })?;
    let kernel = state.kernel.clone();
    Ok(upgrade
        .max_frame_size(nexus_core::bounds::CHANNEL_INBOUND)
        .max_message_size(nexus_core::bounds::CHANNEL_INBOUND)
        .on_upgrade(move |socket| serve(kernel, principal, socket))
        .into_response())
}

async fn serve(kernel: Kernel, principal: ExecutorPrincipal, socket: WebSocket) {
    relay(&kernel, &principal, socket).await;
    kernel.executor().channel_closed(&principal).await;
}

async fn relay(kernel: &Kernel, principal: &ExecutorPrincipal, mut socket: WebSocket) {
    let (hello, mut rx) = kernel.executor().open_channel(principal).await;
    if socket.send(Message::Text(hello.to_text().into())).await.is_err() {
        return;
    }
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + PING_INTERVAL, PING_INTERVAL);
    loop {
        tokio::select! {
            frame = rx.recv() => match frame {
                Ok(frame) => {
                    if socket.send(Message::Text(frame.to_text().into())).await.is_err() {
                        return;
                    }
                }
                // A slow reader lost frames; it recovers by polling its inbox.
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            },
            _ = ping.tick() => {
                if !kernel.executor().channel_still_valid(principal).await {
                    let _ = socket.send(Message::Close(None)).await;
                    return;
                }
                if socket.send(Message::Ping(Default::default())).await.is_err() {
                    return;
                }
            }
            incoming = socket.recv() => match incoming {
                // A frame over the inbound bound is an error here: the channel closes.
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                // Pongs and short client text are ignored: the channel carries no requests.
                Some(Ok(_)) => {}
            },
        }
    }
}
