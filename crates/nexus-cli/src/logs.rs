//! The log `nexus serve` (and `nexus demo` with `NEXUS_LOG` set) writes to stderr: text or JSON
//! lines, filtered by `NEXUS_LOG`, coloured only for a person at a terminal.

use std::io::IsTerminal;

/// The environment variable holding the log filter (`tracing` directives).
pub const ENV_LOG: &str = "NEXUS_LOG";
/// The filter when `NEXUS_LOG` is unset or unreadable.
pub const DEFAULT_FILTER: &str = "info,sqlx=warn,tower_http=info";

/// Whether text lines may carry ANSI colour: only when stderr, where the log goes, is a
/// terminal and `NO_COLOR` (no-color.org) is unset or empty.
pub fn colour(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

fn colour_here() -> bool {
    colour(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR").as_deref())
}

/// Installs the subscriber for `nexus serve`: `filter` is `NEXUS_LOG`, else [`DEFAULT_FILTER`].
pub fn init(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env(ENV_LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_here())
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// Installs the subscriber `nexus demo` uses when `NEXUS_LOG` is set (and nothing otherwise:
/// the demo prints its own story).
pub fn init_if_asked() {
    if std::env::var_os(ENV_LOG).is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_env(ENV_LOG))
            .with_ansi(colour_here())
            .with_writer(std::io::stderr)
            .try_init();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn colour_needs_a_terminal_and_no_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsStr::new(""))));
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(!colour(false, None));
    }
}
