//! `POST /agent_api/v1/tools/assembly` (declarations.md §12.1): a read-only preview of the
//! assembly for a candidate configuration and runner choice.

use axum::Json;
use axum::extract::State;
use nexus_core::declaration::Assembly;
use nexus_kernel::declarations::AssemblyPreview;

use crate::AppState;
use crate::auth::Member;
use crate::body::JsonObject;
use crate::error::ApiResult;

pub async fn preview(
    State(state): State<AppState>,
    Member(principal): Member,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Assembly>> {
    let preview = AssemblyPreview::parse(&body);
    Ok(Json(state.kernel.admin().assembly_preview(&principal, preview).await?))
}
