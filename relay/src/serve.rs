//! Running the relay: attaches to every source for as long as it runs,
//! serves them merged to any number of viewers, their metrics to
//! Prometheus, and exports to OTLP.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::announce::tell;
use crate::browser::{self, tabs};
use crate::capture::{self, Asked, SourceCapture};
use crate::config::RelayConfig;
use crate::error::RelayError;
use crate::fanout::{self, Input};
use crate::merge::Merger;
use crate::remote::{self, Security};
use crate::source::{self, Sinks, ToMerger};
use typhon_live_monitoring::metrics::{Metrics, SourceMetrics};
use typhon_live_monitoring::otlp::client::Client;
use typhon_live_monitoring::otlp::settings::{Collector, Compression, Target};
use typhon_live_monitoring::otlp::{self, TickTracer};
use typhon_live_monitoring::scrape;

/// Binds `addr` to serve `what`, which carries `carries`: beyond
/// loopback, unless it is `secured` (TLS and a token), only with a
/// warning.
fn listen(
    who: &str,
    addr: SocketAddr,
    what: &str,
    carries: &str,
    secured: bool,
) -> Result<TcpListener, RelayError> {
    if !addr.ip().is_loopback() && !secured {
        eprintln!(
            "{who}: {what} on {addr}, beyond loopback: unauthenticated, and it carries {carries}"
        );
    }
    TcpListener::bind(addr).map_err(|e| RelayError::CannotListen {
        addr: addr.to_string(),
        reason: e.to_string(),
    })
}

