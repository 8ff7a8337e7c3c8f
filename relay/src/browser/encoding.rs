//! Which coding the page's files go in (RFC 9110, 12.5.3): gzip, as they
//! are stored, to every client that accepts it, one that sends no
//! `Accept-Encoding` at all included (any coding is then acceptable);
//! identity to one that accepts identity and not gzip (`curl` without
//! `--compressed` asks so); none left, 406.

use typhon_live_http::axum::http::{header, HeaderMap};

/// A coding the page's files can be sent in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coding {
    /// As stored.
    Gzip,
    /// Unpacked.
    Identity,
}

/// The coding to answer a request with `headers` in: gzip where it is
/// acceptable, else identity where that is, else none.
pub(crate) fn negotiate(headers: &HeaderMap) -> Option<Coding> {
    let mut values = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .peekable();
    if values.peek().is_none() {
        return Some(Coding::Gzip);
    }
    // Whether each was named acceptable (q > 0) or refused (q = 0).
    let (mut gzip, mut identity, mut any) = (None, None, None);
    for entry in values.flat_map(|v| v.split(',')) {
        let mut parts = entry.split(';');
        let name = parts.next().unwrap_or("").trim();
        let accepted = parts.all(|p| !refuses(p));
        if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(accepted);
        } else if name.eq_ignore_ascii_case("identity") {
            identity = Some(accepted);
        } else if name == "*" {
            any = Some(accepted);
        }
    }
    // Identity is acceptable unless refused, by name or by `*;q=0`.
    if gzip.or(any).unwrap_or(false) {
        Some(Coding::Gzip)
    } else if identity.or(any).unwrap_or(true) {
        Some(Coding::Identity)
    } else {
        None
    }
}

/// Whether a coding's parameter is a weight of 0 (`q=0`, `q=0.000`).
fn refuses(parameter: &str) -> bool {
    let Some((key, value)) = parameter.split_once('=') else {
        return false;
    };
    key.trim().eq_ignore_ascii_case("q") && value.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(values: &[&str]) -> Option<Coding> {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::ACCEPT_ENCODING, value.parse().unwrap());
        }
        negotiate(&headers)
    }

    #[test]
    fn gzip_where_acceptable_identity_where_only_that_is_and_else_none() {
        use Coding::{Gzip, Identity};
        let cases: [(&[&str], Option<Coding>); 12] = [
            // No header: any coding is acceptable.
            (&[], Some(Gzip)),
            (&["gzip, deflate, br"], Some(Gzip)),
            (&["br", "GZip;q=0.5"], Some(Gzip)),
            (&["*"], Some(Gzip)),
            (&["x-gzip"], Some(Gzip)),
            // Asked for identity only, or for nothing we have.
            (&["identity"], Some(Identity)),
            (&[""], Some(Identity)),
            (&["br, deflate"], Some(Identity)),
            (&["gzip;q=0"], Some(Identity)),
            (&["*;q=0, identity"], Some(Identity)),
            // Refused: gzip by `*`, identity by name.
            (&["*;q=0"], None),
            (&["gzip;q=0.000, identity; Q=0"], None),
        ];
        for (values, expected) in cases {
            assert_eq!(asking(values), expected, "{values:?}");
        }
    }
}
