//! Plane extractors: [`Member`] for member-plane routes, [`Executor`] for transport-plane
//! routes. Both answer every failure with the identical 401.

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use nexus_kernel::{ExecutorPrincipal, MemberPrincipal};

use crate::AppState;
use crate::error::ApiError;

/// The authenticated member of a member-plane request.
pub struct Member(pub MemberPrincipal);

/// The authenticated executor of a transport-plane request.
pub struct Executor(pub ExecutorPrincipal);

fn authorization(parts: &Parts) -> Option<&str> {
    parts.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
}

impl FromRequestParts<AppState> for Member {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        Ok(Member(
            state.kernel.admin().authenticate_member(authorization(parts)).await?,
        ))
    }
}

impl FromRequestParts<AppState> for Executor {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        Ok(Executor(
            state.kernel.admin().authenticate_executor(authorization(parts)).await?,
        ))
    }
}