/// Runs the relay until `duration` passes (for ever without one).
pub fn run(serve: &RelayConfig, duration: Option<Duration>) -> Result<(), RelayError> {
    let (sources, who) = (&serve.sources, serve.who.as_str());
    let deadline = duration.map(|d| Instant::now() + d);
    let metrics = Arc::new(Metrics::new());
    let security = serve
        .tls
        .as_ref()
        .map(|tls| Security::new(who, tls, serve.bind_address))
        .transpose()?;
    // Each source's flag for `POST /capture`, when its stream is recorded.
    let asked: Asked = Arc::new(match &serve.capture {
        Some(_) => sources
            .iter()
            .map(|s| (s.name.clone(), Arc::new(AtomicBool::new(false))))
            .collect(),
        None => BTreeMap::new(),
    });
    if let Some(capture) = &serve.capture {
        let options = capture.per_source(sources.len());
        let triggers: Vec<String> = options.triggers.iter().map(ToString::to_string).collect();
        tell(
            who,
            &format!(
                "captures into {} when {} (each source's past {} bytes at most, its capture {})",
                capture.dir.display(),
                if triggers.is_empty() {
                    "asked".into()
                } else {
                    triggers.join(", or ")
                },
                options.settings.keep_bytes,
                options.settings.max_capture_bytes
            ),
        );
    }
    if let Some(addr) = serve.metrics {
        let secured = security
            .as_ref()
            .map(|s| (Arc::clone(&s.tls), s.token.clone()));
        let listener = listen(
            who,
            addr,
            "/metrics",
            "source, span and gauge names",
            secured.is_some(),
        )?;
        let bound = listener.local_addr().unwrap_or(addr);
        match &security {
            None => tell(who, &format!("metrics on http://{bound}/metrics")),
            Some(security) => tell(
                who,
                &format!(
                    "metrics on https://{bound}/metrics to the bearer of the token; {}",
                    security.certificate()
                ),
            ),
        }
        let metrics = Arc::clone(&metrics);
        // Asking for a capture takes the token: only on a secured port.
        let routes = (serve.capture.is_some() && secured.is_some())
            .then(|| capture::routes(Arc::clone(&asked)));
        std::thread::spawn(move || scrape::serve(listener, metrics, secured, routes));
    }
    let inbox = if serve.listen.is_some() || serve.web.is_some() {
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // A fresh session id per run: viewers tell a relay restart.
        let session = created ^ u64::from(std::process::id()).rotate_left(32);
        let merger = if serve.unprefixed && sources.len() == 1 {
            Merger::single(&sources[0].name, session, created)
        } else {
            let labels: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
            Merger::new(&labels, session, created)
        };
        let (inbox, inputs) = fanout::inbox();
        let metrics = Arc::clone(&metrics);
        std::thread::spawn(move || fanout::merge(merger, inputs, metrics));
        Some(inbox)
    } else {
        None
    };
    if let (Some(port), Some(inbox)) = (serve.listen, &inbox) {
        let address = SocketAddr::new(serve.bind_address, port);
        let viewers = inbox.clone();
        match &security {
            Some(security) => {
                let listener = listen(who, address, "the merged stream", "", true)?;
                remote::serve(who, security, listener, viewers, Arc::clone(&metrics))?;
            }
            None => {
                let listener = listen(
                    who,
                    address,
                    "the merged stream",
                    "system, component and query names",
                    false,
                )?;
                let bound = listener.local_addr().map_or(address, |a| a);
                tell(who, &format!("viewers on {bound}"));
                std::thread::spawn(move || fanout::listen(listener, viewers));
            }
        }
    }
    if let (Some(port), Some(inbox)) = (serve.web, &inbox) {
        serve_page(serve, port, inbox.clone(), security.as_ref())?;
    }
    let exports = serve
        .otlp
        .as_ref()
        .map(|collector| export(who, collector, &metrics, serve.otlp_interval))
        .transpose()?;
    let traced = serve.otlp.as_ref().is_some_and(|c| c.traces.is_some());
    let threads = sources
        .iter()
        .cloned()
        .enumerate()
        .map(|(index, source)| -> Result<_, RelayError> {
            let source_metrics = SourceMetrics::new(Arc::clone(&metrics), &source.name);
            let capture = match (&serve.capture, asked.get(&source.name)) {
                (Some(config), Some(flag)) => {
                    let options = config.per_source(sources.len());
                    let counts = source_metrics.capture_counts();
                    Some(
                        SourceCapture::start(
                            config,
                            options,
                            &source.name,
                            counts,
                            Arc::clone(flag),
                        )
                        .map_err(|e| RelayError::Capture {
                            dir: config.dir.clone(),
                            reason: e.to_string(),
                        })?,
                    )
                }
                _ => None,
            };
            let mut sinks = Sinks {
                capture,
                metrics: source_metrics,
                merger: inbox.clone().map(|inbox: SyncSender<Input>| ToMerger {
                    inbox,
                    source: index,
                }),
                // Slow ticks' trees are built only if they are exported.
                tracer: exports.clone().filter(|_| traced).map(|exports| {
                    TickTracer::new(&source.name, serve.slow_tick, exports, Arc::clone(&metrics))
                }),
            };
            Ok(std::thread::spawn(move || {
                source::run(&source, &mut sinks, deadline)
            }))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for thread in threads {
        let _ = thread.join();
    }
    Ok(())
}

/// Starts the thread that exports to `collector`, says where to, and
/// returns its queue; an error names a CA file that cannot be used.
fn export(
    who: &str,
    collector: &Collector,
    metrics: &Arc<Metrics>,
    interval: Duration,
) -> Result<SyncSender<otlp::Export>, RelayError> {
    let client = |target: &Option<Target>| {
        target
            .clone()
            .map(|target| {
                let gzip = target.compression == Compression::Gzip;
                let client = Client::new(target).map_err(RelayError::BadSettings)?;
                let how = if gzip { " (gzip)" } else { "" };
                tell(who, &format!("OTLP to {}{how}", client.url()));
                Ok(client)
            })
            .transpose()
    };
    let (metrics_client, traces_client) = (client(&collector.metrics)?, client(&collector.traces)?);
    let (exports, queued) = otlp::queue();
    let metrics = Arc::clone(metrics);
    std::thread::spawn(move || {
        otlp::post_all(metrics_client, traces_client, metrics, queued, interval)
    });
    Ok(exports)
}

/// Serves the browser viewer of the merged stream on `port` of the bind
/// address (over HTTPS given `security`), and says where.
fn serve_page(
    serve: &RelayConfig,
    port: u16,
    inbox: SyncSender<Input>,
    security: Option<&Security>,
) -> Result<(), RelayError> {
    let address = SocketAddr::new(serve.bind_address, port);
    let url = browser::page::serve(&serve.who, address, tabs::routes(inbox), security)?;
    tell(&serve.who, &format!("browser viewer at {url}"));
    Ok(())
}
