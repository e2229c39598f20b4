//! Paging shared by every listing route (errors-and-auth.md §5): an opaque id cursor, a page
//! size, and the `pagination` member.

use nexus_api::common::Pagination;
use nexus_core::codes::Code;

use crate::error::{KernelError, KernelResult};

/// Parses an opaque id cursor (`after`): absent → 0; a non-negative integer, else 400.
pub(crate) fn parse_cursor(after: Option<&str>) -> KernelResult<i64> {
    match after {
        None | Some("") => Ok(0),
        Some(s) => s.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            KernelError::new(
                Code::ParameterInvalid,
                format!("after {s:?} is not a cursor this route issued"),
            )
        }),
    }
}

/// A page size: default 50, clamped to 1–200.
pub(crate) fn page_limit(limit: Option<i64>) -> i64 {
    limit
        .unwrap_or(nexus_core::bounds::PAGE_DEFAULT as i64)
        .clamp(1, nexus_core::bounds::PAGE_MAX as i64)
}

/// The `pagination` member of a page whose last row has id `next` (`None` on the last page).
pub(crate) fn pagination(next: Option<i64>) -> Pagination {
    Pagination {
        next_after: next.map(|n| n.to_string()),
    }
}
