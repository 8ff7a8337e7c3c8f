//! A real async service, as the issue that made task spans tried one: an
//! axum service with tower-http's `TraceLayer`, whose `/a` and `/b`
//! await an `#[instrument]`ed `query` (a sleep, then a `render`), and
//! hyper clients as the load. The tests watch it through the `tracing`
//! layer; the bench measures what the layer costs it.

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tower_http::trace::TraceLayer;

/// What `query` waits for: every request takes at least this long.
pub const SLEEP: Duration = Duration::from_micros(200);

#[tracing::instrument]
async fn query(route: &'static str) -> u64 {
    tokio::time::sleep(SLEEP).await;
    render(route)
}

#[tracing::instrument]
fn render(route: &'static str) -> u64 {
    route.bytes().map(u64::from).sum()
}

/// The service on `listener`, until `stop` says so (or is dropped).
async fn serve(listener: TcpListener, stop: oneshot::Receiver<()>) -> std::io::Result<()> {
    let app = Router::new()
        .route("/a", get(|| async { query("a").await.to_string() }))
        .route("/b", get(|| async { query("b").await.to_string() }))
        .layer(TraceLayer::new_for_http());
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = stop.await;
        })
        .await
}

/// The service running on a loopback port of its own.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Starts the service on an ephemeral port of 127.0.0.1, on the current
/// tokio runtime.
pub async fn start() -> std::io::Result<Running> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel();
    let server = tokio::spawn(serve(listener, stopped));
    Ok(Running { addr, stop, server })
}

impl Running {
    /// Stops it, gracefully, within `wait`; whether it stopped in time
    /// and cleanly.
    pub async fn stop(self, wait: Duration) -> bool {
        let _ = self.stop.send(());
        matches!(
            tokio::time::timeout(wait, self.server).await,
            Ok(Ok(Ok(())))
        )
    }
}

/// `clients` clients each sending `per_client` requests to the service at
/// `addr`, one after another, alternating `/a` and `/b` (client `c`'s
/// `i`th request goes to `/a` when `c + i` is even); the responses that
/// came back whole and successful.
pub async fn load(addr: SocketAddr, clients: usize, per_client: usize) -> usize {
    let mut tasks = Vec::new();
    for c in 0..clients {
        tasks.push(tokio::spawn(async move {
            let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
            let mut ok = 0;
            for i in 0..per_client {
                let route = if (c + i) % 2 == 0 { "a" } else { "b" };
                let Ok(uri) = format!("http://{addr}/{route}?client={c}&i={i}").parse() else {
                    continue;
                };
                let Ok(response) = client.get(uri).await else {
                    continue;
                };
                let success = response.status().is_success();
                if response.into_body().collect().await.is_ok() && success {
                    ok += 1;
                }
            }
            ok
        }));
    }
    let mut ok = 0;
    for task in tasks {
        ok += task.await.unwrap_or(0);
    }
    ok
}
