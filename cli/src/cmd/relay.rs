//! `typhon-live relay`: attaches to every source for as long as it runs
//! and serves their metrics to Prometheus.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use typhon_live_cli::error::CliError;
use typhon_live_cli::relay::http;
use typhon_live_cli::relay::metrics::{Metrics, SourceMetrics};
use typhon_live_cli::relay::source::{self, Source};

/// Runs the relay until `duration` passes (for ever without one).
pub fn run(
    sources: &[Source],
    metrics_addr: Option<&str>,
    duration: Option<Duration>,
) -> Result<(), CliError> {
    let deadline = duration.map(|d| Instant::now() + d);
    let metrics = Arc::new(Metrics::new());
    if let Some(addr) = metrics_addr {
        let listener = TcpListener::bind(addr).map_err(|e| CliError::Unreachable {
            addr: addr.into(),
            reason: format!("cannot listen for scrapes: {e}"),
        })?;
        let bound = listener
            .local_addr()
            .map_or_else(|_| addr.into(), |a| a.to_string());
        println!("typhon-live relay: metrics on http://{bound}/metrics");
        let metrics = Arc::clone(&metrics);
        std::thread::spawn(move || http::serve(listener, metrics));
    }
    let threads: Vec<_> = sources
        .iter()
        .cloned()
        .map(|source| {
            let mut side = SourceMetrics::new(Arc::clone(&metrics), &source.name);
            std::thread::spawn(move || source::run(&source, &mut side, deadline))
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
    Ok(())
}
