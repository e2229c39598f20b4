//! `Path` and `Query` extractors whose refusals are the envelope (axum's answer plain text).
//!
//! A path parameter that cannot be decoded (invalid percent-encoding, not UTF-8) names nothing:
//! 404 `not_found`, as an id that does not parse. A query string that does not fit the route's
//! parameters is 400 `parameter_invalid`. Routes import these instead of axum's.

use axum::extract::FromRequestParts;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::http::request::Parts;
use nexus_core::codes::Code;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Path parameters (axum's `Path`, refused with the envelope).
#[derive(Debug)]
pub struct Path<T>(pub T);

/// The query string (axum's `Query`, refused with the envelope).
#[derive(Debug)]
pub struct Query<T>(pub T);

fn path_refused(rejection: PathRejection) -> ApiError {
    ApiError::new(Code::NotFound, format!("no such resource: {}", rejection.body_text()))
}

fn query_refused(rejection: QueryRejection) -> ApiError {
    ApiError::new(
        Code::ParameterInvalid,
        format!("the query string does not fit this route: {}", rejection.body_text()),
    )
}

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| Path(v))
            .map_err(path_refused)
    }
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(v)| Query(v))
            .map_err(query_refused)
    }
}
