//! The browser viewer's files (`web/`, built by `web/build`), embedded
//! gzipped in the binary so that the page works offline and nothing is
//! fetched from elsewhere; served as they are stored, `Content-Encoding:
//! gzip`, to a client that accepts it (every browser does), and unpacked,
//! once, for one that accepts only identity (`encoding`).

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, OnceLock};

use flate2::read::GzDecoder;

use typhon_live_http::axum::http::{header, HeaderMap, StatusCode};
use typhon_live_http::axum::response::{IntoResponse, Response};
use typhon_live_http::axum::routing::get;
use typhon_live_http::axum::Router;
use typhon_live_http::{guard, Guard, Limits};

use super::encoding::{self, Coding};
use crate::config;
use crate::error::RelayError;
use crate::remote::Security;

/// One embedded file: its path under the page, its type, its gzip bytes,
/// and those unpacked once a client asked for them so.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    gzip: &'static [u8],
    identity: OnceLock<Option<Vec<u8>>>,
}

impl Asset {
    /// Its bytes unpacked; `None` if they do not unpack (a build's
    /// fault, which a test rules out).
    fn unpacked(&self) -> Option<&[u8]> {
        let unpacked = self.identity.get_or_init(|| {
            let mut bytes = Vec::new();
            let read = GzDecoder::new(self.gzip).read_to_end(&mut bytes);
            read.ok().map(|_| bytes)
        });
        unpacked.as_deref()
    }
}

macro_rules! asset {
    ($path:literal, $file:literal, $type:literal) => {
        Asset {
            path: $path,
            content_type: $type,
            gzip: include_bytes!(concat!("../../../web/dist/", $file, ".gz")),
            identity: OnceLock::new(),
        }
    };
}

static ASSETS: [Asset; 6] = [
    asset!("/", "index.html", "text/html; charset=utf-8"),
    asset!("/main.js", "main.js", "text/javascript; charset=utf-8"),
    asset!("/worker.js", "worker.js", "text/javascript; charset=utf-8"),
    asset!("/style.css", "style.css", "text/css; charset=utf-8"),
    asset!(
        "/typhon_live_web.js",
        "typhon_live_web.js",
        "text/javascript; charset=utf-8"
    ),
    asset!(
        "/typhon_live_web_bg.wasm",
        "typhon_live_web_bg.wasm",
        "application/wasm"
    ),
];

/// Bytes of the page's files, gzipped, as they are sent.
pub fn bundle_bytes() -> usize {
    ASSETS.iter().map(|a| a.gzip.len()).sum()
}

/// The page's routes: `GET /` and its files. Serve them behind a
/// [`typhon_live_http::Guard`], beside a stream's route.
pub fn routes() -> Router {
    ASSETS.iter().fold(Router::new(), |router, asset| {
        router.route(
            asset.path,
            get(move |headers: HeaderMap| async move { answer(asset, &headers) }),
        )
    })
}

/// Serves the page and `stream` (the route its stream comes by: the
/// live tabs', or a recorded file's replay) on `address` behind a new token: on loopback over
/// HTTP, or, given the relay's `security`, anywhere over HTTPS and to its
/// public hosts too. Returns the URL to open, the token in it, printed
/// once by the caller. The server runs on a thread of its own; `who`
/// signs its complaints.
pub fn serve(
    who: &str,
    address: SocketAddr,
    stream: Router,
    security: Option<&Security>,
) -> Result<String, RelayError> {
    if security.is_none() {
        config::web_on_loopback(address.ip()).map_err(RelayError::BadSettings)?;
    }
    let cannot = |reason: String| RelayError::CannotListen {
        addr: address.to_string(),
        reason,
    };
    let listener = TcpListener::bind(address).map_err(|e| cannot(e.to_string()))?;
    let bound = listener.local_addr().map_err(|e| cannot(e.to_string()))?;
    let token = guard::new_token()
        .map_err(|e| cannot(format!("no token: the system has no random numbers ({e})")))?;
    let public_hosts = security.map_or(&[][..], |s| &s.public_hosts[..]);
    let guard = Guard::for_site(&token, bound, public_hosts, security.is_some());
    let app = guard.protect(routes().merge(stream));
    let tls = security.map(|s| Arc::clone(&s.tls));
    let who = who.to_owned();
    std::thread::spawn(move || {
        if let Err(e) = typhon_live_http::serve(listener, app, Limits::default(), tls) {
            eprintln!("{who}: the browser viewer is not served: {e}");
        }
    });
    let (scheme, host) = match public_hosts.first() {
        Some(host) => ("https", format!("{host}:{}", bound.port())),
        None if security.is_some() => ("https", bound.to_string()),
        None => ("http", bound.to_string()),
    };
    Ok(format!("{scheme}://{host}/{token}/"))
}

fn answer(asset: &'static Asset, headers: &HeaderMap) -> Response {
    let vary = (header::VARY, "Accept-Encoding");
    let content_type = (header::CONTENT_TYPE, asset.content_type);
    match encoding::negotiate(headers) {
        Some(Coding::Gzip) => (
            [content_type, (header::CONTENT_ENCODING, "gzip"), vary],
            asset.gzip,
        )
            .into_response(),
        Some(Coding::Identity) => match asset.unpacked() {
            Some(bytes) => ([content_type, vary], bytes).into_response(),
            None => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the viewer's file does not unpack: this build is broken\n",
            )
                .into_response(),
        },
        None => (
            StatusCode::NOT_ACCEPTABLE,
            "the viewer's files are served gzipped or as they are: accept gzip or identity\n",
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_gzip_unpacks_and_is_within_the_budget() {
        for asset in &ASSETS {
            assert_eq!(&asset.gzip[..2], [0x1f, 0x8b], "{} is gzip", asset.path);
            let unpacked = asset.unpacked().expect("it unpacks");
            assert!(unpacked.len() > asset.gzip.len() / 2, "{}", asset.path);
        }
        // The budget for the bundle: 2 MB gzipped.
        assert!(bundle_bytes() <= 2_000_000, "{}", bundle_bytes());
    }
}
