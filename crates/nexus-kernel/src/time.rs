//! The kernel's clock and id source. Timestamps are Unix milliseconds in storage and
//! whole-second ISO 8601 UTC on the wire; public ids are UUIDv7.

use uuid::Uuid;

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A new public id (UUIDv7).
pub fn new_id() -> Uuid {
    Uuid::now_v7()
}

/// `2026-01-05T10:00:00Z`: whole seconds, UTC.
pub fn iso(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_is_whole_seconds_utc() {
        assert_eq!(super::iso(1_767_607_200_999), "2026-01-05T10:00:00Z");
        assert_eq!(super::iso(0), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn ids_are_v7() {
        assert_eq!(super::new_id().get_version_num(), 7);
    }
}
