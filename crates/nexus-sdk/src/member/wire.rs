//! Building member-plane paths (every caller-given segment and query value percent-encoded, so
//! an id can never reach another route) and reading responses that are not one JSON object.

use std::fmt::Write as _;

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, RequestBuilder, Response};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, Error, Result};
use crate::http::Http;

/// The member plane's root.
pub(crate) const V1: &str = "/agent_api/v1";

/// A path with its query, built piece by piece.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    text: String,
    has_query: bool,
    /// The first segment that cannot be sent (empty, `.` or `..`: URL parsing would drop or
    /// climb it, even percent-encoded).
    refused: Option<String>,
}

/// Appends `raw` percent-encoded: only RFC 3986 unreserved bytes pass through.
fn encode(out: &mut String, raw: &str) {
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

impl Route {
    /// A route starting at the literal `root` (for example [`V1`]).
    pub(crate) fn new(root: &str) -> Route {
        Route {
            text: root.to_owned(),
            has_query: false,
            refused: None,
        }
    }

    /// Appends `/<literal>` as written (a fixed route word).
    pub(crate) fn lit(mut self, literal: &str) -> Route {
        self.text.push('/');
        self.text.push_str(literal);
        self
    }

    /// Appends `/<segment>`, percent-encoded (a caller-given id or key).
    pub(crate) fn seg(mut self, segment: &str) -> Route {
        if matches!(segment, "" | "." | "..") && self.refused.is_none() {
            self.refused = Some(segment.to_owned());
        }
        self.text.push('/');
        encode(&mut self.text, segment);
        self
    }

    /// Appends `name=value` to the query when `value` is present.
    pub(crate) fn query(mut self, name: &str, value: Option<impl ToString>) -> Route {
        if let Some(value) = value {
            self.text.push(if self.has_query { '&' } else { '?' });
            self.has_query = true;
            encode(&mut self.text, name);
            self.text.push('=');
            encode(&mut self.text, &value.to_string());
        }
        self
    }

    /// The path and query, or [`Error::InvalidArgument`] naming a segment that cannot be sent.
    pub(crate) fn finish(&self) -> Result<&str> {
        match &self.refused {
            Some(segment) => Err(Error::InvalidArgument(format!(
                "{segment:?} is not a valid id or key in a path"
            ))),
            None => Ok(&self.text),
        }
    }
}

/// Adds `name: value` to `request`; a value that is not a header value is refused here, named.
pub(crate) fn header(request: RequestBuilder, name: &'static str, value: Option<&str>) -> Result<RequestBuilder> {
    let Some(value) = value else {
        return Ok(request);
    };
    let parsed = HeaderValue::from_str(value)
        .map_err(|_| Error::InvalidArgument(format!("{name} {value:?} cannot be sent as a header value")))?;
    Ok(request.header(HeaderName::from_static(name), parsed))
}

/// `GET route`, decoded as `T`.
pub(crate) async fn get<T: DeserializeOwned>(http: &Http, route: &Route) -> Result<T> {
    Http::send(http.authed(Method::GET, route.finish()?)?).await
}

/// `method route` with an optional JSON body and `Idempotency-Key`, decoded as `T`.
pub(crate) async fn call<T: DeserializeOwned>(
    http: &Http,
    method: Method,
    route: &Route,
    body: Option<&Value>,
    idempotency_key: Option<&str>,
) -> Result<T> {
    let mut request = http.authed(method, route.finish()?)?;
    if let Some(body) = body {
        request = request.json(body);
    }
    Http::send(header(request, "idempotency-key", idempotency_key)?).await
}

/// Sends `request` and returns the response when its status is 2xx (or 304); anything else is
/// read whole and becomes an [`ApiError`].
pub(crate) async fn checked(request: RequestBuilder) -> Result<Response> {
    let response = request.send().await?;
    let status = response.status();
    if status.is_success() || status == reqwest::StatusCode::NOT_MODIFIED {
        return Ok(response);
    }
    let bytes = response.bytes().await?;
    Err(ApiError::from_response(status.as_u16(), &bytes).into())
}

/// A response header as text, when present and visible ASCII.
pub(crate) fn header_text(response: &Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A typed request body (a `nexus_api` type) as the JSON [`call`] sends.
pub(crate) fn body<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("a nexus_api body serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_and_queries_are_encoded() {
        let route = Route::new(V1)
            .lit("workspaces")
            .seg("../admin")
            .lit("memory")
            .query("path", Some("workspace/a b&c=d"))
            .query("skip", None::<&str>)
            .query("limit", Some(5));
        assert_eq!(
            route.finish().unwrap(),
            "/agent_api/v1/workspaces/..%2Fadmin/memory?path=workspace%2Fa%20b%26c%3Dd&limit=5"
        );
    }

    #[test]
    fn dot_and_empty_segments_are_refused() {
        for bad in ["", ".", ".."] {
            let err = Route::new(V1).lit("runs").seg(bad).finish().unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{bad:?}: {err}");
        }
    }
}
