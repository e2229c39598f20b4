//! What the benchmarks measure with: this process's CPU time, the machine's CPU split, the
//! store's statement events, and the inbox benchmarks' workload.

/// This process's CPU time so far (user + system, every thread: the runtime's workers and the
/// store's connection threads), from `/proc/self/stat` in clock ticks (100 Hz on Linux).
/// `None` where there is no procfs. The benchmarks report it beside wall time: on a shared
/// machine it moves far less with other load than wall time does.
pub fn process_cpu() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 (utime) and 15 (stime) overall; 12 and 13 after the state field.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(std::time::Duration::from_millis(ticks * 10))
}

/// The whole machine's CPU time so far, by where it went (`/proc/stat`'s first line, in clock
/// ticks); `None` where there is no procfs. Over a bench window, [`MachineCpu::since`] says
/// what share of both cores the machine spent outside this process's reach: `steal` is time a
/// virtual machine's cores were ready to run but the host ran something else, `idle` time no
/// thread could run. On this kind of machine the two move from one hour to the next and explain
/// much of the spread in the throughput figures
/// (docs/decisions/123-benchmarks-report-machine-cpu.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MachineCpu {
    pub user: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub steal: u64,
    /// Every field of the line summed (nice, irq and softirq included).
    pub total: u64,
}

impl MachineCpu {
    /// Reads the counters now.
    pub fn now() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        Self::parse(stat.lines().next()?)
    }

    /// Parses the aggregate `cpu …` line: user nice system idle iowait irq softirq steal
    /// (guest time is already counted in user and nice, so it is not added again).
    fn parse(line: &str) -> Option<Self> {
        let mut words = line.split_whitespace();
        if words.next()? != "cpu" {
            return None;
        }
        let f: Vec<u64> = words
            .take(8)
            .map(str::parse)
            .collect::<std::result::Result<_, _>>()
            .ok()?;
        let [user, nice, system, idle, iowait, irq, softirq, steal] = f[..] else {
            return None;
        };
        Some(Self {
            user,
            system,
            idle,
            iowait,
            steal,
            total: user + nice + system + idle + iowait + irq + softirq + steal,
        })
    }

    /// The counters accumulated between `start` and `self`.
    pub fn since(self, start: Self) -> Self {
        Self {
            user: self.user.saturating_sub(start.user),
            system: self.system.saturating_sub(start.system),
            idle: self.idle.saturating_sub(start.idle),
            iowait: self.iowait.saturating_sub(start.iowait),
            steal: self.steal.saturating_sub(start.steal),
            total: self.total.saturating_sub(start.total),
        }
    }

    /// One line for a bench report: each share of the machine's CPU time, in percent.
    pub fn shares(&self) -> String {
        let pct = |v: u64| 100.0 * v as f64 / self.total.max(1) as f64;
        format!(
            "user {:.1} %, system {:.1} %, idle {:.1} %, iowait {:.1} %, steal {:.1} %",
            pct(self.user),
            pct(self.system),
            pct(self.idle),
            pct(self.iowait),
            pct(self.steal)
        )
    }
}

/// A `tracing` subscriber for the benchmarks that sees only the store's per-statement events
/// (the SQLite engine's [`crate::SQLITE_STATEMENT_TARGET`], sqlx's `sqlx::query` on PostgreSQL)
/// and hands each one's statement text (whitespace collapsed; `None` when the event carries
/// none) to the function it wraps. It records nothing else.
pub struct StatementEvents<F>(pub F);

/// Whether a `tracing` target is a store statement event.
fn is_statement(target: &str) -> bool {
    target == crate::SQLITE_STATEMENT_TARGET || target == "sqlx::query"
}

struct SqlText(Option<String>);

impl tracing::field::Visit for SqlText {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if self.0.is_none() && matches!(field.name(), "sql" | "summary" | "db.statement") {
            self.0 = Some(value.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }
}

impl<F: Fn(Option<&str>) + Send + Sync + 'static> tracing::Subscriber for StatementEvents<F> {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        is_statement(metadata.target())
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if is_statement(event.metadata().target()) {
            let mut text = SqlText(None);
            event.record(&mut text);
            (self.0)(text.0.as_deref());
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The inbox benchmarks' workload (the kernel's `settle` and the server's `inbox`): one runner
/// tool and runs of one step that calls it, written once so both measure the same rows.
pub mod inbox_bench {
    use serde_json::{Value, json};
    use uuid::Uuid;

    /// A runner's announcement of `echo`: replayable (`read_only`, `intrinsic`), ten minutes.
    pub fn echo_announcement() -> Value {
        json!({"tools": [{
            "name": "echo",
            "description": "Echo the input.",
            "input_schema": {"type": "object"},
            "effect_profile": {"kind": "read_only", "destructive": false, "effect_scope": "closed",
                               "idempotency": "intrinsic", "reconciliation": "none"},
            "timeout_ms": 600000,
        }]})
    }

    /// The run body of the `k`th task: one step keyed `t` calling `echo` on `runner`, bypass.
    pub fn echo_run(k: usize, runner: Uuid) -> Value {
        json!({"run": {"approval_mode": "bypass", "steps": [{"key": "t", "tool": {
            "name": "echo", "input": {"i": k},
            "route": {"kind": "runner", "runner_executor_public_id": runner},
        }}]}})
    }
}

#[cfg(test)]
mod tests {
    use super::MachineCpu;

    #[test]
    fn the_machine_cpu_line_is_read_by_field_and_differenced() {
        let start = MachineCpu::parse("cpu  100 5 40 800 10 1 2 30 0 0").expect("a cpu line");
        assert_eq!(
            start,
            MachineCpu {
                user: 100,
                system: 40,
                idle: 800,
                iowait: 10,
                steal: 30,
                total: 988,
            }
        );
        let end = MachineCpu::parse("cpu  160 5 60 900 10 1 2 50 7 0").expect("a cpu line");
        let window = end.since(start);
        assert_eq!(
            (window.user, window.system, window.idle, window.steal, window.total),
            (60, 20, 100, 20, 200)
        );
        assert_eq!(
            window.shares(),
            "user 30.0 %, system 10.0 %, idle 50.0 %, iowait 0.0 %, steal 10.0 %"
        );
        // A per-core line, a short line and a non-number are not the aggregate.
        assert_eq!(MachineCpu::parse("cpu0 1 2 3 4 5 6 7 8"), None);
        assert_eq!(MachineCpu::parse("cpu 1 2 3"), None);
        assert_eq!(MachineCpu::parse("cpu 1 2 x 4 5 6 7 8"), None);
    }
}
