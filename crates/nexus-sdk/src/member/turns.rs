//! A conversation's timeline (runs.md §12): `GET C/turns` and `POST C/cancellation`, on
//! [`ConversationRef`].

use reqwest::Method;
use serde_json::{Map, Value};

use super::conversations::ConversationRef;
use super::wire;
use crate::error::Result;
use nexus_api::turns::{Cancellation, TurnPage};

impl ConversationRef {
    /// `GET C/turns?after=&limit=`: turns after position `after` (0 = from the first); the
    /// server defaults `limit` to 50 and caps it at 200.
    pub async fn turns(&self, after: i64, limit: Option<u32>) -> Result<TurnPage> {
        let route = self
            .route()
            .lit("turns")
            .query("after", Some(after))
            .query("limit", limit);
        wire::get(&self.http, &route).await
    }

    /// `POST C/cancellation`: stops the running turn's run and the children that turn spawned
    /// with `lifetime: turn`.
    pub async fn cancel(&self) -> Result<Cancellation> {
        let empty = Value::Object(Map::new());
        wire::call(
            &self.http,
            Method::POST,
            &self.route().lit("cancellation"),
            Some(&empty),
            None,
        )
        .await
    }
}
