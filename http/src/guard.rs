//! Who may use a page served on this machine, and its WebSocket: the
//! rules samply and Jupyter follow for a local server, since anything on
//! the machine, and any web page open in its browser, can reach a
//! loopback port.
//!
//! - **A token**, unguessable (128 bits from the operating system), as
//!   the first segment of every path: a page elsewhere cannot guess a URL
//!   to load or connect to. Compared in constant time.
//! - **The `Host` header** must name the bound address, `localhost` or
//!   a public host the server was given (`--public-host`), with the port:
//!   this defeats DNS rebinding, where a hostile name is made to resolve
//!   to 127.0.0.1 after its page loaded.
//! - **The `Origin` header**, when a request carries one, must be the
//!   page's own; a WebSocket upgrade must carry one. Browsers send it on
//!   every cross-origin request and every WebSocket, and a page cannot
//!   forge it.
//! - **Headers on every answer**: a Content-Security-Policy that allows
//!   only the page's own origin (and WebAssembly compiled from it), no
//!   referrer (the token is in the URL), no caching, no sniffing.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use typhon_live_remote::token::{self, Token};
use typhon_live_remote::RemoteError;

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

/// The checks every request to a protected router passes; see the
/// module's documentation.
#[derive(Clone, Debug)]
pub struct Guard {
    token: Arc<str>,
    /// `Host` values served: the bound address, `localhost` and the
    /// public hosts, each with the port.
    hosts: Arc<[String]>,
    /// `http` or `https`: the page's origin's.
    scheme: &'static str,
    /// The Content-Security-Policy sent with every answer.
    policy: HeaderValue,
}

/// A new token: 128 bits from the operating system, as 32 hex digits
/// (the same as the viewers' port's, [`Token::generate`]).
pub fn new_token() -> Result<String, RemoteError> {
    Token::generate().map(|token| token.as_str().to_owned())
}

impl Guard {
    /// The guard of a server bound to `bound`, on loopback over HTTP,
    /// whose paths start with `/token/`.
    pub fn new(token: &str, bound: SocketAddr) -> Self {
        Guard::for_site(token, bound, &[], false)
    }

    /// The guard of a server bound to `bound` that is reached by
    /// `public_hosts` too (names or addresses, without the port), over
    /// HTTPS if `https`, whose paths start with `/token/`.
    pub fn for_site(token: &str, bound: SocketAddr, public_hosts: &[String], https: bool) -> Self {
        let port = bound.port();
        let ip = match bound.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        let mut hosts: Vec<String> = vec![format!("{ip}:{port}"), format!("localhost:{port}")];
        hosts.extend(public_hosts.iter().map(|host| format!("{host}:{port}")));
        let (web, socket) = if https {
            ("https", "wss")
        } else {
            ("http", "ws")
        };
        let sockets: Vec<String> = hosts.iter().map(|h| format!("{socket}://{h}")).collect();
        let policy = format!(
            "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; \
             connect-src 'self' {}; \
             img-src 'self' data: blob:; style-src 'self'; frame-ancestors 'none'; \
             base-uri 'none'; form-action 'none'",
            sockets.join(" ")
        );
        Guard {
            token: token.into(),
            hosts: hosts.into(),
            scheme: web,
            policy: HeaderValue::from_str(&policy).expect("the policy is ASCII"),
        }
    }

    /// The token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// `app`, served under `/TOKEN/` to the requests that pass the
    /// guard (its `/` is `/TOKEN/`, and `/TOKEN` is sent there, so that
    /// a page's relative URLs stay under the token); every answer,
    /// refusals included, carries its headers.
    pub fn protect(&self, app: Router) -> Router {
        let root = format!("/{}", self.token);
        let page = format!("{root}/");
        Router::new()
            .nest(&page, app)
            .route(
                &root,
                get(move || async move { Redirect::permanent(&page) }),
            )
            .layer(middleware::from_fn_with_state(self.clone(), check))
    }

    fn serves_host(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    fn serves_origin(&self, origin: &str) -> bool {
        origin
            .strip_prefix(self.scheme)
            .and_then(|rest| rest.strip_prefix("://"))
            .is_some_and(|host| self.serves_host(host))
    }
}

/// Whether the first segment of `path` is `token`, in time that does not
/// depend on where they differ.
fn names_token(path: &str, token: &str) -> bool {
    let first = path
        .strip_prefix('/')
        .unwrap_or(path)
        .split('/')
        .next()
        .unwrap_or("");
    token::equal(token.as_bytes(), first.as_bytes())
}

async fn check(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let upgrade = text(header::UPGRADE).is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let refusal = if !text(header::HOST).is_some_and(|h| guard.serves_host(h)) {
        Some((
            StatusCode::MISDIRECTED_REQUEST,
            "this server answers to its own address, localhost and its public hosts only\n",
        ))
    } else if !names_token(request.uri().path(), &guard.token) {
        Some((StatusCode::NOT_FOUND, "no such page\n"))
    } else {
        match text(header::ORIGIN) {
            Some(origin) if !guard.serves_origin(origin) => Some((
                StatusCode::FORBIDDEN,
                "requests from another origin are refused\n",
            )),
            None if upgrade => Some((
                StatusCode::FORBIDDEN,
                "a WebSocket is served to this server's own page only\n",
            )),
            _ => None,
        }
    };
    let mut response = match refusal {
        Some(refused) => refused.into_response(),
        None => next.run(request).await,
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, guard.policy.clone());
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_the_first_segment_whole() {
        assert!(names_token("/abc/page", "abc"));
        assert!(names_token("/abc", "abc"));
        assert!(!names_token("/abcd/page", "abc"));
        assert!(!names_token("/ab/page", "abc"));
        assert!(!names_token("/", "abc"));
        assert!(!names_token("/x/abc", "abc"));
    }

    #[test]
    fn tokens_are_new_each_time_and_128_bits() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn hosts_are_the_bound_address_and_localhost_with_the_port() {
        let guard = Guard::new("t", "127.0.0.1:8080".parse().unwrap());
        assert!(guard.serves_host("127.0.0.1:8080") && guard.serves_host("LOCALHOST:8080"));
        assert!(!guard.serves_host("127.0.0.1:8081") && !guard.serves_host("evil.example:8080"));
        assert!(guard.serves_origin("http://localhost:8080"));
        assert!(!guard.serves_origin("https://localhost:8080") && !guard.serves_origin("null"));
        let v6 = Guard::new("t", "[::1]:9".parse().unwrap());
        assert!(v6.serves_host("[::1]:9"));
    }

    #[test]
    fn a_site_over_https_serves_its_public_hosts_and_its_https_origins_only() {
        let public = ["typhon.example".to_owned()];
        let guard = Guard::for_site("t", "0.0.0.0:443".parse().unwrap(), &public, true);
        assert!(guard.serves_host("typhon.example:443") && guard.serves_host("localhost:443"));
        assert!(!guard.serves_host("typhon.example:80") && !guard.serves_host("evil.example:443"));
        assert!(guard.serves_origin("https://typhon.example:443"));
        assert!(!guard.serves_origin("http://typhon.example:443"));
        let policy = guard.policy.to_str().unwrap();
        assert!(policy.contains("wss://typhon.example:443") && !policy.contains("ws://"));
    }
}
