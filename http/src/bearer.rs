//! A router that answers only requests carrying the token as a bearer
//! token (`Authorization: Bearer TOKEN`, RFC 6750), as Prometheus sends
//! it (`authorization: credentials_file`): for `/metrics` served beyond
//! loopback. Anything else gets 401 with `WWW-Authenticate: Bearer`.

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use typhon_live_remote::token::Token;

/// `app`, answering only requests that carry `token` as a bearer token.
pub fn require(app: Router, token: Token) -> Router {
    app.layer(middleware::from_fn_with_state(token, check))
}

async fn check(State(token): State<Token>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, credentials) = v.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| credentials.trim())
        });
    match given {
        Some(given) if token.matches(given.as_bytes()) => next.run(request).await,
        _ => {
            let mut refused = (
                StatusCode::UNAUTHORIZED,
                "give the relay's token: Authorization: Bearer TOKEN\n",
            )
                .into_response();
            refused.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"typhon-live\""),
            );
            refused
        }
    }
}
