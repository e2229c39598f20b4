//! The kernel's clock and id source. Timestamps are Unix milliseconds in storage and
//! whole-second ISO 8601 UTC on the wire; public ids are UUIDv7.

use uuid::Uuid;

/// The process clock, in Unix milliseconds, shifted by `NEXUS_CLOCK_SKEW_MS` when that is set
/// (a test's way to skew one node; read once). The kernel reads time through its clock
/// (`crate::clock`), which is this on SQLite and the database's on PostgreSQL.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis() + skew_ms()
}

/// `NEXUS_CLOCK_SKEW_MS`, or 0.
fn skew_ms() -> i64 {
    static SKEW: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *SKEW.get_or_init(|| {
        std::env::var("NEXUS_CLOCK_SKEW_MS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    })
}

/// A new public id (UUIDv7).
pub fn new_id() -> Uuid {
    Uuid::now_v7()
}

/// `2026-01-05T10:00:00Z`: whole seconds, UTC. (chrono's RFC 3339 writer, not a `format`
/// string: every inbox row and reply carries several of these, and a format string is parsed
/// on every call.)
pub fn iso(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_is_whole_seconds_utc() {
        assert_eq!(super::iso(1_767_607_200_999), "2026-01-05T10:00:00Z");
        assert_eq!(super::iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::iso(-1), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn iso_matches_the_strftime_spelling_across_the_years() {
        // From 1900 to 2400, about every 90 days and at a different time of day each step.
        let mut ms: i64 = -2_208_988_800_000;
        while ms < 13_569_465_600_000 {
            let secs = ms.div_euclid(1000);
            let spelled = chrono::DateTime::from_timestamp(secs, 0)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            assert_eq!(super::iso(ms), spelled, "{ms}");
            ms += 7_777_777_777;
        }
    }

    #[test]
    fn ids_are_v7() {
        assert_eq!(super::new_id().get_version_num(), 7);
    }
}
