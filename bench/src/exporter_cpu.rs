//! The exporter thread's time on a CPU, for the rows that measure what a
//! part of it costs (the flight recorder, each lane's CPU samples).

/// The exporter thread's time on a CPU so far, ns (Linux: its
/// schedstat's first field), found by its name.
pub fn exporter_cpu_ns() -> Option<u64> {
    exporter_cpu_ns_in("self")
}

/// [`exporter_cpu_ns`] of process `pid` (a demo the bench started).
pub fn exporter_cpu_ns_of(pid: u32) -> Option<u64> {
    exporter_cpu_ns_in(&pid.to_string())
}

fn exporter_cpu_ns_in(process: &str) -> Option<u64> {
    for task in std::fs::read_dir(format!("/proc/{process}/task")).ok()? {
        let path = task.ok()?.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.trim().starts_with("typhon-live-exp") {
            let stat = std::fs::read_to_string(path.join("schedstat")).ok()?;
            return stat.split_whitespace().next()?.parse().ok();
        }
    }
    None
}
