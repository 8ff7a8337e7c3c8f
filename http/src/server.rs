//! The accept loop and each connection's life: hyper serves it, within
//! the [`Limits`]; the table or the idle deadline may end it first.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::RequestBodyTimeoutLayer;

use crate::limits::Limits;
use crate::table::{Entry, Progress, Table};
use crate::watched::Watched;

/// File descriptors kept for what else the process opens (sources,
/// viewers, files) beside the table's connections.
const OTHER_FILES: u64 = 256;
/// How long to wait before accepting again after an accept failed (out
/// of file descriptors, say): the failure would repeat at once.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Serves `app` on `listener` within `limits`, over TLS if `tls` is
/// given (HTTPS), on a runtime of the calling thread, until the listener
/// fails for good (never, in practice). An error means the runtime could
/// not be made or the listener not handed to it.
pub fn serve(
    listener: std::net::TcpListener,
    app: Router,
    limits: Limits,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> io::Result<()> {
    let tls = tls.map(|config| {
        // What a browser asks for: HTTP/1.1 (this server speaks no other).
        let mut config = (*config).clone();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        TlsAcceptor::from(Arc::new(config))
    });
    let limits = within_file_limit(limits);
    let app = app
        .layer(RequestBodyLimitLayer::new(limits.max_body))
        .layer(RequestBodyTimeoutLayer::new(limits.body_timeout));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    listener.set_nonblocking(true)?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let table = Table::new(limits.max_connections);
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let entry = table.admit();
                    tokio::spawn(connection(stream, entry, app.clone(), limits, tls.clone()));
                }
                Err(_) => tokio::time::sleep(ACCEPT_RETRY).await,
            }
        }
    })
}

/// `limits`, with the file-descriptor limit raised for its table, or the
/// table shrunk to what the system allows (and said so).
fn within_file_limit(mut limits: Limits) -> Limits {
    let wanted = limits.max_connections as u64 + OTHER_FILES;
    if let Ok(allowed) = rlimit::increase_nofile_limit(wanted) {
        if allowed < wanted {
            let fit = allowed.saturating_sub(OTHER_FILES).max(16) as usize;
            eprintln!(
                "typhon-live http: {} connections at once, not {}: the file-descriptor limit is {allowed}",
                fit, limits.max_connections
            );
            limits.max_connections = fit;
        }
    }
    limits
}

/// Serves one connection until the client is done, hyper ends it (a
/// head too slow or too large), the table evicts it, or it sits idle.
/// Over TLS, the handshake must end within the head's deadline.
async fn connection(
    stream: tokio::net::TcpStream,
    entry: Entry,
    app: Router,
    limits: Limits,
    tls: Option<TlsAcceptor>,
) {
    let _ = stream.set_nodelay(true);
    let progress = entry.progress.clone();
    let watched = Watched { stream, progress };
    let served = async {
        match tls {
            None => serve_http(TokioIo::new(watched), app, limits).await,
            Some(tls) => {
                if let Ok(Ok(stream)) =
                    tokio::time::timeout(limits.header_timeout, tls.accept(watched)).await
                {
                    serve_http(TokioIo::new(stream), app, limits).await;
                }
            }
        }
    };
    tokio::select! {
        () = served => {}
        () = entry.evict.notified() => {}
        () = idle(&entry.progress, limits.idle_timeout) => {}
    }
}

/// HTTP/1.1 on `io` (a socket, or TLS over one), WebSocket upgrades
/// included, until it ends.
async fn serve_http<I>(io: I, app: Router, limits: Limits)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_head);
    let _ = http
        .serve_connection(io, TowerToHyperService::new(app))
        .with_upgrades()
        .await;
}

/// Returns once no byte has moved for `timeout`.
async fn idle(progress: &Progress, timeout: Duration) {
    loop {
        let idle = progress.idle();
        if idle >= timeout {
            return;
        }
        tokio::time::sleep(timeout - idle).await;
    }
}
